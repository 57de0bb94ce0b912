package cli

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/eventcenter/eventcenter/admin/adminapi"
	"github.com/eventcenter/eventcenter/admin/client"
	"github.com/eventcenter/eventcenter/internal/cliflags"
	"github.com/eventcenter/eventcenter/internal/progress"
)

// Environment variables read when the flags are not given.
const (
	EnvServer = "EVENTCENTER_ADMIN_SERVER"
	EnvToken  = "EVENTCENTER_ADMIN_TOKEN"
)

// DefaultServer is the admin API address when neither --server nor
// EVENTCENTER_ADMIN_SERVER is set.
const DefaultServer = "http://127.0.0.1:8080"

type options struct {
	server  string
	token   string
	output  string
	timeout time.Duration
	getenv  func(string) string
}

// NewCommand returns the "admin" command with its subcommands.
func NewCommand() *cobra.Command { return newCommand(os.Getenv) }

func newCommand(getenv func(string) string) *cobra.Command {
	o := &options{getenv: getenv}
	cmd := &cobra.Command{
		Use:   "admin",
		Short: "Inspect messages and act on them through a running center's admin API",
		Long: `Inspect messages and act on them through a running center's admin API.

Messages are named "bizID key" (two arguments) or "bizID:key" (one argument;
the bizID has no ':', the key may). Every action needs --reason, written to
the audit log with the token's name.

The server is --server, else $` + EnvServer + `, else ` + DefaultServer + `;
the token is --token, else $` + EnvToken + `.`,
		SilenceUsage: true,
		// --limit -1 or --timeout -5s is an error naming the flag.
		PersistentPreRunE: func(cmd *cobra.Command, _ []string) error {
			return cliflags.Check(cmd.Flags(), cliflags.Rules{})
		},
	}
	pf := cmd.PersistentFlags()
	pf.StringVar(&o.server, "server", "", "admin API address (default $"+EnvServer+" or "+DefaultServer+")")
	pf.StringVar(&o.token, "token", "", "bearer token (default $"+EnvToken+")")
	pf.StringVarP(&o.output, "output", "o", "table", "output format: table or json")
	pf.DurationVar(&o.timeout, "timeout", 30*time.Second, "request timeout")
	cmd.AddCommand(o.listCmd(), o.getCmd(), o.countsCmd(), o.resolveCmd(), o.actionCmd("redeliver"),
		o.actionCmd("retry"), o.actionCmd(adminapi.ActionCloseOrphan), o.actionCmd(adminapi.ActionCloseHead),
		o.actionCmd(adminapi.ActionRelease), o.actionCmd(adminapi.ActionCancel), o.blockedCmd(), o.bizIDsCmd(), o.retryBizCmd(), o.dlqCmd(), o.auditCmd())
	return cmd
}

func (o *options) client() (*client.Client, error) {
	switch o.output {
	case "table", "json":
	default:
		return nil, fmt.Errorf("--output %q: want table or json", o.output)
	}
	server, source := o.server, "--server"
	if server == "" {
		server, source = o.getenv(EnvServer), EnvServer
	}
	if server == "" {
		server, source = DefaultServer, "default server"
	}
	token := o.token
	if token == "" {
		token = o.getenv(EnvToken)
	}
	c, err := client.New(server, token, client.WithHTTPClient(&http.Client{Timeout: o.timeout}))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", source, err)
	}
	return c, nil
}

