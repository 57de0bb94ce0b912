package bench

import (
	"context"
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"github.com/eventcenter/eventcenter/app/config"
	"github.com/eventcenter/eventcenter/forwarder"
)

// Noisy configures the noisy-neighbour run (docs/performance.md): a flooding bizID
// sends FloodMessages as fast as it can while a quiet bizID sends
// QuietRate messages a second. One center runs three phases, each on
// topics of its own: the quiet bizID alone for QuietAlone, the flood alone,
// then the flood with the quiet bizID sending until the flood is
// forwarded. The report compares the quiet bizID's commit-to-forward p99
// during the flood with its p99 alone, and the flood's throughput with
// and without the quiet bizID; and it gives the quiet bizID's place in
// line (placeinline.go): how many of the flood's messages the center
// forwarded between a quiet message's commit and its forward, a measure
// CPU contention does not move.
type Noisy struct {
	// FloodMessages is the flooding bizID's message count; 0 turns the
	// noisy-neighbour run off.
	FloodMessages int
	// QuietRate is the quiet bizID's messages per second.
	QuietRate float64
	// QuietAlone is how long the quiet bizID runs alone first.
	QuietAlone time.Duration
	// QuietConcurrency is the quiet bizID's sending goroutines (one
	// producer).
	QuietConcurrency int
	// FairClaims is the center's forward.fair_claims (false: the oldest
	// due messages first, whatever the bizID).
	FairClaims bool
	// FloodRate and FloodMaxInFlight, when set, give the flooding bizID
	// a forward.biz entry (rate, max_in_flight).
	FloodRate        float64
	FloodMaxInFlight int
	// QuietLane puts the quiet bizID on a control lane of its own
	// (kafka.lanes: topic <control topic>.lane.quiet, id 1): its producer
	// writes there and the center consumes it apart from the flood.
	QuietLane bool
	// QuietLaneFreshFetchWait is the quiet lane's fresh_fetch_wait (0:
	// ingest.fresh_fetch_wait; negative: no wait).
	QuietLaneFreshFetchWait time.Duration
}

// quietLaneTopic is the quiet bizID's lane topic with QuietLane.
func quietLaneTopic(controlTopic string) string { return controlTopic + ".lane." + quietBizID }

// The bizIDs of the noisy-neighbour run.
const (
	floodBizID = "flood"
	quietBizID = "quiet"
)

// DefaultNoisy returns the defaults: off; when on, 200 msg/s quiet, 15s
// alone, 16 goroutines, fair claims.
func DefaultNoisy() Noisy {
	return Noisy{QuietRate: 200, QuietAlone: 15 * time.Second, QuietConcurrency: 16, FairClaims: true}
}

func (n *Noisy) on() bool { return n.FloodMessages > 0 }

func (n *Noisy) validate(c *Config, bad func(field, format string, args ...any)) {
	if n.FloodMessages < 0 {
		bad("flood-messages", "must not be negative (0: no noisy-neighbour run)")
	}
	if !n.on() {
		return
	}
	if n.QuietRate <= 0 {
		bad("quiet-rate", "must be positive")
	}
	if n.QuietAlone < time.Second {
		bad("quiet-alone", "must be at least 1s")
	}
	if n.QuietConcurrency < 1 {
		bad("quiet-concurrency", "must be at least 1")
	}
	if n.FloodRate < 0 {
		bad("flood-rate", "must not be negative (0: no limit)")
	}
	if n.FloodMaxInFlight < 0 {
		bad("flood-max-in-flight", "must not be negative (0: no cap)")
	}
	if c.External {
		bad("flood-messages", "the noisy-neighbour run needs the center in process (not --external)")
	}
	if c.Via != ViaKafka {
		bad("via", "the noisy-neighbour run goes through Kafka producers only")
	}
}

// center applies the run's settings to the embedded center's configuration.
func (n *Noisy) center(cfg *config.Config) {
	if !n.on() {
		return
	}
	cfg.Forward.FairClaims = n.FairClaims
	if n.FloodRate > 0 || n.FloodMaxInFlight > 0 {
		cfg.Forward.Biz = append(cfg.Forward.Biz, config.ForwardBiz{BizID: floodBizID, Rate: n.FloodRate, MaxInFlight: n.FloodMaxInFlight})
	}
	if n.QuietLane {
		cfg.Kafka.Lanes = append(cfg.Kafka.Lanes, config.Lane{Name: quietBizID, Topic: quietLaneTopic(cfg.Kafka.ControlTopic), ID: 1,
			BizIDs: []string{quietBizID}, FreshFetchWait: n.QuietLaneFreshFetchWait})
	}
}

