package host

import (
	"context"
	"encoding/json"
	"errors"
	"net/netip"
	"time"

	"github.com/personagen/personagen/runtime"
)

// Method and function tools: inputs of every kind a derived schema covers,
// and of the kinds it refuses.

// OrderQuery is the input of lookup_order.
type OrderQuery struct {
	// Number is the order or invoice number, e.g. INV-2024-0117.
	Number string `json:"number"`
	// Include lists extra sections to return.
	Include []Section `json:"include,omitempty"`
}

// Section is a part of an order a lookup can include.
type Section string

// The sections of an order.
const (
	SectionCaptures Section = "captures"
	SectionRefunds  Section = "refunds"
	SectionNotes    Section = "notes"
	sectionInternal Section = "internal" // unexported: not offered to the model
)

// OrderInfo is what lookup_order returns.
type OrderInfo struct {
	Number string  `json:"number"`
	Total  float64 `json:"total"`
}

// LookupOrder looks up an order or invoice by its number and returns its
// status and total.
//
// It only reads, so it may run again after a crash.
func (e *Env) LookupOrder(ctx context.Context, inv *runtime.Invocation, in OrderQuery) (OrderInfo, error) {
	return OrderInfo{Number: in.Number, Total: 12.5}, nil
}

// Priority is how urgent an escalation is: an integer enum.
type Priority int

// The priorities.
const (
	PriorityLow Priority = iota + 1
	PriorityHigh
	PriorityUrgent
	PriorityDefault = PriorityLow // same value: listed once
)

// Escalation is the input of escalate.
type Escalation struct {
	Summary  string   `json:"summary"` // one paragraph for the colleague who takes over
	Priority Priority `json:"priority"`
	// Notify, when set, says whether to page the on-call colleague.
	Notify *bool `json:"notify"`
}

// Escalate hands the thread to a human. Its doc comment is not what the
// model reads: the spec gives a description.
func (e *Env) Escalate(ctx context.Context, inv *runtime.Invocation, in *Escalation) (string, error) {
	return "ticket-1", nil
}

// Kitchen holds a field of every kind a tool input can take.
type Kitchen struct {
	Text    string  `json:"text"`
	Flag    bool    `json:"flag"`
	Int     int     `json:"int"`
	Int8    int8    `json:"int8"`
	Int16   int16   `json:"int16"`
	Int32   int32   `json:"int32"`
	Int64   int64   `json:"int64"`
	Uint    uint    `json:"uint"`
	Uint8   uint8   `json:"uint8"`
	Uint16  uint16  `json:"uint16"`
	Uint32  uint32  `json:"uint32"`
	Uint64  uint64  `json:"uint64"`
	Uintptr uintptr `json:"uintptr"`
	Float32 float32 `json:"float32"`
	Float64 float64 `json:"float64"`
	// Bytes are raw bytes, base64 in JSON.
	Bytes    []byte            `json:"bytes"`
	Fixed    [3]int            `json:"fixed"`
	FixedRaw [2]byte           `json:"fixed_raw"`
	List     []string          `json:"list"`
	Matrix   [][]float64       `json:"matrix"`
	Labels   map[string]string `json:"labels"`
	// BySection maps an order section to a note.
	BySection map[Section]string `json:"by_section"`
	Nested    Address            `json:"nested"`
	Addresses []Address          `json:"addresses"`
	Maybe     *Address           `json:"maybe"`
	When      time.Time          `json:"when"`
	Since     *time.Time         `json:"since,omitempty"`
	Wait      time.Duration      `json:"wait"`
	Raw       json.RawMessage    `json:"raw"`
	Number    json.Number        `json:"number"`
	Anything  any                `json:"anything"`
	Anon      struct {
		// Inner is a field of an anonymous struct.
		Inner string `json:"inner"`
	} `json:"anon"`
	IP       netip.Addr `json:"ip"`
	Section  Section    `json:"section"`
	Priority Priority   `json:"priority"`
	Skipped  chan int   `json:"-"`
	Dash     string     `json:"-,"`
	NoTag    string
	Odd      string  `json:"odd name!"`
	Bad      string  `json:"bad\\name"`
	Empty    string  `json:",omitempty"`
	Zero     Address `json:"zero,omitzero"`
	hidden   string
	Alias    Text `json:"alias"`
}

// Address is a postal address.
type Address struct {
	Street string `json:"street"`
	City   string `json:"city"`
}

// Cook takes every kind of input field.
func (e *Env) Cook(ctx context.Context, inv *runtime.Invocation, in Kitchen) (json.RawMessage, error) {
	return json.RawMessage(`{"ok":true}`), nil
}

// Base is embedded in Composite.
type Base struct {
	// ID identifies the record.
	ID   string `json:"id"`
	Note string `json:"note"`
	Both string `json:"both"`
}

// Extra is embedded by pointer in Composite.
type Extra struct {
	Tag   string `json:"tag"`
	Both  string `json:"both"`
	Color string `json:"Color"`
}

// Inner is embedded with a tag name in Composite.
type Inner struct {
	Level int `json:"level"`
}

type shared struct {
	// Shared is promoted from an unexported embedded struct.
	Shared string `json:"shared"`
}

// Composite shows encoding/json's embedding rules.
type Composite struct {
	Base
	*Extra
	shared
	Inner `json:"inner"`
	// Note at depth 0 hides Base.Note.
	Note string `json:"note"`
	// Color is tagged at depth 1 in Extra and untagged here at depth 0: the shallower wins.
	Color string
}