// emit writes v as JSON, or calls table.
func (o *options) emit(w io.Writer, v any, table func(tw *tabwriter.Writer)) error {
	if o.output == "json" {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(v)
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	table(tw)
	return tw.Flush()
}

// messageArgs reads "bizID key" or "bizID:key".
func messageArgs(args []string) (string, string, error) {
	switch len(args) {
	case 1:
		b, k, ok := strings.Cut(args[0], ":")
		if !ok || b == "" || k == "" {
			return "", "", fmt.Errorf("message %q: want bizID:key (or bizID and key as two arguments)", args[0])
		}
		return b, k, nil
	case 2:
		if args[0] == "" || args[1] == "" {
			return "", "", errors.New("bizID and key must not be empty")
		}
		return args[0], args[1], nil
	}
	return "", "", fmt.Errorf("want a message as bizID:key or as bizID and key, got %d arguments", len(args))
}

func ts(t *time.Time) string {
	if t == nil {
		return "-"
	}
	return t.UTC().Format(time.RFC3339)
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// status is how a message's state reads in a table; an orphan COMMIT
// (committed, its PREPARE never arrived: no body to send) says so.
func status(m adminapi.Message) string {
	s := m.Status
	if m.SendStatus != "" {
		s += "/" + m.SendStatus
	}
	if m.Status == "COMMITTED" && !m.HasBody {
		s += " ORPHAN(no PREPARE)"
	}
	return s
}

func trunc(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return strings.ToValidUTF8(s[:n], "") + "…"
}

func (o *options) listCmd() *cobra.Command {
	var lo client.ListOptions
	var all bool
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List messages, newest first",
		Example: `  eventcenter admin list --status VERIFY_FAILED
  eventcenter admin list --status COMMITTED --send-status DEAD --biz orders
  eventcenter admin list --status PREPARED --older-than 15m -o json
  eventcenter admin list --orphan --older-than 10m`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := o.client()
			if err != nil {
				return err
			}
			var msgs []adminapi.Message
			var next string
			for {
				l, err := c.List(cmd.Context(), lo)
				if err != nil {
					return fmt.Errorf("list messages: %w", err)
				}
				msgs = append(msgs, l.Messages...)
				next = l.Next
				if !all || next == "" {
					break
				}
				lo.Cursor = next
			}
			if msgs == nil {
				msgs = []adminapi.Message{}
			}
			err = o.emit(cmd.OutOrStdout(), adminapi.MessageList{Messages: msgs, Next: next}, func(tw *tabwriter.Writer) {
				fmt.Fprintln(tw, "BIZID\tKEY\tSTATUS\tATTEMPTS\tCREATED\tLAST ERROR")
				for _, m := range msgs {
					att := m.VerifyAttempts
					if m.Status == "COMMITTED" {
						att = m.SendAttempts
					}
					fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\t%s\n", m.BizID, m.Key, status(m), att, ts(m.CreatedAt), dash(trunc(m.LastError, 60)))
				}
			})
			if err == nil && next != "" && o.output == "table" {
				fmt.Fprintf(cmd.ErrOrStderr(), "more: --cursor %s\n", next)
			}
			return err
		},
	}
	f := cmd.Flags()
	f.StringVar(&lo.Status, "status", "", "PREPARED, COMMITTED, ROLLED_BACK, VERIFY_FAILED, CANCELLED, or SCHEDULED (committed, held until its deliver-at)")
	f.StringVar(&lo.SendStatus, "send-status", "", "PENDING, SENT or DEAD")
	f.StringVar(&lo.BizID, "biz", "", "bizID")
	f.StringVar(&lo.Key, "key", "", "keys containing this")
	f.DurationVar(&lo.OlderThan, "older-than", 0, "created longer ago than this (e.g. 15m)")
	f.BoolVar(&lo.Orphan, "orphan", false, "orphan COMMITs only: COMMITTED without a body (the PREPARE was dead-lettered or never came)")
	f.IntVar(&lo.Limit, "limit", 0, "page size (server default 50)")
	f.StringVar(&lo.Cursor, "cursor", "", "page cursor from a previous list")
	f.BoolVar(&all, "all", false, "follow the cursor to the last page")
	return cmd
}

func (o *options) getCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "get bizID:key | get bizID key",
		Short: "Show one message: state, times, attempts, payload, headers and audit",
		Args:  cobra.RangeArgs(1, 2),
		RunE: func(cmd *cobra.Command, args []string) error {
			biz, key, err := messageArgs(args)
			if err != nil {
				return err
			}
			c, err := o.client()
			if err != nil {
				return err
			}
			d, err := c.Get(cmd.Context(), biz, key)
			if err != nil {
				return fmt.Errorf("get %s:%s: %w", biz, key, err)
			}
			return o.emit(cmd.OutOrStdout(), d, func(tw *tabwriter.Writer) { detailTable(tw, d) })
		},
	}
}

