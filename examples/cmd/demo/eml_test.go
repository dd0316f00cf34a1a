package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/personagen/personagen/runtime/agent"
	"github.com/personagen/personagen/runtime/history"
	"github.com/personagen/personagen/runtime/mail"
	"github.com/personagen/personagen/runtime/store"
)

// The example thread's files, as the tests name them on the command line, and their Message-IDs.
var (
	exampleFiles = []string{
		"../../mail/01-customer-question.eml",
		"../../mail/02-support-reply.eml",
		"../../mail/03-customer-html-only.eml",
		"../../mail/04-support-reply.eml",
		"../../mail/05-customer-attachment.eml",
		"../../mail/06-customer-follow-up.eml",
	}
	exampleIDs  = []string{"c1@brightline.io", "s1@acme.example", "c2@brightline.io", "s2@acme.example", "c3@brightline.io", "c4@brightline.io"}
	outOfOffice = "testdata/out-of-office.eml"
	emlClock    = func() time.Time { return replyTime }
)

// TestEMLAnswersTheLastMessageAndSkipsTheAutoReply runs -eml on the thread up to the attachment
// and an out-of-office reply to the support agent's first reply (Auto-Submitted): every file
// joins one thread, the auto-reply is stored, flagged and skipped with its reason, the message
// before it is answered the way the default demo answers it (its tools run, the reply is stored,
// rendered and marked sent), and the output is the golden file.
func TestEMLAnswersTheLastMessageAndSkipsTheAutoReply(t *testing.T) {
	dsn := filepath.Join(t.TempDir(), "demo.db")
	files := append(append([]string(nil), exampleFiles[:5]...), outOfOffice)
	var out bytes.Buffer
	if err := run(context.Background(), config{dsn: dsn, eml: true, files: files, now: emlClock}, &out); err != nil {
		t.Fatal(err)
	}
	checkGolden(t, "testdata/eml.golden", out.Bytes())

	st := openStore(t, dsn)
	ctx := context.Background()
	ooo, err := st.Message(ctx, "support-agent", "ooo-c4f1@brightline.io")
	if err != nil || ooo.ThreadID != supportThread || ooo.NotToAnswer != "auto-submitted: Auto-Submitted: auto-replied" {
		t.Fatalf("the auto-reply is stored in %s with the reason %q (%v)", ooo.ThreadID, ooo.NotToAnswer, err)
	}
	if _, err := st.Run(ctx, agent.ReplyKey("support-agent", "support-agent", ooo.MessageID)); !errors.Is(err, store.ErrRunNotFound) {
		t.Errorf("the auto-reply has a run: %v", err)
	}
	reply, err := st.ReplyOf(ctx, agent.ReplyKey("support-agent", "support-agent", "c3@brightline.io"))
	if err != nil || reply.InReplyTo != "c3@brightline.io" {
		t.Fatalf("the reply to c3: %+v, %v", reply, err)
	}
	if unsent, err := st.UnsentReplies(ctx, "support-agent", 10); err != nil || len(unsent) != 0 {
		t.Errorf("unsent replies after the demo: %d, %v", len(unsent), err)
	}
	wantThread := append(append([]string(nil), exampleIDs[:5]...), ooo.MessageID, reply.MessageID)
	if got := threadIDs(t, st); !reflect.DeepEqual(got, wantThread) {
		t.Errorf("thread %s replays %v, want %v", supportThread, got, wantThread)
	}

	// The auto-reply alone: stored, and nothing to answer.
	out.Reset()
	if err := run(context.Background(), config{eml: true, files: []string{outOfOffice}, now: emlClock}, &out); err != nil {
		t.Fatal(err)
	}
	want := "# mail.Ingest: the files -eml names, in order\n" +
		"testdata/out-of-office.eml  ooo-c4f1@brightline.io for support-agent: inbound, starts thread " + supportThread +
		"; not to be answered (auto-submitted: Auto-Submitted: auto-replied)\n" +
		"# nothing to answer: each message is a persona's own mail, flagged not to be answered, or a second copy of one ingested above\n"
	if out.String() != want {
		t.Errorf("-eml with the auto-reply alone printed\n%s\nwant\n%s", out.String(), want)
	}
}

