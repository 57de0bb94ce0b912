package verifier

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/eventcenter/eventcenter/internal/fieldcheck"
)

func TestBackoff(t *testing.T) {
	t.Parallel()
	p := Policy{BackoffBase: time.Second, BackoffCap: 10 * time.Second, Jitter: JitterNone}
	var got []time.Duration
	for n := 1; n <= 6; n++ {
		got = append(got, p.Backoff(n, 0.5))
	}
	require.Equal(t, []time.Duration{1 * time.Second, 2 * time.Second, 4 * time.Second, 8 * time.Second, 10 * time.Second, 10 * time.Second}, got)
	require.Equal(t, 10*time.Second, p.Backoff(1000, 0.5), "no overflow")
	require.Equal(t, time.Second, p.Backoff(0, 0.5))

	p.Jitter = JitterFull
	require.Equal(t, time.Duration(0), p.Backoff(3, 0))
	require.Equal(t, 2*time.Second, p.Backoff(3, 0.5))
	p.Jitter = JitterEqual
	require.Equal(t, 2*time.Second, p.Backoff(3, 0))
	require.Equal(t, 3*time.Second, p.Backoff(3, 0.5))
	require.Equal(t, 5*time.Second, p.Backoff(5, 0), "equal jitter of the cap")
}

func TestConfigFirstDelayAndMerge(t *testing.T) {
	t.Parallel()
	c := Config{
		Policy: Policy{FirstDelay: 3 * time.Second, MaxAttempts: 4},
		BizIDs: map[string]BizConfig{
			"fast": {Policy: Policy{FirstDelay: 500 * time.Millisecond, Jitter: JitterEqual, JitterSet: true}},
			"same": {},
		},
	}
	require.Equal(t, 500*time.Millisecond, c.FirstDelay("fast"))
	require.Equal(t, 3*time.Second, c.FirstDelay("same"))
	require.Equal(t, 3*time.Second, c.FirstDelay("unlisted"))
	require.Equal(t, DefaultFirstDelay, (&Config{}).FirstDelay("x"))

	c.setDefaults()
	res, err := c.resolve()
	require.NoError(t, err)
	require.Equal(t, Policy{FirstDelay: 500 * time.Millisecond, BackoffBase: DefaultBackoffBase, BackoffCap: DefaultBackoffCap,
		MaxAttempts: 4, Timeout: DefaultTimeout, Jitter: JitterEqual}, res["fast"].policy)
	require.Equal(t, JitterFull, res["same"].policy.Jitter)
}

func TestConfigValidate(t *testing.T) {
	t.Parallel()
	require.NoError(t, Config{}.WithDefaults().Validate())
	for _, tc := range []struct {
		name string
		c    Config
		msg  string
	}{
		{"negative first delay", Config{Policy: Policy{FirstDelay: -1}}, "Policy.FirstDelay"},
		{"cap below base", Config{Policy: Policy{BackoffBase: time.Minute, BackoffCap: time.Second}}, "Policy.BackoffCap"},
		{"biz cap below base", Config{BizIDs: map[string]BizConfig{"b": {Policy: Policy{BackoffCap: time.Millisecond}}}}, `BizIDs["b"].BackoffCap`},
		{"negative workers", Config{Workers: -1}, "Workers"},
		{"endpoint cap over workers", Config{Workers: 2, EndpointConcurrency: 3}, "EndpointConcurrency"},
		{"bad allow", Config{Allow: []string{"10.0.0.1:80"}}, `Allow[0]: "10.0.0.1:80"`},
		{"bad biz allow", Config{BizIDs: map[string]BizConfig{"b": {Allow: []string{"http://h/x?y"}}}}, `BizIDs["b"].Allow[0]`},
		{"bad endpoint", Config{BizIDs: map[string]BizConfig{"b": {Endpoint: "ftp://h"}}}, `BizIDs["b"].Endpoint`},
		{"force without endpoint", Config{BizIDs: map[string]BizConfig{"b": {ForceEndpoint: true}}}, `BizIDs["b"].ForceEndpoint`},
		{"bizID with colon", Config{BizIDs: map[string]BizConfig{"a:b": {}}}, `BizIDs["a:b"]`},
		{"short lease", Config{Lease: time.Second, Policy: Policy{Timeout: 5 * time.Second}}, "Lease"},
		{"biz timeout over lease", Config{Lease: 10 * time.Second, BizIDs: map[string]BizConfig{"b": {Policy: Policy{Timeout: 6 * time.Second}}}}, "Lease"},
		{"jitter", Config{Policy: Policy{Jitter: 9}}, "Policy.Jitter"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			err := tc.c.WithDefaults().Validate()
			require.ErrorContains(t, err, tc.msg)
			_, err = New(tc.c, nopStore{}, nopOwned{})
			require.ErrorContains(t, err, tc.msg)
		})
	}
}

