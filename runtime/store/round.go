package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/jmoiron/sqlx"

	"github.com/personagen/personagen/runtime"
	"github.com/personagen/personagen/runtime/chat"
)

// StoredPayloadLimit is how many characters of a tool call's arguments and of its result the
// store keeps. Longer payloads are cut with runtime.Clip, which ends them with "…[truncated]"
// so they have exactly this many characters. In bytes that is at most 64,000 (4 bytes a
// character), which the TEXT columns (65,535 bytes on MySQL) hold.
const StoredPayloadLimit = 16000

// MaxRoundCalls is the most calls one round may carry. A round is one INSERT statement; this
// bound keeps it under MySQL's default max_allowed_packet (16 MiB on MariaDB: 100 calls of two
// payloads of at most 64,000 bytes each, escaped, is 12.8 MB, plus at most 2.5 MiB for the
// escaped text and state) and SQLite's host-parameter limit.
const MaxRoundCalls = 100

// MaxTurnIndex is the largest Round.TurnIndex the store accepts: the turn_index column is a
// 32-bit INT on MySQL, and SQLite is held to the same bound so both dialects refuse alike.
const MaxTurnIndex = 1<<31 - 1

// OwnerType says what a round's tool uses belong to.
type OwnerType string

// The two kinds of owner.
const (
	// OwnerMessage: the round belongs to the message a reply run answers; the owner id is that
	// inbound message's seq, and history replays the round with the message.
	OwnerMessage OwnerType = "message"
	// OwnerRun: the round belongs to a run that answers no message (a scheduled run); the owner
	// id is the run's ID (Run.ID).
	OwnerRun OwnerType = "run"
)

// Owner is what a round's tool uses belong to: the message answered, or the run.
type Owner struct {
	Type OwnerType
	ID   int64
}

// String returns "type:id".
func (o Owner) String() string { return fmt.Sprintf("%s:%d", o.Type, o.ID) }

// Result is the outcome of one tool call: Content is the text handed back to the model (stored
// as the result payload), Succeeded is false when the tool failed (a failed tool is still a
// result; its Content usually carries the error).
type Result struct {
	Content   string
	Succeeded bool
}

// Round is one tool-calling round of a run: the calls one assistant message requested and
// their results, paired index for index (Results[i] answers Calls[i]), with that assistant
// message's Text and provider State, so a resumed run rebuilds the message exactly. RunID groups one run: the
// run's key (Run.Key) when the run is in the runs table; a retry of the run reuses it. TurnIndex
// is the round within the run (from 0). The store keys each row by (Owner, RunID, TurnIndex,
// position in Calls).
type Round struct {
	Owner     Owner
	Persona   string
	RunID     string
	TurnIndex int
	Calls     []chat.ToolCall
	Results   []Result
	// Text is the assistant message's text before its calls ("" for none), at most
	// MaxRoundTextBytes of valid UTF-8.
	Text string
	// State is the assistant message's opaque provider state (chat.Message.State: thinking
	// blocks, reasoning items), stored as JSON of at most MaxRoundStateBytes.
	State []chat.ProviderState
}

// Outcome says what a write did with its key: RecordRound, AppendMessage, StartRun, FinishRun
// and AbandonRun report it, so a retry after an error learns that its first attempt (or another
// writer) already stored the key.
type Outcome int

// The outcomes of a write.
const (
	// Stored: this call wrote the key's rows.
	Stored Outcome = iota + 1
	// AlreadyStored: the key was already stored (a retry, or another writer first); this call
	// wrote nothing and the stored rows are kept.
	AlreadyStored
)

// String returns "stored" or "already stored".
func (o Outcome) String() string {
	switch o {
	case Stored:
		return "stored"
	case AlreadyStored:
		return "already stored"
	}
	return fmt.Sprintf("Outcome(%d)", int(o))
}

// ErrInvalidRound is returned (wrapped) by RecordRound for a round it refuses before writing:
// calls and results of different counts, no calls, more than MaxRoundCalls calls, an unknown
// owner type, a negative turn index or one above MaxTurnIndex, a persona, run id or tool name
// that is empty, ends in a space, is longer than its column (191 characters for persona and run
// id, 255 for the tool name) or is not valid UTF-8, and a tool call id longer than 255
// characters or not valid UTF-8 (an empty call id is allowed).
var ErrInvalidRound = errors.New("store: invalid tool round")

// ErrConflict is returned (wrapped, or as a *ConflictError from RecordRound) when a write's key
// is already stored with different content that must not differ: the stored rows are kept
// (first write wins).
var ErrConflict = errors.New("store: key already stored with different content")

