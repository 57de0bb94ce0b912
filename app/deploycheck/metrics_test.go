package deploycheck

import (
	"context"
	"flag"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/eventcenter/eventcenter/app/center"
	"github.com/eventcenter/eventcenter/app/config"
)

var update = flag.Bool("update", false, "rewrite "+MetricsFile+" from a running center's registry")

// recorder registers into a registry and remembers every collector, so
// that families with no series yet (a vector no label has been used on)
// are found too: Gather lists only families with series.
type recorder struct {
	*prometheus.Registry
	mu         sync.Mutex
	collectors []prometheus.Collector
}

func (r *recorder) Register(c prometheus.Collector) error {
	if err := r.Registry.Register(c); err != nil {
		return err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.collectors = append(r.collectors, c)
	return nil
}

func (r *recorder) MustRegister(cs ...prometheus.Collector) {
	for _, c := range cs {
		if err := r.Register(c); err != nil {
			panic(err)
		}
	}
}

var fqNameRE = regexp.MustCompile(`fqName: "([^"]+)"`)

// families returns every family registered with r: the type from Gather
// when the family has series, else from the collector's Go type.
func (r *recorder) families(t *testing.T) []Family {
	t.Helper()
	mfs, err := r.Gather()
	require.NoError(t, err)
	types := map[string]string{}
	for _, mf := range mfs {
		types[mf.GetName()] = strings.ToLower(mf.GetType().String())
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, c := range r.collectors {
		ch := make(chan *prometheus.Desc)
		go func() { c.Describe(ch); close(ch) }()
		for d := range ch {
			m := fqNameRE.FindStringSubmatch(d.String())
			require.NotNil(t, m, "descriptor without a name: %s", d)
			if _, ok := types[m[1]]; ok {
				continue
			}
			var typ dto.MetricType
			switch c.(type) {
			case *prometheus.CounterVec:
				typ = dto.MetricType_COUNTER
			case *prometheus.GaugeVec:
				typ = dto.MetricType_GAUGE
			case *prometheus.HistogramVec:
				typ = dto.MetricType_HISTOGRAM
			case *prometheus.SummaryVec:
				typ = dto.MetricType_SUMMARY
			default:
				t.Fatalf("%s has no series and its collector (%T) does not tell its type", m[1], c)
			}
			types[m[1]] = strings.ToLower(typ.String())
		}
	}
	out := make([]Family, 0, len(types))
	for n, typ := range types {
		out = append(out, Family{Name: n, Type: typ})
	}
	slices.SortFunc(out, func(a, b Family) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// runningCenterFamilies starts a center on kfake and SQLite and returns
// the families its registry holds.
func runningCenterFamilies(t *testing.T) []Family {
	t.Helper()
	cluster, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, "eventcenter.control", "eventcenter.control.dlq"))
	require.NoError(t, err)
	defer cluster.Close()
	cfg := config.Default()
	cfg.Kafka.Brokers = cluster.ListenAddrs()
	cfg.Store = config.Store{Driver: "sqlite", DSN: filepath.Join(t.TempDir(), "ec.db"), MaxConns: 1, AutoMigrate: true}
	cfg.Admin.Insecure = true
	// The producer API's families too (it is off by default).
	cfg.Ingress.Listen, cfg.Ingress.Insecure = "127.0.0.1:0", true
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	rec := &recorder{Registry: prometheus.NewRegistry()}
	c, err := center.New(t.Context(), cfg, center.Options{
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), Listener: l,
		Registry: rec.Registry, Registerer: rec,
	})
	require.NoError(t, err)
	require.NoError(t, c.Start(t.Context()))
	defer func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		require.NoError(t, c.Stop(ctx))
	}()
	return rec.families(t)
}

// platformFamily reports the Go and process collectors' families: which
// of them exist depends on the Go version and the operating system, so
// the file's must exist in the registry but the registry may have more.
func platformFamily(name string) bool {
	return strings.HasPrefix(name, "go_") || strings.HasPrefix(name, "process_")
}

// TestMetricsFileMatchesTheRegistry: deploy/metrics.txt lists exactly
// the families a running center registers (run with -update to rewrite
// it after adding or removing a metric).
func TestMetricsFileMatchesTheRegistry(t *testing.T) {
	got := runningCenterFamilies(t)
	path := filepath.Join(repoRoot, MetricsFile)
	if *update {
		require.NoError(t, os.WriteFile(path, FormatFamilies(got), 0o644))
		t.Logf("wrote %d families to %s", len(got), path)
		return
	}
	want, err := LoadFamilies(repoRoot)
	require.NoError(t, err)
	var gotOwn, wantOwn []Family
	for _, f := range got {
		if !platformFamily(f.Name) {
			gotOwn = append(gotOwn, f)
		}
	}
	for _, f := range want {
		if platformFamily(f.Name) {
			require.Contains(t, got, f, "%s is in %s but not registered (run with -update)", f.Name, MetricsFile)
		} else {
			wantOwn = append(wantOwn, f)
		}
	}
	require.Equal(t, wantOwn, gotOwn, "%s differs from the registry: run go test ./app/deploycheck -run MetricsFile -update", MetricsFile)
	// Families that no alert or dashboard uses are listed too.
	for _, n := range []string{"eventcenter_forward_breaker_open", "eventcenter_admin_actions_total", "eventcenter_secret_reload_errors_total"} {
		require.True(t, slices.ContainsFunc(want, func(f Family) bool { return f.Name == n }), n)
	}
}

func TestParseFamilies(t *testing.T) {
	t.Parallel()
	fams := []Family{{"a_total", "counter"}, {"b", "gauge"}}
	got, err := ParseFamilies(FormatFamilies(fams))
	require.NoError(t, err)
	require.Equal(t, fams, got)
	for name, in := range map[string]string{
		"unsorted":  "b gauge\na counter\n",
		"duplicate": "a gauge\na gauge\n",
		"no type":   "a\n",
		"empty":     "# only a comment\n\n",
	} {
		_, err := ParseFamilies([]byte(in))
		require.Error(t, err, name)
	}
	_, err = LoadFamilies(t.TempDir())
	require.Error(t, err, "missing file")
}
