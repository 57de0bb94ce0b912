package producerapi

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/eventcenter/eventcenter/state"
	"github.com/eventcenter/eventcenter/store"
)

// fakeProducer acknowledges records (partition 0, offsets counting up)
// unless fail says otherwise for a record.
type fakeProducer struct {
	mu   sync.Mutex
	recs []*kgo.Record
	fail func(i int, r *kgo.Record) error
}

func (p *fakeProducer) ProduceSync(_ context.Context, rs ...*kgo.Record) kgo.ProduceResults {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make(kgo.ProduceResults, len(rs))
	for i, r := range rs {
		if p.fail != nil {
			if err := p.fail(i, r); err != nil {
				out[i] = kgo.ProduceResult{Record: r, Err: err}
				continue
			}
		}
		r.Offset = int64(len(p.recs))
		p.recs = append(p.recs, r)
		out[i] = kgo.ProduceResult{Record: r}
	}
	return out
}

func (p *fakeProducer) produced() []*kgo.Record {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]*kgo.Record(nil), p.recs...)
}

// fakeStore holds messages by "bizID:key"; err, when set, fails Get.
type fakeStore struct {
	msgs map[string]state.Message
	err  error
}

func (s *fakeStore) Get(_ context.Context, bizID, key string) (state.Message, error) {
	if s.err != nil {
		return state.Message{}, s.err
	}
	m, ok := s.msgs[bizID+":"+key]
	if !ok {
		return state.Message{}, store.ErrNotFound
	}
	return m, nil
}

const (
	ordersToken = "orders-token-0123456789"
	allToken    = "every-biz-token-0123456789"
)

type fixture struct {
	t    *testing.T
	h    *Handler
	prod *fakeProducer
	st   *fakeStore
	reg  *prometheus.Registry
}

// newFixture builds a handler on fakes with two tokens: "orders" (bizID
// orders) and "all" ("*").
func newFixture(t *testing.T, edit ...func(*Config)) *fixture {
	t.Helper()
	f := &fixture{t: t, prod: &fakeProducer{}, st: &fakeStore{msgs: map[string]state.Message{}}, reg: prometheus.NewRegistry()}
	cfg := Config{
		Producer: f.prod, Store: f.st, ControlTopic: "ec.control",
		Tokens: []Token{
			{Name: "orders", Token: ordersToken, BizIDs: []string{"orders"}},
			{Name: "all", Token: allToken, BizIDs: []string{"*"}},
		},
		Logger:     slog.New(slog.DiscardHandler),
		Registerer: f.reg,
		observe:    observe,
	}
	for _, e := range edit {
		e(&cfg)
	}
	h, err := New(cfg)
	require.NoError(t, err)
	f.h = h
	return f
}

// reply is the status and headers of an answer.
type reply struct {
	StatusCode int
	Header     http.Header
}

// do sends a request with the token (none when empty) and returns the
// answer and its body.
func (f *fixture) do(method, target, token string, body io.Reader, headers ...string) (reply, string) {
	f.t.Helper()
	req := httptest.NewRequestWithContext(f.t.Context(), method, target, body)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	req.Host = "127.0.0.1:8081" // a client on this machine, unless the test says otherwise
	for i := 0; i+1 < len(headers); i += 2 {
		if headers[i] == "Host" {
			req.Host = headers[i+1]
			continue
		}
		req.Header.Add(headers[i], headers[i+1])
	}
	if req.URL.Path == "/v1/batch" && req.Header.Get("Content-Type") == "" {
		req.Header.Set("Content-Type", "application/json") // a batch is JSON
	}
	w := httptest.NewRecorder()
	f.h.ServeHTTP(w, req)
	return reply{StatusCode: w.Code, Header: w.Header()}, w.Body.String()
}

// errorOf decodes an error answer.
func errorOf(t *testing.T, body string) (field, msg string) {
	t.Helper()
	var e struct{ Error, Field string }
	require.NoError(t, json.Unmarshal([]byte(body), &e), body)
	return e.Field, e.Error
}

func text(s string) io.Reader { return strings.NewReader(s) }

var testNow = time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
