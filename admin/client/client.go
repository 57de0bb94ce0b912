package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/go-resty/resty/v2"

	"github.com/eventcenter/eventcenter/admin/adminapi"
)

// Client talks to one eventcenter admin API. It is safe for concurrent use.
type Client struct {
	rc *resty.Client
	hc *http.Client
}

// Option configures a Client.
type Option func(*Client)

// WithHTTPClient sets the HTTP client (default: one with a 30s timeout).
func WithHTTPClient(hc *http.Client) Option { return func(c *Client) { c.hc = hc } }

// maxAnswerBytes bounds an answer of the server.
const maxAnswerBytes = 64 << 20

// New returns a client for the server at base (e.g. http://127.0.0.1:8080)
// sending token as a bearer token ("" sends none, for an insecure dev
// server).
func New(base, token string, opts ...Option) (*Client, error) {
	// "127.0.0.1:8080" fails to parse and "localhost:8080" parses with
	// scheme "localhost": both get the same answer, not the parser's.
	if u, err := url.Parse(base); err != nil || u.Scheme != "http" && u.Scheme != "https" || u.Host == "" {
		hint := ""
		if !strings.Contains(base, "://") {
			hint = fmt.Sprintf(" (did you mean http://%s?)", base)
		}
		return nil, fmt.Errorf("admin server %q: want http://host:port or https://host:port%s", base, hint)
	}
	c := &Client{hc: &http.Client{Timeout: 30 * time.Second}}
	for _, o := range opts {
		o(c)
	}
	// One resty client: the base URL, the token, JSON both ways, no
	// retries (an operator action must not run twice behind the
	// operator's back) and a bound on what an answer may hold.
	c.rc = resty.NewWithClient(c.hc).
		SetBaseURL(strings.TrimRight(base, "/")).
		SetHeader("Accept", "application/json").
		SetRetryCount(0).
		SetResponseBodyLimit(maxAnswerBytes).
		SetDisableWarn(true)
	if token != "" {
		c.rc.SetAuthToken(token)
	}
	return c, nil
}

// Error is an error answer of the server.
type Error struct {
	// StatusCode is the HTTP status (400 bad parameter, 401 no or wrong
	// token, 403 read token on an action, 404 unknown message, 409 wrong
	// state, 5xx server or store failure).
	StatusCode int
	// Message is the server's explanation.
	Message string
}

func (e *Error) Error() string {
	return fmt.Sprintf("%d %s: %s", e.StatusCode, http.StatusText(e.StatusCode), e.Message)
}

// IsStatus tells whether err is an *Error with the given status.
func IsStatus(err error, code int) bool {
	var e *Error
	return errors.As(err, &e) && e.StatusCode == code
}

// do sends body (nil: none) as JSON and decodes a 2xx answer into out,
// whatever its Content-Type says; another status is an *Error.
func (c *Client) do(ctx context.Context, method, path string, q url.Values, body, out any) error {
	req := c.rc.R().SetContext(ctx).SetQueryParamsFromValues(q)
	if body != nil {
		req.SetHeader("Content-Type", "application/json").SetBody(body)
	}
	resp, err := req.Execute(method, path)
	if err != nil {
		return fmt.Errorf("%s %s: %w", method, path, err)
	}
	b := resp.Body()
	if !resp.IsSuccess() {
		var e adminapi.Error
		if json.Unmarshal(b, &e) != nil || e.Error == "" {
			e.Error = strings.TrimSpace(string(b))
			if len(e.Error) > 500 {
				e.Error = e.Error[:500] + "…"
			}
		}
		return &Error{StatusCode: resp.StatusCode(), Message: e.Error}
	}
	if err := json.Unmarshal(b, out); err != nil {
		return fmt.Errorf("%s %s: decode answer: %w", method, path, err)
	}
	return nil
}

// ListOptions filters List. Zero fields do not filter.
type ListOptions struct {
	// Status is PREPARED, COMMITTED, ROLLED_BACK or VERIFY_FAILED.
	Status string
	// SendStatus is PENDING, SENT or DEAD.
	SendStatus string
	BizID      string
	// Key selects keys containing it.
	Key string
	// OlderThan selects messages created longer ago.
	OlderThan time.Duration
	// Orphan selects orphan COMMITs: COMMITTED without a body (the
	// PREPARE was dead-lettered or never came).
	Orphan bool
	Limit  int
	// Cursor is the Next of the previous page.
	Cursor string
}

