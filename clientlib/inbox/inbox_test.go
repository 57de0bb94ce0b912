package inbox

import (
	"context"
	"database/sql"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"
)

// fakeDB is an Execer that keeps inbox rows in a map, as the unique key
// does, and can fail.
type fakeDB struct {
	rows    map[string]time.Time
	execs   []string
	err     error
	affErr  error
	deletes []int64 // rows each purge statement deletes, in turn
}

type fakeResult struct {
	n   int64
	err error
}

func (r fakeResult) LastInsertId() (int64, error) { return 0, nil }
func (r fakeResult) RowsAffected() (int64, error) { return r.n, r.err }

func (f *fakeDB) ExecContext(_ context.Context, q string, args ...any) (sql.Result, error) {
	f.execs = append(f.execs, q)
	if f.err != nil {
		return nil, f.err
	}
	if strings.HasPrefix(q, "DELETE") {
		var n int64
		if len(f.deletes) > 0 {
			n, f.deletes = f.deletes[0], f.deletes[1:]
		}
		return fakeResult{n: n, err: f.affErr}, nil
	}
	if !strings.HasPrefix(q, "INSERT") || !strings.Contains(q, "ec_inbox (") {
		return fakeResult{}, nil
	}
	key := args[0].(string) + "\x00" + args[1].(string)
	if _, ok := f.rows[key]; ok {
		return fakeResult{n: 0, err: f.affErr}, nil
	}
	if f.rows == nil {
		f.rows = map[string]time.Time{}
	}
	f.rows[key] = args[2].(time.Time)
	return fakeResult{n: 1, err: f.affErr}, nil
}

func newInbox(t *testing.T, d Dialect, group string) *Inbox {
	t.Helper()
	b, err := New(d, group, WithClock(func() time.Time { return time.Date(2026, 1, 2, 3, 4, 5, 0, time.FixedZone("X", 3600)) }))
	require.NoError(t, err)
	return b
}

func TestRecordNewThenDuplicate(t *testing.T) {
	t.Parallel()
	for _, d := range []Dialect{Postgres, MySQL} {
		t.Run(d.String(), func(t *testing.T) {
			t.Parallel()
			db := &fakeDB{}
			b := newInbox(t, d, "g1")
			isNew, err := b.Record(t.Context(), db, "order:1")
			require.NoError(t, err)
			require.True(t, isNew)
			isNew, err = b.Record(t.Context(), db, "order:1")
			require.NoError(t, err)
			require.False(t, isNew, "a redelivery is a duplicate")
			// Another group applies it once too.
			isNew, err = newInbox(t, d, "g2").Record(t.Context(), db, "order:1")
			require.NoError(t, err)
			require.True(t, isNew)
			for _, at := range db.rows {
				require.Equal(t, time.UTC, at.Location(), "received_at is stored in UTC")
			}
		})
	}
}

func TestRecordFailures(t *testing.T) {
	t.Parallel()
	b := newInbox(t, Postgres, "g")
	_, err := b.Record(t.Context(), &fakeDB{}, "")
	require.ErrorIs(t, err, ErrNoID)
	_, err = b.Record(t.Context(), &fakeDB{}, strings.Repeat("x", MaxIDLen+1))
	require.ErrorContains(t, err, "at most 320")
	boom := errors.New("boom")
	_, err = b.Record(t.Context(), &fakeDB{err: boom}, "a:b")
	require.ErrorIs(t, err, boom)
	require.ErrorContains(t, err, `record message "a:b" for group "g"`)
	_, err = b.Record(t.Context(), &fakeDB{affErr: boom}, "a:b")
	require.ErrorIs(t, err, boom)
}

func TestNewValidates(t *testing.T) {
	t.Parallel()
	_, err := New(Postgres, "")
	require.ErrorContains(t, err, "consumer group")
	_, err = New(MySQL, strings.Repeat("g", MaxGroupLen+1))
	require.ErrorContains(t, err, "consumer group")
	_, err = New(Dialect(9), "g")
	require.ErrorContains(t, err, "unknown dialect")
}

