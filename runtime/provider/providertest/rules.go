package providertest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"reflect"
	"slices"
	"sort"
	"strconv"
	"time"

	"github.com/personagen/personagen/runtime/chat"
	"github.com/personagen/personagen/runtime/provider"
	"github.com/personagen/personagen/runtime/provider/internal/fixture"
)

// rules are the suite's rules, in the order Run checks them; each name is its subtest's name.
var rules = []rule{
	{"text_answer", textAnswer},
	{"empty_answer", emptyAnswer},
	{"usage_counts_cached_input", usageCountsCachedInput},
	{"max_tokens", maxTokens},
	{"stop_sequence", stopSequence},
	{"refusal", refusal},
	{"parallel_tool_calls_and_their_results", parallelToolCalls},
	{"text_beside_a_tool_call", textBesideAToolCall},
	{"invalid_arguments_kept_and_flagged", invalidArguments},
	{"replayed_thread", replayedThread},
	{"parts_in_every_role", partsInEveryRole},
	{"only_a_system_prompt", onlyASystemPrompt},
	{"cache_plan", cachePlan},
	{"generated_conversations", generatedConversations},
	{"invalid_conversations_refused_before_sending", invalidConversations},
	{"error_statuses_classified", errorStatuses},
	{"retry_wait_read_from_the_answer", retryWaitRead},
	{"no_answer_is_transient", noAnswer},
	{"malformed_answers_are_permanent", malformedAnswers},
	{"context_window_refusal", contextWindow},
	{"cancelled_while_waiting", cancelledWhileWaiting},
	{"deadline_while_waiting", deadlineWhileWaiting},
	{"cancelled_before_the_call", cancelledBeforeTheCall},
	{"concurrent_calls_share_a_request", concurrentCalls},
	{"long_retry_wait_not_slept", longRetryWait},
	{"short_retry_wait_slept", shortRetryWait},
}

// question is the one-message conversation of the answer rules.
var question = chat.UserMessage("Where is my order A-17?")

// roundTrip has the API return ans to a one-message request and checks that the Response
// carries exactly ans: the message (text and calls; provider state aside), the stop reason, the
// refusal and the usage. It returns the Response.
func (e *env) roundTrip(ans Answer) *chat.Response {
	e.t.Helper()
	e.server().Queue(e.answer(ans))
	ctx, cancel := callContext()
	defer cancel()
	r, err := e.generate(ctx, e.model(), e.request(question))
	if err != nil {
		e.t.Fatalf("Generate: %v", err)
	}
	want := chat.Message{Role: chat.RoleAssistant, Text: ans.Text}
	for _, c := range ans.Calls {
		want.ToolCalls = append(want.ToolCalls, c.toolCall())
	}
	got := r.Message
	got.State = nil
	if !got.Equal(want) {
		e.t.Errorf("Response.Message = %s\nwant             %s", jsonOf(got), jsonOf(want))
	}
	if r.StopReason != ans.StopReason {
		e.t.Errorf("Response.StopReason = %q, want %q", r.StopReason, ans.StopReason)
	}
	if r.Refusal != ans.Refusal {
		e.t.Errorf("Response.Refusal = %q, want %q", r.Refusal, ans.Refusal)
	}
	if r.Usage != ans.Usage {
		e.t.Errorf("Response.Usage = %+v, want %+v", r.Usage, ans.Usage)
	}
	e.expectRequests("one call", 1)
	return r
}

func jsonOf(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprintf("%+v", v)
	}
	return string(b)
}

// A text answer maps to an assistant message of that text, StopEndTurn and the usage.
func textAnswer(e *env) {
	e.roundTrip(Answer{Text: "Your order A-17 shipped on Monday with DHL.", StopReason: chat.StopEndTurn,
		Usage: chat.Usage{InputTokens: 120, OutputTokens: 11}})
}

// An answer with nothing in it is a valid empty answer, not an error.
func emptyAnswer(e *env) {
	e.roundTrip(Answer{StopReason: chat.StopEndTurn, Usage: chat.Usage{InputTokens: 40}})
}

