package bench

import (
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"
)

// Report is a run's result, printed as a table and written as JSON.
type Report struct {
	RunID     string       `json:"run_id"`
	Machine   Machine      `json:"machine"`
	Config    ReportConfig `json:"config"`
	Center    CenterResult `json:"center"`
	Transport *Throughput  `json:"transport_baseline,omitempty"`
	Store     *Throughput  `json:"store_baseline,omitempty"`
	// RateBaseline is the transport at the run's rate without the center
	// (runs with --rate only), and the latency the center adds to it.
	RateBaseline *RateBaseline `json:"transport_at_rate_baseline,omitempty"`
	// CheckbackBaseline is plain HTTP calls to the same check-back server
	// at the same concurrency, no center (runs with check-backs only);
	// CheckbackRatio the center's check-back rate (resolved/s from the
	// first call) divided by it. CheckbackCPURatio is the baseline
	// client's CPU per call divided by the center's CPU per resolved
	// check-back: the share of a plain HTTP client's rate the center
	// reaches on CPU of its own, with the store, the producers and the
	// check-back server on other cores.
	CheckbackBaseline *Throughput `json:"checkback_baseline,omitempty"`
	CheckbackRatio    float64     `json:"checkback_ratio_of_baseline,omitempty"`
	CheckbackCPURatio float64     `json:"checkback_cpu_ratio_of_baseline,omitempty"`
	// CheckbackPathCPURatio is the same with the verifier's CPU alone
	// (CPUParts.CenterComponents): a check-back's own work and the inline
	// forward its answer sets off, without the PREPARE's ingest, which
	// every message has.
	CheckbackPathCPURatio float64 `json:"checkback_path_cpu_ratio_of_baseline,omitempty"`
	// Ratio is the center's forwarded messages/s divided by the lower
	// baseline's messages/s (RatioOf names it).
	Ratio   float64 `json:"ratio,omitempty"`
	RatioOf string  `json:"ratio_of,omitempty"`
	// Metrics are the embedded center's eventcenter_* series at the end.
	Metrics []MetricValue `json:"center_metrics,omitempty"`
	// CPU is the CPU time of the center phase, from /proc.
	CPU *CPUUsage `json:"cpu,omitempty"`
	// RowVersions is what the center wrote in PostgreSQL (PostgreSQL
	// runs of an embedded center only).
	RowVersions *RowVersions `json:"row_versions,omitempty"`
	// Via compares the load through the producer HTTP API with the same
	// through Kafka producers (--via http; see ViaReport).
	Via *ViaReport `json:"via,omitempty"`
	// Scheduled is what the scheduled messages (--scheduled) did.
	Scheduled *ScheduledResult `json:"scheduled,omitempty"`
	// Noisy is the noisy-neighbour run (--flood-messages; see NoisyReport).
	Noisy *NoisyReport `json:"noisy_neighbour,omitempty"`
}

// ReportConfig is the part of Config the report repeats.
type ReportConfig struct {
	Mode           string  `json:"mode"`
	Store          string  `json:"store"`
	Messages       int     `json:"messages"`
	Duration       string  `json:"duration,omitempty"`
	Rate           float64 `json:"rate"`
	Payload        int     `json:"payload"`
	Producers      int     `json:"producers"`
	Concurrency    int     `json:"concurrency"`
	RollbackRatio  float64 `json:"rollback_ratio"`
	CheckbackRatio float64 `json:"checkback_ratio"`
	Partitions     int     `json:"partitions"`
	Topic          string  `json:"topic"`
	Target         string  `json:"target"`
	FirstDelay     string  `json:"checkback_first_delay,omitempty"`
	CheckbackConc  int     `json:"checkback_endpoint_concurrency,omitempty"`
	Retention      string  `json:"broker_retention"`
	Tracing        bool    `json:"tracing"`
	OrderKeys      int     `json:"order_keys,omitempty"`
	HotKey         bool    `json:"hot_key,omitempty"`
	// ForwardKey: --forward-key, with order keys.
	ForwardKey string `json:"forward_key,omitempty"`
	// Scheduled and ScheduledDueRate: --scheduled, --scheduled-due-rate;
	// ScanInterval the embedded center's forward.scan_interval when set.
	Scheduled        int     `json:"scheduled,omitempty"`
	ScheduledDueRate float64 `json:"scheduled_due_rate,omitempty"`
	ScanInterval     string  `json:"scan_interval,omitempty"`
}