func TestRecordKafkaAndRocketMQ(t *testing.T) {
	t.Parallel()
	b := newInbox(t, MySQL, "g")
	db := &fakeDB{}
	r := &kgo.Record{Headers: []kgo.RecordHeader{{Key: "x", Value: []byte("y")}, {Key: HeaderID, Value: []byte("biz:k")}}}
	isNew, err := b.RecordKafka(t.Context(), db, r)
	require.NoError(t, err)
	require.True(t, isNew)
	// The same id from RocketMQ is the same message.
	isNew, err = b.RecordRocketMQ(t.Context(), db, props{HeaderID: "biz:k"})
	require.NoError(t, err)
	require.False(t, isNew)
	_, err = b.RecordKafka(t.Context(), db, &kgo.Record{})
	require.ErrorIs(t, err, ErrNoID)
	_, err = b.RecordRocketMQ(t.Context(), db, props{})
	require.ErrorIs(t, err, ErrNoID)
}

type props map[string]string

func (p props) GetProperty(name string) string { return p[name] }

func TestPurgeBatches(t *testing.T) {
	t.Parallel()
	b := newInbox(t, Postgres, "g")
	db := &fakeDB{deletes: []int64{10, 10, 3}}
	n, err := b.Purge(t.Context(), db, time.Hour, 10)
	require.NoError(t, err)
	require.Equal(t, int64(23), n)
	require.Len(t, db.execs, 3, "deletes until a batch comes back short")

	_, err = b.Purge(t.Context(), db, 0, 10)
	require.ErrorContains(t, err, "retention must be positive")
	boom := errors.New("boom")
	n, err = b.Purge(t.Context(), &fakeDB{err: boom}, time.Hour, 0)
	require.ErrorIs(t, err, boom)
	require.Zero(t, n)
	_, err = b.Purge(t.Context(), &fakeDB{affErr: boom}, time.Hour, 0)
	require.ErrorIs(t, err, boom)
}

// pgxLike mimics pgx.Tx's Exec and pgconn.CommandTag.
type pgxLike struct{ n int64 }

type tag struct{ n int64 }

func (t tag) RowsAffected() int64 { return t.n }

func (p *pgxLike) Exec(_ context.Context, _ string, _ ...any) (tag, error) {
	if p.n < 0 {
		return tag{}, errors.New("pgx failed")
	}
	return tag{p.n}, nil
}

func TestPgxAdapter(t *testing.T) {
	t.Parallel()
	b := newInbox(t, Postgres, "g")
	isNew, err := b.Record(t.Context(), Pgx(&pgxLike{n: 1}), "a:b") // type argument inferred
	require.NoError(t, err)
	require.True(t, isNew)
	isNew, err = b.Record(t.Context(), Pgx(&pgxLike{n: 0}), "a:b")
	require.NoError(t, err)
	require.False(t, isNew)
	_, err = b.Record(t.Context(), Pgx(&pgxLike{n: -1}), "a:b")
	require.ErrorContains(t, err, "pgx failed")
	res, err := Pgx(&pgxLike{n: 1}).ExecContext(t.Context(), "x")
	require.NoError(t, err)
	_, err = res.LastInsertId()
	require.Error(t, err)
}

func TestMigrationsAndStatements(t *testing.T) {
	t.Parallel()
	for _, d := range []Dialect{Postgres, MySQL} {
		ms, err := Migrations(d)
		require.NoError(t, err)
		require.NotEmpty(t, ms)
		require.Equal(t, 1, ms[0].Version)
		db := &fakeDB{}
		require.NoError(t, Migrate(t.Context(), db, d))
		for _, q := range db.execs {
			require.NotContains(t, q, "--", "comments are stripped")
			require.False(t, strings.HasSuffix(q, ";"))
		}
		s, err := Schema(d)
		require.NoError(t, err)
		require.Contains(t, s, "ec_inbox")
	}
	require.Equal(t, []string{"A\nB", "C"}, statements("-- x\nA\nB;\n\nC;\n"))
	_, err := Migrations(Dialect(7))
	require.Error(t, err)
	boom := errors.New("boom")
	require.ErrorIs(t, Migrate(t.Context(), &fakeDB{err: boom}, MySQL), boom)
}