// TestEMLInAnyOrderMakesOneThread ingests the six example files in four orders (replies before
// the messages they answer, the follow-up first): each order ends in one thread of the support
// agent that replays the messages in the order they arrived, then the reply to the last customer
// message of that order. Each order's last customer message is one whose answer is not among the
// files (c3 or c4), so it is the one to answer whatever else arrived before it.
func TestEMLInAnyOrderMakesOneThread(t *testing.T) {
	for _, order := range [][]int{{0, 1, 2, 3, 4, 5}, {5, 3, 1, 0, 2, 4}, {3, 1, 2, 0, 5, 4}, {4, 2, 0, 5, 3, 1}} {
		dsn := filepath.Join(t.TempDir(), "demo.db")
		var files, want []string
		answered := ""
		for _, i := range order {
			files = append(files, exampleFiles[i])
			want = append(want, exampleIDs[i])
			if strings.HasPrefix(exampleIDs[i], "c") {
				answered = exampleIDs[i]
			}
		}
		var out bytes.Buffer
		if err := run(context.Background(), config{dsn: dsn, eml: true, files: files, now: emlClock, json: true}, &out); err != nil {
			t.Fatalf("order %v: %v", order, err)
		}
		got := decodeOutput(t, out.Bytes())
		for _, d := range got.Ingested {
			if d.ThreadID != supportThread || d.Duplicate || d.Persona != "support-agent" {
				t.Errorf("order %v: %s: %+v", order, d.File, d)
			}
		}
		if len(got.Runs) != 1 || got.Runs[0].Reply.InReplyTo != answered {
			t.Fatalf("order %v: runs %+v, want the reply to %s", order, got.Runs, answered)
		}
		st := openStore(t, dsn)
		want = append(want, got.Runs[0].Reply.MessageID)
		if ids := threadIDs(t, st); !reflect.DeepEqual(ids, want) {
			t.Errorf("order %v: the thread replays %v, want %v", order, ids, want)
		}
		if n := countMessages(t, st); n != len(want) {
			t.Errorf("order %v: %d messages stored, want %d (one thread)", order, n, len(want))
		}
	}
}

// TestEMLFileTwiceChangesNothing: files given twice in one call are second copies (nothing is
// written, they are not answered again: the output is the one-copy output with the duplicates'
// lines added); the same files in a second call on the same database change nothing either, and
// the runner reads the finished run back instead of calling the model or the tools again.
func TestEMLFileTwiceChangesNothing(t *testing.T) {
	ctx := context.Background()
	once, twice := filepath.Join(t.TempDir(), "once.db"), filepath.Join(t.TempDir(), "twice.db")
	var a, b bytes.Buffer
	if err := run(ctx, config{dsn: once, eml: true, files: exampleFiles[:5], now: emlClock}, &a); err != nil {
		t.Fatal(err)
	}
	withCopies := append(append([]string(nil), exampleFiles[:5]...), exampleFiles[4], exampleFiles[2], exampleFiles[0])
	if err := run(ctx, config{dsn: twice, eml: true, files: withCopies, now: emlClock}, &b); err != nil {
		t.Fatal(err)
	}
	var copies []string
	for _, l := range strings.SplitAfter(b.String(), "\n") {
		if strings.Contains(l, "a second copy") {
			copies = append(copies, l)
		}
	}
	wantCopies := []string{
		"../../mail/05-customer-attachment.eml  c3@brightline.io for support-agent: inbound, a second copy: nothing written (thread " + supportThread + ")\n",
		"../../mail/03-customer-html-only.eml  c2@brightline.io for support-agent: inbound, a second copy: nothing written (thread " + supportThread + ")\n",
		"../../mail/01-customer-question.eml  c1@brightline.io for support-agent: inbound, a second copy: nothing written (thread " + supportThread + ")\n",
		"# not answered: ../../mail/05-customer-attachment.eml for support-agent, a second copy of a message ingested above (nothing written)\n",
		"# not answered: ../../mail/03-customer-html-only.eml for support-agent, a second copy of a message ingested above (nothing written)\n",
		"# not answered: ../../mail/01-customer-question.eml for support-agent, a second copy of a message ingested above (nothing written)\n",
	}
	if !reflect.DeepEqual(copies, wantCopies) {
		t.Fatalf("the second copies printed\n%s\nwant\n%s", strings.Join(copies, ""), strings.Join(wantCopies, ""))
	}
	if got := strings.ReplaceAll(b.String(), strings.Join(copies[:3], ""), ""); strings.ReplaceAll(got, strings.Join(copies[3:], ""), "") != a.String() {
		t.Errorf("with second copies the output differs beyond their lines:\n%s", b.String())
	}
	onceThread, twiceThread := threadMessages(t, openStore(t, once)), threadMessages(t, openStore(t, twice))
	if !reflect.DeepEqual(onceThread, twiceThread) {
		t.Errorf("second copies changed the thread:\n%+v\nwant\n%+v", twiceThread, onceThread)
	}

	// The same files again, on the same database.
	var again bytes.Buffer
	if err := run(ctx, config{dsn: once, eml: true, files: exampleFiles[:5], now: emlClock}, &again); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"# support-agent answers c3@brightline.io from ../../mail/05-customer-attachment.eml (sqlite store): answered before, the finished run is read back\n",
		"# outbox: nothing unsent for support-agent (the reply was sent before)\n",
	} {
		if !strings.Contains(again.String(), want) {
			t.Errorf("the second call does not say %q:\n%s", want, again.String())
		}
	}
	if strings.Contains(again.String(), "# tickets") || strings.Count(again.String(), "a second copy: nothing written") != 5 {
		t.Errorf("the second call ran a tool or stored a file again:\n%s", again.String())
	}
	if got := threadMessages(t, openStore(t, once)); !reflect.DeepEqual(got, onceThread) {
		t.Errorf("the second call changed the thread")
	}
}