// InputTokens counts cached input too; the cache reads and writes are its parts.
func usageCountsCachedInput(e *env) {
	e.roundTrip(Answer{Text: "Done.", StopReason: chat.StopEndTurn,
		Usage: chat.Usage{InputTokens: 1000, OutputTokens: 50, CacheReadTokens: 600, CacheWriteTokens: 100}})
}

// An answer cut off by the token budget keeps its text and says StopMaxTokens.
func maxTokens(e *env) {
	e.roundTrip(Answer{Text: "Your order A-17 sh", StopReason: chat.StopMaxTokens, Usage: chat.Usage{InputTokens: 120, OutputTokens: 8}})
}

// An answer ended by a stop sequence says StopSequence (skipped for an API that does not tell).
func stopSequence(e *env) {
	e.roundTrip(Answer{Text: "Your order A-17 shipped.", StopReason: chat.StopSequence, Usage: chat.Usage{InputTokens: 120, OutputTokens: 6}})
}

// A refusal says StopRefusal with the provider's text.
func refusal(e *env) {
	e.roundTrip(Answer{StopReason: chat.StopRefusal, Refusal: "I can't help with that.", Usage: chat.Usage{InputTokens: 120, OutputTokens: 7}})
}

// Parallel tool calls map in order with their ids, names and inputs, and the next request —
// the calls with their results, one failed — is sent and answered.
func parallelToolCalls(e *env) {
	r := e.roundTrip(Answer{StopReason: chat.StopToolUse, Usage: chat.Usage{InputTokens: 300, OutputTokens: 40}, Calls: []Call{
		{ID: "call_a", Name: "lookup_order", Arguments: `{"order":"A-17"}`},
		{ID: "call_b", Name: "search_help_center", Arguments: `{"query":"damaged delivery refund"}`},
	}})
	if len(r.Message.ToolCalls) != 2 {
		return
	}
	req := e.request(question, r.Message,
		chat.ToolMessage(r.Message.ToolCalls[0].ID, `{"status":"in transit"}`),
		chat.ToolErrorMessage(r.Message.ToolCalls[1].ID, "help center unavailable"))
	ctx, cancel := callContext()
	defer cancel()
	if _, err := e.generate(ctx, e.model(), req); err != nil {
		e.t.Errorf("the request with the round's results: %v", err)
	}
	e.expectRequests("two calls", 2)
}

// Text the model wrote beside a tool call is kept with the call.
func textBesideAToolCall(e *env) {
	e.roundTrip(Answer{Text: "Let me check.", StopReason: chat.StopToolUse, Usage: chat.Usage{InputTokens: 300, OutputTokens: 20},
		Calls: []Call{{ID: "call_1", Name: "lookup_order", Arguments: `{"order":"A-17"}`}}})
}

// Arguments that are JSON but not an object are kept and flagged
// (chat.ToolCall.InvalidArguments), and the call goes back with its error result.
func invalidArguments(e *env) {
	r := e.roundTrip(Answer{StopReason: chat.StopToolUse, Usage: chat.Usage{InputTokens: 300, OutputTokens: 9},
		Calls: []Call{{ID: "call_1", Name: "lookup_order", Arguments: `"A-17"`}}})
	if len(r.Message.ToolCalls) != 1 {
		return
	}
	if raw, ok := r.Message.ToolCalls[0].InvalidArguments(); !ok || raw != `"A-17"` {
		e.t.Errorf("InvalidArguments() = %q, %v; want the arguments as produced and true", raw, ok)
	}
	req := e.request(question, r.Message, chat.ToolErrorMessage(r.Message.ToolCalls[0].ID, "the arguments are not a JSON object"))
	ctx, cancel := callContext()
	defer cancel()
	if _, err := e.generate(ctx, e.model(), req); err != nil {
		e.t.Errorf("the request with the flagged call and its error result: %v", err)
	}
}

