package historytest

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/personagen/personagen/runtime/history"
)

// t0 is the Date header of a fixture's first message; later ones follow a minute apart unless a
// rule needs otherwise.
var t0 = time.Date(2026, 3, 2, 9, 0, 0, 0, time.UTC)

// tb is the part of *testing.T the rules use; the suite's own tests record through it.
type tb interface {
	Helper()
	Errorf(format string, args ...any)
	Fatalf(format string, args ...any)
	Skipf(format string, args ...any)
}

// fixture is one rule's view of the source under test: its own thread and message ids, and the
// seqs the source gave them.
type fixture struct {
	t    tb
	ctx  context.Context
	src  history.Source
	w    Writer
	name string
	seqs map[string]int64 // short message id -> seq
	n    int              // messages appended so far
}

// thread returns the id of the rule's main thread, or of another one when other is given.
func (f *fixture) thread(other ...string) string {
	return "historytest-" + strings.Join(append([]string{f.name}, other...), "-")
}

// id returns the full message id of a short one.
func (f *fixture) id(short string) string { return "historytest/" + f.name + "/" + short }

// add appends m to thread (the main thread when ""). m.MessageID is the short id; an empty
// Direction is inbound, an empty From the customer's address, an empty Text the short id, and
// a zero Date t0 plus one minute per message appended so far.
func (f *fixture) add(thread string, m history.Message) int64 {
	f.t.Helper()
	if thread == "" {
		thread = f.thread()
	}
	short := m.MessageID
	m.MessageID = f.id(short)
	if m.Direction == "" {
		m.Direction = history.Inbound
	}
	if m.From == "" {
		m.From = "Ada Lovelace <ada@example.com>"
	}
	if m.Text == "" {
		m.Text = short
	}
	if m.Date.IsZero() {
		m.Date = t0.Add(time.Duration(f.n) * time.Minute)
	}
	f.n++
	m.ThreadID = thread
	seq, err := f.w.AppendMessage(f.ctx, m)
	if err != nil {
		f.t.Fatalf("writer: append message %s to %s: %v", m.MessageID, thread, err)
	}
	f.seqs[short] = seq
	return seq
}

// in appends inbound messages with default fields to the main thread.
func (f *fixture) in(shorts ...string) {
	f.t.Helper()
	for _, s := range shorts {
		f.add("", history.Message{MessageID: s})
	}
}

// seq returns the seq of a short message id.
func (f *fixture) seq(short string) int64 {
	f.t.Helper()
	s, ok := f.seqs[short]
	if !ok {
		f.t.Fatalf("historytest: no message %q in this rule", short)
	}
	return s
}

// record stores uses for the message short; it returns the writer's error only when it is
// errors.ErrUnsupported and stops the rule on any other.
func (f *fixture) record(short string, uses ...history.ToolUse) error {
	f.t.Helper()
	err := f.w.RecordToolUses(f.ctx, f.seq(short), uses...)
	if err != nil && !errUnsupported(err) {
		f.t.Fatalf("writer: record %d tool uses for %s: %v", len(uses), f.id(short), err)
	}
	return err
}

// compact stores a completed compaction of the main thread at the message short.
func (f *fixture) compact(short, summary string) {
	f.t.Helper()
	c := history.Compaction{ThreadID: f.thread(), BoundarySeq: f.seq(short), BoundaryMessageID: f.id(short), Summary: summary}
	if err := f.w.SetCompaction(f.ctx, c); err != nil {
		f.t.Fatalf("writer: set compaction of %s at %s: %v", c.ThreadID, f.id(short), err)
	}
}

// read returns the Window for q (on the main thread when q.ThreadID is empty), stopping the
// rule when the source fails or returns nil.
func (f *fixture) read(q history.Query) *history.Window {
	f.t.Helper()
	if q.ThreadID == "" {
		q.ThreadID = f.thread()
	}
	w, err := f.src.History(f.ctx, q)
	if err != nil {
		f.t.Fatalf("History(%s): %v", describe(q), err)
	}
	if w == nil {
		f.t.Fatalf("History(%s) returned a nil Window and no error", describe(q))
	}
	return w
}

// expect checks that the Window for q holds exactly the messages shorts, in this order, with
// omitted messages before them. It reads q twice: with CountOmitted set, where Omitted must be
// omitted, and without, where the source may also leave it 0 (counting costs it a read past
// the window); the messages must be the same both times. It returns the counted Window.
func (f *fixture) expect(q history.Query, omitted int, shorts ...string) *history.Window {
	f.t.Helper()
	var want []string
	for _, s := range shorts {
		want = append(want, f.id(s))
	}
	var counted *history.Window
	for _, count := range []bool{true, false} {
		q.CountOmitted = count
		w := f.read(q)
		var got []string
		for _, m := range w.Messages {
			got = append(got, m.MessageID)
		}
		if !slices.Equal(got, want) || (w.Omitted != omitted && (count || w.Omitted != 0)) {
			f.t.Errorf("History(%s):\n got  %s, Omitted %d\n want %s, Omitted %d", describe(q), f.short(got), w.Omitted, f.short(want), omitted)
		}
		if count {
			counted = w
		}
	}
	return counted
}