// TestEMLBadFilesStoreNothing: an unreadable file, a directory, a file that is not an email and
// an email for no persona's mailbox are each reported, with the good files among them, and
// nothing is stored; misused arguments are refused before the store is opened.
func TestEMLBadFilesStoreNothing(t *testing.T) {
	dir := t.TempDir()
	notMail := filepath.Join(dir, "notes.txt")
	stranger := filepath.Join(dir, "stranger.eml")
	write(t, notMail, "Remember: the refund went to the old card.\n")
	write(t, stranger, "From: Max <max@elsewhere.example>\r\nTo: sales@elsewhere.example\r\nSubject: Offer\r\n\r\nHello.\r\n")
	missing := filepath.Join(dir, "missing.eml")
	dsn := filepath.Join(dir, "demo.db")
	files := []string{exampleFiles[0], missing, dir, notMail, exampleFiles[4], stranger}
	var out bytes.Buffer
	err := run(context.Background(), config{dsn: dsn, eml: true, files: files, now: emlClock}, &out)
	want := "4 of the 6 -eml files cannot be ingested, so nothing was stored:\n" +
		"  " + missing + ": cannot read it: no such file or directory\n" +
		"  " + dir + ": a directory, not an .eml file\n" +
		"  " + notMail + ": not an email: it has none of the header fields From, To, Cc, Subject, Date and Message-ID (a message begins with such lines, then a blank line)\n" +
		"  " + stranger + ": for no persona's mailbox: it is from max@elsewhere.example to sales@elsewhere.example, and the personas receive mail at support@acme.example, help@acme.example, research@acme.example"
	if err == nil || err.Error() != want {
		t.Fatalf("error\n%v\nwant\n%s", err, want)
	}
	if out.Len() != 0 {
		t.Errorf("printed %q", out.String())
	}
	if n := countMessages(t, openStore(t, dsn)); n != 0 {
		t.Errorf("%d messages stored, want none", n)
	}

	for _, tc := range []struct {
		cfg  config
		want string
	}{
		{config{files: []string{"a.eml"}}, `unexpected arguments ["a.eml"]: to ingest .eml files, put -eml before them`},
		{config{eml: true}, "-eml needs at least one .eml file after the flags"},
	} {
		if err := run(context.Background(), tc.cfg, &out); err == nil || err.Error() != tc.want {
			t.Errorf("%+v: error %v, want %q", tc.cfg, err, tc.want)
		}
	}
}

