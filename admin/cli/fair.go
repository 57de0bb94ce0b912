package cli

import (
	"fmt"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
)

func (o *options) bizIDsCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "bizids",
		Short: "Show the fair share per bizID: backlog, oldest due, send rate, limits and throttles",
		Long: `Show, per bizID with messages to forward (or with forward.biz settings), the
send backlog and the oldest due message (the store's, every center's), and
the answering center's weight, limits (forward.biz: rate, burst,
max_in_flight), messages in flight, send rate over the last 10s, and the
limits that held the bizID back in the last 5s. Held messages wait in the
store; a limit never fails them.`,
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
				fmt.Fprintln(tw, "BIZID\tWEIGHT\tRATE\tMAX IN FLIGHT\tBACKLOG\tDUE\tOLDEST DUE\tIN FLIGHT\tSENT/S\tTHROTTLED")
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
					fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%d\t%d\t%s\t%d\t%.1f\t%s\n", b.BizID, b.Weight, limit, maxIn,
						b.Backlog, b.Due, oldest, b.InFlight, b.SendRate, thr)
				}
			})
		},
	}
}
