package containers

import (
	"os"
	"testing"

	"go.uber.org/goleak"

	"github.com/eventcenter/eventcenter/testsupport/rocketmqfake/rmqtest"
)

func TestMain(m *testing.M) {
	code := m.Run()
	// Containers are shared by the tests of the package; they go once all
	// tests are done.
	terminateShared()
	if code != 0 {
		os.Exit(code)
	}
	opts := append(rmqtest.LeakOptions(),
		// testcontainers' reaper (Ryuk) connection and the Docker client's
		// idle HTTP connections live as long as the process.
		goleak.IgnoreAnyFunction("github.com/testcontainers/testcontainers-go.(*Reaper).connect.func1"),
		goleak.IgnoreAnyFunction("github.com/testcontainers/testcontainers-go.(*reaper).connect.func1"),
		goleak.IgnoreAnyFunction("net/http.(*persistConn).readLoop"),
		goleak.IgnoreAnyFunction("net/http.(*persistConn).writeLoop"),
	)
	if err := goleak.Find(opts...); err != nil {
		os.Stderr.WriteString("goleak: " + err.Error() + "\n")
		os.Exit(1)
	}
}