func detailTable(tw *tabwriter.Writer, d adminapi.MessageDetail) {
	row := func(k, v string) { fmt.Fprintf(tw, "%s:\t%s\n", k, v) }
	row("id", d.ID)
	row("status", status(d.Message))
	row("partition", strconv.Itoa(int(d.Partition)))
	row("created", ts(d.CreatedAt))
	row("updated", ts(d.UpdatedAt))
	row("decided", ts(d.DecidedAt))
	row("sent", ts(d.SentAt))
	row("check-back", dash(d.Verify))
	row("check-backs", fmt.Sprintf("%d (next %s)", d.VerifyAttempts, ts(d.VerifyNextAt)))
	row("forward", fmt.Sprintf("target=%s topic=%s key=%s tag=%s", dash(d.Target), dash(d.Topic), dash(d.ForwardKey), dash(d.Tag)))
	row("sends", fmt.Sprintf("%d (next %s)", d.SendAttempts, ts(d.SendNextAt)))
	row("broker ref", dash(d.SendRef))
	row("last error", dash(d.LastError))
	if d.Conflicts > 0 {
		row("conflicts", strconv.Itoa(d.Conflicts))
	}
	row("actions", dash(strings.Join(d.Actions, ", ")))
	if d.PayloadText != nil {
		row("payload", fmt.Sprintf("%q", *d.PayloadText))
	} else {
		row("payload (base64)", d.PayloadBase64)
	}
	for _, h := range d.Headers {
		v := "base64:" + h.ValueBase64
		if h.Value != nil {
			v = fmt.Sprintf("%q", *h.Value)
		}
		row("header "+h.Key, v)
	}
	for _, a := range d.Audit {
		row("audit", fmt.Sprintf("%s %s by %s (%s → %s): %s", a.At.UTC().Format(time.RFC3339), a.Action, a.Who, a.Before, a.After, a.Reason))
	}
}

var countColumns = []string{"PREPARED", "VERIFY_FAILED", "COMMITTED/PENDING", "COMMITTED/DEAD", "COMMITTED/SENT", "ROLLED_BACK"}

