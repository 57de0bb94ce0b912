package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/eventcenter/eventcenter/envelope"
)

// newPartitionFor prints the control partition of an order key, for
// producers that do not use clientlib (docs/ordering.md: kcat -p).
func newPartitionFor() *cobra.Command {
	var partitions int
	cmd := &cobra.Command{
		Use:   "partition-for BIZID ORDER_KEY",
		Short: "Print the control topic partition for the envelopes of an order key",
		Long: `Print the control topic partition the envelopes (PREPARE and its decision) of
a message with an order key must be produced to: Kafka's default partitioner
(murmur2) applied to "BIZID:ORDER_KEY", over --partitions partitions. The
record key stays BIZID:MESSAGE_KEY. Recompute it when the control topic's
partition count changes.`,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			if partitions < 1 {
				return fmt.Errorf("--partitions: the control topic's partition count is required (at least 1)")
			}
			_, err := fmt.Fprintln(cmd.OutOrStdout(), envelope.PartitionFor(envelope.OrderRoutingKey(args[0], args[1]), partitions))
			return err
		},
	}
	cmd.Flags().IntVar(&partitions, "partitions", 0, "the control topic's partition count")
	return cmd
}
