package tool

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"regexp"
	"slices"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v5"

	"github.com/personagen/personagen/runtime"
	"github.com/personagen/personagen/runtime/chat"
)

// Def describes a tool to the model and to the runner.
type Def struct {
	// Name is what the model calls the tool by: 1 to 64 ASCII letters, digits, '_' or '-' (the
	// rule of the Anthropic and OpenAI APIs), snake_case by convention, unique within a persona.
	Name string
	// Description is what the model reads about the tool: what it does, when to use it, what it
	// returns.
	Description string
	// InputSchema is the JSON Schema (draft 2020-12) of the tool's input, a JSON object: its
	// top-level "type" must be "object". List every property the input type decodes and set
	// "additionalProperties": false, since a property the input type lacks is refused when the
	// arguments are decoded. The generator writes this schema from the input struct.
	InputSchema json.RawMessage
	// Idempotent says whether running the tool twice for one call does no harm (a lookup, a
	// search). The default, false, makes the runner run each call at most once, even across a
	// crash (see runtime.Tool).
	Idempotent bool
}

// ErrInvalidDef is returned (wrapped, naming the tool and the problem) by New for a Def it
// cannot build a tool from.
var ErrInvalidDef = errors.New("invalid tool definition")

// ErrInvalidInput is returned (wrapped) by a built tool's Call when the call's arguments are not
// a JSON object, do not match the InputSchema, or do not decode into the input type. The error's
// text says where and what, so the model can correct its call.
var ErrInvalidInput = errors.New("invalid tool input")

// maxIssues is how many schema violations an ErrInvalidInput error lists.
const maxIssues = 10

var namePattern = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,64}$`)

// New returns the tool def describes, run by fn. The schema is compiled once, here. Each Call then
// validates the call's arguments against it, decodes them strictly into an In (a property In
// does not have, a value of the wrong Go type, or trailing data is an error), calls fn, and
// encodes its Out as the result the model reads: a string or a []byte as it is, a
// json.RawMessage as its bytes, any other value as compact JSON without HTML escaping ("<", ">"
// and "&" stay one character). Arguments that fail validation or decoding never reach fn: Call
// returns an error wrapping ErrInvalidInput, which the runner hands to the model as a failed
// result. An error fn returns is the call's failed result as it is.
//
// In is usually a struct whose json tags name the schema's properties. New returns an error
// wrapping ErrInvalidDef for an invalid Name, an InputSchema that is empty, not valid JSON, not
// a JSON Schema, or not of type object, or a nil fn. Schemas are compiled without loading
// anything: a $ref must point inside the schema.
func New[In, Out any](def Def, fn func(ctx context.Context, inv *runtime.Invocation, in In) (Out, error)) (runtime.Tool, error) {
	fail := func(format string, a ...any) (runtime.Tool, error) {
		return nil, fmt.Errorf("%w: tool %q: %s", ErrInvalidDef, def.Name, fmt.Sprintf(format, a...))
	}
	if !namePattern.MatchString(def.Name) {
		return fail("the name must be 1 to 64 ASCII letters, digits, '_' or '-'")
	}
	if fn == nil {
		return fail("no function")
	}
	schema, err := compile(def.InputSchema)
	if err != nil {
		return fail("input schema: %v", err)
	}
	return &typed[In, Out]{def: def, schema: schema, fn: fn}, nil
}

// Must returns t, or panics when err is not nil. It is for tools built as package-level values,
// as regexp.MustCompile is for expressions:
//
//	var LookupOrder = tool.Must(tool.New(tool.Def{...}, lookupOrder))
func Must(t runtime.Tool, err error) runtime.Tool {
	if err != nil {
		panic(err)
	}
	return t
}

// compile checks that raw is a JSON Schema of an object and compiles it.
func compile(raw json.RawMessage) (*jsonschema.Schema, error) {
	if len(bytes.TrimSpace(raw)) == 0 {
		return nil, errors.New("empty (want a JSON Schema with \"type\": \"object\")")
	}
	var top map[string]json.RawMessage
	if err := json.Unmarshal(raw, &top); err != nil {
		return nil, fmt.Errorf("not a JSON object: %v", err)
	}
	var typ string
	if json.Unmarshal(top["type"], &typ) != nil || typ != "object" {
		return nil, errors.New(`its top-level "type" must be "object" (a tool's input is a JSON object)`)
	}
	c := jsonschema.NewCompiler()
	c.Draft = jsonschema.Draft2020
	c.AssertFormat = true
	c.LoadURL = func(url string) (io.ReadCloser, error) {
		return nil, fmt.Errorf("%s: a tool schema loads nothing; keep every $ref inside the schema", url)
	}
	const url = "mem:///input-schema.json"
	if err := c.AddResource(url, bytes.NewReader(raw)); err != nil {
		return nil, err
	}
	s, err := c.Compile(url)
	if err != nil {
		// The library names the in-memory URL; the caller names the tool.
		return nil, errors.New(strings.TrimPrefix(err.Error(), "jsonschema "+url+" compilation failed: "))
	}
	return s, nil
}