// ErrUnknownOwner is returned (wrapped) by RecordRound when a round names an owner that is not
// stored: an OwnerMessage seq with no message, or an OwnerRun id with no run.
var ErrUnknownOwner = errors.New("store: tool round owner not found")

// ConflictError is returned by RecordRound when the round's key (Owner, RunID, TurnIndex) is
// already stored with different content. The stored rows are kept unchanged (first write wins).
// Position is the first differing call (-1 when the call counts differ), Field the first
// differing column ("calls" for the count, else persona, tool_call_id, tool_name, arguments,
// result or succeeded), Stored and Proposed its two values (payloads after redaction and clip).
type ConflictError struct {
	Owner     Owner
	RunID     string
	TurnIndex int
	Position  int
	Field     string
	Stored    string
	Proposed  string
}

// Error describes the key and the first difference (values shortened to 80 characters).
func (e *ConflictError) Error() string {
	return fmt.Sprintf("store: tool round %s run %q turn %d is stored with different content: position %d %s: stored %q, proposed %q",
		e.Owner, e.RunID, e.TurnIndex, e.Position, e.Field, runtime.Clip(e.Stored, 80), runtime.Clip(e.Proposed, 80))
}

// Is reports whether target is ErrConflict.
func (e *ConflictError) Is(target error) bool { return target == ErrConflict }

// toolUseRow is one tool_uses row of a round, as RecordRound writes and compares it. The
// round's assistant text and state live on its position-0 row (NULL on the others).
type toolUseRow struct {
	RoundText  sql.NullString `db:"round_text"`
	RoundState sql.NullString `db:"round_state"`
	Persona    string         `db:"persona"`
	Position   int            `db:"position"`
	ToolCallID string         `db:"tool_call_id"`
	ToolName   string         `db:"tool_name"`
	Arguments  string         `db:"arguments"`
	Result     string         `db:"result"`
	Succeeded  bool           `db:"succeeded"`
}

// roundHooks lets tests inject faults into the store's writes; nil in production.
type roundHooks struct {
	// beforeStatement runs before the named step of a write ("complete": Compact's final
	// UPDATE); an error it returns fails the step as the database's error would.
	beforeStatement func(step string) error
	// afterInsert runs inside the transaction after the INSERT succeeded, before COMMIT.
	afterInsert func(ctx context.Context, tx *sqlx.Tx) error
	// args rewrites the INSERT's arguments (to inject a bad row).
	args func(args []any)
}

// RecordRound stores one tool-calling round: one tool_uses row per call, paired with its
// result, with these guarantees:
//
//   - Validated first: a count mismatch between Calls and Results (or another ErrInvalidRound
//     case) is an error before anything is written.
//   - Atomic: the round is one multi-row INSERT in one transaction (BEGIN, INSERT, COMMIT: three
//     round trips on MySQL whatever the call count); all rows are stored or none.
//   - Idempotent: a round whose key (Owner, RunID, TurnIndex) is already stored with identical
//     rows writes nothing and returns AlreadyStored. Only a duplicate-key error of the database
//     (MySQL 1062, SQLite SQLITE_CONSTRAINT_UNIQUE, judged by error code) leads to that check;
//     there is no INSERT IGNORE, so a truncation or NULL error is never mistaken for a retry.
//   - First write wins: a stored round with different content (count, persona, call id, name,
//     payloads, succeeded) is left unchanged and RecordRound returns a *ConflictError
//     (errors.Is(err, ErrConflict)).
//   - Concurrent safe: racing recorders of the same round leave exactly one copy; the one that
//     loses sees AlreadyStored. A transaction that loses a lock race (MySQL deadlock 1213, lock
//     wait timeout 1205, SQLite BUSY) is rolled back and run again, at most 5 times, so no
//     deadlock surfaces unless the database stays contended.
//   - Payloads: arguments are the call's raw Input JSON text ("{}" when empty), results the
//     Result's Content; each goes through the store's RedactFunc (WithRedact), then invalid UTF-8
//     becomes U+FFFD, then runtime.Clip cuts it to StoredPayloadLimit characters.
//
// The transaction only inserts: the caller enters RecordRound after the round's tools ran and
// must call the next model only after it returned. No model call, tool call, or other network
// I/O may happen while the transaction is open (the store makes none, and the redaction func
// must make none either).
//
// An OwnerMessage round copies the message's thread id into each row (for replay and
// DeleteThread). A round whose message seq or run id is not stored fails with ErrUnknownOwner
// and writes nothing. After any error, recording the same round again is safe: it stores the
// round once, or says AlreadyStored when the failed attempt's commit went through.
//
// Errors, all with nothing written by this call: ErrInvalidRound (wrapped), a *ConflictError,
// ErrUnknownOwner (wrapped, also wrapping the database's error), ctx's error, and any other
// database error (a lock race still lost after 5 attempts included), wrapped with the round's
// key.
func (s *Store) RecordRound(ctx context.Context, r Round) (Outcome, error) {
	rows, err := s.roundRows(r)
	if err != nil {
		return 0, err
	}
	query, args := s.roundInsert(r, rows)
	if s.hooks != nil && s.hooks.args != nil {
		s.hooks.args(args)
	}
	// A duplicate whose stored rows vanished before we read them (a concurrent DeleteThread)
	// sends us round again; twice is enough for any real interleaving.
	for range 2 {
		err = s.inTx(ctx, func(tx *sqlx.Tx) error {
			if _, err := tx.ExecContext(ctx, query, args...); err != nil {
				return err
			}
			if s.hooks != nil && s.hooks.afterInsert != nil {
				return s.hooks.afterInsert(ctx, tx)
			}
			return nil
		})
		if err == nil {
			return Stored, nil
		}
		if !isDuplicateKey(err) {
			return 0, s.roundError(ctx, r, err)
		}
		stored, err := s.storedRound(ctx, r)
		if err != nil {
			return 0, err
		}
		if len(stored) == 0 {
			continue
		}
		if c := compareRound(r, stored, rows); c != nil {
			return 0, c
		}
		return AlreadyStored, nil
	}
	return 0, fmt.Errorf("store: record round %s run %q turn %d: key stored and removed while recording", r.Owner, r.RunID, r.TurnIndex)
}