// TestOutEMLWritesTheSentReplies: -out-eml writes each sent reply, byte for byte as mail.Render
// gave it (the JSON output's "eml"), to DIR/<Message-ID>.eml; it parses back as the reply that
// threads with the message answered.
func TestOutEMLWritesTheSentReplies(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "sent")
	var out bytes.Buffer
	if err := run(context.Background(), config{json: true, outEML: dir}, &out); err != nil {
		t.Fatal(err)
	}
	got := decodeOutput(t, out.Bytes())
	var names []string
	for _, r := range got.Runs[:2] {
		if len(r.Sent) != 1 {
			t.Fatalf("%s: %d replies sent", r.Title, len(r.Sent))
		}
		s := r.Sent[0]
		names = append(names, filepath.Base(s.File))
		raw, err := os.ReadFile(s.File)
		if err != nil || string(raw) != s.EML || s.File != filepath.Join(dir, s.MessageID+".eml") || s.Marked != "stored" {
			t.Fatalf("%s: file %s (%v), marked %s", r.Title, s.File, err, s.Marked)
		}
		m, err := mail.Parse(bytes.NewReader(raw), replyTime)
		if err != nil || m.MessageID != r.Reply.MessageID || m.InReplyTo != r.Reply.InReplyTo ||
			!reflect.DeepEqual(m.References, r.Reply.References) || m.From != "Acme Tracker Support <support@acme.example>" ||
			m.NoReply.Reason != mail.ReasonAutoSubmitted || len(m.Problems) != 0 {
			t.Errorf("%s: the written reply parses as %+v (%v)", r.Title, m, err)
		}
	}
	entries, err := os.ReadDir(dir)
	if err != nil || len(entries) != 2 || entries[0].Name() != min(names[0], names[1]) {
		t.Errorf("%s holds %v (%v), want %v", dir, entries, err, names)
	}
}

// outputJSON is the part of the -json output the tests read.
type outputJSON struct {
	Ingested []struct {
		File      string            `json:"file"`
		Persona   string            `json:"persona"`
		MessageID string            `json:"message_id"`
		ThreadID  string            `json:"thread_id"`
		Direction history.Direction `json:"direction"`
		Duplicate bool              `json:"duplicate"`
	} `json:"ingested"`
	Runs []struct {
		Title string `json:"title"`
		Reply struct {
			MessageID  string   `json:"message_id"`
			InReplyTo  string   `json:"in_reply_to"`
			References []string `json:"references"`
		} `json:"reply"`
		Sent []struct {
			MessageID string `json:"message_id"`
			EML       string `json:"eml"`
			File      string `json:"file"`
			Marked    string `json:"mark_sent_outcome"`
		} `json:"sent"`
	} `json:"runs"`
}

func decodeOutput(t *testing.T, b []byte) outputJSON {
	t.Helper()
	var o outputJSON
	if err := json.Unmarshal(b, &o); err != nil {
		t.Fatalf("the -json output: %v\n%s", err, b)
	}
	return o
}

func openStore(t *testing.T, dsn string) *store.Store {
	t.Helper()
	st, err := store.Open(context.Background(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

// threadMessages is the support thread as stored.
func threadMessages(t *testing.T, st *store.Store) []history.Message {
	t.Helper()
	msgs, err := st.Thread(context.Background(), supportThread)
	if err != nil {
		t.Fatal(err)
	}
	return msgs
}

// threadIDs are the Message-IDs of the support thread in replay order.
func threadIDs(t *testing.T, st *store.Store) []string {
	t.Helper()
	var ids []string
	for _, m := range threadMessages(t, st) {
		ids = append(ids, m.MessageID)
	}
	return ids
}

func countMessages(t *testing.T, st *store.Store) int {
	t.Helper()
	var n int
	if err := st.DB().Get(&n, "SELECT COUNT(*) FROM messages"); err != nil {
		t.Fatal(err)
	}
	return n
}

func write(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}
