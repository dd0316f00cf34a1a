package providertest

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"runtime"
	"testing"
	"time"

	"github.com/personagen/personagen/runtime/chat"
)

// Adapter describes the adapter under test and the API it speaks, as far as the suite needs to
// play that API. Provider, New and Answer are required; the other fields widen what the suite
// checks.
type Adapter struct {
	// Provider is the name the adapter's *chat.CallErrors carry in Provider.
	Provider string

	// Settings are the model settings of every request the suite sends. Name defaults to
	// "providertest-model"; set Provider when the adapter refuses settings written for no
	// provider.
	Settings chat.ModelSettings

	// New returns the adapter under test, sending every request to baseURL — the suite's Server,
	// which answers on any path below it — with its client's own retries off: the suite counts
	// requests, one per Generate. The suite calls it once per rule; the adapter may keep
	// connections open until the rule's server closes.
	New func(baseURL string) chat.Model

	// NewRetrying, when set, returns the adapter with its client's retries on (their default)
	// and its cap on the wait a provider may ask for set to maxWait (the suite passes 1 s). The
	// retry rules are skipped without it.
	NewRetrying func(baseURL string, maxWait time.Duration) chat.Model

	// Answer returns the success reply (status 200, the API's body) by which the API returns a.
	// It returns an error wrapping errors.ErrUnsupported for an answer the API cannot express
	// (a stop reason it does not report, cache writes it does not count); the rules that need
	// that answer are then skipped. Any other error fails the rule.
	Answer func(a Answer) (Reply, error)

	// Error returns the body of an error reply of the HTTP status with message, in the API's
	// error shape. Without it the suite sends {"error":{"type":"error","message":<message>}}.
	Error func(status int, message string) []byte

	// ContextWindow, when set, returns the reply by which the API refuses a request whose input
	// does not fit the model's context window; the adapter must mark it chat.ErrContextWindow.
	ContextWindow func() Reply

	// Check, when set, checks every request the adapter sends — its HTTP request and its body,
	// read whole — against the API's rules as the implementer knows them (a JSON schema, a
	// validator of the API's SDK, a strict decoder). A request it refuses fails the rule, and the
	// server answers it with a 400 error reply carrying the refusal.
	Check func(r *http.Request, body []byte) error

	// CacheMarks, when set, reads back from a request body where the adapter put the
	// provider's prompt-cache markers: for each marker, in the order of the request, the text of
	// the content element it stands on (a text part, a tool result's text; a tool's name for a
	// marker after the tools; for a marker that stands for the request's last block, such as
	// Anthropic's top-level cache_control, that block's text), and the cache key the body
	// carries ("" for none). The cache_plan rule then checks that every marker ends one of the
	// plan's prefixes, in order, and that a key equals the plan's.
	CacheMarks func(body []byte) (key string, marks []string, err error)

	// RequestIDHeader, when set, is the response header by which the API names a request
	// ("request-id", "x-request-id"): the server sends "req_<n>" in it, and every Response must
	// carry that RequestID.
	RequestIDHeader string
}

// Answer is a model answer the suite has the API return, in the contract's terms: Adapter.Answer
// renders it in the API's, and the suite checks that the adapter maps it back to exactly this.
//
// Text is the assistant's text ("" for none) and Calls its tool calls, in order. StopReason is
// the chat.StopReason the Response must carry: the renderer writes the API's value for it
// (StopToolUse comes with calls). Refusal is the provider's refusal text, with StopRefusal.
// Usage is the chat.Usage the Response must carry: InputTokens counts cached tokens too, so an
// API that reports uncached input apart (Anthropic's input_tokens) gets
// InputTokens - CacheReadTokens - CacheWriteTokens there.
type Answer struct {
	Text       string
	Calls      []Call
	StopReason chat.StopReason
	Refusal    string
	Usage      chat.Usage
}

// Call is a tool call in an Answer: its id, the tool's name, and the arguments as the model
// produced them, a JSON text. The suite also sends arguments that are JSON but not an object
// (`"A-17"`), which the adapter must keep and flag as chat.ToolCallFromArguments does; an API
// whose calls carry a JSON object renders them as that value.
type Call struct {
	ID, Name, Arguments string
}

// toolCall is the chat.ToolCall an adapter must map c to.
func (c Call) toolCall() chat.ToolCall { return chat.ToolCallFromArguments(c.ID, c.Name, c.Arguments) }

func (a Adapter) render(ans Answer) (Reply, error) {
	if a.Answer == nil {
		return Reply{}, errors.New("Adapter.Answer is nil")
	}
	return a.Answer(ans)
}

func (a Adapter) errorBody(status int, msg string) []byte {
	if a.Error != nil {
		return a.Error(status, msg)
	}
	b, _ := json.Marshal(map[string]any{"error": map[string]string{"type": "error", "message": msg}})
	return b
}

// check reports what of a is missing for a run.
func (a Adapter) check() error {
	var missing []error
	if a.Provider == "" {
		missing = append(missing, errors.New("providertest: Adapter.Provider is empty: set the name the adapter's chat.CallErrors carry"))
	}
	if a.New == nil {
		missing = append(missing, errors.New("providertest: Adapter.New is nil: set the function that builds the adapter for a base URL"))
	}
	if a.Answer == nil {
		missing = append(missing, errors.New("providertest: Adapter.Answer is nil: set the function that renders an Answer as the API's reply"))
	}
	return errors.Join(missing...)
}

// Run runs the conformance suite against the adapter a describes and reports every broken rule
// with t.Error in a subtest named for it; a rule whose Answer the API cannot express is
// skipped. It fails t at once when a lacks Provider, New or Answer.
func Run(t *testing.T, a Adapter) {
	t.Helper()
	if err := a.check(); err != nil {
		t.Fatal(err)
	}
	for _, c := range rules {
		t.Run(c.name, func(t *testing.T) { runRule(t, a, c) })
	}
}

// Check runs the suite as Run does, outside a test: it returns every broken rule as an error
// "<rule>: <problem>", joined with errors.Join, or nil when the adapter keeps them all (skipped
// rules are not reported). It returns an error at once when a lacks Provider, New or Answer.
func Check(a Adapter) error {
	if err := a.check(); err != nil {
		return err
	}
	rep := &report{}
	for _, c := range rules {
		rep.rule = c.name
		done := make(chan struct{})
		go func() { // a rule ends early through runtime.Goexit, as on a *testing.T
			defer close(done)
			runRule(rep, a, c)
		}()
		<-done
	}
	return errors.Join(rep.errs...)
}

// tb is the part of *testing.T the rules use; Check reports through it.
type tb interface {
	Helper()
	Errorf(format string, args ...any)
	Fatalf(format string, args ...any)
	Skipf(format string, args ...any)
}

// report is the tb of Check: it keeps each problem with the name of its rule. Fatalf and Skipf
// end the rule's goroutine, as they do a test's.
type report struct {
	rule string
	errs []error
}

func (r *report) Errorf(format string, args ...any) {
	r.errs = append(r.errs, fmt.Errorf("%s: %s", r.rule, fmt.Sprintf(format, args...)))
}

func (r *report) Fatalf(format string, args ...any) {
	r.Errorf(format, args...)
	runtime.Goexit()
}

func (*report) Skipf(string, ...any) { runtime.Goexit() }
func (*report) Helper()              {}
