package ingest

import (
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/eventcenter/eventcenter/store/postgres"
	"github.com/eventcenter/eventcenter/store/postgres/pgtest"
	"github.com/eventcenter/eventcenter/store/sqlite"
)

// benchIngest measures ingesting b.N message lifecycles (PREPARE + COMMIT,
// 100-byte payloads, 8 partitions) already in the control topic, from the
// start of the consumer until every offset is committed.
func benchIngest(b *testing.B, st Store) {
	e := newEnv(b, 8)
	payload := make([]byte, 100)
	const chunk = 5000
	for from := 0; from < b.N; from += chunk {
		var rs []*kgo.Record
		for i := from; i < min(from+chunk, b.N); i++ {
			key := "k" + strconv.Itoa(i)
			rs = append(rs, prepareRec("bench", key, payload), decisionRec("bench", key, "commit"))
		}
		e.produce(rs...)
	}
	cfg := e.config()
	cfg.Logger = nil
	b.ResetTimer()
	start := time.Now()
	e.start(cfg, st, nil, NewOwnership())
	tk := time.NewTicker(5 * time.Millisecond)
	defer tk.Stop()
	for !e.committedAll() {
		<-tk.C
	}
	b.StopTimer()
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "msg/s")
}

func BenchmarkIngestSQLite(b *testing.B) {
	st, err := sqlite.Open(b.Context(), filepath.Join(b.TempDir(), "ec.db"), sqlite.Options{})
	require.NoError(b, err)
	b.Cleanup(func() { st.Close() })
	benchIngest(b, st)
}

func BenchmarkIngestPostgres(b *testing.B) {
	pool := pgtest.Pool(b)
	require.NoError(b, postgres.Migrate(b.Context(), pool))
	st, err := postgres.New(pool, postgres.Options{})
	require.NoError(b, err)
	benchIngest(b, st)
}