// typed is the Tool New builds.
type typed[In, Out any] struct {
	def    Def
	schema *jsonschema.Schema
	fn     func(context.Context, *runtime.Invocation, In) (Out, error)
}

func (t *typed[In, Out]) Name() string                 { return t.def.Name }
func (t *typed[In, Out]) Description() string          { return t.def.Description }
func (t *typed[In, Out]) InputSchema() json.RawMessage { return t.def.InputSchema }
func (t *typed[In, Out]) Idempotent() bool             { return t.def.Idempotent }

// Call validates and decodes input, runs the tool's function and encodes its result (see New).
func (t *typed[In, Out]) Call(ctx context.Context, inv *runtime.Invocation, input json.RawMessage) (string, error) {
	in, err := t.decode(input)
	if err != nil {
		return "", err
	}
	out, err := t.fn(ctx, inv, in)
	if err != nil {
		return "", err
	}
	return encode(out)
}

// DecodeInput validates and decodes input as Call does, without calling the tool's function,
// and returns the decoded In encoded as compact JSON without HTML escaping (the input the
// function would run with: every field of In, in its declared order), or Call's error for
// these arguments (wrapping ErrInvalidInput). It makes a built tool a runtime.InputDecoder.
func (t *typed[In, Out]) DecodeInput(input json.RawMessage) (json.RawMessage, error) {
	in, err := t.decode(input)
	if err != nil {
		return nil, err
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(in); err != nil {
		return nil, fmt.Errorf("%w for %s: the decoded input does not encode: %v", ErrInvalidInput, t.def.Name, err)
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}

// decode validates input against the schema and decodes it strictly into an In.
func (t *typed[In, Out]) decode(input json.RawMessage) (In, error) {
	var in In
	invalid := func(format string, a ...any) (In, error) {
		return in, fmt.Errorf("%w for %s: %s", ErrInvalidInput, t.def.Name, fmt.Sprintf(format, a...))
	}
	if len(bytes.TrimSpace(input)) == 0 {
		input = json.RawMessage("{}")
	}
	if raw, ok := (chat.ToolCall{Input: input}).InvalidArguments(); ok {
		return invalid("the arguments are not a JSON object: %s", runtime.Clip(raw, 200))
	}
	dec := json.NewDecoder(bytes.NewReader(input))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return invalid("the arguments are not valid JSON: %v", err)
	}
	if _, ok := v.(map[string]any); !ok {
		return invalid("the arguments must be a JSON object")
	}
	if err := t.schema.Validate(v); err != nil {
		var ve *jsonschema.ValidationError
		if errors.As(err, &ve) {
			return invalid("the arguments do not match the input schema: %s", issues(ve))
		}
		return invalid("%v", err)
	}
	dec = json.NewDecoder(bytes.NewReader(input))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&in); err != nil {
		return invalid("the arguments do not decode into %s: %v", reflect.TypeFor[In](), err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return invalid("unexpected data after the arguments object")
	}
	return in, nil
}

// issues lists the leaf violations of ve, at most maxIssues, as "at /path: message" separated
// by "; " ("at the top level" for the object itself), ordered by path, then message.
func issues(ve *jsonschema.ValidationError) string {
	var leaves []*jsonschema.ValidationError
	var walk func(e *jsonschema.ValidationError)
	walk = func(e *jsonschema.ValidationError) {
		if len(e.Causes) == 0 {
			leaves = append(leaves, e)
			return
		}
		for _, c := range e.Causes {
			walk(c)
		}
	}
	walk(ve)
	// The library walks properties in map order: sort, so the model reads the same text twice.
	slices.SortStableFunc(leaves, func(a, b *jsonschema.ValidationError) int {
		return cmp.Or(strings.Compare(a.InstanceLocation, b.InstanceLocation), strings.Compare(a.Message, b.Message))
	})
	var b strings.Builder
	for i, e := range leaves {
		if i == maxIssues {
			fmt.Fprintf(&b, "; and %d more", len(leaves)-maxIssues)
			break
		}
		if i > 0 {
			b.WriteString("; ")
		}
		if e.InstanceLocation == "" {
			b.WriteString("at the top level: ")
		} else {
			b.WriteString("at " + e.InstanceLocation + ": ")
		}
		b.WriteString(e.Message)
	}
	return b.String()
}

// encode renders a tool function's result as the text the model reads.
func encode(out any) (string, error) {
	switch v := out.(type) {
	case string:
		return v, nil
	case json.RawMessage:
		return string(v), nil
	case []byte:
		return string(v), nil
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(out); err != nil {
		return "", fmt.Errorf("encode the result: %w", err)
	}
	return strings.TrimSuffix(b.String(), "\n"), nil
}
