package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/eventcenter/eventcenter/admin"
	"github.com/eventcenter/eventcenter/admin/adminapi"
	"github.com/eventcenter/eventcenter/admin/internal/admintest"
	"github.com/eventcenter/eventcenter/state"
	"github.com/eventcenter/eventcenter/store"
)

// run executes "admin args..." against the env's server with the token,
// passing the server and token through the environment.
func run(t *testing.T, env *admintest.Env, token string, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	getenv := func(k string) string {
		switch k {
		case EnvServer:
			return env.Server.URL
		case EnvToken:
			return token
		}
		return ""
	}
	cmd := newCommand(getenv)
	var out, errOut bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetErr(&errOut)
	cmd.SetArgs(args)
	err = cmd.ExecuteContext(t.Context())
	return out.String(), errOut.String(), err
}

func TestListTableAndJSON(t *testing.T) {
	t.Parallel()
	env := admintest.New(t, nil)
	out, _, err := run(t, env, admintest.ReadToken, "list", "--status", "VERIFY_FAILED")
	require.NoError(t, err)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	require.Len(t, lines, 2)
	require.Regexp(t, `^BIZID\s+KEY\s+STATUS\s+ATTEMPTS\s+CREATED\s+LAST ERROR$`, lines[0])
	require.Regexp(t, `^orders\s+vf:1/x\s+VERIFY_FAILED\s+0\s+2026-03-04T04:46:07Z\s+check-back endpoint not allowed`, lines[1])

	out, _, err = run(t, env, admintest.ReadToken, "list", "--status", "COMMITTED", "--send-status", "DEAD", "-o", "json")
	require.NoError(t, err)
	var l adminapi.MessageList
	require.NoError(t, json.Unmarshal([]byte(out), &l))
	require.Len(t, l.Messages, 1)
	require.Equal(t, "pay:p-dead", l.Messages[0].ID)
	require.Equal(t, "DEAD", l.Messages[0].SendStatus)

	// Paging: the cursor goes to stderr in table mode; --all follows it.
	out, errOut, err := run(t, env, admintest.ReadToken, "list", "--limit", "2")
	require.NoError(t, err)
	require.Len(t, strings.Split(strings.TrimSpace(out), "\n"), 3)
	require.Contains(t, errOut, "more: --cursor ")
	out, errOut, err = run(t, env, admintest.ReadToken, "list", "--limit", "2", "--all")
	require.NoError(t, err)
	require.Len(t, strings.Split(strings.TrimSpace(out), "\n"), 8)
	require.Empty(t, errOut)

	out, _, err = run(t, env, admintest.ReadToken, "list", "--biz", "pay", "--key", "dead", "-o", "json")
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal([]byte(out), &l))
	require.Len(t, l.Messages, 1)
	out, _, err = run(t, env, admintest.ReadToken, "list", "--status", "PREPARED", "--older-than", "2m", "-o", "json")
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal([]byte(out), &l))
	require.Len(t, l.Messages, 2)
}

func TestGet(t *testing.T) {
	t.Parallel()
	env := admintest.New(t, nil)
	for _, args := range [][]string{{"get", "orders:vf:1/x"}, {"get", "orders", "vf:1/x"}} {
		out, _, err := run(t, env, admintest.ReadToken, args...)
		require.NoError(t, err)
		require.Regexp(t, `id:\s+orders:vf:1/x`, out)
		require.Regexp(t, `status:\s+VERIFY_FAILED`, out)
		require.Regexp(t, `last error:\s+check-back endpoint not allowed for bizID orders`, out)
		require.Regexp(t, `payload:\s+"\{\\"order\\":\\"vf\\"\}"`, out)
		require.Regexp(t, `header bin:\s+base64:/wA=`, out)
		require.Regexp(t, `actions:\s+resolve, retry`, out)
	}
	out, _, err := run(t, env, admintest.ReadToken, "get", "pay:p-bin", "-o", "json")
	require.NoError(t, err)
	var d adminapi.MessageDetail
	require.NoError(t, json.Unmarshal([]byte(out), &d))
	require.Equal(t, "3q2+7w==", d.PayloadBase64)

	_, _, err = run(t, env, admintest.ReadToken, "get", "orders:ghost")
	require.ErrorContains(t, err, "404 Not Found")
	require.ErrorContains(t, err, "not found")
	_, _, err = run(t, env, admintest.ReadToken, "get", "no-colon")
	require.ErrorContains(t, err, "want bizID:key")
}

