package adminapi

import (
	"net/url"
	"strconv"
	"time"
)

// Prefix is where the API lives.
const Prefix = "/api/v1"

// Message is one message as the list shows it.
type Message struct {
	// ID is "bizID:messageKey".
	ID        string `json:"id"`
	BizID     string `json:"biz_id"`
	Key       string `json:"key"`
	Partition int32  `json:"partition"`
	// Status is PREPARED, COMMITTED, ROLLED_BACK, VERIFY_FAILED or
	// CANCELLED.
	Status string `json:"status"`
	// SendStatus is PENDING, SENT or DEAD; set for committed messages only.
	SendStatus string `json:"send_status,omitempty"`
	HasBody    bool   `json:"has_body"`

	Target     string `json:"target,omitempty"`
	Topic      string `json:"topic,omitempty"`
	ForwardKey string `json:"forward_key,omitempty"`
	Tag        string `json:"tag,omitempty"`
	Verify     string `json:"verify,omitempty"`

	VerifyAttempts int        `json:"verify_attempts"`
	VerifyNextAt   *time.Time `json:"verify_next_at,omitempty"`
	SendAttempts   int        `json:"send_attempts"`
	SendNextAt     *time.Time `json:"send_next_at,omitempty"`
	// SendRef is the broker's reference of the forwarded record.
	SendRef   string `json:"send_ref,omitempty"`
	LastError string `json:"last_error,omitempty"`
	Conflicts int    `json:"conflicts,omitempty"`
	// OrderKey is the message's order key (ec-order-key); OrderSeq its
	// place in its key's commit order (0: unordered, or released).
	OrderKey string `json:"order_key,omitempty"`
	OrderSeq int64  `json:"order_seq,omitempty"`
	// DeliverAt is the message's scheduled time (ec-deliver-at, or
	// ec-delay resolved): a COMMITTED PENDING message is SCHEDULED until
	// then, and its send_next_at is its deliver-at until it falls due.
	DeliverAt *time.Time `json:"deliver_at,omitempty"`

	PayloadSize int `json:"payload_size"`

	CreatedAt *time.Time `json:"created_at,omitempty"`
	UpdatedAt *time.Time `json:"updated_at,omitempty"`
	DecidedAt *time.Time `json:"decided_at,omitempty"`
	SentAt    *time.Time `json:"sent_at,omitempty"`
}

// Header is one forwarded header.
type Header struct {
	Key string `json:"key"`
	// Value is the value as text when it is valid UTF-8.
	Value *string `json:"value,omitempty"`
	// ValueBase64 is the raw value. A message's headers always have it; a
	// dead letter's have it only when Value is not set (one encoding each).
	ValueBase64 string `json:"value_base64,omitempty"`
}

// AuditEntry is one recorded operator action.
type AuditEntry struct {
	Action string    `json:"action"`
	Who    string    `json:"who"`
	Reason string    `json:"reason"`
	At     time.Time `json:"at"`
	Before string    `json:"before"`
	After  string    `json:"after"`
}

// MessageDetail is the full record of one message.
type MessageDetail struct {
	Message
	// PayloadBase64 is the payload, always present.
	PayloadBase64 string `json:"payload_base64"`
	// PayloadText is the payload when it is valid UTF-8.
	PayloadText *string      `json:"payload_text,omitempty"`
	Headers     []Header     `json:"headers,omitempty"`
	Audit       []AuditEntry `json:"audit"`
	// Actions lists what the message's state allows now: resolve,
	// redeliver, retry, close-orphan.
	Actions []string `json:"actions"`
}

// MessageList is one page of GET /api/v1/messages.
type MessageList struct {
	Messages []Message `json:"messages"`
	// Next is the cursor of the next page; empty on the last page.
	Next string `json:"next,omitempty"`
}

// Count is the number of messages with one bizID and status (and send
// status for committed messages).
type Count struct {
	BizID      string `json:"biz_id"`
	Status     string `json:"status"`
	SendStatus string `json:"send_status,omitempty"`
	N          int64  `json:"n"`
	// Scheduled is how many of the N are SCHEDULED (COMMITTED PENDING,
	// held until a deliver-at still to come).
	Scheduled int64 `json:"scheduled,omitempty"`
}

