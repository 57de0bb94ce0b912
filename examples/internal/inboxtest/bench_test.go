package inboxtest

import (
	"context"
	"database/sql"
	"strconv"
	"testing"

	"github.com/eventcenter/eventcenter/clientlib/inbox"
)

// BenchmarkConsume measures one consumed message: a transaction with the
// consumer's own write alone ("write"), and with the inbox's Record before
// it ("inbox"). The difference is the inbox's cost per message: one more
// INSERT of an indexed row in a transaction that exists anyway.
//
//	go test -run '^$' -bench Consume ./examples/internal/inboxtest/
func BenchmarkConsume(b *testing.B) {
	for _, d := range Dialects {
		for _, withInbox := range []bool{false, true} {
			name := d.String() + "/write"
			if withInbox {
				name = d.String() + "/inbox"
			}
			b.Run(name, func(b *testing.B) {
				ctx := context.Background()
				db := DB(b, d)
				if _, err := db.ExecContext(ctx, LedgerSchema(d)); err != nil {
					b.Fatal(err)
				}
				in, err := inbox.New(d, "bench")
				if err != nil {
					b.Fatal(err)
				}
				b.ReportAllocs()
				i := 0
				for b.Loop() {
					id := "bench:" + strconv.Itoa(i)
					i++
					if err := consumeOne(ctx, db, d, in, withInbox, id); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

func consumeOne(ctx context.Context, db *sql.DB, d inbox.Dialect, in *inbox.Inbox, withInbox bool, id string) error {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer func() { _ = tx.Rollback() }()
	if withInbox {
		isNew, err := in.Record(ctx, tx, id)
		if err != nil || !isNew {
			return err
		}
	}
	if err := Apply(ctx, tx, d, id, 1); err != nil {
		return err
	}
	return tx.Commit()
}
