package sqlcore

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/eventcenter/eventcenter/state"
	"github.com/eventcenter/eventcenter/store"
	"github.com/eventcenter/eventcenter/store/internal/codec"
)

// RetryNowChunk is how many messages one RetryNowBizID transaction resets.
const RetryNowChunk = 500

// Tx is one transaction of a driver, as the core drives it.
type Tx interface {
	// Load reads and locks the rows of refs that exist.
	Load(ctx context.Context, refs []store.MessageRef) (map[store.MessageRef]*state.Message, error)
	// LoadRetryNow reads and locks, by id, up to limit rows of bizID with
	// an id above after that store.RetryNowEligible names.
	LoadRetryNow(ctx context.Context, bizID string, after int64, limit int) ([]state.Message, error)
	// Write writes a prepared Fold result (loaded is what Load returned).
	// It is the transaction's last statement: a driver may send its
	// COMMIT with it.
	Write(ctx context.Context, loaded map[store.MessageRef]*state.Message, f *store.Folded) error
	// AssignSeqs numbers need (sendable, with an order key and no
	// sequence) from their queues' counters, in order (see SQLOrder).
	AssignSeqs(ctx context.Context, need []*state.Message) error
	// Holders returns, per queue of refs, the lowest sequence of the
	// messages that hold it (state.Message.HoldsOrder), leaving out the
	// rows of ids (the batch's, whose new state counts instead).
	Holders(ctx context.Context, refs []store.OrderRef, exclude []int64) (map[store.OrderRef]int64, error)
	// Wake makes the next message of the queues of ids due at now (see
	// WakeSQL); it runs in a transaction of its own after the batch that
	// freed them committed.
	// It returns how many it made due.
	Wake(ctx context.Context, ids []int64, now time.Time) (int, error)
}

// Driver runs transactions.
type Driver interface {
	// InTx runs fn in one transaction and commits it; an error from fn
	// rolls it back.
	InTx(ctx context.Context, fn func(tx Tx) error) error
}

// Core is the write sequence shared by the stores: its Apply and
// RetryNowBizID implement store.Store's. Create it with NewCore.
type Core struct {
	driver Driver
	now    func() time.Time
	log    *slog.Logger
	// tries is how often Apply tries a batch whose error retry accepts
	// (once when retryable is nil).
	tries     int
	retryable func(error) bool
	translate func(error) error
}

// ErrInsertRace says another transaction inserted one of a batch's new keys
// (the try is rolled back and run again).
var ErrInsertRace = errors.New("concurrent insert of the same message")

// NewCore returns the core of a store whose transactions d runs: now is
// its clock (nil: time.Now), log receives the retries (nil:
// slog.Default()), tries is how often Apply tries a batch whose error
// retryable accepts (0: five; must not be negative, driver names the
// options in the error), retryable nil means never, and translate turns a
// driver error into one callers may see (nil keeps it).
func NewCore(driver string, d Driver, now func() time.Time, log *slog.Logger, tries int,
	retryable func(error) bool, translate func(error) error) (Core, error) {
	if tries < 0 {
		return Core{}, fmt.Errorf("%s options: ApplyTries must not be negative", driver)
	}
	return Core{driver: d, now: Clock(now), log: Logger(log), tries: Tries(tries),
		retryable: retryable, translate: translate}, nil
}

// Clock returns now, or time.Now when it is nil.
func Clock(now func() time.Time) func() time.Time {
	if now == nil {
		return time.Now
	}
	return now
}

// Logger returns log, or slog.Default() when it is nil.
func Logger(log *slog.Logger) *slog.Logger {
	if log == nil {
		return slog.Default()
	}
	return log
}

// Tries returns tries, or 5 when it is 0.
func Tries(tries int) int {
	if tries == 0 {
		return 5
	}
	return tries
}

// Store is what a driver's store embeds: the shared Apply and
// RetryNowBizID (Core) and reads (Reads).
type Store[T any] struct {
	Core
	Reads[T]
}

// retry tells whether an Apply try may simply be run again: a concurrent
// insert of the same key, or what retryable accepts.
func (c *Core) retry(err error) bool {
	return errors.Is(err, ErrInsertRace) || c.retryable(err)
}

func (c *Core) translateErr(err error) error {
	if c.translate == nil {
		return err
	}
	return c.translate(err)
}