// Compose takes a struct with embedded fields.
func Compose(ctx context.Context, inv *runtime.Invocation, in Composite) (string, error) {
	return in.ID, nil
}

// Empty is an input without properties.
type Empty struct{}

// Ping takes no arguments.
func Ping(ctx context.Context, inv *runtime.Invocation, in Empty) (string, error) { return "pong", nil }

// Undocumented has no doc comment on its method.
type Undocumented struct {
	X string `json:"x"`
}

func (e *Env) NoDoc(ctx context.Context, inv *runtime.Invocation, in Undocumented) (string, error) {
	return in.X, nil
}

// WrongToolArgs has a tool-like name but no invocation parameter.
func (e *Env) WrongToolArgs(ctx context.Context, in OrderQuery) (string, error) { return "", nil }

// NoError returns no error.
func (e *Env) NoError(ctx context.Context, inv *runtime.Invocation, in OrderQuery) string { return "" }

// ScalarInput takes a string, not a struct.
func (e *Env) ScalarInput(ctx context.Context, inv *runtime.Invocation, in string) (string, error) {
	return in, nil
}

// GenericTool has type parameters.
func GenericTool[T any](ctx context.Context, inv *runtime.Invocation, in T) (string, error) {
	return "", nil
}

// WithChan has a channel field.
type WithChan struct {
	Name string   `json:"name"`
	Done chan int `json:"done"`
}

// WithFunc has a function field deep inside.
type WithFunc struct {
	Steps []struct {
		Hook func() `json:"hook"`
	} `json:"steps"`
}

// WithComplex has a complex field.
type WithComplex struct {
	Z complex128 `json:"z"`
}

// WithInterface has an interface field with methods.
type WithInterface struct {
	Err error `json:"err"`
}

// WithIntKeys has a map with integer keys.
type WithIntKeys struct {
	ByID map[int]string `json:"by_id"`
}

// Tree is recursive.
type Tree struct {
	Name     string `json:"name"`
	Children []Tree `json:"children"`
}

// Chain is recursive through a pointer in a map.
type Chain struct {
	Next map[string]*Chain `json:"next"`
}

// Money decodes itself.
type Money struct{ Cents int64 }

// UnmarshalJSON reads "12.50" or 1250.
func (m *Money) UnmarshalJSON(b []byte) error { return errors.New("not implemented") }

// WithMoney has a field with its own UnmarshalJSON.
type WithMoney struct {
	Price Money `json:"price"`
}

// WithStringOpt uses the ,string option.
type WithStringOpt struct {
	Count int `json:"count,string"`
}

type hiddenBase struct{ Secret string }

// WithHiddenPtr embeds a pointer to an unexported struct.
type WithHiddenPtr struct {
	*hiddenBase
	Name string `json:"name"`
}

// Stamped embeds time.Time, whose UnmarshalJSON becomes Stamped's.
type Stamped struct {
	time.Time
	Label string `json:"label"`
}

// Bad* methods take inputs the generator refuses.
func (e *Env) BadChan(ctx context.Context, inv *runtime.Invocation, in WithChan) (string, error) {
	return "", nil
}

// BadFunc takes a function field.
func (e *Env) BadFunc(ctx context.Context, inv *runtime.Invocation, in WithFunc) (string, error) {
	return "", nil
}

// BadComplex takes a complex field.
func (e *Env) BadComplex(ctx context.Context, inv *runtime.Invocation, in WithComplex) (string, error) {
	return "", nil
}

// BadInterface takes an error field.
func (e *Env) BadInterface(ctx context.Context, inv *runtime.Invocation, in WithInterface) (string, error) {
	return "", nil
}

// BadKeys takes a map with integer keys.
func (e *Env) BadKeys(ctx context.Context, inv *runtime.Invocation, in WithIntKeys) (string, error) {
	return "", nil
}

// BadTree takes a recursive type.
func (e *Env) BadTree(ctx context.Context, inv *runtime.Invocation, in Tree) (string, error) {
	return "", nil
}

// BadChain takes a type recursive through a map of pointers.
func (e *Env) BadChain(ctx context.Context, inv *runtime.Invocation, in Chain) (string, error) {
	return "", nil
}

// BadMoney takes a field with its own UnmarshalJSON.
func (e *Env) BadMoney(ctx context.Context, inv *runtime.Invocation, in WithMoney) (string, error) {
	return "", nil
}

// BadStringOpt takes a ,string field.
func (e *Env) BadStringOpt(ctx context.Context, inv *runtime.Invocation, in WithStringOpt) (string, error) {
	return "", nil
}

// BadHiddenPtr takes an embedded pointer to an unexported struct.
func (e *Env) BadHiddenPtr(ctx context.Context, inv *runtime.Invocation, in WithHiddenPtr) (string, error) {
	return "", nil
}

// BadStamped takes a struct embedding time.Time.
func (e *Env) BadStamped(ctx context.Context, inv *runtime.Invocation, in Stamped) (string, error) {
	return "", nil
}

// BadLoop takes the self-pointer type Loop.
func (e *Env) BadLoop(ctx context.Context, inv *runtime.Invocation, in struct {
	L Loop `json:"l"`
}) (string, error) {
	return "", nil
}