// The support thread a persona answers (a compaction summary, replayed rounds of parallel calls
// with a whitespace-only and a failed result, a system message after the history, an image) is
// sent, and so is the next request with the model's parallel calls and their results.
func replayedThread(e *env) {
	ctx, cancel := callContext()
	defer cancel()
	req, err := fixture.Request(ctx)
	if err != nil {
		e.t.Fatalf("building the thread: %v", err)
	}
	s := e.settings()
	if s.MaxTokens == 0 {
		s.MaxTokens = req.Model.MaxTokens
	}
	req.Model = s
	var calls []Call
	for _, c := range fixture.Calls {
		calls = append(calls, Call{ID: c.ID, Name: c.Name, Arguments: string(c.Input)})
	}
	e.server().Queue(e.answer(Answer{StopReason: chat.StopToolUse, Calls: calls, Usage: chat.Usage{InputTokens: 900, OutputTokens: 60}}))
	r, err := e.generate(ctx, e.model(), req)
	if err != nil {
		e.t.Fatalf("the thread's first request: %v", err)
	}
	if len(r.Message.ToolCalls) != len(fixture.Calls) {
		e.t.Fatalf("the answer has %d tool calls, want %d", len(r.Message.ToolCalls), len(fixture.Calls))
	}
	next := *req
	next.Messages = append(append(slices.Clone(req.Messages), r.Message), fixture.Results()...)
	if _, err := e.generate(ctx, e.model(), &next); err != nil {
		e.t.Errorf("the request with the round's results: %v", err)
	}
	e.expectRequests("two calls", 2)
}

// Images, documents and notes in every role: the request is sent (parts an API cannot take
// become text, never an error).
func partsInEveryRole(e *env) {
	pdf, txt := []byte("%PDF-1.7 tiny"), []byte("Order A-17: 2 items.")
	msgs := []chat.Message{
		{Role: chat.RoleSystem, Parts: []chat.Part{chat.TextPart("You answer customer email."), chat.ImagePart("image/png", fixture.PNG)}},
		{Role: chat.RoleUser, Parts: []chat.Part{
			chat.TextPart("Photos and papers attached."), chat.ImagePart("image/png", fixture.PNG), chat.ImagePart("image/svg+xml", []byte("<svg/>")),
			chat.ImagePart("image/jpeg", nil), chat.DocumentPart("invoice.pdf", "application/pdf", pdf),
			chat.DocumentPart("notes.txt", "text/plain; charset=utf-8", txt), chat.DocumentPart("letter.docx", "application/msword", []byte("x")),
		}},
		{Role: chat.RoleAssistant, Parts: []chat.Part{chat.TextPart("Let me look at the photo."), chat.ImagePart("image/png", fixture.PNG)},
			ToolCalls: []chat.ToolCall{{ID: "call_1", Name: "lookup_order", Input: json.RawMessage(`{"order":"A-17"}`)}}},
		{Role: chat.RoleTool, ToolCallID: "call_1", IsError: true, Parts: []chat.Part{chat.TextPart("camera offline"), chat.ImagePart("image/png", fixture.PNG)}},
		chat.UserMessage("Any news?"),
	}
	ctx, cancel := callContext()
	defer cancel()
	if _, err := e.generate(ctx, e.model(), e.request(msgs...)); err != nil {
		e.t.Errorf("Generate: %v", err)
	}
	e.expectRequests("one call", 1)
}

// A chain of only a system prompt (a scheduled run) still makes a request the API answers.
func onlyASystemPrompt(e *env) {
	ctx, cancel := callContext()
	defer cancel()
	if _, err := e.generate(ctx, e.model(), e.request(chat.SystemMessage("Summarise yesterday's tickets."))); err != nil {
		e.t.Errorf("Generate: %v", err)
	}
	e.expectRequests("one call", 1)
}

