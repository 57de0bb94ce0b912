package bench

import (
	"bytes"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// --via http runs the same load through Kafka producers and through the
// producer HTTP API on one center, and compares them.
func TestRunViaHTTP(t *testing.T) {
	t.Parallel()
	cfg := Default()
	cfg.Via = ViaHTTP
	cfg.Messages = 300
	cfg.Concurrency = 8
	cfg.RollbackRatio = 0.1
	cfg.CheckbackRatio = 0.1
	cfg.Partitions = 2
	cfg.Baselines = false
	cfg.DrainTimeout = time.Minute
	rep, err := Run(t.Context(), cfg)
	require.NoError(t, err)
	require.NotNil(t, rep.Via)
	for name, c := range map[string]CenterResult{"kafka": rep.Via.Kafka, "http": rep.Via.HTTP} {
		require.Zero(t, c.Errors, "%s: %s", name, c.FirstError)
		require.EqualValues(t, 300, c.Sent, name)
		require.Equal(t, c.Committed+c.LeftForCheckback, c.Forwarded, name)
		require.Zero(t, c.Missing, name)
		require.EqualValues(t, c.Committed, c.CommitToForward.Count, name)
		require.Positive(t, c.ForwardRate, name)
	}
	require.Equal(t, rep.Center, rep.Via.Kafka)
	require.InDelta(t, rep.Via.HTTP.ForwardRate/rep.Via.Kafka.ForwardRate, rep.Via.ForwardRateRatio, 1e-9)
	require.InDelta(t, rep.Via.HTTPP99Ms/rep.Via.KafkaP99Ms, rep.Via.P99Ratio, 1e-9)

	var out bytes.Buffer
	require.NoError(t, rep.WriteViaTable(&out))
	require.Contains(t, out.String(), "http / kafka")
}

func TestViaValidation(t *testing.T) {
	t.Parallel()
	cfg := Default()
	cfg.Via = "carrier-pigeon"
	require.ErrorContains(t, cfg.Validate(), "via: want kafka or http")
	cfg.Via, cfg.External, cfg.Brokers = ViaHTTP, true, []string{"k:9092"}
	require.ErrorContains(t, cfg.Validate(), "via: http needs the center in process")
}
