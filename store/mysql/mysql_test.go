package mysql_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"testing"
	"time"

	gomysql "github.com/go-sql-driver/mysql"
	"github.com/stretchr/testify/require"

	"github.com/eventcenter/eventcenter/state"
	"github.com/eventcenter/eventcenter/store"
	"github.com/eventcenter/eventcenter/store/mysql"
	"github.com/eventcenter/eventcenter/store/mysql/mytest"
	"github.com/eventcenter/eventcenter/store/storetest"
)

var quiet = slog.New(slog.DiscardHandler)

func newStore(t *testing.T, now func() time.Time) store.Store {
	t.Helper()
	db := mytest.DB(t)
	require.NoError(t, mysql.Migrate(t.Context(), db))
	s, err := mysql.New(db, mysql.Options{Now: now, Logger: quiet})
	require.NoError(t, err)
	require.NoError(t, s.CheckSchema(t.Context()))
	t.Cleanup(func() { require.NoError(t, s.Close()) })
	return s
}

func TestConformance(t *testing.T) {
	t.Parallel()
	storetest.Exercise(t, newStore)
}

// Per-key order: sequences, the claim rule, the fast path (docs/ordering.md).
func TestOrder(t *testing.T) {
	t.Parallel()
	storetest.ExerciseOrder(t, newStore)
}

// Fair claims (docs/fairness.md).
func TestFair(t *testing.T) {
	t.Parallel()
	storetest.ExerciseFair(t, newStore)
}

func TestSchemaCheck(t *testing.T) {
	t.Parallel()
	db := mytest.DB(t)
	err := mysql.CheckSchema(t.Context(), db)
	require.ErrorIs(t, err, store.ErrNotMigrated)
	require.NoError(t, mysql.Migrate(t.Context(), db))
	require.NoError(t, mysql.Migrate(t.Context(), db), "idempotent")
	require.NoError(t, mysql.CheckSchema(t.Context(), db))
	_, err = db.Exec("DELETE FROM eventcenter_schema_migrations")
	require.NoError(t, err)
	require.ErrorIs(t, mysql.CheckSchema(t.Context(), db), store.ErrNotMigrated)
}

func TestConcurrentMigrate(t *testing.T) {
	t.Parallel()
	db := mytest.DB(t)
	errs := make(chan error, 4)
	for range 4 {
		go func() { errs <- mysql.Migrate(t.Context(), db) }()
	}
	for range 4 {
		require.NoError(t, <-errs)
	}
	require.NoError(t, mysql.CheckSchema(t.Context(), db))
}

func TestServerVersion(t *testing.T) {
	t.Parallel()
	for v, ok := range map[string]bool{
		"8.0.4":                      true,
		"8.0.3-rc":                   false,
		"8.0.36":                     true,
		"8.4.2":                      true,
		"9.1.0":                      true,
		"10.6.0-MariaDB":             true,
		"10.11.19-MariaDB-0+deb12u1": true,
		"11.4.2-MariaDB-log":         true,
		"8.0.0-dmr":                  false,
		"5.7.44-log":                 false,
		"10.5.23-MariaDB-0+deb11u1":  false,
		"10.4.1-MariaDB":             false,
		"garbage":                    false,
	} {
		err := mysql.CheckServerVersion(v)
		if ok {
			require.NoError(t, err, v)
			continue
		}
		require.ErrorIs(t, err, mysql.ErrOldServer, v)
		require.ErrorContains(t, err, v, "the error names the version found")
	}
	require.ErrorContains(t, mysql.CheckServerVersion("10.5.23-MariaDB"), "MariaDB 10.6.0+")
}

func TestVersionCheckedAtStartUp(t *testing.T) {
	t.Parallel()
	db := mytest.DB(t)
	require.NoError(t, mysql.CheckVersion(t.Context(), db), "the test server is new enough")
	var v string
	require.NoError(t, db.QueryRow("SELECT VERSION()").Scan(&v))
	t.Logf("server: %s", v)
}