func (o *options) blockedCmd() *cobra.Command {
	var bizID string
	var limit int
	cmd := &cobra.Command{
		Use:   "blocked",
		Short: "List the order keys held by a DEAD or failing head message, oldest first",
		Long: `List the order keys whose head message (the earliest committed one not yet
sent) is DEAD or has failed: the later messages of the key wait for it. Fix
the cause and "retry" the head, or "close-head" it (never sent) or "release"
it (sent without order), each with a reason.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := o.client()
			if err != nil {
				return err
			}
			bs, err := c.Blocked(cmd.Context(), bizID, limit)
			if err != nil {
				return fmt.Errorf("blocked: %w", err)
			}
			return o.emit(cmd.OutOrStdout(), bs, func(tw *tabwriter.Writer) {
				fmt.Fprintln(tw, "BIZID\tORDER KEY\tTOPIC\tHEAD\tSEND STATUS\tATTEMPTS\tWAITING\tSINCE\tERROR")
				for _, b := range bs.Keys {
					fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%d\t%d\t%s\t%s\n", b.BizID, b.OrderKey, b.Topic, b.Head.ID,
						b.Head.SendStatus, b.Head.SendAttempts, b.Waiting, b.Since.UTC().Format(time.RFC3339), b.Head.LastError)
				}
			})
		},
	}
	cmd.Flags().StringVar(&bizID, "biz-id", "", "only this bizID")
	cmd.Flags().IntVar(&limit, "limit", 0, "at most this many keys (server default 100, at most 1000)")
	return cmd
}

func (o *options) countsCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "counts",
		Short: "Count messages by bizID and status",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := o.client()
			if err != nil {
				return err
			}
			cs, err := c.Counts(cmd.Context())
			if err != nil {
				return fmt.Errorf("counts: %w", err)
			}
			return o.emit(cmd.OutOrStdout(), cs, func(tw *tabwriter.Writer) {
				fmt.Fprintln(tw, "BIZID\t"+strings.Join(countColumns, "\t")+"\tOLDEST PREPARED")
				bizIDs := make([]string, 0, len(cs.ByBizID))
				for b := range cs.ByBizID {
					bizIDs = append(bizIDs, b)
				}
				slices.Sort(bizIDs)
				line := func(name string, m map[string]int64, oldest string) {
					fmt.Fprint(tw, name)
					for _, col := range countColumns {
						fmt.Fprintf(tw, "\t%d", m[col])
					}
					fmt.Fprintf(tw, "\t%s\n", oldest)
				}
				for _, b := range bizIDs {
					oldest := "-"
					if t, ok := cs.OldestPrepared[b]; ok {
						oldest = t.UTC().Format(time.RFC3339)
					}
					line(b, cs.ByBizID[b], oldest)
				}
				line("TOTAL", cs.ByStatus, "")
			})
		},
	}
}

func actionLine(w io.Writer, res adminapi.ActionResult) {
	m := res.Message
	before := "?"
	if n := len(m.Audit); n > 0 {
		before = m.Audit[n-1].Before
	}
	fmt.Fprintf(w, "%s %s: %s → %s", res.Action, m.ID, before, status(m.Message))
	if res.HandedOff {
		fmt.Fprint(w, " (handed to the forwarder)")
	}
	fmt.Fprintln(w)
}

func requireReason(reason string) error {
	if strings.TrimSpace(reason) == "" {
		return errors.New("--reason is required (it is written to the audit log)")
	}
	return nil
}

func (o *options) resolveCmd() *cobra.Command {
	var decision, reason string
	cmd := &cobra.Command{
		Use:     "resolve bizID:key --decision commit|rollback --reason TEXT",
		Short:   "Decide a PREPARED or VERIFY_FAILED message as commit (it is forwarded) or rollback",
		Example: `  eventcenter admin resolve orders:o-42 --decision commit --reason "paid, confirmed with the shop"`,
		Args:    cobra.RangeArgs(1, 2),
		RunE: func(cmd *cobra.Command, args []string) error {
			biz, key, err := messageArgs(args)
			if err != nil {
				return err
			}
			if decision != adminapi.DecisionCommit && decision != adminapi.DecisionRollback {
				return fmt.Errorf("--decision %q: want commit or rollback", decision)
			}
			if err := requireReason(reason); err != nil {
				return err
			}
			c, err := o.client()
			if err != nil {
				return err
			}
			res, err := c.Resolve(cmd.Context(), biz, key, decision, reason)
			if err != nil {
				return fmt.Errorf("resolve %s:%s: %w", biz, key, err)
			}
			return o.emit(cmd.OutOrStdout(), res, func(tw *tabwriter.Writer) { actionLine(tw, res) })
		},
	}
	cmd.Flags().StringVar(&decision, "decision", "", "commit or rollback")
	cmd.Flags().StringVar(&reason, "reason", "", "why (required; written to the audit log)")
	return cmd
}

func (o *options) actionCmd(name string) *cobra.Command {
	var reason string
	short, long := "Send a committed message (DEAD or SENT) to its topic again", ""
	switch name {
	case "retry":
		short = "Check back (PREPARED, VERIFY_FAILED) or send (pending, DEAD) a message now, with fresh attempts"
	case adminapi.ActionCloseHead:
		short = "Give up the head of a blocked order key (DEAD, never sent unless retried): the later messages of the key go on"
	case adminapi.ActionRelease:
		short = "Let the later messages of a message's order key go on without it (it is still sent, without order)"
	case adminapi.ActionCancel:
		short = "Cancel a message that is not sent yet (e.g. SCHEDULED): it ends CANCELLED, never sent"
	case adminapi.ActionCloseOrphan:
		short = "Close an orphan COMMIT (committed, PREPARE never arrived) as rolled back: it is never forwarded"
		long = short + `.

An orphan COMMIT cannot be forwarded: it has no payload. If its PREPARE is
in the dead-letter topic, replay it instead ("dlq replay", with --topic when
the topic was what was wrong). A COMMITTED message with a body is refused.`
	}
	cmd := &cobra.Command{
		Use:   name + " bizID:key --reason TEXT",
		Short: short,
		Long:  long,
		Args:  cobra.RangeArgs(1, 2),
		RunE: func(cmd *cobra.Command, args []string) error {
			biz, key, err := messageArgs(args)
			if err != nil {
				return err
			}
			if err := requireReason(reason); err != nil {
				return err
			}
			c, err := o.client()
			if err != nil {
				return err
			}
			act := c.Redeliver
			switch name {
			case "retry":
				act = c.Retry
			case adminapi.ActionCloseOrphan:
				act = c.CloseOrphan
			case adminapi.ActionCloseHead:
				act = c.CloseHead
			case adminapi.ActionRelease:
				act = c.Release
			case adminapi.ActionCancel:
				act = c.Cancel
			}
			res, err := act(cmd.Context(), biz, key, reason)
			if err != nil {
				return fmt.Errorf("%s %s:%s: %w", name, biz, key, err)
			}
			return o.emit(cmd.OutOrStdout(), res, func(tw *tabwriter.Writer) { actionLine(tw, res) })
		},
	}
	cmd.Flags().StringVar(&reason, "reason", "", "why (required; written to the audit log)")
	return cmd
}

func (o *options) retryBizCmd() *cobra.Command {
	var reason string
	cmd := &cobra.Command{
		Use:   "retry-biz bizID --reason TEXT",
		Short: "Retry every PREPARED, VERIFY_FAILED, pending and DEAD message of a bizID now (after an outage)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := requireReason(reason); err != nil {
				return err
			}
			c, err := o.client()
			if err != nil {
				return err
			}
			res, err := c.RetryBizID(cmd.Context(), args[0], reason)
			if err != nil {
				return fmt.Errorf("retry bizID %s: %w", args[0], err)
			}
			return o.emit(cmd.OutOrStdout(), res, func(tw *tabwriter.Writer) {
				fmt.Fprintf(tw, "reset %d messages of %s\n", res.Reset, res.BizID)
			})
		},
	}
	cmd.Flags().StringVar(&reason, "reason", "", "why (required; written to the audit log)")
	return cmd
}

func (o *options) dlqCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "dlq", Short: "Read and replay the dead-letter topic (--lane NAME: an extra lane's)",
		Long: `Read and replay the dead-letter topic. Each extra lane (kafka.lanes) has a
dead-letter topic of its own, whose records replay to the lane's control
topic: --lane NAME reads and replays that one (without it: the default
lane's). "dlq list" names the configured lanes.`}
	var lane string
	cmd.PersistentFlags().StringVar(&lane, "lane", "", "the extra lane (kafka.lanes name) whose dead-letter topic to use (default: the default lane's)")
	var limit int
	var cursor string
	list := &cobra.Command{
		Use:   "list",
		Short: "List dead-letter records with the reason each was set aside",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := o.client()
			if err != nil {
				return err
			}
			l, err := c.LaneDLQ(cmd.Context(), lane, limit, cursor)
			if err != nil {
				return fmt.Errorf("list dead letters%s: %w", ofLane(lane), err)
			}
			err = o.emit(cmd.OutOrStdout(), l, func(tw *tabwriter.Writer) {
				fmt.Fprintln(tw, "PARTITION\tOFFSET\tTIME\tKEY\tREASON")
				for _, r := range l.Records {
					fmt.Fprintf(tw, "%d\t%d\t%s\t%s\t%s\n", r.Partition, r.Offset, r.Timestamp.UTC().Format(time.RFC3339), dash(r.Key), dash(trunc(r.Reason, 80)))
				}
			})
			if err == nil && l.Next != "" && o.output == "table" {
				fmt.Fprintf(cmd.ErrOrStderr(), "more: --cursor %s\n", l.Next)
			}
			if err == nil && len(l.Lanes) > 0 && o.output == "table" {
				this := "the default lane"
				if l.Lane != "" {
					this = "lane " + l.Lane
				}
				fmt.Fprintf(cmd.ErrOrStderr(), "dead letters of %s; lanes: %s (--lane NAME; none for the default)\n", this, strings.Join(l.Lanes, ", "))
			}
			return err
		},
	}
	get := &cobra.Command{
		Use:   "get PARTITION OFFSET",
		Short: "Show one whole dead-letter record (a list shows value previews only)",
		Args:  cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			p, off, err := position(args)
			if err != nil {
				return err
			}
			c, err := o.client()
			if err != nil {
				return err
			}
			r, err := c.LaneDLQRecord(cmd.Context(), lane, p, off)
			if err != nil {
				return fmt.Errorf("read dead letter %d/%d%s: %w", p, off, ofLane(lane), err)
			}
			return o.emit(cmd.OutOrStdout(), r, func(tw *tabwriter.Writer) {
				if r.Lane != "" {
					_, _ = fmt.Fprintf(tw, "lane\t%s\n", r.Lane)
				}
				_, _ = fmt.Fprintf(tw, "position\t%d/%d\n", r.Partition, r.Offset)
				_, _ = fmt.Fprintf(tw, "time\t%s\n", r.Timestamp.UTC().Format(time.RFC3339))
				_, _ = fmt.Fprintf(tw, "key\t%s\n", dash(r.Key))
				_, _ = fmt.Fprintf(tw, "reason\t%s\n", dash(r.Reason))
				for _, h := range r.Headers {
					v := "base64:" + h.ValueBase64
					if h.Value != nil {
						v = *h.Value
					}
					_, _ = fmt.Fprintf(tw, "header %s\t%s\n", h.Key, v)
				}
				_, _ = fmt.Fprintf(tw, "value (%d bytes, %s)\t%s\n", r.ValueSize, r.ValueEncoding, r.Value)
			})
		},
	}
	list.Flags().IntVar(&limit, "limit", 0, "page size (server default 50)")
	list.Flags().StringVar(&cursor, "cursor", "", "page cursor from a previous list")
	var rreq adminapi.DLQReplayRequest
	var all bool
	replay := &cobra.Command{
		Use:   "replay PARTITION OFFSET --reason TEXT [--topic TOPIC] [--lane NAME]",
		Short: "Send one dead-letter record back to the control topic (without its ec-dlq-* headers)",
		Long: `Send one dead-letter record back to the control topic, without its ec-dlq-*
headers; with --lane NAME, a record of that lane's dead-letter topic back to
the lane's control topic. --topic sets the forward topic of a PREPARE that was dead-lettered
for a missing or bad one: replayed, it fills in the body of its orphan
COMMIT, which is then forwarded. A record that would be dead-lettered again
is refused with the reason. The replay is written to the audit log of the
message the record names, if that message exists.`,
		Example: `  eventcenter admin dlq replay 0 17 --reason "producer bug fixed" --topic orders.events
  eventcenter admin dlq replay --all --reason "producer bug fixed"
  eventcenter admin dlq replay --lane gold 1 4 --reason "producer bug fixed"`,
		Args: func(cmd *cobra.Command, args []string) error {
			if all {
				return cobra.NoArgs(cmd, args)
			}
			return cobra.ExactArgs(2)(cmd, args)
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			if all {
				if err := requireReason(rreq.Reason); err != nil {
					return err
				}
				c, err := o.client()
				if err != nil {
					return err
				}
				return replayAll(cmd, c, lane, rreq)
			}
			p, off, err := position(args)
			if err != nil {
				return err
			}
			if err := requireReason(rreq.Reason); err != nil {
				return err
			}
			c, err := o.client()
			if err != nil {
				return err
			}
			res, err := c.ReplayLaneDLQ(cmd.Context(), lane, p, off, rreq)
			if err != nil {
				return fmt.Errorf("replay dead letter %d/%d%s: %w", p, off, ofLane(lane), err)
			}
			return o.emit(cmd.OutOrStdout(), res, func(tw *tabwriter.Writer) {
				fmt.Fprintf(tw, "replayed %d/%d to the control topic%s", res.Partition, res.Offset, ofLane(res.Lane))
				if res.Audited {
					fmt.Fprintf(tw, " (audited on %s)", res.Key)
				}
				fmt.Fprintln(tw)
			})
		},
	}
	replay.Flags().StringVar(&rreq.Reason, "reason", "", "why (required; written to the audit log of the message)")
	replay.Flags().StringVar(&rreq.Topic, "topic", "", "set the forward topic of a PREPARE dead-lettered for a missing or bad one")
	replay.Flags().BoolVar(&all, "all", false, "replay every record of the dead-letter topic (of --lane's, if given; progress on stderr); refused ones are listed and skipped")
	cmd.AddCommand(list, get, replay)
	return cmd
}