func TestCounts(t *testing.T) {
	t.Parallel()
	env := admintest.New(t, nil)
	out, _, err := run(t, env, admintest.ReadToken, "counts")
	require.NoError(t, err)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	require.Len(t, lines, 4)
	require.Regexp(t, `^BIZID\s+PREPARED\s+VERIFY_FAILED\s+COMMITTED/PENDING\s+COMMITTED/DEAD\s+COMMITTED/SENT\s+ROLLED_BACK\s+OLDEST PREPARED$`, lines[0])
	require.Regexp(t, `^orders\s+2\s+1\s+0\s+0\s+1\s+0\s+2026-03-04T04:56:07Z$`, lines[1])
	require.Regexp(t, `^pay\s+1\s+0\s+0\s+1\s+0\s+1\s+2026-03-04T05:01:07Z$`, lines[2])
	require.Regexp(t, `^TOTAL\s+3\s+1\s+0\s+1\s+1\s+1\s*$`, lines[3])
	out, _, err = run(t, env, admintest.ReadToken, "counts", "-o", "json")
	require.NoError(t, err)
	var c adminapi.Counts
	require.NoError(t, json.Unmarshal([]byte(out), &c))
	require.Equal(t, int64(7), c.Total)
}

func TestActions(t *testing.T) {
	t.Parallel()
	env := admintest.New(t, nil)
	out, _, err := run(t, env, admintest.AdminToken, "resolve", "orders:vf:1/x", "--decision", "commit", "--reason", "confirmed by phone")
	require.NoError(t, err)
	require.Equal(t, "resolve_commit orders:vf:1/x: VERIFY_FAILED → COMMITTED/PENDING (handed to the forwarder)\n", out)
	require.Len(t, env.Handoff.Messages(), 1)
	audit, err := env.Store.Audit(t.Context(), "orders", "vf:1/x")
	require.NoError(t, err)
	require.Equal(t, admintest.AdminName, audit[0].Who)
	require.Equal(t, "confirmed by phone", audit[0].Reason)

	// Wrong state: the server's reason, non-nil error.
	_, _, err = run(t, env, admintest.AdminToken, "resolve", "orders", "vf:1/x", "--decision", "rollback", "--reason", "x")
	require.ErrorContains(t, err, "409 Conflict")
	require.ErrorContains(t, err, "cannot resolve as rollback a COMMITTED message")

	out, _, err = run(t, env, admintest.AdminToken, "redeliver", "pay:p-dead", "--reason", "topic exists now", "-o", "json")
	require.NoError(t, err)
	var res adminapi.ActionResult
	require.NoError(t, json.Unmarshal([]byte(out), &res))
	require.Equal(t, "redeliver", res.Action)
	require.True(t, res.HandedOff)

	out, _, err = run(t, env, admintest.AdminToken, "retry", "orders:o-1", "--reason", "producer is back")
	require.NoError(t, err)
	require.Equal(t, "retry_now orders:o-1: PREPARED → PREPARED\n", out)

	// o-1 and o-2 (PREPARED) and vf (committed, send pending).
	out, _, err = run(t, env, admintest.AdminToken, "retry-biz", "orders", "--reason", "outage over")
	require.NoError(t, err)
	require.Equal(t, "reset 3 messages of orders\n", out)
}

func TestFailures(t *testing.T) {
	t.Parallel()
	env := admintest.New(t, nil)
	for name, c := range map[string]struct {
		token string
		args  []string
		want  string
	}{
		"no reason":        {admintest.AdminToken, []string{"retry", "orders:o-1"}, "--reason is required"},
		"no decision":      {admintest.AdminToken, []string{"resolve", "orders:o-1", "--reason", "r"}, `--decision ""`},
		"bad output":       {admintest.AdminToken, []string{"counts", "-o", "yaml"}, "--output"},
		"read token acts":  {admintest.ReadToken, []string{"retry", "orders:o-1", "--reason", "r"}, "403 Forbidden"},
		"no token":         {"", []string{"counts"}, "401 Unauthorized: missing bearer token"},
		"bad token":        {"wrong-token-wrong-token", []string{"counts"}, "invalid token"},
		"bad status":       {admintest.ReadToken, []string{"list", "--status", "DONE"}, "400 Bad Request: status"},
		"bad replay":       {admintest.AdminToken, []string{"dlq", "replay", "x", "1"}, "partition"},
		"no dlq":           {admintest.ReadToken, []string{"dlq", "list"}, "501 Not Implemented"},
		"unknown message":  {admintest.AdminToken, []string{"redeliver", "orders:ghost", "--reason", "r"}, "404 Not Found"},
		"too many args":    {admintest.ReadToken, []string{"get", "a", "b", "c"}, "accepts between 1 and 2 arg(s)"},
		"bad server value": {admintest.ReadToken, []string{"counts", "--server", "ftp://x"}, "want http://host:port"},
	} {
		_, _, err := run(t, env, c.token, c.args...)
		require.ErrorContains(t, err, c.want, name)
	}
	m, err := env.Store.Get(t.Context(), "orders", "o-1")
	require.NoError(t, err)
	require.Equal(t, 0, m.VerifyAttempts)
	audit, err := env.Store.Audit(t.Context(), "orders", "o-1")
	require.NoError(t, err)
	require.Empty(t, audit)
}