// A request with a cache plan is sent as it is (the plan changes no content) and its markers,
// read back by Adapter.CacheMarks, each end one of the plan's prefixes — after the tools, after
// the persona's system prompts, after the history's last reply, at the end — in order, with the
// plan's key when the body carries one; the request is not modified.
func cachePlan(e *env) {
	ctx, cancel := callContext()
	defer cancel()
	req := e.request(
		chat.SystemMessage("You answer customer email for Acme."), chat.SystemMessage("Refunds up to EUR 100 need no approval."),
		chat.UserMessage("Where is my order A-17?"), chat.Message{Role: chat.RoleAssistant, Text: "It shipped on Monday."},
		chat.SystemMessage("This message came from ada@example.com."), chat.UserMessage("And A-18?"))
	req.Cache = &chat.CachePlan{Key: "providertest/0123456789abcdef01234567", Tail: true, Breakpoints: []chat.CacheBreakpoint{
		{End: 0, Scope: chat.CachePersona}, {End: 2, Scope: chat.CachePersona}, {End: 4, Scope: chat.CacheThread}}}
	if _, err := e.generate(ctx, e.model(), req); err != nil {
		e.t.Fatalf("Generate: %v", err)
	}
	e.expectRequests("one call", 1)
	if e.a.CacheMarks == nil {
		return
	}
	key, marks, err := e.a.CacheMarks(e.server().Bodies()[0])
	if err != nil {
		e.t.Fatalf("Adapter.CacheMarks: %v", err)
	}
	if key != "" && key != req.Cache.Key {
		e.t.Errorf("the body carries cache key %q, want the plan's %q", key, req.Cache.Key)
	}
	ends := []string{req.Tools[len(req.Tools)-1].Name, "Refunds up to EUR 100 need no approval.", "It shipped on Monday.", "And A-18?"}
	k := 0
	for _, m := range marks {
		for k < len(ends) && ends[k] != m {
			k++
		}
		if k == len(ends) {
			e.t.Errorf("markers %q: %q does not end one of the plan's prefixes %q (in order)", marks, m, ends)
			return
		}
		k++
	}
}

// generatedCount is how many generated message lists generated_conversations tries; about two
// thirds pass chat.Validate and are sent.
const generatedCount = 240

// Message lists of every shape that pass chat.Validate — system messages anywhere, rounds of
// parallel calls with results in any order, blank and failed results, parts of accepted and
// refused types, invalid arguments, provider state of any provider, call ids no API takes as
// they are — are each sent in one request and answered.
func generatedConversations(e *env) {
	rng := rand.New(rand.NewPCG(22, 4))
	data := make([]byte, 40)
	sent, failed := 0, 0
	for i := range generatedCount {
		for k := range data {
			data[k] = byte(rng.UintN(256))
		}
		msgs := fixture.NewGen(data).Messages()
		if chat.Validate(msgs) != nil {
			continue
		}
		sent++
		ctx, cancel := callContext()
		_, err := e.generate(ctx, e.model(), e.request(msgs...))
		cancel()
		if err != nil {
			if failed++; failed <= 5 {
				e.t.Errorf("conversation %d: %v\nmessages: %s", i, err, jsonOf(msgs))
			}
		}
	}
	if failed > 5 {
		e.t.Errorf("%d of %d conversations failed (the first 5 are shown)", failed, sent)
	}
	e.expectRequests(fmt.Sprintf("%d valid conversations", sent), sent)
}