// List returns one page of messages, newest first.
func (c *Client) List(ctx context.Context, o ListOptions) (adminapi.MessageList, error) {
	q := url.Values{}
	set := func(k, v string) {
		if v != "" {
			q.Set(k, v)
		}
	}
	set("status", o.Status)
	set("send_status", o.SendStatus)
	set("biz_id", o.BizID)
	set("key", o.Key)
	if o.OlderThan > 0 {
		q.Set("older_than", o.OlderThan.String())
	}
	if o.Orphan {
		q.Set("orphan", "true")
	}
	if o.Limit > 0 {
		q.Set("limit", strconv.Itoa(o.Limit))
	}
	set("cursor", o.Cursor)
	var out adminapi.MessageList
	return out, c.do(ctx, http.MethodGet, adminapi.Prefix+"/messages", q, nil, &out)
}

// Get returns one message with its audit records.
func (c *Client) Get(ctx context.Context, bizID, key string) (adminapi.MessageDetail, error) {
	var out adminapi.MessageDetail
	return out, c.do(ctx, http.MethodGet, adminapi.MessagePath(bizID, key), nil, nil, &out)
}

// Counts returns the number of messages per bizID and status.
func (c *Client) Counts(ctx context.Context) (adminapi.Counts, error) {
	var out adminapi.Counts
	return out, c.do(ctx, http.MethodGet, adminapi.Prefix+"/counts", nil, nil, &out)
}

// Resolve decides a PREPARED or VERIFY_FAILED message: decision is
// adminapi.DecisionCommit or adminapi.DecisionRollback.
func (c *Client) Resolve(ctx context.Context, bizID, key, decision, reason string) (adminapi.ActionResult, error) {
	var out adminapi.ActionResult
	return out, c.do(ctx, http.MethodPost, adminapi.ActionPath(bizID, key, "resolve"), nil,
		adminapi.ActionRequest{Decision: decision, Reason: reason}, &out)
}

// Redeliver sends a committed message (DEAD or SENT) again.
func (c *Client) Redeliver(ctx context.Context, bizID, key, reason string) (adminapi.ActionResult, error) {
	var out adminapi.ActionResult
	return out, c.do(ctx, http.MethodPost, adminapi.ActionPath(bizID, key, "redeliver"), nil,
		adminapi.ActionRequest{Reason: reason}, &out)
}

// Retry checks back (PREPARED, VERIFY_FAILED) or sends (pending, DEAD) a
// message now, with fresh attempts.
func (c *Client) Retry(ctx context.Context, bizID, key, reason string) (adminapi.ActionResult, error) {
	var out adminapi.ActionResult
	return out, c.do(ctx, http.MethodPost, adminapi.ActionPath(bizID, key, "retry"), nil,
		adminapi.ActionRequest{Reason: reason}, &out)
}

// CloseOrphan closes an orphan COMMIT (COMMITTED without a body) as rolled
// back: it is never forwarded. The server answers 409 for any other state.
func (c *Client) CloseOrphan(ctx context.Context, bizID, key, reason string) (adminapi.ActionResult, error) {
	var out adminapi.ActionResult
	return out, c.do(ctx, http.MethodPost, adminapi.ActionPath(bizID, key, adminapi.ActionCloseOrphan), nil,
		adminapi.ActionRequest{Reason: reason}, &out)
}

// CloseHead gives up the head of a blocked order key: it goes DEAD (never
// sent unless retried) and the later messages of its key go on.
func (c *Client) CloseHead(ctx context.Context, bizID, key, reason string) (adminapi.ActionResult, error) {
	var out adminapi.ActionResult
	return out, c.do(ctx, http.MethodPost, adminapi.ActionPath(bizID, key, adminapi.ActionCloseHead), nil,
		adminapi.ActionRequest{Reason: reason}, &out)
}

// Cancel cancels a message that is not sent yet (typically a SCHEDULED
// one): it ends CANCELLED and is never sent. Refused for a sent, rolled
// back or cancelled message.
func (c *Client) Cancel(ctx context.Context, bizID, key, reason string) (adminapi.ActionResult, error) {
	var out adminapi.ActionResult
	return out, c.do(ctx, http.MethodPost, adminapi.ActionPath(bizID, key, adminapi.ActionCancel), nil,
		adminapi.ActionRequest{Reason: reason}, &out)
}

// Release lets the later messages of a message's order key go on without
// it; the message is still sent, without order.
func (c *Client) Release(ctx context.Context, bizID, key, reason string) (adminapi.ActionResult, error) {
	var out adminapi.ActionResult
	return out, c.do(ctx, http.MethodPost, adminapi.ActionPath(bizID, key, adminapi.ActionRelease), nil,
		adminapi.ActionRequest{Reason: reason}, &out)
}

