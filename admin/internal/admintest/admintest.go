package admintest

import (
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/eventcenter/eventcenter/admin"
	"github.com/eventcenter/eventcenter/envelope"
	"github.com/eventcenter/eventcenter/forwarder"
	"github.com/eventcenter/eventcenter/state"
	"github.com/eventcenter/eventcenter/store"
	"github.com/eventcenter/eventcenter/store/postgres"
	"github.com/eventcenter/eventcenter/store/postgres/pgtest"
	"github.com/eventcenter/eventcenter/store/sqlite"
	"github.com/eventcenter/eventcenter/store/storetest"
)

// Tokens of the test handler.
const (
	ReadToken  = "read-token-0123456789"
	AdminToken = "admin-token-0123456789"
	ReadName   = "viewer"
	AdminName  = "alice"
)

// Fixture messages (bizID, key).
const (
	Biz        = "orders"
	Biz2       = "pay"
	KeyStuck   = "o-1"    // PREPARED, created 10 minutes ago
	KeyFresh   = "o-2"    // PREPARED, created 1 minute ago
	KeyVF      = "vf:1/x" // VERIFY_FAILED (key with ':' and '/')
	KeySent    = "o-sent" // COMMITTED, SENT
	KeyDead    = "p-dead" // COMMITTED, DEAD
	KeyRB      = "p-rb"   // ROLLED_BACK
	KeyBinary  = "p-bin"  // PREPARED, binary payload
	ParkReason = "check-back endpoint not allowed for bizID orders"
	DeadReason = "unknown topic"
)

// Quiet is a logger that drops everything.
var Quiet = slog.New(slog.DiscardHandler)

// Recorder is a Handoff that records what it receives.
type Recorder struct {
	mu   sync.Mutex
	msgs []state.Message
	// C gets one value per Handoff call (buffered; extra calls are dropped).
	C chan struct{}
}

// NewRecorder returns an empty Recorder.
func NewRecorder() *Recorder { return &Recorder{C: make(chan struct{}, 64)} }

// Handoff implements admin.Handoff.
func (r *Recorder) Handoff(ms []state.Message) {
	r.mu.Lock()
	r.msgs = append(r.msgs, ms...)
	r.mu.Unlock()
	select {
	case r.C <- struct{}{}:
	default:
	}
}

// Messages returns what was handed off so far.
func (r *Recorder) Messages() []state.Message {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]state.Message(nil), r.msgs...)
}

// Env is a seeded store behind an admin handler and a test server.
type Env struct {
	Store   store.Store
	Clock   *storetest.Clock
	Handoff *Recorder
	Handler http.Handler
	Server  *httptest.Server
	Config  admin.Config
}

// New opens a SQLite store in a temporary directory, seeds it with the
// fixture messages, and serves an admin handler with the read and admin
// tokens. opts adjust the configuration (Store and Clock are set already).
func New(t *testing.T, dlq admin.DLQ, opts ...func(*admin.Config)) *Env {
	t.Helper()
	clock := storetest.NewClock()
	st, err := sqlite.Open(t.Context(), filepath.Join(t.TempDir(), "ec.db"), sqlite.Options{Now: clock.Now, Logger: Quiet})
	require.NoError(t, err)
	t.Cleanup(func() { _ = st.Close() })
	return NewOn(t, st, clock, dlq, opts...)
}

// NewPostgres is New on the PostgreSQL store, in a schema of its own; it
// skips without EVENTCENTER_TEST_POSTGRES (fails when CI=true).
func NewPostgres(t *testing.T, dlq admin.DLQ, opts ...func(*admin.Config)) *Env {
	t.Helper()
	pool := pgtest.Pool(t)
	require.NoError(t, postgres.Migrate(t.Context(), pool))
	clock := storetest.NewClock()
	st, err := postgres.New(pool, postgres.Options{Now: clock.Now, Logger: Quiet})
	require.NoError(t, err)
	return NewOn(t, st, clock, dlq, opts...)
}