func reportConfig(c Config) ReportConfig {
	mode := "embedded (kfake + center in process)"
	switch {
	case c.External:
		mode = "external center and brokers"
	case len(c.Brokers) > 0:
		mode = "center in process, external brokers"
	}
	rc := ReportConfig{Mode: mode, Store: c.Store, Messages: c.Messages, Rate: c.Rate, Payload: c.Payload,
		Producers: c.Producers, Concurrency: c.Concurrency, RollbackRatio: c.RollbackRatio,
		CheckbackRatio: c.CheckbackRatio, Partitions: c.Partitions, Target: c.Target}
	if c.Duration > 0 {
		rc.Duration = c.Duration.String()
	}
	if !c.External {
		rc.FirstDelay = c.firstDelay().String()
		rc.CheckbackConc = c.CheckbackConcurrency
	}
	rc.Retention = c.BrokerRetention.String()
	rc.Tracing = c.Tracing
	rc.OrderKeys, rc.HotKey = c.OrderKeys, c.HotKey
	if c.OrderKeys > 0 || c.HotKey {
		rc.ForwardKey = c.ForwardKey
	}
	rc.Scheduled, rc.ScheduledDueRate = c.Scheduled, c.ScheduledDueRate
	if c.ScanInterval > 0 {
		rc.ScanInterval = c.ScanInterval.String()
	}
	return rc
}

func (r *Report) finish() {
	if b := r.RateBaseline; b != nil && r.Center.CommitToForward.Count > 0 {
		b.AddedP50Ms = r.Center.CommitToForward.P50Ms - b.CommitToRead.P50Ms
		b.AddedP99Ms = r.Center.CommitToForward.P99Ms - b.CommitToRead.P99Ms
	}
	if b := r.CheckbackBaseline; b != nil && b.PerSecond > 0 {
		rate := r.Center.CheckbackCallRate
		if rate == 0 {
			rate = r.Center.CheckbackRate
		}
		r.CheckbackRatio = rate / b.PerSecond
		if c := r.CPU; c != nil && c.Parts != nil && c.Parts.CenterUsPerCheckback > 0 && b.ClientUsPerCall > 0 {
			r.CheckbackCPURatio = b.ClientUsPerCall / c.Parts.CenterUsPerCheckback
			if v := c.Parts.CenterComponents["verifier"]; v > 0 {
				r.CheckbackPathCPURatio = b.ClientUsPerCall / v
			}
		}
	}
	var lower *Throughput
	for _, b := range []*Throughput{r.Transport, r.Store} {
		if b != nil && (lower == nil || b.PerSecond < lower.PerSecond) {
			lower = b
		}
	}
	if lower != nil && lower.PerSecond > 0 {
		r.Ratio = r.Center.ForwardRate / lower.PerSecond
		r.RatioOf = "transport"
		if lower == r.Store {
			r.RatioOf = "store"
		}
	}
}

// WriteJSON writes the report as indented JSON.
func (r *Report) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}

