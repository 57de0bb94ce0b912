package rmqtest_test

import (
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/apache/rocketmq-client-go/v2/producer"
	"github.com/eventcenter/eventcenter/testsupport/rocketmqfake"
	"github.com/eventcenter/eventcenter/testsupport/rocketmqfake/rmqtest"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m, rmqtest.LeakOptions()...)
}

func TestConsume(t *testing.T) {
	t.Parallel()
	s, err := rocketmqfake.Start(rocketmqfake.WithTopic("t", 2))
	require.NoError(t, err)
	t.Cleanup(s.Close)
	rmqtest.Quiet()
	p, err := producer.NewDefaultProducer(
		producer.WithNameServer([]string{s.NameServerAddr()}),
		producer.WithInstanceName(rmqtest.InstanceName("rmqtest-test")),
	)
	require.NoError(t, err)
	require.NoError(t, p.Start())
	t.Cleanup(func() { require.NoError(t, p.Shutdown()) })
	m := primitive.NewMessage("t", []byte("hello"))
	m.WithTag("A")
	_, err = p.SendSync(t.Context(), m)
	require.NoError(t, err)

	ch := rmqtest.Consume(t, s.NameServerAddr(), "t", "g")
	select {
	case got := <-ch:
		require.Equal(t, "hello", string(got.Body))
		require.Equal(t, "A", got.GetTags())
	case <-time.After(15 * time.Second):
		t.Fatal("nothing consumed")
	}
}
