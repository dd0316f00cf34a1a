package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/jmoiron/sqlx"

	"github.com/personagen/personagen/runtime/chat"
)

// MaxTurnCallBytes bounds the JSON of a turn's tool calls (their ids, names and arguments as the
// model produced them), so a turn row stays well under MariaDB's default 16 MiB packet.
const MaxTurnCallBytes = 4 << 20

// Turn is one model call of a run as a runner records it, after the model answered and before
// any of the answer's tools runs: the assistant message (Text, ToolCalls with their arguments as
// the model produced them, State kept byte for byte), the provider's StopReason, the Model that
// answered, the provider's RequestID and ResponseID, and the call's Usage. Recording a turn marks
// every one of its calls as started: a call of a tool that is not idempotent whose outcome is not
// recorded (SettleCall) is, after a crash, in doubt — it may have run.
//
// Outcomes holds, as Turns reads them, the recorded outcomes of the turn's calls in position
// order; StartTurn ignores it. ApprovalRequests are the calls that wait for approval, which
// StartTurn records with the turn (Turns leaves it nil); Approvals holds, as Turns reads them,
// those calls' approvals in position order (StartTurn ignores it).
type Turn struct {
	RunID      int64
	TurnIndex  int
	Text       string
	ToolCalls  []chat.ToolCall
	State      []chat.ProviderState
	StopReason string
	Model      string
	RequestID  string
	ResponseID string
	Usage      chat.Usage
	Outcomes   []CallOutcome

	ApprovalRequests []ApprovalRequest
	Approvals        []Approval
}

// CallOutcome is the recorded outcome of one call of a turn: Position is the call's index in
// Turn.ToolCalls, ToolCallID and ToolName name it, and Result is what the tool returned, with its
// Content as RecordRound stores a result (redacted, valid UTF-8, clipped to StoredPayloadLimit
// characters).
type CallOutcome struct {
	Position   int
	ToolCallID string
	ToolName   string
	Result     Result
}

