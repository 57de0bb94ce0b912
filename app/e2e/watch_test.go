package e2e

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/eventcenter/eventcenter/envelope"
	"github.com/eventcenter/eventcenter/state"
)

// rowReader reads a message's row (a center's Store).
type rowReader interface {
	Get(ctx context.Context, bizID, key string) (state.Message, error)
}

// rowStep is one version of a row a watch saw, and when it saw it.
type rowStep struct {
	at  time.Time
	row string
}

// rowString is a row's fields that say where a message is in its life.
func rowString(m state.Message, err error) string {
	if err != nil {
		return "read error: " + err.Error()
	}
	ts := func(x time.Time) string {
		if x.IsZero() {
			return "-"
		}
		return x.UTC().Format("15:04:05.000")
	}
	return fmt.Sprintf("id=%d partition=%d status=%s body=%t verify_attempts=%d verify_next_at=%s send=%s send_attempts=%d send_next_at=%s lease=%d updated=%s decided=%s sent=%s last_error=%q",
		m.ID, m.Partition, m.Status, m.HasBody, m.VerifyAttempts, ts(m.VerifyNextAt), m.SendStatus, m.SendAttempts,
		ts(m.SendNextAt), m.LeaseToken, ts(m.UpdatedAt), ts(m.DecidedAt), ts(m.SentAt), m.LastError)
}

// waitForEach waits until every id was forwarded at least once. Ids still
// missing after watchAfter have their rows read every 100 ms and each new
// version kept with the time it was seen: the row's history. An id that
// arrives only after watchAfter is logged as late, with its history; ids
// still missing after promised+grace fail the test, each named with its
// row, its history and what extra says of it (check-back calls, say).
// grace is the longest lease the centers take: a message a center left
// leased (stopped or cut off during its claim) is due again only after it.
func (c *collector) waitForEach(t *testing.T, st rowReader, ids []string, watchAfter, promised, grace time.Duration, extra func(id string) string) {
	t.Helper()
	began := time.Now()
	hist := map[string][]rowStep{}
	pending := slices.Clone(ids)
	var late []string
	for {
		c.mu.Lock()
		pending = slices.DeleteFunc(pending, func(id string) bool {
			if len(c.byID[id]) == 0 {
				return false
			}
			if waited := time.Since(began); waited > watchAfter {
				late = append(late, fmt.Sprintf("%s arrived %s after the wait began (record at %s)\n%s",
					id, waited.Round(time.Millisecond), c.byID[id][0].At.UTC().Format("15:04:05.000"), history(hist[id])))
			}
			return true
		})
		c.mu.Unlock()
		if len(pending) == 0 {
			break
		}
		waited := time.Since(began)
		if waited > promised+grace {
			var b strings.Builder
			fmt.Fprintf(&b, "%d of %d messages not forwarded after %s (wait began %s):\n", len(pending), len(ids),
				waited.Round(time.Second), began.UTC().Format("15:04:05.000"))
			for _, id := range pending {
				biz, key, _ := envelope.SplitKey(id)
				fmt.Fprintf(&b, "- %s now: %s\n", id, rowString(st.Get(context.Background(), biz, key)))
				if extra != nil {
					fmt.Fprintf(&b, "  %s\n", extra(id))
				}
				b.WriteString(history(hist[id]))
			}
			t.Fatal(b.String())
		}
		if waited > watchAfter && len(pending) <= 100 {
			for _, id := range pending {
				biz, key, _ := envelope.SplitKey(id)
				row := rowString(st.Get(context.Background(), biz, key))
				if h := hist[id]; len(h) == 0 || h[len(h)-1].row != row {
					hist[id] = append(h, rowStep{at: time.Now(), row: row})
				}
			}
		}
		time.Sleep(100 * time.Millisecond) // polling a consumer's progress and rows, not waiting for an event we could signal
	}
	if len(late) > 0 {
		t.Logf("%d of %d messages arrived after %s, %s in all:\n%s", len(late), len(ids), watchAfter,
			time.Since(began).Round(time.Millisecond), strings.Join(late, "\n"))
	}
}

func history(h []rowStep) string {
	var b strings.Builder
	for _, s := range h {
		fmt.Fprintf(&b, "  seen %s: %s\n", s.at.UTC().Format("15:04:05.000"), s.row)
	}
	return b.String()
}