func TestOpenDB(t *testing.T) {
	t.Parallel()
	_, err := mysql.OpenDB("not a dsn")
	require.Error(t, err)
	_, err = mysql.OpenDB("u:p@tcp(127.0.0.1:3306)/")
	require.ErrorContains(t, err, "database name")
	db := mytest.DB(t)
	var iso string
	// MySQL 8 names it transaction_isolation, MariaDB before 11.1 tx_isolation.
	if err := db.QueryRow("SELECT @@SESSION.transaction_isolation").Scan(&iso); err != nil {
		require.NoError(t, db.QueryRow("SELECT @@SESSION.tx_isolation").Scan(&iso))
	}
	require.Equal(t, "READ-COMMITTED", iso)
}

func TestNewValidates(t *testing.T) {
	t.Parallel()
	_, err := mysql.New(nil, mysql.Options{})
	require.Error(t, err)
	_, err = mysql.New(&sql.DB{}, mysql.Options{ApplyTries: -1})
	require.ErrorContains(t, err, "ApplyTries")
}

func TestStatements(t *testing.T) {
	t.Parallel()
	got := mysql.Statements("-- c\nCREATE TABLE a (\n  x int -- y\n);\n\n-- d\nCREATE INDEX i ON a (x);\nSELECT 1")
	require.Equal(t, []string{"CREATE TABLE a (\n  x int -- y\n)", "CREATE INDEX i ON a (x)", "SELECT 1"}, got)
}

// TestApplyInsertRace makes another transaction insert and commit a key
// between Apply's row lookup and its INSERT (InnoDB makes a locking read
// wait for an uncommitted insert, so the race needs this timing): the INSERT
// fails with a duplicate key, Apply rolls back and tries again, and then
// sees the other row.
func TestApplyInsertRace(t *testing.T) {
	t.Parallel()
	for _, tries := range []int{5, 1} {
		t.Run(fmt.Sprintf("tries=%d", tries), func(t *testing.T) {
			t.Parallel()
			db := mytest.DB(t)
			require.NoError(t, mysql.Migrate(t.Context(), db))
			s, err := mysql.New(db, mysql.Options{Logger: quiet, ApplyTries: tries})
			require.NoError(t, err)
			clock := storetest.NewClock()
			races := 0
			mysql.SetBeforeWrite(s, func() {
				races++
				if races > 1 {
					return
				}
				// The other instance's COMMIT of the key.
				_, err := db.Exec("INSERT INTO eventcenter_messages (biz_id, message_key, `partition`, status, "+
					"created_at, updated_at, decided_at, send_next_at) VALUES ('b', 'k', 0, 2, ?, ?, ?, ?)",
					clock.Now(), clock.Now(), clock.Now(), clock.Now())
				require.NoError(t, err)
			})
			res, err := s.Apply(t.Context(), store.ApplyRequest{SendLease: time.Minute, Changes: []store.Change{
				storetest.Prepare("b", "k", 0, clock.Now()), storetest.Prepare("b", "other", 0, clock.Now()),
			}})
			if tries == 1 {
				require.Error(t, err)
				require.ErrorContains(t, err, "concurrent insert")
				require.ErrorIs(t, err, mysql.ErrRetryable)
				var drvErr *gomysql.MySQLError
				require.False(t, errors.As(err, &drvErr), "no driver type escapes")
				_, err := s.Get(t.Context(), "b", "other")
				require.ErrorIs(t, err, store.ErrNotFound, "the failed try was rolled back")
				return
			}
			require.NoError(t, err)
			require.Equal(t, 2, races, "tried twice")
			require.Equal(t, state.Outcome{Effect: state.Changed, Sendable: true}, res.Outcomes[0].Outcome,
				"the retry saw the committed row and filled in its body")
			require.Len(t, res.Sendable, 1)
			m, err := s.Get(t.Context(), "b", "k")
			require.NoError(t, err)
			require.Equal(t, state.Committed, m.Status)
			require.True(t, m.HasBody)
			_, err = s.Get(t.Context(), "b", "other")
			require.NoError(t, err)
		})
	}
}

