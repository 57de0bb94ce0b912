package main

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/eventcenter/eventcenter/testsupport/logbuf"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// TestFaultsToggle: produce errors switched on through the control endpoint
// fail produce requests; switched off, the records go through.
func TestFaultsToggle(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(t.Context())
	var out logbuf.Buffer
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, []string{"--port", "0", "--topics", "t", "--partitions", "2"}, &out, io.Discard)
	}()
	var addr, control string
	require.Eventually(t, func() bool {
		f := strings.Fields(out.String())
		if len(f) < 6 {
			return false
		}
		addr, control = f[3], f[5]
		return true
	}, 10*time.Second, 10*time.Millisecond)

	post := func(query string) int {
		resp, err := http.Post(control+"/faults?"+query, "", nil)
		require.NoError(t, err)
		_ = resp.Body.Close()
		return resp.StatusCode
	}
	require.Equal(t, http.StatusBadRequest, post("key=metadata&rate=1"))
	require.Equal(t, http.StatusBadRequest, post("key=produce&rate=2"))
	require.Equal(t, http.StatusOK, post("key=produce&rate=1"))

	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.DefaultProduceTopic("t"), kgo.RecordRetries(2), kgo.RetryBackoffFn(func(int) time.Duration { return 10 * time.Millisecond }))
	require.NoError(t, err)
	defer cl.Close()
	err = cl.ProduceSync(t.Context(), &kgo.Record{Value: []byte("x")}).FirstErr()
	require.ErrorContains(t, err, "NOT_LEADER")

	require.Equal(t, http.StatusOK, post("key=produce&rate=0"))
	require.NoError(t, cl.ProduceSync(t.Context(), &kgo.Record{Value: []byte("y")}).FirstErr())

	resp, err := http.Get(control + "/faults")
	require.NoError(t, err)
	body, _ := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	require.Contains(t, string(body), `"produce_failed"`)
	cancel()
	require.NoError(t, <-done)
}

func TestParseErrors(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{{"--partitions", "0"}, {"--port", "70000"}, {"extra"}, {"--nope"}} {
		_, err := parse(args, io.Discard)
		require.Error(t, err, "%v", args)
	}
}