// WriteTable writes the report as a plain-text table.
func (r *Report) WriteTable(w io.Writer) error {
	var b strings.Builder
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	row := func(k string, format string, args ...any) {
		fmt.Fprintf(tw, "%s\t"+format+"\n", append([]any{k}, args...)...)
	}
	m, c, x := r.Machine, r.Config, r.Center
	pg := ""
	if m.Postgres != "" {
		pg = ", PostgreSQL " + m.Postgres
	}
	if m.MySQL != "" {
		pg = ", MySQL " + m.MySQL
	}
	row("machine", "%d CPUs, %d MB, %s %s%s; load average %.1f at start, %.1f at end", m.CPUs, m.MemTotalMB,
		m.GoVersion, m.OS, pg, m.LoadAvgStart, m.LoadAvgEnd)
	load := fmt.Sprintf("%d messages", c.Messages)
	if c.Duration != "" {
		load += " / " + c.Duration
	}
	rate := "as fast as possible"
	if c.Rate > 0 {
		rate = fmt.Sprintf("%.0f msg/s", c.Rate)
	}
	row("run", "%s, %s store, %s, %s, %d B payload, %d producers × %d, rollback %.2f, check-back %.2f, %d partitions",
		c.Mode, c.Store, load, rate, c.Payload, c.Producers, c.Concurrency, c.RollbackRatio, c.CheckbackRatio, c.Partitions)
	if c.Target == TargetRocketMQ {
		row("forward target", "RocketMQ stand-in in process, %d queues, read back from its memory", c.Partitions)
	}
	switch {
	case c.HotKey:
		row("order keys", "one hot key: every message the same order key, forward key: %s", forwardKeyText(c.ForwardKey))
	case c.OrderKeys > 0:
		row("order keys", "%d distinct, message i key i mod %d, forward key: %s", c.OrderKeys, c.OrderKeys, forwardKeyText(c.ForwardKey))
	}
	row("sent", "%d (committed %d, rolled back %d, left for check-back %d), errors %d, %.0f msg/s over %.1fs",
		x.Sent, x.Committed, x.RolledBack, x.LeftForCheckback, x.Errors, x.SendRate, x.SendSeconds)
	if x.FirstError != "" {
		row("first error", "%s", x.FirstError)
	}
	row("forwarded", "%d, duplicates %d, missing %d", x.Forwarded, x.Duplicates, x.Missing)
	row("center throughput", "%.0f msg/s forwarded (%.1fs from first send to last forward)", x.ForwardRate, x.ForwardSeconds)
	lat := func(l Latency) string {
		if l.Count == 0 {
			return "-"
		}
		return fmt.Sprintf("p50 %.1f ms  p90 %.1f ms  p99 %.1f ms  max %.1f ms  (n=%d)", l.P50Ms, l.P90Ms, l.P99Ms, l.MaxMs, l.Count)
	}
	row("commit → forward", "%s", lat(x.CommitToForward))
	row("commit → center's produce", "%s", lat(x.CommitToSend))
	if x.Checkback.Count > 0 || x.LeftForCheckback > 0 {
		row("check-back: prepare → forward", "%s", lat(x.Checkback))
		row("check-back rate", "%.0f resolved/s (first send to last resolved); %.0f resolved/s from the first check-back call (%.1f s after the first send); %d check-back calls",
			x.CheckbackRate, x.CheckbackCallRate, x.FirstCheckbackSeconds, x.CheckbackCalls)
	}
	if s := x.SlowestSecond; s != nil {
		row("slowest second with a backlog", "%d forwarded in second %d (%d sent in it, backlog %d at its start); %d whole seconds with a backlog below half the mean send rate (%.0f msg/s)",
			s.Forwarded, s.At, s.Sent, s.Backlog, s.SecondsBelowHalf, x.SendRate/2)
	}
	if u := r.CPU; u != nil {
		pg := ""
		if u.PostgresBackendsSeconds > 0 || u.PostgresAllSeconds > 0 {
			pg = fmt.Sprintf(", the center's PostgreSQL backends %.0f µs (%.1f s), all postgres processes %.0f µs (%.1f s)",
				u.PostgresBackendsUsPerMsg, u.PostgresBackendsSeconds, u.PostgresAllUsPerMsg, u.PostgresAllSeconds)
		}
		row("CPU per forwarded message", "this process %.0f µs (%.1f s%s)%s; machine busy %.1f CPU-s in %.1f s",
			u.ProcessUsPerMsg, u.ProcessSeconds, embeddedNote(c.Mode),
			pg, u.MachineSeconds, u.WallSeconds)
	}
	if u := r.CPU; u != nil && u.Parts != nil && len(u.Parts.UsPerMsg) > 0 {
		p := u.Parts
		var parts []string
		for _, k := range []string{"center", "broker", "load", "runtime"} {
			parts = append(parts, fmt.Sprintf("%s %.1f µs (%.0f%%)", k, p.UsPerMsg[k], 100*p.Share[k]))
		}
		cb := ""
		if p.CenterUsPerCheckback > 0 {
			cb = fmt.Sprintf("; center %.1f µs per resolved check-back", p.CenterUsPerCheckback)
		}
		row("CPU by part (per message)", "%s; %d profile samples%s", strings.Join(parts, ", "), p.Samples, cb)
		if len(p.CenterComponents) > 0 {
			per := "message"
			if p.CenterUsPerCheckback > 0 {
				per = "resolved check-back"
			}
			comps := make([]string, 0, len(p.CenterComponents))
			for c := range p.CenterComponents {
				comps = append(comps, c)
			}
			sort.Slice(comps, func(i, j int) bool { return p.CenterComponents[comps[i]] > p.CenterComponents[comps[j]] })
			var out []string
			for _, c := range comps {
				out = append(out, fmt.Sprintf("%s %.1f µs", c, p.CenterComponents[c]))
			}
			row("center CPU by component", "per %s: %s", per, strings.Join(out, ", "))
		}
	}
	if v := r.RowVersions; v != nil {
		row("PostgreSQL row versions", "%.2f per message (%.2f inserts + %.2f updates, of which %d HOT; %d messages)",
			v.PerMessage, v.InsertsPerMessage, v.UpdatesPerMessage, v.HotUpdates, v.Messages)
	}
	if s := r.Scheduled; s != nil {
		row("scheduled messages", "%d seeded in %.1fs (%.0f/s): %s", s.Messages, s.SeedSeconds, s.SeedRate, s.Seeded)
		if s.DueRate > 0 {
			row("scheduled: forwarded", "%d, duplicates %d, missing %d, sent before their deliver-at %d; the first due %.1fs after the load began, the last %.1fs later; sent %.0f/s from the first deliver-at to the last send (due at %.0f/s)",
				s.Forwarded, s.Duplicates, s.Missing, s.Early, s.FirstDueSeconds, s.DueSeconds, s.SendRate, s.DueRate)
			row("delivery lateness (produce − deliver-at)", "%s", lat(s.Lateness))
			row("delivery lateness (read − deliver-at)", "%s", lat(s.LatenessRead))
		} else {
			row("scheduled: forwarded during the run", "%d (held: none should be)", s.Forwarded)
		}
	}
	row("heap in use (after GC)", "start %.1f MB, end %.1f MB, max sample %.1f MB", x.HeapStartMB, x.HeapEndMB, x.HeapMaxMB)
	for _, m := range r.Metrics {
		switch {
		case strings.HasPrefix(m.Name, "eventcenter_forward_handoff_dropped_total"):
			row("handoffs dropped", "%.0f (not queued at once)", m.Value)
		case strings.HasPrefix(m.Name, "eventcenter_forward_handoff_released_total"):
			row("handoff leases released", "%.0f (due at once for the scan)", m.Value)
		case strings.HasPrefix(m.Name, "eventcenter_forward_order_run_messages_total"):
			row("order runs: "+strings.TrimSuffix(strings.TrimPrefix(m.Name, "eventcenter_forward_order_run_messages_total{send="), "}"), "%.0f messages sent in runs", m.Value)
		case strings.HasPrefix(m.Name, "eventcenter_forward_order_behind_failed_total"):
			row("order runs: behind a failure", "%.0f messages not sent behind a failed one", m.Value)
		case strings.HasPrefix(m.Name, "eventcenter_ingest_batch_size"):
			row("ingest batches", "%d, mean %.0f records", m.Count, m.Mean)
		case strings.HasPrefix(m.Name, "eventcenter_ingest_batch_apply_duration_seconds"):
			row("ingest apply", "mean %.1f ms", m.Mean*1000)
		case strings.HasPrefix(m.Name, "eventcenter_forward_duration_seconds"):
			row("forward batches", "%d, mean %.1f ms", m.Count, m.Mean*1000)
		}
	}
	if t := r.Transport; t != nil {
		row("baseline: transport", "%.0f msg/s (%d records, %.2fs; %s)", t.PerSecond, t.Messages, t.Seconds, t.What)
	}
	if s := r.Store; s != nil {
		row("baseline: store", "%.0f msg/s (%d messages, %.2fs, %d writers; %s)", s.PerSecond, s.Messages, s.Seconds, s.Writers, s.What)
	}
	if b := r.RateBaseline; b != nil {
		row("baseline: transport at rate", "%.0f msg/s for %.1fs, commit → COMMIT read p50 %.1f ms p99 %.1f ms; added by the center: p50 %.1f ms, p99 %.1f ms",
			b.Rate, b.Seconds, b.CommitToRead.P50Ms, b.CommitToRead.P99Ms, b.AddedP50Ms, b.AddedP99Ms)
	}
	if b := r.CheckbackBaseline; b != nil {
		row("baseline: check-back", "%.0f calls/s (%d calls, %.2fs; %s); center's check-back rate %.2f of it", b.PerSecond, b.Messages, b.Seconds, b.What, r.CheckbackRatio)
		if r.CheckbackCPURatio > 0 {
			row("baseline: check-back CPU", "client %.1f µs per call; center %.1f µs per resolved check-back (%.2f of the client's rate on CPU of its own), its verifier %.1f µs (%.2f)",
				b.ClientUsPerCall, r.CPU.Parts.CenterUsPerCheckback, r.CheckbackCPURatio, r.CPU.Parts.CenterComponents["verifier"], r.CheckbackPathCPURatio)
		}
	}
	if r.RatioOf != "" {
		row("center / lower baseline", "%.2f (of the %s baseline)", r.Ratio, r.RatioOf)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// embeddedNote says what "this process" holds in the embedded mode.
func embeddedNote(mode string) string {
	if strings.HasPrefix(mode, "embedded") {
		return ": center, kfake and load generator"
	}
	return ""
}

// forwardKeyText says which key a report's ordered messages were
// forwarded with ("": a report from before --forward-key, the message key).
func forwardKeyText(fk string) string {
	if fk == ForwardKeyOrder {
		return "the order key"
	}
	return "the message key"
}