// roundRows validates r and builds its rows with payloads redacted, made valid UTF-8 and
// clipped.
func (s *Store) roundRows(r Round) ([]toolUseRow, error) {
	where := func(format string, a ...any) error {
		return fmt.Errorf("%w: %s run %q turn %d: %s", ErrInvalidRound, r.Owner, r.RunID, r.TurnIndex, fmt.Sprintf(format, a...))
	}
	switch {
	case len(r.Calls) != len(r.Results):
		return nil, where("%d calls but %d results (they pair index for index)", len(r.Calls), len(r.Results))
	case len(r.Calls) == 0:
		return nil, where("no calls")
	case len(r.Calls) > MaxRoundCalls:
		return nil, where("%d calls (at most %d)", len(r.Calls), MaxRoundCalls)
	case r.Owner.Type != OwnerMessage && r.Owner.Type != OwnerRun:
		return nil, where("owner type %q (want message or run)", r.Owner.Type)
	case r.TurnIndex < 0:
		return nil, where("negative turn index")
	case r.TurnIndex > MaxTurnIndex:
		return nil, where("turn index above %d", MaxTurnIndex)
	}
	for _, k := range []struct {
		field, v string
		max      int
	}{{"persona", r.Persona, MaxNameChars}, {"run id", r.RunID, MaxNameChars}} {
		if err := checkKey(k.field, k.v, k.max); err != nil {
			return nil, where("%v", err)
		}
	}
	if err := checkBytes("text", r.Text, MaxRoundTextBytes); err != nil {
		return nil, where("%v", err)
	}
	state, err := encodeState(r.State)
	if err != nil {
		return nil, where("state: %v", err)
	}
	if len(state) > MaxRoundStateBytes {
		return nil, where("state has %d bytes of JSON (at most %d)", len(state), MaxRoundStateBytes)
	}
	rows := make([]toolUseRow, len(r.Calls))
	for i, c := range r.Calls {
		if err := checkLen("tool call id", c.ID, MaxToolFieldChars); err != nil {
			return nil, where("call %d: %v", i, err)
		}
		if err := checkKey("tool name", c.Name, MaxToolFieldChars); err != nil {
			return nil, where("call %d: %v", i, err)
		}
		args := string(c.Input)
		if len(c.Input) == 0 {
			args = "{}"
		}
		rows[i] = toolUseRow{
			Persona:    r.Persona,
			Position:   i,
			ToolCallID: c.ID,
			ToolName:   c.Name,
			Arguments:  s.payload(c.Name, PayloadArguments, args),
			Result:     s.payload(c.Name, PayloadResult, r.Results[i].Content),
			Succeeded:  r.Results[i].Succeeded,
		}
		if i == 0 {
			rows[i].RoundText = sql.NullString{String: r.Text, Valid: true}
			rows[i].RoundState = sql.NullString{String: state, Valid: true}
		}
	}
	return rows, nil
}