// NoisyReport is the noisy-neighbour run's result.
type NoisyReport struct {
	FloodBizID       string  `json:"flood_biz_id"`
	QuietBizID       string  `json:"quiet_biz_id"`
	FloodMessages    int     `json:"flood_messages"`
	QuietRate        float64 `json:"quiet_rate"`
	FairClaims       bool    `json:"fair_claims"`
	FloodRate        float64 `json:"flood_rate_limit,omitempty"`
	FloodMaxInFlight int     `json:"flood_max_in_flight,omitempty"`
	// QuietLane is the quiet bizID's control topic when it has a lane of
	// its own ("": the control topic, as the flood's).
	QuietLane               string `json:"quiet_lane_topic,omitempty"`
	QuietLaneFreshFetchWait string `json:"quiet_lane_fresh_fetch_wait,omitempty"`

	// QuietAlone and FloodAlone are the first two phases;
	// FloodWithQuiet the third.
	QuietAlone     CenterResult `json:"quiet_alone"`
	FloodAlone     CenterResult `json:"flood_alone"`
	FloodWithQuiet struct {
		Flood CenterResult `json:"flood"`
		Quiet CenterResult `json:"quiet"`
	} `json:"flood_with_quiet"`

	// QuietP99Ratio is the quiet bizID's commit-to-forward p99 during the
	// flood over its p99 alone (target: at most 2).
	QuietP99AloneMs  float64 `json:"quiet_p99_alone_ms"`
	QuietP99DuringMs float64 `json:"quiet_p99_during_flood_ms"`
	QuietP99Ratio    float64 `json:"quiet_p99_ratio"`
	// FloodRateRatio is the flood's forwarded messages/s with the quiet
	// bizID over alone (target: at least 0.85).
	FloodRateAlone float64 `json:"flood_forward_rate_alone"`
	FloodRateWith  float64 `json:"flood_forward_rate_with_quiet"`
	FloodRateRatio float64 `json:"flood_rate_ratio"`

	// The place in line (placeinline.go): for each quiet message, the
	// messages forwarded between its commit and its forward. Alone they
	// are quiet's own (its floor: its concurrent sends); during the flood,
	// the flood's. ClaimLimit is one claim of due messages, the bound fair
	// claims aim at for the p99 during the flood.
	QuietPlaceAlone  PlaceInLine `json:"quiet_place_in_line_alone"`
	QuietPlaceDuring PlaceInLine `json:"quiet_place_in_line_during_flood"`
	ClaimLimit       int         `json:"claim_limit"`
}

