package cli

import (
	"fmt"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/eventcenter/eventcenter/admin/client"
)

// auditCmd lists the audit log: every operator action, newest first.
func (o *options) auditCmd() *cobra.Command {
	var opts client.AuditOptions
	var since time.Duration
	cmd := &cobra.Command{
		Use:   "audit",
		Short: "List operator actions (resolve, redeliver, retry, close-orphan, bulk retry, DLQ replay), newest first",
		Example: `  eventcenter admin audit --since 24h
  eventcenter admin audit --biz-id 1001 --limit 100 -o json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := o.client()
			if err != nil {
				return err
			}
			if since > 0 {
				opts.Since = time.Now().Add(-since)
			}
			l, err := c.AuditLog(cmd.Context(), opts)
			if err != nil {
				return fmt.Errorf("audit log: %w", err)
			}
			err = o.emit(cmd.OutOrStdout(), l, func(tw *tabwriter.Writer) {
				fmt.Fprintln(tw, "ID\tTIME\tWHO\tACTION\tMESSAGE\tBEFORE → AFTER\tREASON")
				for _, e := range l.Entries {
					fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%s → %s\t%s\n", e.ID, e.At.UTC().Format(time.RFC3339), e.Who, e.Action,
						trunc(e.BizID+":"+e.Key, 60), e.Before, e.After, trunc(e.Reason, 80))
				}
			})
			if err == nil && l.Next != "" && o.output == "table" {
				fmt.Fprintf(cmd.ErrOrStderr(), "more: --before-id %s\n", l.Next)
			}
			return err
		},
	}
	f := cmd.Flags()
	f.StringVar(&opts.BizID, "biz-id", "", "only this bizID's actions")
	f.DurationVar(&since, "since", 0, "only actions in this last period, e.g. 24h")
	f.StringVar(&opts.BeforeID, "before-id", "", "page: actions older than this id (from a previous list)")
	f.IntVar(&opts.Limit, "limit", 0, "page size (server default 50)")
	return cmd
}
