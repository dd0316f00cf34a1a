package tool_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/personagen/personagen/runtime"
	"github.com/personagen/personagen/runtime/tool"
)

type escalation struct {
	Summary string  `json:"summary"`
	Reason  string  `json:"reason"`
	Urgent  *bool   `json:"urgent,omitempty"`
	Amount  float64 `json:"amount_eur,omitempty"`
}

type ticket struct {
	ID    string `json:"id"`
	Notes string `json:"notes"`
}

const escalationSchema = `{"type":"object","properties":{
	"summary":{"type":"string","minLength":1},
	"reason":{"type":"string","enum":["refund","bug","security","other"]},
	"urgent":{"type":"boolean"},
	"amount_eur":{"type":"number","minimum":0}},
	"required":["summary","reason"],"additionalProperties":false}`

func escalate(calls *[]escalation) func(context.Context, *runtime.Invocation, escalation) (ticket, error) {
	return func(ctx context.Context, inv *runtime.Invocation, in escalation) (ticket, error) {
		*calls = append(*calls, in)
		if in.Reason == "security" {
			return ticket{}, errors.New("security escalations go to the on-call phone")
		}
		return ticket{ID: "BIL-1", Notes: "<refund> & co"}, nil
	}
}

func TestCallValidatesDecodesAndEncodes(t *testing.T) {
	var calls []escalation
	esc, err := tool.New(tool.Def{Name: "escalate_ticket", Description: "Escalate.", InputSchema: json.RawMessage(escalationSchema)}, escalate(&calls))
	if err != nil {
		t.Fatal(err)
	}
	if esc.Name() != "escalate_ticket" || esc.Description() != "Escalate." || esc.Idempotent() {
		t.Errorf("definition: %q %q idempotent %t", esc.Name(), esc.Description(), esc.Idempotent())
	}
	if string(esc.InputSchema()) != escalationSchema {
		t.Errorf("schema = %s", esc.InputSchema())
	}
	for _, tc := range []struct {
		name, input string
		want        string // result, or the error text when wantErr
		wantErr     bool
		called      bool
	}{
		{name: "valid", input: `{"summary":"double charge","reason":"refund","amount_eur":432}`,
			want: `{"id":"BIL-1","notes":"<refund> & co"}`, called: true},
		{name: "tool error passes through", input: `{"summary":"leak","reason":"security"}`,
			want: "security escalations go to the on-call phone", wantErr: true, called: true},
		{name: "missing required", input: `{"summary":"x"}`, wantErr: true,
			want: "invalid tool input for escalate_ticket: the arguments do not match the input schema: at the top level: missing properties: 'reason'"},
		{name: "wrong type and enum", input: `{"summary":3,"reason":"love"}`, wantErr: true,
			want: `invalid tool input for escalate_ticket: the arguments do not match the input schema: at /reason: value must be one of "refund", "bug", "security", "other"; at /summary: expected string, but got number`},
		{name: "unknown property", input: `{"summary":"x","reason":"bug","priority":1}`, wantErr: true,
			want: "invalid tool input for escalate_ticket: the arguments do not match the input schema: at the top level: additionalProperties 'priority' not allowed"},
		{name: "not an object", input: `{"_invalid_arguments":"{\"summary\": \"cut"}`, wantErr: true,
			want: `invalid tool input for escalate_ticket: the arguments are not a JSON object: {"summary": "cut`},
		{name: "array", input: `[1]`, wantErr: true,
			want: "invalid tool input for escalate_ticket: the arguments must be a JSON object"},
		{name: "trailing data", input: `{"summary":"x","reason":"bug"} {}`, wantErr: true,
			want: "invalid tool input for escalate_ticket: unexpected data after the arguments object"},
		{name: "negative amount", input: `{"summary":"x","reason":"bug","amount_eur":-1}`, wantErr: true,
			want: "invalid tool input for escalate_ticket: the arguments do not match the input schema: at /amount_eur: must be >= 0 but found -1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := len(calls)
			got, err := esc.Call(context.Background(), &runtime.Invocation{}, json.RawMessage(tc.input))
			if tc.wantErr {
				if err == nil || err.Error() != tc.want {
					t.Fatalf("error = %v\nwant    %s", err, tc.want)
				}
				if strings.HasPrefix(tc.want, "invalid tool input") != errors.Is(err, tool.ErrInvalidInput) {
					t.Errorf("errors.Is(err, ErrInvalidInput) = %t", errors.Is(err, tool.ErrInvalidInput))
				}
			} else if err != nil || got != tc.want {
				t.Fatalf("Call = %q, %v; want %q", got, err, tc.want)
			}
			if called := len(calls) > before; called != tc.called {
				t.Errorf("function called = %t, want %t", called, tc.called)
			}
		})
	}
}

