package ingest

import (
	"log/slog"
	"sync"
	"time"
)

// differingLogEvery is the least time between two log lines about
// duplicate PREPAREs with a different body for one bizID; the lines
// between are counted and the next line says how many were not logged.
const differingLogEvery = 10 * time.Second

// maxDifferingBizIDs bounds the bizIDs counted one by one; further bizIDs
// are counted together under DifferingOther.
const maxDifferingBizIDs = 1000

// DifferingOther is the DifferingPrepares entry that counts bizIDs past the
// first maxDifferingBizIDs.
const DifferingOther = "(other bizIDs)"

// differing counts, per bizID, the duplicate PREPAREs that brought a body
// different from the stored one (ignored: the first body stands), and
// rate-limits their log lines per bizID. The counts live in this process:
// they start at zero with it, and each instance counts the control
// partitions it owns.
type differing struct {
	mu         sync.Mutex
	n          map[string]int64
	lastLog    map[string]time.Time
	suppressed map[string]int64
}

// note counts one and logs it unless a line for the bizID was logged less
// than differingLogEvery ago.
func (d *differing) note(log *slog.Logger, now time.Time, bizID, key string, partition int32, offset int64) {
	d.mu.Lock()
	if d.n == nil {
		d.n, d.lastLog, d.suppressed = map[string]int64{}, map[string]time.Time{}, map[string]int64{}
	}
	id := bizID
	if _, ok := d.n[id]; !ok && len(d.n) >= maxDifferingBizIDs {
		id = DifferingOther
	}
	d.n[id]++
	total := d.n[id]
	if last, ok := d.lastLog[id]; ok && now.Sub(last) < differingLogEvery {
		d.suppressed[id]++
		d.mu.Unlock()
		return
	}
	d.lastLog[id] = now
	skipped := d.suppressed[id]
	d.suppressed[id] = 0
	d.mu.Unlock()
	log.Warn("duplicate PREPARE with a different body ignored: the first body stands (the producer reused a message key?)",
		"biz_id", bizID, "key", key, "partition", partition, "offset", offset,
		"count_for_biz_id", total, "not_logged_since_last_line", skipped)
}

// snapshot copies the counts.
func (d *differing) snapshot() map[string]int64 {
	d.mu.Lock()
	defer d.mu.Unlock()
	out := make(map[string]int64, len(d.n))
	for k, v := range d.n {
		out[k] = v
	}
	return out
}

// DifferingPrepares returns, per bizID, how many duplicate PREPAREs this
// ingester ignored that brought a body different from the stored one
// (payload or destination), since it was built. Past 1,000 bizIDs, further
// ones are counted under DifferingOther.
func (in *Ingester) DifferingPrepares() map[string]int64 { return in.differing.snapshot() }