// Message lists that break chat.Validate are refused with the *chat.PairingError before any
// request, as a plain error: no call was made, so there is no CallError.
func invalidConversations(e *env) {
	call := func(id string) chat.ToolCall {
		return chat.ToolCall{ID: id, Name: "lookup_order", Input: json.RawMessage(`{"order":"A-17"}`)}
	}
	for _, c := range []struct {
		name string
		msgs []chat.Message
	}{
		{"a tool result first", []chat.Message{chat.ToolMessage("c1", "shipped")}},
		{"a result without its call", []chat.Message{question, chat.ToolMessage("c9", "shipped")}},
		{"a call without its result", []chat.Message{question, chat.AssistantMessage("", call("c1"), call("c2")), chat.ToolMessage("c1", "shipped")}},
		{"a call without its result before the next question", []chat.Message{question, chat.AssistantMessage("", call("c1")), chat.UserMessage("And B-2?")}},
		{"one id twice in a round", []chat.Message{question, chat.AssistantMessage("", call("c1"), call("c1")), chat.ToolMessage("c1", "a"), chat.ToolMessage("c1", "b")}},
		{"a call without an id", []chat.Message{question, chat.AssistantMessage("", call(""))}},
		{"two results for one call", []chat.Message{question, chat.AssistantMessage("", call("c1")), chat.ToolMessage("c1", "a"), chat.ToolMessage("c1", "b")}},
		{"a round split across assistant messages", []chat.Message{question, chat.AssistantMessage("", call("c1")), chat.AssistantMessage("", call("c2")), chat.ToolMessage("c1", "a"), chat.ToolMessage("c2", "b")}},
		{"an unknown role", []chat.Message{{Role: "robot", Text: "beep"}}},
		{"tool calls on a user message", []chat.Message{{Role: chat.RoleUser, Text: "x", ToolCalls: []chat.ToolCall{call("c1")}}}},
	} {
		ctx, cancel := callContext()
		_, err := e.generate(ctx, e.model(), e.request(c.msgs...))
		cancel()
		var pe *chat.PairingError
		var ce *chat.CallError
		switch {
		case !errors.As(err, &pe):
			e.t.Errorf("%s: err = %v, want an error wrapping the *chat.PairingError of chat.Validate", c.name, err)
		case errors.As(err, &ce):
			e.t.Errorf("%s: err = %v is a *chat.CallError, but no call was made", c.name, err)
		}
	}
	e.expectRequests("refused lists", 0)
}

// failure is the error reply of status that the rules about failures queue.
func (e *env) failure(status int, header map[string]string) Reply {
	return Reply{Status: status, Header: header, Body: string(e.a.errorBody(status, "providertest: scripted failure"))}
}

// failAfter has the server answer the next request with rep and returns Generate's error for a
// one-message request.
func (e *env) failAfter(m chat.Model, rep Reply) error {
	e.t.Helper()
	e.server().Queue(rep)
	ctx, cancel := callContext()
	defer cancel()
	r, err := e.generate(ctx, m, e.request(question))
	if err == nil {
		e.t.Errorf("no error for the reply %+v; got %+v", rep, r)
	}
	return err
}

// Every error status is a CallError with that StatusCode: 408, 409, 429 and 5xx (529 included)
// transient, every other 4xx permanent; with retries off, one request each.
func errorStatuses(e *env) {
	for i, c := range []struct {
		status    int
		transient bool
	}{
		{400, false}, {401, false}, {403, false}, {404, false}, {413, false}, {422, false},
		{408, true}, {409, true}, {429, true}, {500, true}, {502, true}, {503, true}, {504, true}, {529, true},
	} {
		err := e.failAfter(e.model(), e.failure(c.status, nil))
		e.expectCallError(fmt.Sprintf("status %d", c.status), err, chat.CallError{StatusCode: c.status, Transient: c.transient})
		e.expectRequests(fmt.Sprintf("after status %d", c.status), i+1)
	}
}

// RetryAfter is the wait the answer asked for: retry-after-ms first, else Retry-After in
// seconds or as an HTTP-date; a value that is neither asks for no wait.
func retryWaitRead(e *env) {
	date := time.Now().Add(2 * time.Hour).UTC().Format(http.TimeFormat)
	for _, c := range []struct {
		name   string
		status int
		header map[string]string
		want   time.Duration
	}{
		{"retry-after in seconds", 429, map[string]string{"Retry-After": "3600"}, time.Hour},
		{"retry-after-ms", 429, map[string]string{"Retry-After-Ms": "1500"}, 1500 * time.Millisecond},
		{"retry-after-ms before retry-after", 429, map[string]string{"Retry-After-Ms": "250", "Retry-After": "7"}, 250 * time.Millisecond},
		{"a fraction of a second", 503, map[string]string{"Retry-After": "2.5"}, 2500 * time.Millisecond},
		{"an overloaded API's wait", 529, map[string]string{"Retry-After": "30"}, 30 * time.Second},
		{"a wait that is not a number or a date", 429, map[string]string{"Retry-After": "soon"}, 0},
	} {
		err := e.failAfter(e.model(), e.failure(c.status, c.header))
		e.expectCallError(c.name, err, chat.CallError{StatusCode: c.status, Transient: true, RetryAfter: c.want})
	}
	err := e.failAfter(e.model(), e.failure(503, map[string]string{"Retry-After": date}))
	if ce := e.callError(err); ce != nil && (ce.RetryAfter > 2*time.Hour || ce.RetryAfter < 2*time.Hour-time.Minute) {
		e.t.Errorf("Retry-After %s (two hours from now): RetryAfter = %s, want two hours (to the second)", date, ce.RetryAfter)
	}
}