// payload prepares one payload for storage: redact, then valid UTF-8, then clip.
func (s *Store) payload(tool string, kind PayloadKind, p string) string {
	if s.redact != nil {
		p = s.redact(tool, kind, p)
	}
	return runtime.Clip(toValidUTF8(p), StoredPayloadLimit)
}

// toValidUTF8 replaces each run of invalid UTF-8 bytes with U+FFFD: utf8mb4 columns cannot hold
// invalid sequences, and both dialects must store the same text.
func toValidUTF8(s string) string {
	if utf8.ValidString(s) {
		return s
	}
	return strings.ToValidUTF8(s, "\uFFFD")
}

// roundInsert builds the round's single multi-row INSERT.
func (s *Store) roundInsert(r Round, rows []toolUseRow) (string, []any) {
	// A message owner fills thread_id from the message (NULL, refused by a CHECK, when it does
	// not exist); a run owner reads its id back from runs (NULL, refused by NOT NULL, when the
	// run does not exist). Either way an unknown owner fails the INSERT, and roundError names it.
	owner, thread := "?", "(SELECT thread_id FROM messages WHERE seq = ?)"
	if r.Owner.Type == OwnerRun {
		owner, thread = "(SELECT id FROM runs WHERE id = ?)", "NULL"
	}
	perRow := 14
	if r.Owner.Type == OwnerRun {
		perRow = 13
	}
	var b strings.Builder
	b.WriteString(`INSERT INTO tool_uses (owner_type, owner_id, thread_id, persona, run_id, turn_index,
		position, tool_call_id, tool_name, arguments, result, succeeded, round_text, round_state) VALUES `)
	args := make([]any, 0, perRow*len(rows))
	for i, row := range rows {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString("(?, " + owner + ", " + thread + ", " + placeholders(11) + ")")
		args = append(args, string(r.Owner.Type), r.Owner.ID)
		if r.Owner.Type == OwnerMessage {
			args = append(args, r.Owner.ID)
		}
		args = append(args, row.Persona, r.RunID, r.TurnIndex, row.Position, row.ToolCallID, row.ToolName,
			row.Arguments, row.Result, row.Succeeded, nullable(row.RoundText), nullable(row.RoundState))
	}
	return s.dialect.rebind(b.String()), args
}

// storedRound reads the stored rows of r's key, by position.
func (s *Store) storedRound(ctx context.Context, r Round) ([]toolUseRow, error) {
	var stored []toolUseRow
	err := s.db.SelectContext(ctx, &stored, s.dialect.rebind(`SELECT persona, position, tool_call_id, tool_name,
		arguments, result, succeeded, round_text, round_state FROM tool_uses
		WHERE owner_type = ? AND owner_id = ? AND run_id = ? AND turn_index = ? ORDER BY position`),
		string(r.Owner.Type), r.Owner.ID, r.RunID, r.TurnIndex)
	if err != nil {
		return nil, fmt.Errorf("store: read stored round %s run %q turn %d: %w", r.Owner, r.RunID, r.TurnIndex, err)
	}
	return stored, nil
}

// compareRound returns nil when stored equals proposed row for row, else the first difference.
func compareRound(r Round, stored, proposed []toolUseRow) *ConflictError {
	c := &ConflictError{Owner: r.Owner, RunID: r.RunID, TurnIndex: r.TurnIndex}
	if len(stored) != len(proposed) {
		c.Position, c.Field = -1, "calls"
		c.Stored, c.Proposed = fmt.Sprint(len(stored)), fmt.Sprint(len(proposed))
		return c
	}
	for i := range stored {
		st, pr := stored[i], proposed[i]
		c.Position = i
		for _, f := range []struct{ name, a, b string }{
			{"persona", st.Persona, pr.Persona},
			{"tool_call_id", st.ToolCallID, pr.ToolCallID},
			{"tool_name", st.ToolName, pr.ToolName},
			{"arguments", st.Arguments, pr.Arguments},
			{"result", st.Result, pr.Result},
			{"succeeded", fmt.Sprint(st.Succeeded), fmt.Sprint(pr.Succeeded)},
			// A round stored before migration 00005 has NULL text and state: compared as "".
			{"text", st.RoundText.String, pr.RoundText.String},
			{"state", st.RoundState.String, pr.RoundState.String},
		} {
			if f.a != f.b {
				c.Field, c.Stored, c.Proposed = f.name, f.a, f.b
				return c
			}
		}
	}
	return nil
}