// position reads PARTITION OFFSET arguments.
func position(args []string) (int32, int64, error) {
	p, err := strconv.ParseInt(args[0], 10, 32)
	if err != nil || p < 0 {
		return 0, 0, fmt.Errorf("partition %q: not a partition number", args[0])
	}
	off, err := strconv.ParseInt(args[1], 10, 64)
	if err != nil || off < 0 {
		return 0, 0, fmt.Errorf("offset %q: not an offset", args[1])
	}
	return int32(p), off, nil
}

// replayAllPage is the page size replayAll lists the topic with.
const replayAllPage = 500

// ofLane is " of lane NAME" for an extra lane, "" for the default one.
func ofLane(lane string) string {
	if lane == "" {
		return ""
	}
	return " of lane " + lane
}

// replayAll replays every record of a lane's dead-letter topic ("": the
// default lane's) as it is when the command starts, with progress on
// stderr. Records the server refuses (404: gone; 409: would be
// dead-lettered again) are skipped and listed; any other error stops it.
func replayAll(cmd *cobra.Command, c *client.Client, lane string, req adminapi.DLQReplayRequest) error {
	ctx := cmd.Context()
	type pos struct {
		p   int32
		off int64
	}
	var todo []pos
	cursor := ""
	for {
		l, err := c.LaneDLQ(ctx, lane, replayAllPage, cursor)
		if err != nil {
			return fmt.Errorf("list dead letters%s: %w", ofLane(lane), err)
		}
		for _, r := range l.Records {
			todo = append(todo, pos{r.Partition, r.Offset})
		}
		if l.Next == "" || l.Next == cursor || len(l.Records) == 0 {
			break
		}
		cursor = l.Next
	}
	pr := progress.New(cmd.ErrOrStderr(), "dlq replay", progress.Options{})
	pr.Start("replay", "records", int64(len(todo)))
	var refused []string
	done := 0
	for _, x := range todo {
		_, err := c.ReplayLaneDLQ(ctx, lane, x.p, x.off, req)
		var ce *client.Error
		switch {
		case err == nil:
			done++
		case errors.As(err, &ce) && (ce.StatusCode == http.StatusConflict || ce.StatusCode == http.StatusNotFound):
			refused = append(refused, fmt.Sprintf("%d/%d: %s", x.p, x.off, ce.Message))
		default:
			pr.Done()
			return fmt.Errorf("replay dead letter %d/%d%s (%d of %d replayed before it): %w", x.p, x.off, ofLane(lane), done, len(todo), err)
		}
		pr.Add(1)
	}
	pr.Done()
	out := cmd.OutOrStdout()
	_, _ = fmt.Fprintf(out, "replayed %d of %d dead-letter records to the control topic%s", done, len(todo), ofLane(lane))
	if len(refused) > 0 {
		_, _ = fmt.Fprintf(out, "; %d refused:\n", len(refused))
		for _, r := range refused {
			_, _ = fmt.Fprintf(out, "  %s\n", r)
		}
		return nil
	}
	_, _ = fmt.Fprintln(out)
	return nil
}