// The flags win over the environment.
func TestFlagsOverEnvironment(t *testing.T) {
	t.Parallel()
	env := admintest.New(t, nil)
	_, _, err := run(t, env, "wrong-token-wrong-token", "counts", "--token", admintest.ReadToken)
	require.NoError(t, err)
	_, _, err = run(t, env, admintest.ReadToken, "counts", "--server", "http://127.0.0.1:1")
	require.ErrorContains(t, err, "connect")
}

type memDLQ struct {
	replayed []string
	fixes    []admin.ReplayFix
}

func (m *memDLQ) List(context.Context, admin.DLQQuery) ([]admin.DLQRecord, string, error) {
	return []admin.DLQRecord{{Partition: 2, Offset: 5, Key: []byte("orders:k"), Value: []byte("junk"),
		Headers: envelopeHeaders("ec-dlq-reason", "decode: missing ec-key")}}, "2:6", nil
}

func (m *memDLQ) Get(_ context.Context, p int32, o int64) (admin.DLQRecord, error) {
	if p != 2 || o != 5 {
		return admin.DLQRecord{}, admin.ErrDLQNotFound
	}
	return admin.DLQRecord{Partition: 2, Offset: 5, Key: []byte("orders:k"), Value: []byte("junk whole"),
		Headers: envelopeHeaders("ec-dlq-reason", "decode: missing ec-key")}, nil
}

func (m *memDLQ) Replay(_ context.Context, p int32, o int64, fix admin.ReplayFix) (admin.DLQRecord, error) {
	if p != 2 || o != 5 {
		return admin.DLQRecord{}, admin.ErrDLQNotFound
	}
	m.replayed = append(m.replayed, "2/5")
	m.fixes = append(m.fixes, fix)
	return admin.DLQRecord{Partition: 2, Offset: 5, Key: []byte("orders:o-1")}, nil
}

func TestDLQ(t *testing.T) {
	t.Parallel()
	dlq := &memDLQ{}
	env := admintest.New(t, dlq)
	out, errOut, err := run(t, env, admintest.ReadToken, "dlq", "list")
	require.NoError(t, err)
	require.Regexp(t, `PARTITION\s+OFFSET\s+TIME\s+KEY\s+REASON\n2\s+5\s+\S+\s+orders:k\s+decode: missing ec-key\n`, out)
	require.Equal(t, "more: --cursor 2:6\n", errOut)
	out, _, err = run(t, env, admintest.ReadToken, "dlq", "get", "2", "5")
	require.NoError(t, err)
	require.Contains(t, out, "junk whole")
	out, _, err = run(t, env, admintest.AdminToken, "dlq", "replay", "2", "5", "--reason", "producer fixed")
	require.NoError(t, err)
	require.Equal(t, "replayed 2/5 to the control topic (audited on orders:o-1)\n", out)
	_, _, err = run(t, env, admintest.AdminToken, "dlq", "replay", "2", "6", "--reason", "producer fixed")
	require.ErrorContains(t, err, "404 Not Found")
	require.Equal(t, []string{"2/5"}, dlq.replayed)
}

