package assembly

import (
	_ "embed"
	"strconv"
	"strings"
	"testing/fstest"
	"time"

	"github.com/personagen/personagen/bench/assembly/internal/host"
	"github.com/personagen/personagen/runtime/history"
)

// PromptPath is the path of the system prompt in Fixture.Files, the path the spec names.
const PromptPath = "prompts/system.md"

// Thread is the thread id the fixture's rows belong to.
const Thread = "thread-bench"

// The shape of the fixture: 50 earlier messages, 20 tool rounds of 5 calls (100 tool uses).
const (
	HistoryMessages = 50
	ToolRounds      = 20
	CallsPerRound   = 5
	// ResultLimit is the replay clip of tool results, in characters (the spec's
	// replay_result_limit, the replay default).
	ResultLimit = 4000
)

//go:embed prompts/system.md
var systemPrompt []byte

// Fixture is the input every pipeline starts from. It is built once, outside the timed loops,
// and only read afterwards.
type Fixture struct {
	// Rows are the thread's earlier messages, oldest first, with their tool uses in recording
	// order, as a history.Source may return them.
	Rows []history.Message
	// Files holds the system prompt at PromptPath.
	Files fstest.MapFS
	// Env holds the sender's account.
	Env *host.Env
	// Current is the message being answered.
	Current history.Message
}

var t0 = time.Date(2026, 3, 2, 9, 0, 0, 0, time.UTC)

// NewFixture builds the fixture. Tool rounds hang off the inbound messages 0, 4, 8, …, 36 (two
// rounds of five calls each, the run that answered the message); every fourth result is longer
// than ResultLimit and holds non-ASCII text (so the replay clips it by characters); every tenth
// argument payload was clipped when recorded (no longer JSON, so the replay wraps it); every
// seventh message has an attachment.
func NewFixture() *Fixture {
	f := &Fixture{
		Files: fstest.MapFS{PromptPath: &fstest.MapFile{Data: systemPrompt}},
		Env: &host.Env{Accounts: map[string]host.Account{
			"ada@example.com": {Email: "ada@example.com", Name: "Ada Lovelace", Company: "Analytical Engines Ltd",
				Plan: "Business", Seats: 42, OpenTickets: 2},
		}},
		Current: history.Message{ThreadID: Thread, MessageID: "msg-current", From: "ada@example.com",
			To: []string{"support@acme.test"}, Date: t0.Add(HistoryMessages * time.Hour), Subject: "Re: Export fails",
			Text: "Thanks. The export still stops at 80 % for the Q1 board; could you look again? It is due tomorrow."},
	}
	para := "We use Acme Tracker for the whole engineering team and the export of the quarterly board " +
		"keeps failing with a timeout after a few minutes, although smaller boards export fine. "
	use := 0
	for i := range HistoryMessages {
		m := history.Message{
			MessageID: "msg-" + strconv.Itoa(i),
			Date:      t0.Add(time.Duration(i) * time.Hour),
			Subject:   "Re: Export fails (" + strconv.Itoa(i/2) + ")",
			Text:      "\n" + strings.Repeat(para, 2+i%5) + "\n",
		}
		if i%2 == 0 {
			m.Direction = history.Inbound
			m.From = "Ada Lovelace <ada@example.com>"
			m.To = []string{"support@acme.test"}
			if i%6 == 0 {
				m.Cc = []string{"Grace Hopper <grace@example.com>", "ops@example.com"}
			}
		} else {
			m.Direction = history.Outbound
			m.From = "Acme Support <support@acme.test>"
			m.To = []string{"Ada Lovelace <ada@example.com>"}
		}
		if i%7 == 0 {
			m.Attachments = []history.Attachment{{ID: "att-" + strconv.Itoa(i), Filename: "export-log-" + strconv.Itoa(i) + ".txt",
				ContentType: "text/plain", Size: int64(1000 + 37*i)}}
		}
		if i%4 == 0 && i < 4*ToolRounds/2 {
			for turn := range 2 {
				for pos := range CallsPerRound {
					m.ToolUses = append(m.ToolUses, toolUse(i, turn, pos, use))
					use++
				}
			}
		}
		f.Rows = append(f.Rows, m)
	}
	return f
}

var toolNames = [...]string{"lookup_order", "search_help_center", "get_export_status", "escalate_ticket", "read_attachment"}

func toolUse(msg, turn, pos, n int) history.ToolUse {
	u := history.ToolUse{
		RunID:      "run-" + strconv.Itoa(msg),
		TurnIndex:  turn,
		Position:   pos,
		ToolCallID: "toolu_" + strconv.Itoa(msg) + "_" + strconv.Itoa(turn) + "_" + strconv.Itoa(pos),
		ToolName:   toolNames[pos],
		Arguments:  `{"query":"export timeout board Q1","board_id":"brd_` + strconv.Itoa(n) + `","limit":10}`,
		HasResult:  true,
		Succeeded:  true,
	}
	item := `{"title":"Exporting large boards","url":"https://help.acme.test/export-large-boards","snippet":"Boards with more than 5,000 cards export in the background; you get an email with the link."},`
	reps := 8
	if n%4 == 0 {
		item = `{"title":"Größere Boards exportieren — Übersicht","url":"https://help.acme.test/de/export","snippet":"Exporte über 5.000 Karten laufen im Hintergrund – Sie erhalten eine E-Mail mit dem Link."},`
		reps = 40
	}
	u.Result = `{"items":[` + strings.Repeat(item, reps) + `{}]}`
	if n%10 == 3 {
		// A payload clipped when it was recorded: no longer JSON.
		u.Arguments = `{"query":"` + strings.Repeat("very long query text ", 10) + "…[truncated]"
	}
	return u
}
