package config

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

const laneBase = "store:\n  driver: sqlite\n  dsn: /tmp/x.db\nkafka:\n  control_topic: ec.control\n  group: ec\n  lanes:\n"

func TestLaneSettings(t *testing.T) {
	cfg, err := Load(write(t, laneBase+
		"    - {name: quiet, id: 1, biz_ids: [pay, vip], fresh_fetch_wait: -1ms}\n"+
		"    - {name: bulk, id: 7, topic: bulk.control, dlq_topic: bulk.dead}\n"))
	require.NoError(t, err)
	k := cfg.Kafka
	require.Len(t, k.Lanes, 2)
	quiet, bulk := k.Lanes[0], k.Lanes[1]
	require.Equal(t, "ec.control.lane.quiet", k.LaneTopic(quiet))
	require.Equal(t, "ec.control.lane.quiet.dlq", k.LaneDLQ(quiet))
	require.Equal(t, "ec.lane.quiet", k.LaneGroup(quiet))
	require.Equal(t, -time.Millisecond, quiet.FreshFetchWait)
	require.Equal(t, "bulk.control", k.LaneTopic(bulk))
	require.Equal(t, "bulk.dead", k.LaneDLQ(bulk))
	require.Equal(t, "ec.control.lane.quiet", k.ControlTopicFor("vip"))
	require.Equal(t, "ec.control", k.ControlTopicFor("other"), "bizIDs on no lane stay on the control topic")
	require.Empty(t, Default().Kafka.Lanes, "no lanes by default")
}

func TestLaneValidation(t *testing.T) {
	for _, tc := range []struct{ lanes, want string }{
		{"    - {id: 1}\n", `kafka.lanes[0].name: want 1 to 64 letters, digits, '_' or '-', got ""`},
		{"    - {name: a.b, id: 1}\n", "kafka.lanes[0].name: want 1 to 64"},
		{"    - {name: a}\n", "kafka.lanes[0].id: must be 1 to 100 (0 is the default lane, kafka.control_topic), got 0"},
		{"    - {name: a, id: 101}\n", "kafka.lanes[0].id: must be 1 to 100"},
		{"    - {name: a, id: 1}\n    - {name: a, id: 2}\n", "kafka.lanes[1].name: duplicate: kafka.lanes[0] is named \"a\" too"},
		{"    - {name: a, id: 1}\n    - {name: b, id: 1}\n", "kafka.lanes[1].id: duplicate: kafka.lanes[0] has id 1 too"},
		{"    - {name: a, id: 1, topic: ec.control}\n", `kafka.lanes[0].topic: "ec.control" is already kafka.control_topic`},
		{"    - {name: a, id: 1, topic: ec.control.dlq}\n", `kafka.lanes[0].topic: "ec.control.dlq" is already kafka.dlq_topic`},
		{"    - {name: a, id: 1, topic: t}\n    - {name: b, id: 2, topic: t}\n", `kafka.lanes[1].topic: "t" is already kafka.lanes[0].topic`},
		{"    - {name: a, id: 1, topic: t}\n    - {name: b, id: 2, topic: t.dlq}\n", `kafka.lanes[1].topic: "t.dlq" is already kafka.lanes[0].dlq_topic`},
		{"    - {name: a, id: 1, topic: 'bad topic'}\n", "kafka.lanes[0].topic:"},
		{"    - {name: a, id: 1, biz_ids: [x, '']}\n", "kafka.lanes[0].biz_ids[1]: is empty"},
		{"    - {name: a, id: 1, biz_ids: [x]}\n    - {name: b, id: 2, biz_ids: [x]}\n", `kafka.lanes[1].biz_ids[0]: bizID "x" is on kafka.lanes[0] already`},
		{"    - {name: a, id: 1, fresh_fetch_wait: 2s}\n", "kafka.lanes[0].fresh_fetch_wait: must be under 1s"},
		{"    - {name: a, id: 1, partitions: 3}\n", "kafka.lanes[0].partitions"},
	} {
		_, err := Load(write(t, laneBase+tc.lanes))
		require.ErrorContains(t, err, tc.want, tc.lanes)
	}
}
