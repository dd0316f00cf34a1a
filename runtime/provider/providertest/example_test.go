package providertest_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/anthropics/anthropic-sdk-go/v2/option"

	"github.com/personagen/personagen/runtime/chat"
	"github.com/personagen/personagen/runtime/provider"
	"github.com/personagen/personagen/runtime/provider/anthropic"
	"github.com/personagen/personagen/runtime/provider/providertest"
)

// localModel is a third party's adapter for a local model server whose API takes the request as
// personagen encodes it (POST /v1/generate) and answers with a localAnswer.
type localModel struct {
	baseURL string
	client  *http.Client
}

// localAnswer is the local server's answer.
type localAnswer struct {
	Text      string      `json:"text"`
	ToolCalls []localCall `json:"tool_calls"`
	Stop      string      `json:"stop"`
	Refusal   string      `json:"refusal"`
	Usage     chat.Usage  `json:"usage"`
}

type localCall struct {
	ID        string `json:"id"`
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

func (m *localModel) Generate(ctx context.Context, req *chat.Request) (*chat.Response, error) {
	if err := chat.Validate(req.Messages); err != nil {
		return nil, fmt.Errorf("local: %w", err) // refused before sending: a plain error
	}
	// The API takes tool inputs that are JSON objects only: an input that is not one (a call
	// another system stored) travels as chat.ToolCallFromArguments keeps such arguments. The
	// request is the caller's: the adapter changes a copy.
	wire := *req
	wire.Messages = make([]chat.Message, len(req.Messages))
	for i, msg := range req.Messages {
		if len(msg.ToolCalls) > 0 {
			calls := make([]chat.ToolCall, len(msg.ToolCalls))
			for k, c := range msg.ToolCalls {
				calls[k] = chat.ToolCallFromArguments(c.ID, c.Name, string(c.Input))
			}
			msg.ToolCalls = calls
		}
		wire.Messages[i] = msg
	}
	body, err := json.Marshal(&wire)
	if err != nil {
		return nil, fmt.Errorf("local: %w", err)
	}
	hreq, err := http.NewRequestWithContext(ctx, http.MethodPost, m.baseURL+"/v1/generate", bytes.NewReader(body))
	if err != nil {
		return nil, fmt.Errorf("local: %w", err)
	}
	hreq.Header.Set("Content-Type", "application/json")
	resp, err := m.client.Do(hreq)
	if err != nil { // no answer: a network error, a timeout, a done ctx
		return nil, &chat.CallError{Provider: "local", Transient: true, Err: err}
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, &chat.CallError{Provider: "local", StatusCode: resp.StatusCode, Transient: true, Err: err}
	}
	if resp.StatusCode >= 400 {
		return nil, provider.HTTPError("local", resp.StatusCode, resp.Header, fmt.Errorf("%s", data))
	}
	var ans localAnswer
	if err := json.Unmarshal(data, &ans); err != nil || ans.Stop == "" {
		return nil, &chat.CallError{Provider: "local", StatusCode: resp.StatusCode,
			Err: fmt.Errorf("%w: %.40q", provider.ErrMalformedResponse, data)}
	}
	out := &chat.Response{Message: chat.Message{Role: chat.RoleAssistant, Text: ans.Text},
		StopReason: chat.StopReason(ans.Stop), Refusal: ans.Refusal, Usage: ans.Usage}
	for _, c := range ans.ToolCalls {
		out.Message.ToolCalls = append(out.Message.ToolCalls, chat.ToolCallFromArguments(c.ID, c.Name, c.Arguments))
	}
	return out, nil
}

// localAdapter describes the local adapter and its API to the suite.
func localAdapter() providertest.Adapter {
	return providertest.Adapter{
		Provider: "local",
		New: func(baseURL string) chat.Model {
			return &localModel{baseURL: baseURL, client: &http.Client{}}
		},
		Answer: func(a providertest.Answer) (providertest.Reply, error) {
			ans := localAnswer{Text: a.Text, Stop: string(a.StopReason), Refusal: a.Refusal, Usage: a.Usage}
			for _, c := range a.Calls {
				ans.ToolCalls = append(ans.ToolCalls, localCall(c))
			}
			body, err := json.Marshal(ans)
			return providertest.Reply{Body: string(body)}, err
		},
		Check: func(r *http.Request, body []byte) error {
			if r.URL.Path != "/v1/generate" {
				return fmt.Errorf("path %s: the API is served at /v1/generate", r.URL.Path)
			}
			var req chat.Request
			if err := json.Unmarshal(body, &req); err != nil {
				return fmt.Errorf("the body is not a request: %v", err)
			}
			return chat.Validate(req.Messages)
		},
		// The local API carries the plan as it is: its markers end the plan's prefixes.
		CacheMarks: func(body []byte) (string, []string, error) {
			var req chat.Request
			if err := json.Unmarshal(body, &req); err != nil || req.Cache == nil {
				return "", nil, err
			}
			var marks []string
			for _, m := range req.Cache.Marks(len(req.Messages)) {
				if m.End == 0 {
					marks = append(marks, req.Tools[len(req.Tools)-1].Name)
				} else {
					marks = append(marks, req.Messages[m.End-1].Text)
				}
			}
			return req.Cache.Key, marks, nil
		},
	}
}

// A third party's adapter proves itself with providertest.Run in a test; Check runs the same
// suite anywhere.
func Example() {
	if err := providertest.Check(localAdapter()); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("the local adapter keeps the model contract")
	// Output: the local adapter keeps the model contract
}

// A Server plays a provider's API for an adapter: here the Anthropic adapter meets a rate limit
// whose wait (an hour) is longer than its cap, and returns at once, after one request, with the
// wait for the caller to schedule.
func ExampleServer() {
	srv := providertest.NewServer(providertest.Adapter{})
	defer srv.Close()
	srv.Queue(providertest.Reply{Status: 429, Header: map[string]string{"Retry-After": "3600"},
		Body: `{"type":"error","error":{"type":"rate_limit_error","message":"slow down"}}`})
	m := anthropic.New(option.WithoutEnvironmentDefaults(), option.WithBaseURL(srv.URL), option.WithAPIKey("key"))

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_, err := m.Generate(ctx, &chat.Request{Model: chat.ModelSettings{Name: "claude-test"},
		Messages: []chat.Message{chat.UserMessage("Where is my order?")}})
	var ce *chat.CallError
	if errors.As(err, &ce) {
		fmt.Printf("%s %d transient=%v retry after %s; %d request\n", ce.Provider, ce.StatusCode, ce.Transient, ce.RetryAfter, len(srv.Bodies()))
	}
	// Output: anthropic 429 transient=true retry after 1h0m0s; 1 request
}