// Blocked lists the order keys whose head is DEAD or failing (bizID ""
// for all; limit 0 for the server's default).
func (c *Client) Blocked(ctx context.Context, bizID string, limit int) (adminapi.BlockedKeys, error) {
	q := url.Values{}
	if bizID != "" {
		q.Set("biz_id", bizID)
	}
	if limit > 0 {
		q.Set("limit", strconv.Itoa(limit))
	}
	var out adminapi.BlockedKeys
	return out, c.do(ctx, http.MethodGet, adminapi.Prefix+"/blocked", q, nil, &out)
}

// RetryBizID retries every unfinished message of a bizID now.
func (c *Client) RetryBizID(ctx context.Context, bizID, reason string) (adminapi.BulkRetryResult, error) {
	var out adminapi.BulkRetryResult
	return out, c.do(ctx, http.MethodPost, adminapi.BizRetryPath(bizID), nil, adminapi.ActionRequest{Reason: reason}, &out)
}

// DLQ returns one page of the default lane's dead-letter records.
func (c *Client) DLQ(ctx context.Context, limit int, cursor string) (adminapi.DLQList, error) {
	return c.LaneDLQ(ctx, "", limit, cursor)
}

// LaneDLQ returns one page of a lane's dead-letter records ("" for the
// default lane); the answer lists the center's lanes.
func (c *Client) LaneDLQ(ctx context.Context, lane string, limit int, cursor string) (adminapi.DLQList, error) {
	q := laneQuery(lane)
	if limit > 0 {
		q.Set("limit", strconv.Itoa(limit))
	}
	if cursor != "" {
		q.Set("cursor", cursor)
	}
	var out adminapi.DLQList
	return out, c.do(ctx, http.MethodGet, adminapi.Prefix+"/dlq", q, nil, &out)
}

// DLQRecord returns one whole dead-letter record of the default lane.
func (c *Client) DLQRecord(ctx context.Context, partition int32, offset int64) (adminapi.DLQRecord, error) {
	return c.LaneDLQRecord(ctx, "", partition, offset)
}

// LaneDLQRecord returns one whole dead-letter record of a lane ("" for the
// default lane).
func (c *Client) LaneDLQRecord(ctx context.Context, lane string, partition int32, offset int64) (adminapi.DLQRecord, error) {
	var out adminapi.DLQRecord
	return out, c.do(ctx, http.MethodGet, adminapi.DLQRecordPath(partition, offset), laneQuery(lane), nil, &out)
}

// ReplayDLQ sends one dead-letter record of the default lane back to the
// control topic, with the reason and, optionally, the fix in req.
func (c *Client) ReplayDLQ(ctx context.Context, partition int32, offset int64, req adminapi.DLQReplayRequest) (adminapi.DLQReplayResult, error) {
	return c.ReplayLaneDLQ(ctx, "", partition, offset, req)
}

// ReplayLaneDLQ sends one dead-letter record of a lane ("" for the default
// lane) back to that lane's control topic, with the reason and,
// optionally, the fix in req.
func (c *Client) ReplayLaneDLQ(ctx context.Context, lane string, partition int32, offset int64, req adminapi.DLQReplayRequest) (adminapi.DLQReplayResult, error) {
	var out adminapi.DLQReplayResult
	return out, c.do(ctx, http.MethodPost, adminapi.DLQReplayPath(partition, offset), laneQuery(lane), req, &out)
}

// laneQuery is ?lane=NAME, or no parameter for the default lane.
func laneQuery(lane string) url.Values {
	q := url.Values{}
	if lane != "" {
		q.Set("lane", lane)
	}
	return q
}

// AuditOptions select audit records (zero values: all).
type AuditOptions struct {
	BizID    string
	Since    time.Time
	BeforeID string
	Limit    int
}

// AuditLog returns one page of the audit log, newest first.
func (c *Client) AuditLog(ctx context.Context, o AuditOptions) (adminapi.AuditLog, error) {
	q := url.Values{}
	if o.BizID != "" {
		q.Set("biz_id", o.BizID)
	}
	if !o.Since.IsZero() {
		q.Set("since", o.Since.UTC().Format(time.RFC3339))
	}
	if o.BeforeID != "" {
		q.Set("before_id", o.BeforeID)
	}
	if o.Limit > 0 {
		q.Set("limit", strconv.Itoa(o.Limit))
	}
	var out adminapi.AuditLog
	return out, c.do(ctx, http.MethodGet, adminapi.Prefix+"/audit", q, nil, &out)
}
