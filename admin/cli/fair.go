package cli

import (
	"fmt"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/eventcenter/eventcenter/admin/adminapi"
)

func (o *options) bizIDsCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "bizids",
		Short: "Show the fair share per bizID: backlog, send rate, limits, check-backs and throttles",
		Long: `Show, per bizID with messages to forward or check back (or with forward.biz or
checkback.biz settings), the send backlog and the oldest due message (the
store's, every center's), and the answering center's weight, limits
(forward.biz: rate, burst, max_in_flight), messages in flight, send rate
over the last 10s, and the limits that held the bizID back in the last 5s.
Then its check-backs on the answering center: the limits (checkback.biz:
rate, burst; checkback.biz_workers), the check-backs waiting in memory and
running, and the limit holding them back now (rate or workers). Last, the
forward targets and whether their broker paused them (Kafka
throttle_time_ms, RocketMQ SYSTEM_BUSY), for how long and why. Held
messages wait; a limit or a broker's pause never fails them.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := o.client()
			if err != nil {
				return err
			}
			bs, err := c.BizShares(cmd.Context())
			if err != nil {
				return fmt.Errorf("bizids: %w", err)
			}
			return o.emit(cmd.OutOrStdout(), bs, func(tw *tabwriter.Writer) {
				fmt.Fprintln(tw, "BIZID\tWEIGHT\tRATE\tMAX IN FLIGHT\tBACKLOG\tDUE\tOLDEST DUE\tIN FLIGHT\tSENT/S\tTHROTTLED\tCHECK-BACK LIMITS\tCB WAITING\tCB RUNNING\tCB THROTTLED")
				for _, b := range bs.BizIDs {
					limit, maxIn, oldest, thr := "-", "-", "-", "no"
					if b.Rate > 0 {
						limit = fmt.Sprintf("%g/s burst %d", b.Rate, b.Burst)
					}
					if b.MaxInFlight > 0 {
						maxIn = fmt.Sprint(b.MaxInFlight)
					}
					if b.OldestDue != nil {
						oldest = fmt.Sprintf("%s (%s ago)", b.OldestDue.UTC().Format(time.RFC3339),
							(time.Duration(b.OldestDueAge) * time.Second).String())
					}
					if len(b.Throttled) > 0 {
						thr = "by " + strings.Join(b.Throttled, ", ")
					}
					fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%d\t%d\t%s\t%d\t%.1f\t%s\t%s\t%d\t%d\t%s\n", b.BizID, b.Weight, limit, maxIn,
						b.Backlog, b.Due, oldest, b.InFlight, b.SendRate, thr,
						checkbackLimits(b.BizCheckback), b.CheckbackWaiting, b.CheckbackRunning, byLimits(b.CheckbackThrottled))
				}
				if len(bs.Targets) == 0 {
					return
				}
				fmt.Fprintln(tw)
				fmt.Fprintln(tw, "TARGET\tPAUSED\tLEFT\tLAST PAUSE\tCAUSE\tSINCE")
				for _, x := range bs.Targets {
					paused, left, last, cause, since := "no", "-", "-", "-", "-"
					if x.Paused {
						paused, left = "yes", seconds(x.RemainingSeconds)
					}
					if x.Cause != "" {
						last, cause = seconds(x.PauseSeconds), x.Cause
					}
					if x.Since != nil {
						since = x.Since.UTC().Format(time.RFC3339)
					}
					fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", x.Target, paused, left, last, cause, since)
				}
			})
		},
	}
}

// checkbackLimits is a bizID's check-back limits: its rate and its worker
// cap.
func checkbackLimits(c adminapi.BizCheckback) string {
	out := "no rate"
	if c.CheckbackRate > 0 {
		out = fmt.Sprintf("%g/s burst %d", c.CheckbackRate, c.CheckbackBurst)
	}
	if c.CheckbackWorkers > 0 {
		out += fmt.Sprintf(", %d workers", c.CheckbackWorkers)
	}
	return out
}

func byLimits(limits []string) string {
	if len(limits) == 0 {
		return "no"
	}
	return "by " + strings.Join(limits, ", ")
}

// seconds formats s seconds as a duration, to the millisecond.
func seconds(s float64) string {
	return (time.Duration(s * float64(time.Second))).Round(time.Millisecond).String()
}