// A schema that lets a property through which the input struct lacks still refuses it when
// decoding: the decode is strict.
func TestCallDecodesStrictly(t *testing.T) {
	lookup := tool.Must(tool.New(tool.Def{Name: "lookup", InputSchema: json.RawMessage(`{"type":"object"}`), Idempotent: true},
		func(ctx context.Context, inv *runtime.Invocation, in struct {
			Number string `json:"number"`
		}) (string, error) {
			return "found " + in.Number, nil
		}))
	if !lookup.Idempotent() {
		t.Error("Idempotent = false")
	}
	if got, err := lookup.Call(context.Background(), nil, json.RawMessage(`{"number":"A-1"}`)); err != nil || got != "found A-1" {
		t.Errorf("Call = %q, %v", got, err)
	}
	for input, want := range map[string]string{
		`{"number":"A-1","extra":true}`: `invalid tool input for lookup: the arguments do not decode into struct { Number string "json:\"number\"" }: json: unknown field "extra"`,
		`{"number":7}`:                  `invalid tool input for lookup: the arguments do not decode into struct { Number string "json:\"number\"" }: json: cannot unmarshal number into Go struct field .number of type string`,
	} {
		if _, err := lookup.Call(context.Background(), nil, json.RawMessage(input)); err == nil || err.Error() != want {
			t.Errorf("Call(%s) error = %v\nwant %s", input, err, want)
		}
	}
	// An absent input is the empty object.
	if got, err := lookup.Call(context.Background(), nil, nil); err != nil || got != "found " {
		t.Errorf("Call(nil) = %q, %v", got, err)
	}
}

func TestResultEncodings(t *testing.T) {
	schema := json.RawMessage(`{"type":"object"}`)
	raw := tool.Must(tool.New(tool.Def{Name: "raw", InputSchema: schema},
		func(context.Context, *runtime.Invocation, struct{}) (json.RawMessage, error) {
			return json.RawMessage(`{ "kept": "as is" }`), nil
		}))
	list := tool.Must(tool.New(tool.Def{Name: "list", InputSchema: schema},
		func(context.Context, *runtime.Invocation, struct{}) ([]string, error) {
			return []string{"a<b", "c&d"}, nil
		}))
	unencodable := tool.Must(tool.New(tool.Def{Name: "bad", InputSchema: schema},
		func(context.Context, *runtime.Invocation, struct{}) (func(), error) { return func() {}, nil }))
	for _, tc := range []struct {
		tool runtime.Tool
		want string
	}{{raw, `{ "kept": "as is" }`}, {list, `["a<b","c&d"]`}} {
		if got, err := tc.tool.Call(context.Background(), nil, json.RawMessage(`{}`)); err != nil || got != tc.want {
			t.Errorf("%s: Call = %q, %v; want %q", tc.tool.Name(), got, err, tc.want)
		}
	}
	if _, err := unencodable.Call(context.Background(), nil, json.RawMessage(`{}`)); err == nil ||
		err.Error() != "encode the result: json: unsupported type: func()" {
		t.Errorf("unencodable result: %v", err)
	}
}

func TestNewRefusesBadDefinitions(t *testing.T) {
	fn := func(context.Context, *runtime.Invocation, struct{}) (string, error) { return "", nil }
	for _, tc := range []struct {
		def  tool.Def
		want string
	}{
		{tool.Def{Name: "", InputSchema: json.RawMessage(`{"type":"object"}`)},
			`invalid tool definition: tool "": the name must be 1 to 64 ASCII letters, digits, '_' or '-'`},
		{tool.Def{Name: "web fetch", InputSchema: json.RawMessage(`{"type":"object"}`)},
			`invalid tool definition: tool "web fetch": the name must be 1 to 64 ASCII letters, digits, '_' or '-'`},
		{tool.Def{Name: strings.Repeat("a", 65), InputSchema: json.RawMessage(`{"type":"object"}`)},
			`invalid tool definition: tool "` + strings.Repeat("a", 65) + `": the name must be 1 to 64 ASCII letters, digits, '_' or '-'`},
		{tool.Def{Name: "t"},
			`invalid tool definition: tool "t": input schema: empty (want a JSON Schema with "type": "object")`},
		{tool.Def{Name: "t", InputSchema: json.RawMessage(`{"type":`)},
			`invalid tool definition: tool "t": input schema: not a JSON object: unexpected end of JSON input`},
		{tool.Def{Name: "t", InputSchema: json.RawMessage(`{"type":"string"}`)},
			`invalid tool definition: tool "t": input schema: its top-level "type" must be "object" (a tool's input is a JSON object)`},
		{tool.Def{Name: "t", InputSchema: json.RawMessage(`{"type":"object","properties":{"a":{"type":"nope"}}}`)},
			`invalid tool definition: tool "t": input schema: '/properties/a/type' does not validate with https://json-schema.org/draft/2020-12/schema#/allOf/1/$ref/properties/properties/additionalProperties/$dynamicRef/allOf/3/$ref/properties/type/anyOf/0/$ref/enum: value must be one of "array", "boolean", "integer", "null", "number", "object", "string"`},
		{tool.Def{Name: "t", InputSchema: json.RawMessage(`{"type":"object","properties":{"a":{"$ref":"https://example.com/s.json"}}}`)},
			`invalid tool definition: tool "t": input schema: https://example.com/s.json: a tool schema loads nothing; keep every $ref inside the schema`},
	} {
		_, err := tool.New(tc.def, fn)
		if err == nil || err.Error() != tc.want || !errors.Is(err, tool.ErrInvalidDef) {
			t.Errorf("New(%+v) error = %v\nwant %s", tc.def, err, tc.want)
		}
	}
	if _, err := tool.New[struct{}, string](tool.Def{Name: "t", InputSchema: json.RawMessage(`{"type":"object"}`)}, nil); err == nil ||
		err.Error() != `invalid tool definition: tool "t": no function` {
		t.Errorf("nil fn: %v", err)
	}
	defer func() {
		if r := recover(); r == nil {
			t.Error("Must did not panic on an error")
		}
	}()
	tool.Must(tool.New(tool.Def{Name: "t"}, fn))
}