// Counts is GET /api/v1/counts.
type Counts struct {
	Counts []Count `json:"counts"`
	// ByStatus sums over bizIDs; committed messages are split as
	// COMMITTED/PENDING (due), COMMITTED/SCHEDULED (held until their
	// deliver-at; present when there are some), COMMITTED/SENT,
	// COMMITTED/DEAD.
	ByStatus map[string]int64 `json:"by_status"`
	// ByBizID is the same split per bizID.
	ByBizID map[string]map[string]int64 `json:"by_biz_id"`
	// OldestPrepared is the creation time of the oldest PREPARED message
	// per bizID.
	OldestPrepared map[string]time.Time `json:"oldest_prepared"`
	Total          int64                `json:"total"`
	// DifferingPrepares counts, per bizID, duplicate PREPAREs ignored
	// because they brought a body different from the stored one. It is
	// the answering instance's count since it started (not stored), for
	// the control partitions it owns.
	DifferingPrepares map[string]int64 `json:"differing_prepares,omitempty"`
}

// Decision values of ActionRequest.
const (
	DecisionCommit   = "commit"
	DecisionRollback = "rollback"
)

// ActionRequest is the body of the action endpoints. Reason is required;
// Decision only for resolve.
type ActionRequest struct {
	Decision string `json:"decision,omitempty"`
	Reason   string `json:"reason"`
}

// ActionResult is what an action on one message did.
type ActionResult struct {
	// Action is the operator event applied (resolve_commit, resolve_rollback,
	// redeliver, retry_now, close_orphan).
	Action string `json:"action"`
	// Effect is "applied" or "noop".
	Effect string `json:"effect"`
	// HandedOff tells whether the message was handed to the forwarder at
	// once (otherwise its periodic scan picks it up when due).
	HandedOff bool          `json:"handed_off"`
	Message   MessageDetail `json:"message"`
}

// BulkRetryResult is the answer of POST /api/v1/bizids/{bizID}/retry.
type BulkRetryResult struct {
	BizID string `json:"biz_id"`
	Reset int    `json:"reset"`
}

// DLQRecord is one record of the dead-letter topic.
type DLQRecord struct {
	// Lane is the lane whose dead-letter topic holds the record ("" for
	// the default lane, kafka.control_topic's).
	Lane      string    `json:"lane,omitempty"`
	Partition int32     `json:"partition"`
	Offset    int64     `json:"offset"`
	Timestamp time.Time `json:"timestamp"`
	// Key is the record key (bizID:messageKey when it could be read).
	Key string `json:"key"`
	// Reason is why it was set aside (the ec-dlq-reason header).
	Reason string `json:"reason,omitempty"`
	// Info holds every ec-dlq-* header, by name without the prefix.
	Info map[string]string `json:"info,omitempty"`
	// Value is the value, encoded once as ValueEncoding says: "text" (it
	// is valid UTF-8) or "base64". In a list it is a preview: at most
	// DLQList.PreviewBytes of the value (ValueTruncated then tells it was
	// cut); GET /api/v1/dlq/{partition}/{offset} has the whole value.
	Value         string `json:"value"`
	ValueEncoding string `json:"value_encoding"`
	// ValueSize is the whole value's size in bytes.
	ValueSize      int  `json:"value_size"`
	ValueTruncated bool `json:"value_truncated,omitempty"`
	// Headers are the record's other headers (in a list, values are cut
	// to the preview too).
	Headers []Header `json:"headers,omitempty"`
}

// Value encodings of DLQRecord.
const (
	EncodingText   = "text"
	EncodingBase64 = "base64"
)

// DLQList is GET /api/v1/dlq. A page holds at most limit records and stops
// before the record that would take the whole size of its records past
// MaxBytes (the first record always comes); Next is where to continue.
// ?lane=NAME lists an extra lane's dead-letter topic (absent or empty: the
// default lane's).
type DLQList struct {
	// Lane is the lane listed ("" for the default lane).
	Lane string `json:"lane,omitempty"`
	// Lanes are the center's extra lanes (kafka.lanes) by name, each
	// with a dead-letter topic of its own; the default lane is not among
	// them.
	Lanes   []string    `json:"lanes,omitempty"`
	Records []DLQRecord `json:"records"`
	Next    string      `json:"next,omitempty"`
	// PreviewBytes is the most bytes of a value (and of a header value)
	// a record in the list shows.
	PreviewBytes int `json:"preview_bytes"`
	// MaxBytes bounds the page by the whole size of its records.
	MaxBytes int `json:"max_bytes"`
}

// DLQReplayRequest is the body of POST /api/v1/dlq/{partition}/{offset}/replay.
// Reason is required. Topic, when set, supplies the forward topic of a
// PREPARE that was dead-lettered for lacking a valid one (ec-topic, or
// forwardTopic of a MiddlewareMessage JSON). The record, fixed, must be a
// valid envelope, else the replay is refused (409) with the reason.
// ?lane=NAME replays a record of an extra lane's dead-letter topic to that
// lane's control topic (absent or empty: the default lane).
type DLQReplayRequest struct {
	Reason string `json:"reason"`
	Topic  string `json:"topic,omitempty"`
}