// noisyRun runs the three phases on the running center.
func noisyRun(ctx context.Context, cfg Config, runID string, brokers []string, topic string, cb *checkbackServer) (*NoisyReport, error) {
	n := cfg.Noisy
	rep := &NoisyReport{FloodBizID: floodBizID, QuietBizID: quietBizID, FloodMessages: n.FloodMessages,
		QuietRate: n.QuietRate, FairClaims: n.FairClaims, FloodRate: n.FloodRate, FloodMaxInFlight: n.FloodMaxInFlight}
	if n.QuietLane {
		rep.QuietLane = quietLaneTopic(cfg.ControlTopic)
		switch {
		case n.QuietLaneFreshFetchWait < 0:
			rep.QuietLaneFreshFetchWait = "none"
		case n.QuietLaneFreshFetchWait > 0:
			rep.QuietLaneFreshFetchWait = n.QuietLaneFreshFetchWait.String()
		}
	}
	topics := map[string]string{}
	for _, ph := range []string{"quiet.1", "flood.2", "flood.3", "quiet.3"} {
		topics[ph] = topic + "." + ph
	}
	if err := createTopics(ctx, brokers, cfg.Partitions, cfg.BrokerRetention,
		topics["quiet.1"], topics["flood.2"], topics["flood.3"], topics["quiet.3"]); err != nil {
		return nil, err
	}
	quiet := cfg
	quiet.Messages, quiet.Duration, quiet.Rate = 0, n.QuietAlone, n.QuietRate
	quiet.Producers, quiet.Concurrency = 1, n.QuietConcurrency
	quiet.RollbackRatio, quiet.CheckbackRatio = 0, 0
	if n.QuietLane {
		quiet.ControlTopic = rep.QuietLane // created with the control topic
	}
	quiet.Progress = prefixed(cfg.Progress, "quiet ")
	flood := cfg
	flood.Messages, flood.Duration, flood.Rate = n.FloodMessages, 0, 0
	flood.RollbackRatio, flood.CheckbackRatio = 0, 0
	flood.Progress = prefixed(cfg.Progress, "flood ")
	out := progress(cfg)

	var err error
	quietAloneFwd, quietAlonePlaces := &forwardLog{}, &placeLog{}
	fmt.Fprintf(out, "phase 1: bizID %s alone, %.0f msg/s for %s\n", quietBizID, n.QuietRate, n.QuietAlone)
	if rep.QuietAlone, err = load(ctx, quiet, pass{via: ViaKafka, keyPrefix: runID + "-q1", bizID: quietBizID,
		forwards: quietAloneFwd, places: quietAlonePlaces}, brokers, topics["quiet.1"], cb); err != nil {
		return nil, fmt.Errorf("phase 1: %w", err)
	}
	fmt.Fprintf(out, "phase 2: bizID %s alone, %d messages as fast as it can\n", floodBizID, n.FloodMessages)
	if rep.FloodAlone, err = load(ctx, flood, pass{via: ViaKafka, keyPrefix: runID + "-f2", bizID: floodBizID}, brokers, topics["flood.2"], cb); err != nil {
		return nil, fmt.Errorf("phase 2: %w", err)
	}
	fmt.Fprintf(out, "phase 3: bizID %s floods (%d messages) while %s sends %.0f msg/s\n", floodBizID, n.FloodMessages, quietBizID, n.QuietRate)
	stop := make(chan struct{})
	quiet.Duration = 0 // until the flood is forwarded
	quiet.Messages = 0
	type result struct {
		r   CenterResult
		err error
	}
	qdone := make(chan result, 1)
	floodSent := make(chan struct{})
	floodFwd, quietPlaces := &forwardLog{}, &placeLog{}
	go func() {
		r, err := load(ctx, quiet, pass{via: ViaKafka, keyPrefix: runID + "-q3", bizID: quietBizID, stop: stop, split: floodSent,
			places: quietPlaces}, brokers, topics["quiet.3"], cb)
		qdone <- result{r, err}
	}()
	rep.FloodWithQuiet.Flood, err = load(ctx, flood, pass{via: ViaKafka, keyPrefix: runID + "-f3", bizID: floodBizID, sent: floodSent,
		forwards: floodFwd}, brokers, topics["flood.3"], cb)
	close(stop)
	q := <-qdone
	if err != nil {
		return nil, fmt.Errorf("phase 3 (flood): %w", err)
	}
	if q.err != nil {
		return nil, fmt.Errorf("phase 3 (quiet): %w", q.err)
	}
	rep.FloodWithQuiet.Quiet = q.r
	rep.QuietP99AloneMs = rep.QuietAlone.CommitToForward.P99Ms
	rep.QuietP99DuringMs = rep.FloodWithQuiet.Quiet.CommitToForward.P99Ms
	if rep.QuietP99AloneMs > 0 {
		rep.QuietP99Ratio = rep.QuietP99DuringMs / rep.QuietP99AloneMs
	}
	rep.ClaimLimit = forwarder.DefaultClaimLimit
	rep.QuietPlaceAlone = placesInLine(quietAlonePlaces.samples(), quietAloneFwd.sorted(), true)
	rep.QuietPlaceDuring = placesInLine(quietPlaces.samples(), floodFwd.sorted(), false)
	rep.FloodRateAlone = rep.FloodAlone.ForwardRate
	rep.FloodRateWith = rep.FloodWithQuiet.Flood.ForwardRate
	if rep.FloodRateAlone > 0 {
		rep.FloodRateRatio = rep.FloodRateWith / rep.FloodRateAlone
	}
	return rep, nil
}