// storedCall is how a turn's tool call is stored: the arguments as a JSON string of their exact
// bytes, so a resumed run runs the tool with what the model produced.
type storedCall struct {
	ID        string `json:"id"`
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

// StartTurn records turn t of run t.RunID for holder, the run's lease holder, in one statement
// (one round trip) that writes only while the run is running under holder's lease: a worker whose
// run was taken over can record no more turns, and so starts no more tools. With
// t.ApprovalRequests, the turn and its calls' approvals (waiting, with their deadlines from the
// store's clock) are written in one transaction, so a call that needs approval is never recorded
// without its approval. It returns Stored, or AlreadyStored when the turn is already recorded
// with the same content (a retry after an error whose commit went through).
//
// Errors: ErrInvalid (wrapped) for a negative or too large turn index, a tool call without a name
// or with over-long fields, more than MaxRoundCalls calls, a text over MaxRoundTextBytes, state
// over MaxRoundStateBytes or calls over MaxTurnCallBytes of JSON, a stop reason or model over 191
// characters, ids over 255, negative usage, or any of them not valid UTF-8, an approval request
// of a position outside the calls or named twice, with a timeout out of range, an unknown
// on-timeout action or a decoded input over MaxTurnCallBytes; ErrConflict (wrapped) when the turn
// is recorded with other content; ErrRunNotFound, ErrRunFinished or ErrLeaseLost (wrapped) when
// the run is not running under holder's lease; ctx's error; the database's (wrapped).
func (s *Store) StartTurn(ctx context.Context, holder string, t Turn) (Outcome, error) {
	row, err := turnRowOf(t)
	if err != nil {
		return 0, err
	}
	if err := checkApprovalRequests(t); err != nil {
		return 0, err
	}
	if err := checkKey("lease holder", holder, MaxNameChars); err != nil {
		return 0, err
	}
	fail := func(err error) (Outcome, error) {
		return 0, fmt.Errorf("store: start turn %d of run %d: %w", t.TurnIndex, t.RunID, err)
	}
	d := s.dialect
	insert := d.rebind(`INSERT INTO run_turns (run_id, turn_index, message_text, tool_calls, state,
		stop_reason, model, request_id, response_id, input_tokens, output_tokens, cache_read_tokens, cache_write_tokens)
		SELECT id, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ? FROM runs WHERE id = ? AND status = 'running' AND lease_holder = ?`)
	args := []any{row.TurnIndex, row.Text, row.Calls, row.State, row.StopReason, row.Model, row.RequestID, row.ResponseID,
		row.InputTokens, row.OutputTokens, row.CacheReadTokens, row.CacheWriteTokens, t.RunID, holder}
	var n int64
	if len(t.ApprovalRequests) == 0 {
		n, err = s.affected(ctx, insert, args...)
	} else {
		now, cerr := s.clock()
		if cerr != nil {
			return 0, cerr
		}
		err = s.inTx(ctx, func(tx *sqlx.Tx) error {
			res, err := tx.ExecContext(ctx, insert, args...)
			if err != nil {
				return err
			}
			if n, err = res.RowsAffected(); err != nil || n == 0 {
				return err
			}
			return s.insertApprovals(ctx, tx, t, now)
		})
	}
	switch {
	case err == nil && n == 1:
		return Stored, nil
	case err == nil:
		return fail(s.notHolding(ctx, t.RunID, holder))
	case !isDuplicateKey(err):
		return fail(err)
	}
	var stored []turnRow
	if err := s.db.SelectContext(ctx, &stored, d.rebind(`SELECT `+turnColumns+` FROM run_turns
		WHERE run_id = ? AND turn_index = ?`), t.RunID, t.TurnIndex); err != nil {
		return fail(err)
	}
	if len(stored) == 0 {
		return fail(errors.New("the turn was stored and removed while it was recorded"))
	}
	if stored[0] != row {
		return fail(fmt.Errorf("%w: turn %d of run %d is recorded with another answer", ErrConflict, t.TurnIndex, t.RunID))
	}
	return AlreadyStored, nil
}

// CheckTurn returns the error StartTurn would return for t before writing anything — a turn
// index out of range, more than MaxRoundCalls calls, a call without a name, a field over its
// limit or not valid UTF-8, negative usage (ErrInvalid, wrapped, naming the field) — or nil when
// t can be recorded. Its checks of the calls also hold the ones RecordRound makes of a round of
// those calls, so a runner that checks an answer with CheckTurn before running its tools can
// record the round afterwards. It reads nothing.
func CheckTurn(t Turn) error {
	_, err := turnRowOf(t)
	return err
}

// SettleCall records the outcome o of a call of turn turnIndex of run runID for holder, in one
// statement (one round trip) that writes only while the run is running under holder's lease and
// the turn is recorded. The result's content is stored as RecordRound stores a result (see
// CallOutcome). It returns Stored, or AlreadyStored when the same outcome is recorded (a retry).
//
// Errors: ErrInvalid (wrapped) for a position outside the turn's calls or a call id or tool name
// that is not the call's; ErrConflict (wrapped) when another outcome is recorded for the call;
// ErrRunNotFound, ErrRunFinished or ErrLeaseLost (wrapped) when the run is not running under
// holder's lease; ctx's error; the database's (wrapped).
func (s *Store) SettleCall(ctx context.Context, holder string, runID int64, turnIndex int, o CallOutcome) (Outcome, error) {
	fail := func(err error) (Outcome, error) {
		return 0, fmt.Errorf("store: settle call %d of turn %d of run %d: %w", o.Position, turnIndex, runID, err)
	}
	if err := checkKey("lease holder", holder, MaxNameChars); err != nil {
		return 0, err
	}
	if o.Position < 0 || o.Position >= MaxRoundCalls || turnIndex < 0 || turnIndex > MaxTurnIndex {
		return fail(fmt.Errorf("%w: position %d of turn %d", ErrInvalid, o.Position, turnIndex))
	}
	content := s.payload(o.ToolName, PayloadResult, o.Result.Content)
	d := s.dialect
	n, err := s.affected(ctx, d.rebind(`INSERT INTO run_call_outcomes (run_id, turn_index, position, tool_call_id,
		tool_name, result, succeeded) SELECT r.id, t.turn_index, ?, ?, ?, ?, ? FROM runs r
		JOIN run_turns t ON t.run_id = r.id AND t.turn_index = ?
		WHERE r.id = ? AND r.status = 'running' AND r.lease_holder = ?`),
		o.Position, o.ToolCallID, o.ToolName, content, o.Result.Succeeded, turnIndex, runID, holder)
	switch {
	case err == nil && n == 1:
		return Stored, nil
	case err == nil:
		if herr := s.notHolding(ctx, runID, holder); herr != nil {
			return fail(herr)
		}
		return fail(fmt.Errorf("%w: turn %d of run %d is not recorded", ErrInvalid, turnIndex, runID))
	case !isDuplicateKey(err):
		return fail(err)
	}
	var stored []outcomeRow
	if err := s.db.SelectContext(ctx, &stored, d.rebind(`SELECT turn_index, position, tool_call_id, tool_name,
		result, succeeded FROM run_call_outcomes WHERE run_id = ? AND turn_index = ? AND position = ?`),
		runID, turnIndex, o.Position); err != nil {
		return fail(err)
	}
	if len(stored) == 0 {
		return fail(errors.New("the outcome was stored and removed while it was recorded"))
	}
	want := outcomeRow{TurnIndex: turnIndex, Position: o.Position, ToolCallID: o.ToolCallID, ToolName: o.ToolName,
		Result: content, Succeeded: o.Result.Succeeded}
	if stored[0] != want {
		return fail(fmt.Errorf("%w: another outcome is recorded", ErrConflict))
	}
	return AlreadyStored, nil
}

// Turns returns the recorded turns of run runID in turn order, each with its recorded
// outcomes and approvals (as of the store's clock): what a resumed run continues from. Three
// queries. Errors: the database's (wrapped), or a stored row that does not decode.
func (s *Store) Turns(ctx context.Context, runID int64) ([]Turn, error) {
	fail := func(err error) ([]Turn, error) {
		return nil, fmt.Errorf("store: read the turns of run %d: %w", runID, err)
	}
	d := s.dialect
	var rows []turnRow
	if err := s.db.SelectContext(ctx, &rows, d.rebind(`SELECT `+turnColumns+` FROM run_turns
		WHERE run_id = ? ORDER BY turn_index`), runID); err != nil {
		return fail(err)
	}
	if len(rows) == 0 {
		return nil, nil
	}
	var outcomes []outcomeRow
	if err := s.db.SelectContext(ctx, &outcomes, d.rebind(`SELECT turn_index, position, tool_call_id, tool_name,
		result, succeeded FROM run_call_outcomes WHERE run_id = ? ORDER BY turn_index, position`), runID); err != nil {
		return fail(err)
	}
	turns := make([]Turn, len(rows))
	index := make(map[int]int, len(rows))
	for i, r := range rows {
		t, err := r.turn(runID)
		if err != nil {
			return fail(fmt.Errorf("turn %d: %w", r.TurnIndex, err))
		}
		turns[i] = t
		index[r.TurnIndex] = i
	}
	for _, o := range outcomes {
		if i, ok := index[o.TurnIndex]; ok {
			turns[i].Outcomes = append(turns[i].Outcomes, CallOutcome{Position: o.Position, ToolCallID: o.ToolCallID,
				ToolName: o.ToolName, Result: Result{Content: o.Result, Succeeded: o.Succeeded}})
		}
	}
	now, err := s.clock()
	if err != nil {
		return nil, err
	}
	approvals, err := s.selectApprovals(ctx, now, "a.run_id = ?", "a.turn_index, a.position", runID)
	if err != nil {
		return fail(err)
	}
	for _, a := range approvals {
		if i, ok := index[a.TurnIndex]; ok {
			turns[i].Approvals = append(turns[i].Approvals, a)
		}
	}
	return turns, nil
}

// notHolding explains why a write fenced by the lease wrote nothing: the run is gone, finished,
// or held by another holder. nil when it is running under holder's lease after all.
func (s *Store) notHolding(ctx context.Context, runID int64, holder string) error {
	r, found, err := s.runWhere(ctx, "id = ?", runID)
	switch {
	case err != nil:
		return err
	case !found:
		return fmt.Errorf("%w: id %d", ErrRunNotFound, runID)
	}
	return holding(r, holder)
}

// turnRow is a run_turns row.
type turnRow struct {
	TurnIndex        int    `db:"turn_index"`
	Text             string `db:"message_text"`
	Calls            string `db:"tool_calls"`
	State            string `db:"state"`
	StopReason       string `db:"stop_reason"`
	Model            string `db:"model"`
	RequestID        string `db:"request_id"`
	ResponseID       string `db:"response_id"`
	InputTokens      int64  `db:"input_tokens"`
	OutputTokens     int64  `db:"output_tokens"`
	CacheReadTokens  int64  `db:"cache_read_tokens"`
	CacheWriteTokens int64  `db:"cache_write_tokens"`
}

const turnColumns = `turn_index, message_text, tool_calls, state, stop_reason, model, request_id, response_id,
	input_tokens, output_tokens, cache_read_tokens, cache_write_tokens`

// outcomeRow is a run_call_outcomes row.
type outcomeRow struct {
	TurnIndex  int    `db:"turn_index"`
	Position   int    `db:"position"`
	ToolCallID string `db:"tool_call_id"`
	ToolName   string `db:"tool_name"`
	Result     string `db:"result"`
	Succeeded  bool   `db:"succeeded"`
}

// turnRowOf validates t and encodes it as its row.
func turnRowOf(t Turn) (turnRow, error) {
	where := func(format string, a ...any) (turnRow, error) {
		return turnRow{}, fmt.Errorf("%w: turn %d of run %d: %s", ErrInvalid, t.TurnIndex, t.RunID, fmt.Sprintf(format, a...))
	}
	// The field checks' errors name ErrInvalid themselves; where names it once.
	bare := func(err error) string { return strings.TrimPrefix(err.Error(), ErrInvalid.Error()+": ") }
	switch {
	case t.TurnIndex < 0 || t.TurnIndex > MaxTurnIndex:
		return where("turn index out of range (0 to %d)", MaxTurnIndex)
	case len(t.ToolCalls) > MaxRoundCalls:
		return where("%d tool calls (at most %d)", len(t.ToolCalls), MaxRoundCalls)
	case t.Usage.InputTokens < 0 || t.Usage.OutputTokens < 0 || t.Usage.CacheReadTokens < 0 || t.Usage.CacheWriteTokens < 0:
		return where("negative usage %+v", t.Usage)
	}
	if err := checkBytes("text", t.Text, MaxRoundTextBytes); err != nil {
		return where("%s", bare(err))
	}
	for _, f := range []struct {
		name, v string
		max     int
	}{{"stop reason", t.StopReason, MaxNameChars}, {"model", t.Model, MaxNameChars},
		{"request id", t.RequestID, MaxToolFieldChars}, {"response id", t.ResponseID, MaxToolFieldChars}} {
		if err := checkLen(f.name, f.v, f.max); err != nil {
			return where("%s", bare(err))
		}
	}
	state, err := encodeState(t.State)
	if err != nil {
		return where("state: %v", err)
	}
	if len(state) > MaxRoundStateBytes {
		return where("state has %d bytes of JSON (at most %d)", len(state), MaxRoundStateBytes)
	}
	calls := make([]storedCall, len(t.ToolCalls))
	for i, c := range t.ToolCalls {
		if err := checkLen("tool call id", c.ID, MaxToolFieldChars); err != nil {
			return where("call %d: %s", i, bare(err))
		}
		if err := checkKey("tool name", c.Name, MaxToolFieldChars); err != nil {
			return where("call %d: %s", i, bare(err))
		}
		args := string(c.Input)
		if len(c.Input) == 0 {
			args = "{}"
		}
		if err := checkBytes("arguments", args, MaxTurnCallBytes); err != nil {
			return where("call %d: %s", i, bare(err))
		}
		calls[i] = storedCall{ID: c.ID, Name: c.Name, Arguments: args}
	}
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(calls); err != nil {
		return where("tool calls: %v", err)
	}
	encoded := strings.TrimSuffix(b.String(), "\n")
	if len(encoded) > MaxTurnCallBytes {
		return where("tool calls have %d bytes of JSON (at most %d)", len(encoded), MaxTurnCallBytes)
	}
	return turnRow{TurnIndex: t.TurnIndex, Text: t.Text, Calls: encoded, State: state, StopReason: t.StopReason,
		Model: t.Model, RequestID: t.RequestID, ResponseID: t.ResponseID,
		InputTokens: t.Usage.InputTokens, OutputTokens: t.Usage.OutputTokens,
		CacheReadTokens: t.Usage.CacheReadTokens, CacheWriteTokens: t.Usage.CacheWriteTokens}, nil
}

// turn decodes a stored row.
func (r turnRow) turn(runID int64) (Turn, error) {
	t := Turn{RunID: runID, TurnIndex: r.TurnIndex, Text: r.Text, StopReason: r.StopReason, Model: r.Model,
		RequestID: r.RequestID, ResponseID: r.ResponseID,
		Usage: chat.Usage{InputTokens: r.InputTokens, OutputTokens: r.OutputTokens,
			CacheReadTokens: r.CacheReadTokens, CacheWriteTokens: r.CacheWriteTokens}}
	var err error
	if t.State, err = decodeState(r.State); err != nil {
		return Turn{}, fmt.Errorf("state: %w", err)
	}
	var calls []storedCall
	if err := json.Unmarshal([]byte(r.Calls), &calls); err != nil {
		return Turn{}, fmt.Errorf("tool calls: %w", err)
	}
	for _, c := range calls {
		t.ToolCalls = append(t.ToolCalls, chat.ToolCall{ID: c.ID, Name: c.Name, Input: json.RawMessage(c.Arguments)})
	}
	return t, nil
}

// StoredPayload returns payload as RecordRound stores it for a call of toolName: passed through
// the store's RedactFunc (WithRedact), made valid UTF-8 and clipped to StoredPayloadLimit
// characters. A runner hands the model each result in this form, so a resumed run — which reads
// the stored form back — sends the model the same bytes as an uninterrupted one.
func (s *Store) StoredPayload(toolName string, kind PayloadKind, payload string) string {
	return s.payload(toolName, kind, payload)
}

// MessageBySeq returns the message stored under seq, with its attachments' metadata and the
// store-only fields (Mailbox, RunKey, NotToAnswer, Problems): the row a reply run answers, so its
// identity — thread, mailbox, message id — is the store's, never a caller's copy. One query.
// Errors: ErrMessageNotFound (wrapped), or the database's (wrapped).
func (s *Store) MessageBySeq(ctx context.Context, seq int64) (Message, error) {
	m, err := s.messageWhere(ctx, "seq = ?", seq)
	if err != nil {
		return Message{}, fmt.Errorf("store: read message seq %d: %w", seq, err)
	}
	return m, nil
}

// ReplyOf returns the outbound reply stored for the run runKey (Message.RunKey), with its
// ThreadID and Seq. Two queries (the message, its attachments). Errors: ErrMessageNotFound
// (wrapped) when the run has no reply; the database's (wrapped).
func (s *Store) ReplyOf(ctx context.Context, runKey string) (Message, error) {
	m, err := s.messageWhere(ctx, "run_key = ?", runKey)
	if err != nil {
		return Message{}, fmt.Errorf("store: reply of run %q: %w", runKey, err)
	}
	return m, nil
}
