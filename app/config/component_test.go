package config

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/eventcenter/eventcenter/ingest"
	"github.com/eventcenter/eventcenter/internal/fieldcheck"
)

// The limits ingest.Config.Validate checks are reported once, under the
// settings' names, never as Go fields.
func TestIngestProblemsUnderTheSettingsNames(t *testing.T) {
	cfg := Default()
	cfg.Store = Store{Driver: "sqlite", DSN: "x.db", MaxConns: 1}
	cfg.Kafka.Brokers = []string{"10.0.0.1:9092", ""}
	cfg.Kafka.Group = ""
	cfg.Kafka.DLQTopic = cfg.Kafka.ControlTopic
	cfg.Ingest.MaxPayloadBytes = ingest.MaxMaxPayload + 1
	cfg.Ingest.Parallelism = 0
	err := cfg.Validate()
	require.Error(t, err)
	lines := strings.Split(err.Error(), "\n")
	for _, want := range []string{
		"kafka.brokers[1]: is empty",
		"kafka.group: is required",
		fmt.Sprintf("kafka.dlq_topic: must differ from kafka.control_topic %q", cfg.Kafka.ControlTopic),
		fmt.Sprintf("ingest.max_payload_bytes: must be 1 to %d, got %d", ingest.MaxMaxPayload, ingest.MaxMaxPayload+1),
		"ingest.parallelism: must be positive, got 0",
	} {
		n := 0
		for _, l := range lines {
			if strings.HasPrefix(l, want) {
				n++
			}
		}
		require.Equal(t, 1, n, "%q once in:\n%s", want, err)
	}
	for _, goName := range []string{"Brokers", "Group", "DLQTopic", "ControlTopic", "MaxPayload", "Parallelism", "ingest config"} {
		require.NotContains(t, err.Error(), goName)
	}
}

func TestReportRenamesFieldsAndKeepsTheRest(t *testing.T) {
	paths := fieldPaths{"Brokers": "kafka.brokers", "Lease": "forward.lease"}
	check := fieldcheck.Checker{Prefix: "x config"}
	check.Bad("Brokers[3]", "is empty")
	check.Bad("SendTimeout", "must be shorter than Lease (1s), got 2s")
	other := errors.New("an older check")
	var got []string
	paths.report("forward", errors.Join(check.Err(), other), func(field, format string, args ...any) {
		got = append(got, field+": "+fmt.Sprintf(format, args...))
	})
	require.Equal(t, []string{
		"kafka.brokers[3]: is empty",
		"forward (SendTimeout): must be shorter than forward.lease (1s), got 2s",
		"forward: an older check",
	}, got)
}
