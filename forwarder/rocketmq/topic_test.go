package rocketmq_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/eventcenter/eventcenter/forwarder"
	"github.com/eventcenter/eventcenter/forwarder/rocketmq"
)

// CheckTopic is the rule Message applies: the same names pass and fail.
func TestCheckTopicIsMessagesRule(t *testing.T) {
	t.Parallel()
	for _, name := range []string{"orders", "a%b|c_d-e", strings.Repeat("t", 127), "", "rmq.out", "a b", strings.Repeat("t", 128)} {
		_, msgErr := rocketmq.Message(&forwarder.Record{Topic: name, Value: []byte("x")})
		checkErr := rocketmq.CheckTopic(name)
		if checkErr == nil {
			require.NoError(t, msgErr, name)
			continue
		}
		require.ErrorContains(t, checkErr, "1 to 127 characters")
		require.EqualError(t, msgErr, checkErr.Error(), name)
	}
	require.Error(t, rocketmq.CheckTopic("rmq.out"))
}