// short strips the rule's prefix from message ids, for readable reports.
func (f *fixture) short(ids []string) string {
	out := make([]string, len(ids))
	for i, id := range ids {
		out[i] = strings.TrimPrefix(id, "historytest/"+f.name+"/")
	}
	return "[" + strings.Join(out, " ") + "]"
}

// message returns the message with the short id in w, or nil.
func (f *fixture) message(w *history.Window, short string) *history.Message {
	for i := range w.Messages {
		if w.Messages[i].MessageID == f.id(short) {
			return &w.Messages[i]
		}
	}
	return nil
}

// describe renders the fields of q that are set.
func describe(q history.Query) string {
	parts := []string{fmt.Sprintf("ThreadID %q", q.ThreadID)}
	if q.ExcludeMessageID != "" {
		parts = append(parts, fmt.Sprintf("ExcludeMessageID %q", q.ExcludeMessageID))
	}
	if q.AfterSeq != 0 {
		parts = append(parts, fmt.Sprintf("AfterSeq %d", q.AfterSeq))
	}
	if q.UpToSeq != 0 {
		parts = append(parts, fmt.Sprintf("UpToSeq %d", q.UpToSeq))
	}
	if q.InboundUpToSeq != 0 {
		parts = append(parts, fmt.Sprintf("InboundUpToSeq %d", q.InboundUpToSeq))
	}
	if q.Limit != 0 {
		parts = append(parts, fmt.Sprintf("Limit %d", q.Limit))
	}
	if q.ToolUses {
		parts = append(parts, "ToolUses")
	}
	if q.CountOmitted {
		parts = append(parts, "CountOmitted")
	}
	return strings.Join(parts, ", ")
}

// bySeq returns a copy of uses in Seq order: the order they were recorded in.
func bySeq(uses []history.ToolUse) []history.ToolUse {
	out := slices.Clone(uses)
	slices.SortStableFunc(out, func(a, b history.ToolUse) int { return cmp.Compare(a.Seq, b.Seq) })
	return out
}

// diffMessage lists the fields in which got differs from want (Seq included, ToolUses not).
// Nil and empty slices are the same; Date must be the same instant, in UTC; attachments come
// back without Data.
func diffMessage(got, want history.Message) []string {
	var d []string
	field := func(name string, g, w any) {
		if g != w {
			d = append(d, fmt.Sprintf("%s = %q, want %q", name, fmt.Sprint(g), fmt.Sprint(w)))
		}
	}
	field("Seq", got.Seq, want.Seq)
	field("ThreadID", got.ThreadID, want.ThreadID)
	field("MessageID", got.MessageID, want.MessageID)
	field("InReplyTo", got.InReplyTo, want.InReplyTo)
	if !slices.Equal(got.References, want.References) {
		d = append(d, fmt.Sprintf("References = %q, want %q", got.References, want.References))
	}
	field("Direction", got.Direction, want.Direction)
	field("From", got.From, want.From)
	if !slices.Equal(got.To, want.To) {
		d = append(d, fmt.Sprintf("To = %q, want %q", got.To, want.To))
	}
	if !slices.Equal(got.Cc, want.Cc) {
		d = append(d, fmt.Sprintf("Cc = %q, want %q", got.Cc, want.Cc))
	}
	if !got.Date.Equal(want.Date) || got.Date.Location() != time.UTC {
		d = append(d, fmt.Sprintf("Date = %v, want %v in UTC", got.Date, want.Date.UTC()))
	}
	field("Subject", got.Subject, want.Subject)
	field("Text", got.Text, want.Text)
	field("HTML", got.HTML, want.HTML)
	if !slices.EqualFunc(got.Attachments, want.Attachments, sameAttachment) {
		d = append(d, fmt.Sprintf("Attachments = %+v, want %+v (metadata, Data nil)", got.Attachments, want.Attachments))
	}
	return d
}

// sameAttachment reports whether a returned attachment g has the metadata of w and no Data.
func sameAttachment(g, w history.Attachment) bool {
	return g.ID == w.ID && g.Filename == w.Filename && g.ContentType == w.ContentType && g.Size == w.Size && g.Data == nil
}

// diffToolUses lists how got (in any order) differs from want (in recording order): the same
// uses, field for field but Seq, and Seqs increasing in recording order.
func diffToolUses(got, want []history.ToolUse) []string {
	got = bySeq(got)
	if len(got) != len(want) {
		return []string{fmt.Sprintf("%d tool uses, want %d: %+v", len(got), len(want), got)}
	}
	var d []string
	for i := range got {
		g := got[i]
		if i > 0 && g.Seq == got[i-1].Seq {
			d = append(d, fmt.Sprintf("tool uses %d and %d share Seq %d (Seqs are unique)", i-1, i, g.Seq))
		}
		g.Seq = want[i].Seq
		if g != want[i] {
			d = append(d, fmt.Sprintf("tool use %d in Seq order = %+v, want %+v", i, got[i], want[i]))
		}
	}
	return d
}