// SendLease is the fast path's send lease in these tests.
const SendLease = 30 * time.Second

// NewOn seeds st and serves an admin handler over it.
func NewOn(t *testing.T, st store.Store, clock *storetest.Clock, dlq admin.DLQ, opts ...func(*admin.Config)) *Env {
	t.Helper()
	Seed(t, st, clock.Now())
	rec := NewRecorder()
	cfg := admin.Config{
		Tokens: []admin.Token{
			{Name: ReadName, Token: ReadToken, Scope: admin.ScopeRead},
			{Name: AdminName, Token: AdminToken, Scope: admin.ScopeAdmin},
		},
		Now:    clock.Now,
		Logger: Quiet,
	}
	for _, o := range opts {
		o(&cfg)
	}
	// Actions go through the forwarder's fast path into the recorder, as
	// the center wires them.
	h, err := admin.NewHandler(cfg, forwarder.WithApplier(st, forwarder.NewApplier(st, rec, SendLease)), dlq)
	require.NoError(t, err)
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return &Env{Store: st, Clock: clock, Handoff: rec, Handler: h, Server: srv, Config: cfg}
}

func prepare(biz, key string, at time.Time, payload []byte) store.Change {
	return store.Change{BizID: biz, Key: key, Partition: 1, Event: state.Event{
		Kind: state.KindPrepare, At: at, Body: &state.Body{
			Payload:    payload,
			Headers:    []envelope.Header{{Key: "trace", Value: []byte("t-" + key)}, {Key: "bin", Value: []byte{0xff, 0x00}}},
			Topic:      biz + "-events",
			ForwardKey: "fk-" + key,
			Verify:     "http://producer.example/check",
			CheckAfter: time.Minute,
		},
	}}
}

func ev(biz, key string, e state.Event) store.Change {
	return store.Change{BizID: biz, Key: key, Partition: 1, Event: e}
}

// Seed writes the fixture messages, as of now.
func Seed(t *testing.T, st store.Store, now time.Time) {
	t.Helper()
	ago := func(d time.Duration) time.Time { return now.Add(-d) }
	changes := []store.Change{
		prepare(Biz, KeyVF, ago(20*time.Minute), []byte(`{"order":"vf"}`)),
		ev(Biz, KeyVF, state.Event{Kind: state.KindCheckParked, At: ago(19 * time.Minute), Err: ParkReason}),
		prepare(Biz, KeySent, ago(15*time.Minute), []byte(`{"order":"sent"}`)),
		ev(Biz, KeySent, state.Event{Kind: state.KindCommit, At: ago(15 * time.Minute)}),
		ev(Biz, KeySent, state.Event{Kind: state.KindSent, At: ago(14 * time.Minute), Ref: "orders-events/0@7"}),
		prepare(Biz2, KeyDead, ago(12*time.Minute), []byte(`{"pay":"dead"}`)),
		ev(Biz2, KeyDead, state.Event{Kind: state.KindCommit, At: ago(12 * time.Minute)}),
		ev(Biz2, KeyDead, state.Event{Kind: state.KindSendFailed, At: ago(11 * time.Minute), Permanent: true, Err: DeadReason}),
		prepare(Biz2, KeyRB, ago(11*time.Minute), []byte(`{"pay":"rb"}`)),
		ev(Biz2, KeyRB, state.Event{Kind: state.KindRollback, At: ago(11 * time.Minute)}),
		prepare(Biz, KeyStuck, ago(10*time.Minute), []byte(`{"order":"stuck"}`)),
		prepare(Biz2, KeyBinary, ago(5*time.Minute), []byte{0xde, 0xad, 0xbe, 0xef}),
		prepare(Biz, KeyFresh, ago(time.Minute), []byte(`{"order":"fresh"}`)),
	}
	res, err := st.Apply(t.Context(), store.ApplyRequest{Changes: changes})
	require.NoError(t, err)
	for i, o := range res.Outcomes {
		require.NoError(t, o.Err, "seed change %d", i)
	}
}