// A lock wait timeout (another transaction holds the row longer than
// innodb_lock_wait_timeout) is retryable: with one try, Apply says so; with
// more, the next try succeeds once the other transaction is gone.
func TestLockWaitTimeoutIsRetryable(t *testing.T) {
	t.Parallel()
	dsn := mytest.DSN(t)
	cfg, err := gomysql.ParseDSN(dsn)
	require.NoError(t, err)
	cfg.Params = map[string]string{"innodb_lock_wait_timeout": "1"}
	db, err := mysql.OpenDB(cfg.FormatDSN())
	require.NoError(t, err)
	t.Cleanup(func() { _ = db.Close() })
	require.NoError(t, mysql.Migrate(t.Context(), db))
	clock := storetest.NewClock()
	s, err := mysql.New(db, mysql.Options{Logger: quiet, ApplyTries: 1})
	require.NoError(t, err)
	_, err = s.Apply(t.Context(), store.ApplyRequest{Changes: []store.Change{storetest.Prepare("b", "k", 0, clock.Now())}})
	require.NoError(t, err)

	other, err := db.BeginTx(t.Context(), nil)
	require.NoError(t, err)
	defer other.Rollback() //nolint:errcheck // after rollback: no-op
	_, err = other.Exec("SELECT id FROM eventcenter_messages WHERE biz_id = 'b' FOR UPDATE")
	require.NoError(t, err)
	_, err = s.Apply(t.Context(), store.ApplyRequest{Changes: []store.Change{storetest.Commit("b", "k", 0, clock.Now())}})
	require.ErrorIs(t, err, mysql.ErrRetryable)
	var myErr *mysql.Error
	require.ErrorAs(t, err, &myErr)
	require.EqualValues(t, 1205, myErr.Number)
	var drvErr *gomysql.MySQLError
	require.False(t, errors.As(err, &drvErr), "no driver type escapes")
	require.NoError(t, other.Rollback())

	s, err = mysql.New(db, mysql.Options{Logger: quiet})
	require.NoError(t, err)
	_, err = s.Apply(t.Context(), store.ApplyRequest{Changes: []store.Change{storetest.Commit("b", "k", 0, clock.Now())}})
	require.NoError(t, err)
}

func TestErrorsAreWrapped(t *testing.T) {
	t.Parallel()
	db := mytest.DB(t)
	s, err := mysql.New(db, mysql.Options{Logger: quiet}) // not migrated
	require.NoError(t, err)
	_, err = s.Get(t.Context(), "b", "k")
	require.ErrorContains(t, err, "get b:k")
	require.False(t, errors.Is(err, store.ErrNotFound))
	require.ErrorIs(t, err, store.ErrNotMigrated)
	var drvErr *gomysql.MySQLError
	require.False(t, errors.As(err, &drvErr), "no driver type escapes")
	var dbErr *mysql.Error
	require.ErrorAs(t, err, &dbErr)
	require.EqualValues(t, 1146, dbErr.Number) // no such table
	_, err = s.Apply(t.Context(), store.ApplyRequest{Changes: []store.Change{storetest.Commit("b", "k", 0, time.Now())}})
	require.ErrorContains(t, err, "apply")
	require.ErrorContains(t, err, "eventcenter_messages")
	require.ErrorAs(t, err, &dbErr)
	require.False(t, errors.As(err, &drvErr))
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	_, err = s.ClaimSends(ctx, store.Claim{Partitions: []int32{0}, Limit: 1, Lease: time.Second})
	require.ErrorIs(t, err, context.Canceled)
	require.False(t, errors.As(err, &drvErr))
	_, err = s.List(t.Context(), store.Filter{Cursor: "bad"})
	require.ErrorContains(t, err, "cursor")
}