// TestOrphans: list --orphan, close-orphan (refused for a message with a
// body), and dlq replay with --reason and --topic.
func TestOrphans(t *testing.T) {
	t.Parallel()
	dlq := &memDLQ{}
	env := admintest.New(t, dlq)
	now := env.Clock.Now()
	_, err := env.Store.Apply(t.Context(), store.ApplyRequest{Changes: []store.Change{
		{BizID: "orders", Key: "o-orphan", Event: state.Event{Kind: state.KindCommit, At: now.Add(-time.Hour)}},
	}})
	require.NoError(t, err)

	out, _, err := run(t, env, admintest.ReadToken, "list", "--orphan", "--older-than", "10m")
	require.NoError(t, err)
	require.Regexp(t, `(?s)^BIZID\s+KEY\s+STATUS.*\norders\s+o-orphan\s+COMMITTED/PENDING ORPHAN\(no PREPARE\)\s+0\s+\S+\s+-\n$`, out)
	// Listed with the rest, it is told apart from a committed message with
	// its body.
	out, _, err = run(t, env, admintest.ReadToken, "list", "--status", "COMMITTED", "--biz", "orders")
	require.NoError(t, err)
	require.Regexp(t, `\norders\s+o-orphan\s+COMMITTED/PENDING ORPHAN\(no PREPARE\)\s`, out)
	require.Regexp(t, `\norders\s+o-sent\s+COMMITTED/SENT\s`, out)
	out, _, err = run(t, env, admintest.ReadToken, "get", "orders:o-orphan")
	require.NoError(t, err)
	require.Contains(t, out, "ORPHAN(no PREPARE)")
	_, _, err = run(t, env, admintest.ReadToken, "list", "--orphan", "--status", "PREPARED")
	require.ErrorContains(t, err, "400 Bad Request")

	_, _, err = run(t, env, admintest.AdminToken, "close-orphan", "orders:o-orphan")
	require.ErrorContains(t, err, "--reason is required")
	_, _, err = run(t, env, admintest.ReadToken, "close-orphan", "orders:o-orphan", "--reason", "r")
	require.ErrorContains(t, err, "403 Forbidden")
	_, _, err = run(t, env, admintest.AdminToken, "close-orphan", "orders:o-sent", "--reason", "r")
	require.ErrorContains(t, err, "409 Conflict")
	require.ErrorContains(t, err, "has its body")
	out, _, err = run(t, env, admintest.AdminToken, "close-orphan", "orders", "o-orphan", "--reason", "never placed")
	require.NoError(t, err)
	require.Equal(t, "close_orphan orders:o-orphan: COMMITTED → ROLLED_BACK\n", out)
	audit, err := env.Store.Audit(t.Context(), "orders", "o-orphan")
	require.NoError(t, err)
	require.Equal(t, "never placed", audit[0].Reason)

	_, _, err = run(t, env, admintest.AdminToken, "dlq", "replay", "2", "5")
	require.ErrorContains(t, err, "--reason is required")
	require.Empty(t, dlq.replayed)
	out, _, err = run(t, env, admintest.AdminToken, "dlq", "replay", "2", "5", "--reason", "topic missing", "--topic", "orders.events")
	require.NoError(t, err)
	require.Equal(t, "replayed 2/5 to the control topic (audited on orders:o-1)\n", out, "the fake's record names orders:o-1, which exists")
	require.Equal(t, []admin.ReplayFix{{Topic: "orders.events"}}, dlq.fixes)
}

// Negative counts and durations are refused before any request, naming the
// flag (the server here is unreachable: a request would fail otherwise).
func TestNegativeFlagsAreErrors(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		args []string
		msg  string
	}{
		{[]string{"list", "--limit", "-1"}, "--limit: must not be negative, got -1"},
		{[]string{"list", "--older-than", "-15m"}, "--older-than: must not be negative, got -15m0s"},
		{[]string{"dlq", "list", "--limit", "-5"}, "--limit: must not be negative, got -5"},
		{[]string{"get", "orders:k1", "--timeout", "-1s"}, "--timeout: must not be negative, got -1s"},
		{[]string{"counts", "--timeout=-3s"}, "--timeout: must not be negative, got -3s"},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			t.Parallel()
			cmd := newCommand(func(k string) string {
				if k == EnvServer {
					return "http://127.0.0.1:1"
				}
				return ""
			})
			var out bytes.Buffer
			cmd.SetOut(&out)
			cmd.SetErr(&out)
			cmd.SetArgs(tc.args)
			err := cmd.ExecuteContext(t.Context())
			require.EqualError(t, err, tc.msg)
		})
	}
}

// TestAudit: "admin audit" lists operator actions newest first, with
// --biz-id and --limit, and says how to get the next page.
func TestAudit(t *testing.T) {
	t.Parallel()
	env := admintest.New(t, &memDLQ{})
	_, _, err := run(t, env, admintest.AdminToken, "retry", "orders:o-1", "--reason", "endpoint back")
	require.NoError(t, err)
	_, _, err = run(t, env, admintest.AdminToken, "dlq", "replay", "2", "5", "--reason", "producer fixed")
	require.NoError(t, err)
	out, errOut, err := run(t, env, admintest.ReadToken, "audit")
	require.NoError(t, err)
	require.Empty(t, errOut)
	require.Regexp(t, `ID\s+TIME\s+WHO\s+ACTION\s+MESSAGE\s+BEFORE → AFTER\s+REASON\n`+
		`2\s+\S+\s+`+admintest.AdminName+`\s+dlq_replay\s+orders:o-1\s+.*producer fixed.*\n`+
		`1\s+\S+\s+`+admintest.AdminName+`\s+retry_now\s+orders:o-1\s+PREPARED → PREPARED\s+endpoint back\n$`, out)
	_, errOut, err = run(t, env, admintest.ReadToken, "audit", "--limit", "1")
	require.NoError(t, err)
	require.Equal(t, "more: --before-id 2\n", errOut)
	out, _, err = run(t, env, admintest.ReadToken, "audit", "--biz-id", "pay", "-o", "json")
	require.NoError(t, err)
	require.JSONEq(t, `{"entries":[]}`, out)
	_, _, err = run(t, env, admintest.ReadToken, "audit", "--before-id", "x")
	require.ErrorContains(t, err, "400 Bad Request: before_id")
}
