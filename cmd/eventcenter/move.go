package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/eventcenter/eventcenter/app/center"
	"github.com/eventcenter/eventcenter/app/config"
	"github.com/eventcenter/eventcenter/internal/progress"
)

// newMoveBuckets is "eventcenter move-buckets": move buckets between the
// shards of a sharded store, with every instance stopped (docs/shards.md).
func newMoveBuckets() *cobra.Command {
	var path, buckets string
	var from, to int
	cmd := &cobra.Command{
		Use:   "move-buckets",
		Short: "Move buckets between the shards of a sharded store (stop every instance first)",
		Long: `move-buckets copies the messages and audit records of the given buckets from
shard --from to shard --to (indexes in store.shards), checks that every one
arrived, then deletes them from --from. Stop every instance of the center
first; afterwards set store.shards[i].buckets to the lists it prints and
start them. Safe to run again after a failure.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := config.Load(path)
			if err != nil {
				return err
			}
			log := newLogger(cfg.Log, cmd.ErrOrStderr())
			// Progress on stderr: stdout keeps the report.
			pr := progress.New(cmd.ErrOrStderr(), "move-buckets", progress.Options{})
			rep, err := center.MoveBuckets(cmd.Context(), cfg.Store, from, to, buckets, log, pr)
			if err != nil {
				return fmt.Errorf("move-buckets: %w", err)
			}
			out := cmd.OutOrStdout()
			_, _ = fmt.Fprintf(out, "moved %d messages and %d audit records from shard %d to shard %d\n",
				rep.Messages, rep.Audit, from, to)
			_, _ = fmt.Fprintln(out, "set these bucket lists in store.shards, then start the center:")
			for i, b := range rep.Buckets {
				_, _ = fmt.Fprintf(out, "  store.shards[%d].buckets: %q\n", i, b)
			}
			return nil
		},
	}
	cmd.Flags().StringVarP(&path, "config", "c", "eventcenter.yaml", "configuration file (YAML)")
	cmd.Flags().StringVar(&buckets, "buckets", "", "buckets to move, such as 512-1023")
	cmd.Flags().IntVar(&from, "from", 0, "index of the shard the buckets leave")
	cmd.Flags().IntVar(&to, "to", 1, "index of the shard the buckets join")
	return cmd
}