// Apply implements store.Store.Apply: each try loads and locks the rows
// the changes touch, folds the changes, leases and forwards what became
// sendable (codec.Prepare) and writes the result, in one transaction.
func (c *Core) Apply(ctx context.Context, req store.ApplyRequest) (store.ApplyResult, error) {
	if len(req.Changes) == 0 {
		return store.ApplyResult{}, nil
	}
	refs := store.Refs(req.Changes)
	var park time.Time
	if req.SendLease > 0 {
		park = c.now().Add(req.SendLease)
	}
	drv, canAhead := c.driver.(AheadDriver)
	for attempt := 1; ; attempt++ {
		var res store.ApplyResult
		var wake []int64
		var sendAhead []state.Message
		var parkedQueues map[store.OrderRef]bool
		confirm := false
		err := c.driver.InTx(ctx, func(tx Tx) error {
			var loaded map[store.MessageRef]*state.Message
			var ah *ahead
			var err error
			if at, ok := tx.(AheadTx); ok && canAhead {
				ah = &ahead{tx: at, write: req.WriteAhead && req.Ordered && req.SendAhead != nil}
				loaded, ah.wm, err = at.LoadAhead(ctx, refs)
			} else {
				loaded, err = tx.Load(ctx, refs)
			}
			if err != nil {
				return fmt.Errorf("load messages: %w", err)
			}
			f := store.Fold(loaded, req.Changes)
			now := codec.Time(c.now())
			if ah != nil && hasOffsets(req.Changes) {
				ah.recover(loaded, &f, now)
			}
			parked, err := order(ctx, tx, &f, req.Ordered, park, ah)
			if err != nil {
				return err
			}
			codec.Prepare(ctx, &f, now, req)
			if ah != nil {
				ah.writeAhead(&f, now)
			}
			if err := tx.Write(ctx, loaded, &f); err != nil {
				return err
			}
			wake = freed(loaded, &f, parked)
			parkedQueues = parked
			res = codec.Result(&f)
			res.Unconfirmed = 0
			sendAhead, confirm = nil, false
			if ah != nil {
				res.Unconfirmed = len(ah.recovered)
				confirm = ah.confirms(&f) && hasOffsets(req.Changes)
				for _, m := range f.Ahead {
					sendAhead = append(sendAhead, *m)
				}
			}
			return nil
		})
		if err == nil {
			if confirm {
				if err := c.sendAhead(ctx, drv, req, sendAhead, parkedQueues, &res); err != nil {
					return store.ApplyResult{}, err
				}
			}
			res.Woken += c.wake(ctx, wake)
			return res, nil
		}
		if c.retryable == nil {
			return store.ApplyResult{}, fmt.Errorf("apply: %w", c.translateErr(err))
		}
		if !c.retry(err) || attempt >= c.tries || ctx.Err() != nil {
			return store.ApplyResult{}, fmt.Errorf("apply (try %d): %w", attempt, c.translateErr(err))
		}
		c.log.Debug("retrying store apply", "try", attempt, "err", err)
	}
}

// hasOffsets tells whether a change of the batch comes from a control
// record.
func hasOffsets(changes []store.Change) bool {
	for _, c := range changes {
		if c.HasOffset {
			return true
		}
	}
	return false
}

// wake makes the next messages of the queues the batch freed due now and
// returns how many it made due. A failure is logged only: a parked
// message is due again after its park (the send lease) anyway.
func (c *Core) wake(ctx context.Context, ids []int64) int {
	if len(ids) == 0 {
		return 0
	}
	now := codec.Time(c.now())
	n := 0
	err := c.driver.InTx(ctx, func(tx Tx) error {
		var err error
		n, err = tx.Wake(ctx, ids, now)
		return err
	})
	if err != nil {
		if ctx.Err() == nil {
			c.log.Warn("waking the next messages of freed order keys failed; they are due after their park", "err", c.translateErr(err))
		}
		return 0
	}
	return n
}

// RetryNowBizID implements store.Store.RetryNowBizID: the eligible rows of
// bizID, RetryNowChunk at a time in id order, each chunk folded through a
// state.KindRetryNow with an audit record and written in one transaction.
func (c *Core) RetryNowBizID(ctx context.Context, bizID string, who store.Actor) (int, error) {
	total := 0
	var lastID int64
	for {
		n, done := 0, 0
		err := c.driver.InTx(ctx, func(tx Tx) error {
			ms, err := tx.LoadRetryNow(ctx, bizID, lastID, RetryNowChunk)
			if err != nil {
				return err
			}
			n = len(ms)
			if n == 0 {
				return nil
			}
			lastID = ms[n-1].ID
			now := codec.Time(c.now())
			loaded, changes := retryNowChanges(ms, now, who)
			f := store.Fold(loaded, changes)
			if _, err := order(ctx, tx, &f, false, time.Time{}, nil); err != nil {
				return err
			}
			codec.Prepare(ctx, &f, now, store.ApplyRequest{})
			if err := tx.Write(ctx, loaded, &f); err != nil {
				return err
			}
			done = len(f.Updates)
			return nil
		})
		if err != nil {
			return total, fmt.Errorf("retry now %s: %w", bizID, c.translateErr(err))
		}
		total += done
		if n < RetryNowChunk {
			return total, nil
		}
	}
}

// retryNowChanges returns ms keyed for store.Fold and one retry-now change
// each, audited as who.
func retryNowChanges(ms []state.Message, now time.Time, who store.Actor) (map[store.MessageRef]*state.Message, []store.Change) {
	loaded := make(map[store.MessageRef]*state.Message, len(ms))
	changes := make([]store.Change, len(ms))
	for i := range ms {
		m := &ms[i]
		loaded[store.MessageRef{BizID: m.BizID, Key: m.Key}] = m
		a := who
		changes[i] = store.Change{BizID: m.BizID, Key: m.Key, Partition: m.Partition,
			Event: state.Event{Kind: state.KindRetryNow, At: now}, Audit: &a}
	}
	return loaded, changes
}

// Keyed returns ms keyed by reference, as Tx.Load returns them.
func Keyed(ms []state.Message) map[store.MessageRef]*state.Message {
	loaded := make(map[store.MessageRef]*state.Message, len(ms))
	for i := range ms {
		loaded[store.MessageRef{BizID: ms[i].BizID, Key: ms[i].Key}] = &ms[i]
	}
	return loaded
}
