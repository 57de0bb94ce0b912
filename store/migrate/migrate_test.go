package migrate

import (
	"testing"
	"testing/fstest"

	"github.com/stretchr/testify/require"
)

func TestLoad(t *testing.T) {
	t.Parallel()
	ms, err := Load(fstest.MapFS{
		"m/0002_more.sql": {Data: []byte("B")},
		"m/0001_init.sql": {Data: []byte("A")},
		"m/README":        {Data: []byte("x")},
	}, "m")
	require.NoError(t, err)
	require.Equal(t, []Migration{{1, "init", "A"}, {2, "more", "B"}}, ms)
	require.Equal(t, 2, Latest(ms))
	require.Equal(t, 0, Latest(nil))
}

func TestLoadErrors(t *testing.T) {
	t.Parallel()
	for name, fsys := range map[string]fstest.MapFS{
		"bad name": {"m/init.sql": {}},
		"zero":     {"m/0000_init.sql": {}},
		"gap":      {"m/0001_a.sql": {}, "m/0003_c.sql": {}},
		"dup":      {"m/0001_a.sql": {}, "m/1_b.sql": {}},
	} {
		_, err := Load(fsys, "m")
		require.Error(t, err, name)
	}
}