// roundError wraps a failed round's error, naming ErrUnknownOwner when the owner message or
// run is missing (the insert then failed the tool_uses thread check, or the NOT NULL of
// owner_id).
func (s *Store) roundError(ctx context.Context, r Round, err error) error {
	err = fmt.Errorf("store: record round %s run %q turn %d: %w", r.Owner, r.RunID, r.TurnIndex, err)
	if ctx.Err() != nil {
		return err
	}
	query, what := "SELECT COUNT(*) FROM messages WHERE seq = ?", "message seq"
	if r.Owner.Type == OwnerRun {
		query, what = "SELECT COUNT(*) FROM runs WHERE id = ?", "run id"
	}
	var n int
	if qerr := s.db.GetContext(ctx, &n, s.dialect.rebind(query), r.Owner.ID); qerr == nil && n == 0 {
		return fmt.Errorf("%w: %s %d: %w", ErrUnknownOwner, what, r.Owner.ID, err)
	}
	return err
}

// storedState is how a round's provider state item is stored: Data kept as a JSON string of its
// exact bytes (not re-encoded or compacted), so a resumed run sends back the bytes the provider
// returned.
type storedState struct {
	Provider string `json:"provider"`
	Data     string `json:"data"`
}

// encodeState returns the stored JSON text of a round's provider state, "" for none. Each
// item's Data must be valid JSON (or empty).
func encodeState(state []chat.ProviderState) (string, error) {
	if len(state) == 0 {
		return "", nil
	}
	items := make([]storedState, len(state))
	for i, st := range state {
		if len(st.Data) > 0 && !json.Valid(st.Data) {
			return "", fmt.Errorf("item %d (%s): data is not valid JSON", i, st.Provider)
		}
		if !utf8.Valid(st.Data) {
			return "", fmt.Errorf("item %d (%s): data is not valid UTF-8", i, st.Provider)
		}
		items[i] = storedState{Provider: st.Provider, Data: string(st.Data)}
	}
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(items); err != nil {
		return "", err
	}
	return strings.TrimSuffix(b.String(), "\n"), nil
}

// decodeState reads what encodeState wrote.
func decodeState(text string) ([]chat.ProviderState, error) {
	if text == "" {
		return nil, nil
	}
	var items []storedState
	if err := json.Unmarshal([]byte(text), &items); err != nil {
		return nil, err
	}
	state := make([]chat.ProviderState, len(items))
	for i, it := range items {
		state[i] = chat.ProviderState{Provider: it.Provider}
		if it.Data != "" {
			state[i].Data = json.RawMessage(it.Data)
		}
	}
	return state, nil
}

// nullable is v's string, or NULL when v is not valid.
func nullable(v sql.NullString) any {
	if !v.Valid {
		return nil
	}
	return v.String
}

// Rounds returns the rounds recorded for owner by the run runID, in turn order, each with its
// calls (Input is the stored arguments), results, text and state — what a resumed run replays
// instead of calling the model and the tools again. The payloads are the stored ones: passed
// through the store's RedactFunc and clipped to StoredPayloadLimit characters, so they equal
// what the model and the tools exchanged only when neither changed them. One query, served by
// the rounds' unique key. An unknown owner or run gives no rounds and no error. Errors: the
// database's (wrapped), or a stored state that is not valid JSON.
func (s *Store) Rounds(ctx context.Context, owner Owner, runID string) ([]Round, error) {
	var rows []struct {
		toolUseRow
		TurnIndex int `db:"turn_index"`
	}
	err := s.db.SelectContext(ctx, &rows, s.dialect.rebind(`SELECT persona, turn_index, position, tool_call_id,
		tool_name, arguments, result, succeeded, round_text, round_state FROM tool_uses
		WHERE owner_type = ? AND owner_id = ? AND run_id = ? ORDER BY turn_index, position`),
		string(owner.Type), owner.ID, runID)
	if err != nil {
		return nil, fmt.Errorf("store: read the rounds of %s run %q: %w", owner, runID, err)
	}
	var out []Round
	for _, row := range rows {
		if row.Position == 0 || len(out) == 0 || out[len(out)-1].TurnIndex != row.TurnIndex {
			r := Round{Owner: owner, Persona: row.Persona, RunID: runID, TurnIndex: row.TurnIndex, Text: row.RoundText.String}
			if r.State, err = decodeState(row.RoundState.String); err != nil {
				return nil, fmt.Errorf("store: read the rounds of %s run %q: turn %d state: %w", owner, runID, row.TurnIndex, err)
			}
			out = append(out, r)
		}
		r := &out[len(out)-1]
		r.Calls = append(r.Calls, chat.ToolCall{ID: row.ToolCallID, Name: row.ToolName, Input: json.RawMessage(row.Arguments)})
		r.Results = append(r.Results, Result{Content: row.Result, Succeeded: row.Succeeded})
	}
	return out, nil
}