// WriteNoisyTable prints the noisy-neighbour comparison (nothing without
// one).
func (r *Report) WriteNoisyTable(w io.Writer) error {
	n := r.Noisy
	if n == nil {
		return nil
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "\nnoisy neighbour (fair claims %v", n.FairClaims)
	if n.FloodRate > 0 || n.FloodMaxInFlight > 0 {
		fmt.Fprintf(tw, "; %s rate %g max_in_flight %d", n.FloodBizID, n.FloodRate, n.FloodMaxInFlight)
	}
	if n.QuietLane != "" {
		fmt.Fprintf(tw, "; %s on its own control lane %s", n.QuietBizID, n.QuietLane)
		if n.QuietLaneFreshFetchWait != "" {
			fmt.Fprintf(tw, " (fresh_fetch_wait %s)", n.QuietLaneFreshFetchWait)
		}
	}
	fmt.Fprintln(tw, ")")
	fmt.Fprintln(tw, "phase\tbizID\tmessages\tforwarded/s\tp50 ms\tp99 ms\tmax ms\tmissing")
	row := func(phase, biz string, c CenterResult) {
		fmt.Fprintf(tw, "%s\t%s\t%d\t%.0f\t%.1f\t%.1f\t%.1f\t%d\n", phase, biz, c.Forwarded, c.ForwardRate,
			c.CommitToForward.P50Ms, c.CommitToForward.P99Ms, c.CommitToForward.MaxMs, c.Missing)
	}
	row("alone", n.QuietBizID, n.QuietAlone)
	row("alone", n.FloodBizID, n.FloodAlone)
	row("together", n.FloodBizID, n.FloodWithQuiet.Flood)
	row("together", n.QuietBizID, n.FloodWithQuiet.Quiet)
	if q := n.FloodWithQuiet.Quiet; q.BeforeSplit != nil && q.AfterSplit != nil {
		fmt.Fprintf(tw, "  %s committed while %s sends\t\t%d\t\t%.1f\t%.1f\t%.1f\n", n.QuietBizID, n.FloodBizID, q.BeforeSplit.Count,
			q.BeforeSplit.P50Ms, q.BeforeSplit.P99Ms, q.BeforeSplit.MaxMs)
		fmt.Fprintf(tw, "  %s committed after, while %s's backlog drains\t\t%d\t\t%.1f\t%.1f\t%.1f\n", n.QuietBizID, n.FloodBizID, q.AfterSplit.Count,
			q.AfterSplit.P50Ms, q.AfterSplit.P99Ms, q.AfterSplit.MaxMs)
	}
	stages := func(phase string, c CenterResult) {
		fmt.Fprintf(tw, "  %s %s, p50/p99 ms: COMMIT acknowledged %.1f/%.1f, center's produce %.1f/%.1f, forwarded %.1f/%.1f\n", n.QuietBizID, phase,
			c.CommitToAck.P50Ms, c.CommitToAck.P99Ms, c.CommitToSend.P50Ms, c.CommitToSend.P99Ms, c.CommitToForward.P50Ms, c.CommitToForward.P99Ms)
	}
	stages("alone", n.QuietAlone)
	stages("together", n.FloodWithQuiet.Quiet)
	for _, p := range []struct {
		phase string
		s     *SchedLatency
	}{{"quiet alone", n.QuietAlone.SchedLatency}, {"flood alone", n.FloodAlone.SchedLatency}, {"together", n.FloodWithQuiet.Quiet.SchedLatency}} {
		if p.s != nil {
			fmt.Fprintf(tw, "  goroutines' wait for a CPU, %s: p50 %.3f ms, p99 %.2f ms, p99.9 %.2f ms\n", p.phase, p.s.P50Ms, p.s.P99Ms, p.s.P999Ms)
		}
	}
	fmt.Fprintf(tw, "%s place in line alone (%s's own messages forwarded between its commit and its forward), p50/p99/max\t%d/%d/%d\n",
		n.QuietBizID, n.QuietBizID, n.QuietPlaceAlone.P50, n.QuietPlaceAlone.P99, n.QuietPlaceAlone.Max)
	fmt.Fprintf(tw, "%s place in line during the flood (%s's messages forwarded between), p50/p99/max\t%d/%d/%d\t(target p99 ≤ one claim, %d)\n",
		n.QuietBizID, n.FloodBizID, n.QuietPlaceDuring.P50, n.QuietPlaceDuring.P99, n.QuietPlaceDuring.Max, n.ClaimLimit)
	fmt.Fprintf(tw, "%s p99 during the flood / alone\t%.2f×\t(target ≤ 2)\n", n.QuietBizID, n.QuietP99Ratio)
	fmt.Fprintf(tw, "%s throughput with %s / alone\t%.2f\t(target ≥ 0.85)\n", n.FloodBizID, n.QuietBizID, n.FloodRateRatio)
	return tw.Flush()
}

// prefixed writes each progress line of w with a prefix (nil: nil).
func prefixed(w io.Writer, prefix string) io.Writer {
	if w == nil {
		return nil
	}
	return &prefixWriter{w: w, prefix: prefix, bol: true}
}

type prefixWriter struct {
	w      io.Writer
	prefix string
	bol    bool
}

func (p *prefixWriter) Write(b []byte) (int, error) {
	for i, c := range b {
		if p.bol {
			if _, err := io.WriteString(p.w, p.prefix); err != nil {
				return i, err
			}
			p.bol = false
		}
		if _, err := p.w.Write([]byte{c}); err != nil {
			return i, err
		}
		p.bol = c == '\n'
	}
	return len(b), nil
}