// DLQReplayResult is the answer of POST /api/v1/dlq/{partition}/{offset}/replay.
type DLQReplayResult struct {
	// Lane is the lane whose dead letter was replayed, to its control
	// topic ("" for the default lane).
	Lane      string `json:"lane,omitempty"`
	Partition int32  `json:"partition"`
	Offset    int64  `json:"offset"`
	Replayed  bool   `json:"replayed"`
	// Key is the replayed record's key (bizID:messageKey).
	Key string `json:"key,omitempty"`
	// Audited tells whether the replay was written to the audit log (under
	// the message it names, or "dlq:partition/offset" when it names none;
	// "dlq:lane:partition/offset" for an extra lane's).
	Audited bool `json:"audited"`
	// Known tells whether the record names a message the center has.
	Known bool `json:"known,omitempty"`
}

// AuditLogEntry is one operator action in the audit log.
type AuditLogEntry struct {
	ID    int64  `json:"id"`
	BizID string `json:"biz_id"`
	Key   string `json:"key"`
	AuditEntry
}

// AuditLog is a page of the audit log, newest first; Next, when set, is
// the before_id of the next page.
type AuditLog struct {
	Entries []AuditLogEntry `json:"entries"`
	Next    string          `json:"next,omitempty"`
}

// Error is the body of every error answer.
type Error struct {
	Error string `json:"error"`
}

// dotKey tells whether a key cannot be a path segment: HTTP routers clean
// "." and ".." segments away, escaped or not.
func dotKey(key string) bool { return key == "." || key == ".." }

// MessagePath is the path of one message: /api/v1/messages/{bizID}/{key},
// each escaped as one segment. A key "." or ".." goes in a query parameter
// instead: /api/v1/messages/{bizID}?key=..
func MessagePath(bizID, key string) string {
	if dotKey(key) {
		return Prefix + "/messages/" + url.PathEscape(bizID) + "?key=" + url.QueryEscape(key)
	}
	return Prefix + "/messages/" + url.PathEscape(bizID) + "/" + url.PathEscape(key)
}

// Action names of ActionPath.
const (
	ActionResolve     = "resolve"
	ActionRedeliver   = "redeliver"
	ActionRetry       = "retry"
	ActionCloseOrphan = "close-orphan"
	// ActionCloseHead gives up the head of a blocked order key (DEAD, never
	// sent unless retried) and lets the key's later messages go on.
	ActionCloseHead = "close-head"
	// ActionRelease lets the later messages of a message's order key go on
	// without it; it is still sent, without order.
	ActionRelease = "release"
	// ActionCancel cancels a message that is not sent yet (typically a
	// SCHEDULED one): it ends CANCELLED and is never sent.
	ActionCancel = "cancel"
)

// ActionPath is the path of an action (resolve, redeliver, retry, close-orphan) on one
// message: /api/v1/messages/{bizID}/{key}/{action} (or, for a key "." or
// "..", /api/v1/messages/{bizID}/{action}?key=...).
func ActionPath(bizID, key, action string) string {
	if dotKey(key) {
		return Prefix + "/messages/" + url.PathEscape(bizID) + "/" + action + "?key=" + url.QueryEscape(key)
	}
	return MessagePath(bizID, key) + "/" + action
}

// BizRetryPath is the path of the bulk retry of a bizID.
func BizRetryPath(bizID string) string {
	return Prefix + "/bizids/" + url.PathEscape(bizID) + "/retry"
}

// DLQRecordPath is the path of one whole dead-letter record.
func DLQRecordPath(partition int32, offset int64) string {
	return Prefix + "/dlq/" + strconv.FormatInt(int64(partition), 10) + "/" + strconv.FormatInt(offset, 10)
}

// DLQReplayPath is the path that replays one dead-letter record.
func DLQReplayPath(partition int32, offset int64) string {
	return Prefix + "/dlq/" + strconv.FormatInt(int64(partition), 10) + "/" + strconv.FormatInt(offset, 10) + "/replay"
}

// BlockedKey is an order key whose head message is DEAD or failing: the
// later messages of the key wait for it.
type BlockedKey struct {
	BizID    string `json:"biz_id"`
	OrderKey string `json:"order_key"`
	Target   string `json:"target,omitempty"`
	Topic    string `json:"topic"`
	// Head is the message that holds the key (its last_error says why).
	Head Message `json:"head"`
	// Waiting is how many later messages of the key wait behind it.
	Waiting int64 `json:"waiting"`
	// Since is when the head was committed.
	Since time.Time `json:"since"`
}

// BlockedKeys is GET /api/v1/blocked.
type BlockedKeys struct {
	Keys []BlockedKey `json:"keys"`
}