// TestSecretSource: a bizID's SecretSource gives the signing secret at each
// call (rotation without a restart); empty falls back to Secret.
func TestSecretSource(t *testing.T) {
	t.Parallel()
	cur := "rotated-1"
	c := Config{BizIDs: map[string]BizConfig{
		"a": {Secret: "static", SecretSource: func() string { return cur }},
		"b": {Secret: "static"},
	}}
	c.setDefaults()
	res, err := c.resolve()
	require.NoError(t, err)
	require.Equal(t, []byte("rotated-1"), res["a"].currentSecret())
	cur = "rotated-2"
	require.Equal(t, []byte("rotated-2"), res["a"].currentSecret())
	cur = ""
	require.Equal(t, []byte("static"), res["a"].currentSecret())
	require.Equal(t, []byte("static"), res["b"].currentSecret())
}

// DefaultConfig holds the constant defaults and leaves the derived ones
// to New; Validate checks a Config after defaults, so a field a setting
// made 0 is refused, named, while BizWorkers may stay 0.
func TestDefaultConfigAndValidate(t *testing.T) {
	t.Parallel()
	d := DefaultConfig()
	require.Equal(t, DefaultWorkers, d.Workers)
	require.Equal(t, DefaultEndpointConcurrency, d.EndpointConcurrency)
	require.Equal(t, DefaultLease, d.Lease)
	require.Zero(t, d.BizWorkers, "derived from Workers by New")
	require.NoError(t, d.Validate())

	w := Config{Workers: 4}.WithDefaults()
	require.Equal(t, 3, w.BizWorkers, "3/4 of the workers set")
	require.Equal(t, 4, w.EndpointConcurrency, "never more per endpoint than in all")

	for field, zero := range map[string]func(*Config){
		"Workers":             func(c *Config) { c.Workers, c.EndpointConcurrency = 0, 0 },
		"EndpointConcurrency": func(c *Config) { c.EndpointConcurrency = 0 },
		"Lease":               func(c *Config) { c.Lease = 0 },
		"BreakerFailures":     func(c *Config) { c.BreakerFailures = 0 },
		"Policy.Timeout":      func(c *Config) { c.Policy.Timeout = 0 },
		"Policy.MaxAttempts":  func(c *Config) { c.Policy.MaxAttempts = 0 },
	} {
		c := DefaultConfig()
		zero(&c)
		problems, others := fieldcheck.Problems(c.Validate())
		require.Empty(t, others, field)
		require.NotEmpty(t, problems, "%s: 0 is refused", field)
		require.Equal(t, field, problems[0].Field)
	}
	// The longest timeout names its field.
	c := DefaultConfig()
	c.BizIDs = map[string]BizConfig{"slow": {Policy: Policy{Timeout: time.Minute}}}
	require.ErrorContains(t, c.Validate(), `Lease: must be at least 3 × BizIDs["slow"].Timeout (3m0s), got 2m0s`)
}