// A connection closed without an answer is a transient CallError without a status.
func noAnswer(e *env) {
	err := e.failAfter(e.model(), Reply{Drop: true})
	e.expectCallError("connection closed", err, chat.CallError{Transient: true})
	e.expectRequests("retries off", 1)
}

// A success answer that is not an answer of the API is a permanent CallError of its status,
// wrapping provider.ErrMalformedResponse.
func malformedAnswers(e *env) {
	for _, c := range []struct {
		name string
		rep  Reply
	}{
		{"an empty object", Reply{Body: "{}"}},
		{"JSON null", Reply{Body: "null"}},
		{"an empty body", Reply{Body: ""}},
		{"cut-off JSON", Reply{Body: `{"id":"x","`}},
		{"an HTML page", Reply{Body: "<html><body>502 Bad Gateway</body></html>", Header: map[string]string{"Content-Type": "text/html"}}},
	} {
		err := e.failAfter(e.model(), c.rep)
		e.expectCallError(c.name, err, chat.CallError{StatusCode: 200})
		if err != nil && !errors.Is(err, provider.ErrMalformedResponse) {
			e.t.Errorf("%s: err = %v, want it to wrap provider.ErrMalformedResponse", c.name, err)
		}
	}
}

// The API's refusal of a request too long for the context window wraps chat.ErrContextWindow
// in a permanent CallError.
func contextWindow(e *env) {
	if e.a.ContextWindow == nil {
		e.t.Skipf("Adapter.ContextWindow is not set")
	}
	rep := e.a.ContextWindow()
	err := e.failAfter(e.model(), rep)
	status := rep.Status
	if status == 0 {
		status = 200
	}
	e.expectCallError("context window", err, chat.CallError{StatusCode: status})
	if err != nil && !errors.Is(err, chat.ErrContextWindow) {
		e.t.Errorf("err = %v, want it to wrap chat.ErrContextWindow", err)
	}
}

// A context cancelled while the API has not answered ends the call with a transient CallError
// that matches context.Canceled.
func cancelledWhileWaiting(e *env) {
	e.server().Queue(Reply{Stall: true})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		select {
		case <-e.srv.stalled:
		case <-time.After(callTimeout):
		}
		cancel()
	}()
	_, err := e.generate(ctx, e.model(), e.request(question))
	if !errors.Is(err, context.Canceled) {
		e.t.Errorf("err = %v, want it to match context.Canceled", err)
	}
	e.expectCallError("cancelled", err, chat.CallError{Transient: true})
}

// A deadline that passes while the API has not answered ends the call with a transient
// CallError that matches context.DeadlineExceeded.
func deadlineWhileWaiting(e *env) {
	e.server().Queue(Reply{Stall: true})
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	_, err := e.generate(ctx, e.model(), e.request(question))
	if !errors.Is(err, context.DeadlineExceeded) {
		e.t.Errorf("err = %v, want it to match context.DeadlineExceeded", err)
	}
	e.expectCallError("deadline", err, chat.CallError{Transient: true})
}

// A context already cancelled ends the call with an error that matches context.Canceled (a
// CallError, when the adapter made the call, is transient).
func cancelledBeforeTheCall(e *env) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := e.generate(ctx, e.model(), e.request(question))
	if !errors.Is(err, context.Canceled) {
		e.t.Errorf("err = %v, want it to match context.Canceled", err)
	}
	var ce *chat.CallError
	if errors.As(err, &ce) && !ce.Transient {
		e.t.Errorf("err = %v: a cancelled call is transient", err)
	}
}