// Big payloads are cut into statements the server accepts.
func TestLargeBatch(t *testing.T) {
	t.Parallel()
	clock := storetest.NewClock()
	s := newStore(t, clock.Now)
	var cs []store.Change
	for i, k := range storetest.Keys("big", 40) {
		c := storetest.Prepare("b", k, int32(i%4), clock.Now())
		c.Event.Body.Payload = make([]byte, 256<<10)
		c.Event.Body.Payload[0] = byte(i)
		cs = append(cs, c, storetest.Commit("b", k, int32(i%4), clock.Now()))
	}
	res, err := s.Apply(t.Context(), store.ApplyRequest{Changes: cs, SendLease: time.Minute})
	require.NoError(t, err)
	require.Len(t, res.Sendable, 40)
	m, err := s.Get(t.Context(), "b", storetest.Keys("big", 40)[39])
	require.NoError(t, err)
	require.Len(t, m.Payload, 256<<10)
	require.EqualValues(t, 39, m.Payload[0])
}

// One multi-row UPDATE (JSON_TABLE) and one MarkSent carry values that
// differ per row, NULL times next to set ones, and bytes that are not
// UTF-8, unchanged.
func TestMultiRowWritesKeepEveryValue(t *testing.T) {
	t.Parallel()
	clock := storetest.NewClock()
	s := newStore(t, clock.Now)
	ctx := t.Context()
	now := clock.Now()
	_, err := s.Apply(ctx, store.ApplyRequest{SendLease: time.Minute, Changes: []store.Change{
		storetest.Prepare("b", "a", 0, now), storetest.Commit("b", "a", 0, now),
		storetest.Prepare("b", "c", 0, now), storetest.Commit("b", "c", 0, now),
		storetest.Prepare("b", "p", 1, now),
	}})
	require.NoError(t, err)
	clock.Advance(time.Minute)
	now = clock.Now()
	odd := "\xff\x00 broken \xc3"
	_, err = s.Apply(ctx, store.ApplyRequest{Changes: []store.Change{
		storetest.Event("b", "a", 0, state.Event{Kind: state.KindSendFailed, At: now, Err: odd, RetryAt: now.Add(time.Hour)}),
		storetest.Event("b", "c", 0, state.Event{Kind: state.KindSendFailed, At: now, Err: "gone", Permanent: true}),
		storetest.Event("b", "p", 1, state.Event{Kind: state.KindCheckUnknown, At: now, Err: "timeout", RetryAt: now.Add(2 * time.Hour)}),
	}})
	require.NoError(t, err)
	a, c, p := getMsg(t, s, "a"), getMsg(t, s, "c"), getMsg(t, s, "p")
	require.Equal(t, odd, a.LastError)
	require.Equal(t, state.SendPending, a.SendStatus)
	require.Equal(t, now.Add(time.Hour), a.SendNextAt)
	require.Equal(t, "gone", c.LastError)
	require.Equal(t, state.SendDead, c.SendStatus)
	require.Equal(t, "timeout", p.LastError)
	require.Equal(t, now.Add(2*time.Hour), p.VerifyNextAt)
	require.True(t, p.DecidedAt.IsZero(), "a NULL time next to set ones stays NULL")
	require.False(t, a.DecidedAt.IsZero())

	// Redeliver c, then mark both sent with different refs.
	_, err = s.Apply(ctx, store.ApplyRequest{Changes: []store.Change{storetest.Operator("b", "c", state.KindRedeliver, now, "ops")}})
	require.NoError(t, err)
	a, c = getMsg(t, s, "a"), getMsg(t, s, "c")
	require.NoError(t, s.MarkSent(ctx, []store.Sent{{ID: a.ID, Ref: "t/0@1"}, {ID: c.ID, Ref: odd}}))
	require.Equal(t, "t/0@1", getMsg(t, s, "a").SendRef)
	require.Equal(t, odd, getMsg(t, s, "c").SendRef)
	require.Equal(t, state.SendSent, getMsg(t, s, "c").SendStatus)
}

func getMsg(t *testing.T, s store.Store, key string) state.Message {
	t.Helper()
	m, err := s.Get(t.Context(), "b", key)
	require.NoError(t, err)
	return m
}