// concurrency is how many calls concurrent_calls_share_a_request makes at once.
const concurrency = 8

// Calls made at once with one shared request each get one of the answers (run it with -race).
func concurrentCalls(e *env) {
	want := make([]string, concurrency)
	for i := range want {
		want[i] = "answer " + strconv.Itoa(i+1)
		e.server().Queue(e.answer(Answer{Text: want[i], StopReason: chat.StopEndTurn, Usage: chat.Usage{InputTokens: 10, OutputTokens: 2}}))
	}
	m := e.model()
	req := e.request(question, chat.AssistantMessage("Which order?"), chat.UserMessage("A-17, and B-2."))
	before := deepCopy(req)
	ctx, cancel := callContext()
	defer cancel()
	texts := make([]string, concurrency)
	errs := make([]error, concurrency)
	done := make(chan int, concurrency)
	for i := range concurrency {
		go func() {
			defer func() { done <- i }()
			r, err := m.Generate(ctx, req)
			if err == nil {
				texts[i] = r.Message.Text
			}
			errs[i] = err
		}()
	}
	for range concurrency {
		select {
		case <-done:
		case <-time.After(callTimeout + guard):
			e.t.Fatalf("concurrent calls did not return within %s", callTimeout+guard)
		}
	}
	for i, err := range errs {
		if err != nil {
			e.t.Errorf("call %d: %v", i, err)
		}
	}
	sort.Strings(texts)
	if !slices.Equal(texts, want) {
		e.t.Errorf("answers = %q, want each of %q once", texts, want)
	}
	if !reflect.DeepEqual(before, req) {
		e.t.Errorf("concurrent calls modified the shared request")
	}
	e.expectRequests("concurrent calls", concurrency)
}

// maxWait is the cap on a provider's wait the retry rules give the adapter (NewRetrying).
const maxWait = time.Second

// retrying returns the adapter of NewRetrying over the rule's server, skipping the rule without it.
func (e *env) retrying() chat.Model {
	e.t.Helper()
	if e.a.NewRetrying == nil {
		e.t.Skipf("Adapter.NewRetrying is not set")
	}
	m := e.a.NewRetrying(e.server().URL, maxWait)
	if m == nil {
		e.t.Fatalf("Adapter.NewRetrying returned nil")
	}
	return m
}

// A wait longer than the adapter's cap is not slept: the call ends at once with the answer's
// transient CallError, which carries the wait, after one request (an adapter that slept would
// retry and get the server's default answer).
func longRetryWait(e *env) {
	m := e.retrying()
	for i, c := range []struct {
		status int
		header map[string]string
		want   time.Duration
	}{
		{429, map[string]string{"Retry-After": "3"}, 3 * time.Second},
		{503, map[string]string{"Retry-After-Ms": "2500"}, 2500 * time.Millisecond},
		{429, map[string]string{"Retry-After": "3600"}, time.Hour},
	} {
		err := e.failAfter(m, e.failure(c.status, c.header))
		e.expectCallError(fmt.Sprintf("status %d, wait %s over a cap of %s", c.status, c.want, maxWait), err,
			chat.CallError{StatusCode: c.status, Transient: true, RetryAfter: c.want})
		e.expectRequests(fmt.Sprintf("wait %s not slept", c.want), i+1)
	}
}

// A wait within the cap is left to the client's retries: the call retries and gets the answer.
func shortRetryWait(e *env) {
	m := e.retrying()
	e.server().Queue(e.failure(429, map[string]string{"Retry-After-Ms": "20"}))
	ctx, cancel := callContext()
	defer cancel()
	r, err := e.generate(ctx, m, e.request(question))
	if err != nil || r.Message.Text != "OK." {
		e.t.Errorf("got %+v, %v; want the answer after one retry", r, err)
	}
	e.expectRequests("one retry", 2)
}
