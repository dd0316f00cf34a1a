// Package host is the fixture host package generator tests compile
// generated code against (copied into a scratch module as
// example.com/fixture/host). It holds one of everything a spec can name:
// an env type with loaders, record types with serializer methods,
// serializer funcs, tools and use resolvers with fields of many types.
package host

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/personagen/personagen/runtime"
	"github.com/personagen/personagen/runtime/chat"
)

// Env is the host dependency a spec's env names.
type Env struct {
	Accounts map[string]Account
}

// Account is a record type with a value-receiver serializer.
type Account struct {
	Email string
	Plan  string
}

// LLMText renders the account for the model.
func (a Account) LLMText() string { return "Account " + a.Email + " on plan " + a.Plan }

// Render renders the account and may fail.
func (a Account) Render() (string, error) { return "account:" + a.Email, nil }

// Order is a record type whose serializer has a pointer receiver.
type Order struct {
	ID    int
	Total float64
}

// Summary renders the order.
func (o *Order) Summary() string { return fmt.Sprintf("order %d: %.2f", o.ID, o.Total) }

// AccountForSender loads the sender's account.
func (e *Env) AccountForSender(ctx context.Context, inv *runtime.Invocation) ([]Account, error) {
	if inv.Inbound == nil {
		return nil, nil
	}
	if a, ok := e.Accounts[inv.Inbound.From]; ok {
		return []Account{a}, nil
	}
	return nil, nil
}

// RecentOrders loads orders as pointers.
func (e *Env) RecentOrders(ctx context.Context, inv *runtime.Invocation) ([]*Order, error) {
	return []*Order{{ID: 1, Total: 9.5}}, nil
}

// WrongArgs has a loader-like name but the wrong parameters.
func (e *Env) WrongArgs(ctx context.Context, email string) ([]Account, error) { return nil, nil }

// Orders is a package-level loader.
func Orders(ctx context.Context, inv *runtime.Invocation) ([]Order, error) {
	return []Order{{ID: 7, Total: 12}}, nil
}

// Notes is a package-level loader of plain strings.
func Notes(ctx context.Context, inv *runtime.Invocation) ([]string, error) {
	return []string{"note one", "note two"}, nil
}

// NotALoader has a non-slice result.
func NotALoader(ctx context.Context, inv *runtime.Invocation) (string, error) { return "", nil }

// OrderText is a serializer func.
func OrderText(o Order) (string, error) { return fmt.Sprintf("#%d", o.ID), nil }

// OrderLine is a serializer func without an error result.
func OrderLine(o Order) string { return fmt.Sprintf("order #%d", o.ID) }

// NoteText serializes notes.
func NoteText(s string) (string, error) { return "- " + s, nil }

// tool is a minimal runtime.Tool.
type tool struct{ name, desc string }

func (t tool) Name() string                 { return t.name }
func (t tool) Description() string          { return t.desc }
func (t tool) InputSchema() json.RawMessage { return json.RawMessage(`{"type":"object"}`) }
func (t tool) Idempotent() bool             { return true }

// Call returns the tool's name and its input.
func (t tool) Call(ctx context.Context, inv *runtime.Invocation, input json.RawMessage) (string, error) {
	return t.name + " " + string(input), nil
}

// WebFetch and SendEmail are tools.
var (
	WebFetch  runtime.Tool = tool{"web_fetch", "Fetch a web page."}
	SendEmail              = tool{"send_email", "Send an email."}
)

// NotATool is a variable that does not implement runtime.Tool.
var NotATool = 42

// Tier is a named string type.
type Tier string

// Limits is a nested struct used in `with`.
type Limits struct {
	MaxItems int           `yaml:"max_items"`
	Window   time.Duration `json:"window"`
	Labels   []string
}

// CustomerContext is a use resolver with fields of many types.
type CustomerContext struct {
	Tier     Tier              `yaml:"tier"`
	Greeting string            `yaml:"greeting"`
	Priority int8              `yaml:"priority"`
	Weight   float64           `yaml:"weight"`
	Verbose  bool              `yaml:"verbose"`
	Tags     []string          `yaml:"tags"`
	Limits   Limits            `yaml:"limits"`
	Backup   *Limits           `yaml:"backup"`
	Extra    map[string]string `yaml:"extra"`
	MaxAge   *int              `yaml:"max_age"`
	Meta     any               `yaml:"meta"`
	Steps    []Limits          `yaml:"steps"`
	secret   string
}

// Resolve adds one system message describing the configuration.
func (c *CustomerContext) Resolve(ctx context.Context, inv *runtime.Invocation, dst []chat.Message) ([]chat.Message, error) {
	return append(dst, chat.SystemMessage(fmt.Sprintf("Customer tier: %s", c.Tier))), nil
}

// ValueResolver implements runtime.Resolver with a value receiver.
type ValueResolver struct{ Text string }

// Resolve adds Text as a system message.
func (v ValueResolver) Resolve(ctx context.Context, inv *runtime.Invocation, dst []chat.Message) ([]chat.Message, error) {
	return append(dst, chat.SystemMessage(v.Text)), nil
}

// NotAResolver is a struct without Resolve.
type NotAResolver struct{ X int }

// Named is a non-struct resolver type.
type Named string

// Resolve adds the string.
func (n *Named) Resolve(ctx context.Context, inv *runtime.Invocation, dst []chat.Message) ([]chat.Message, error) {
	return dst, nil
}

// EnvAlias is an alias of Env: a spec may name either.
type EnvAlias = Env

// Text is an alias of a basic type (it has no methods).
type Text = string

// Pair is a generic use resolver.
type Pair[T any] struct {
	First  T
	Second T `yaml:"second"`
}

// Resolve adds nothing.
func (p *Pair[T]) Resolve(ctx context.Context, inv *runtime.Invocation, dst []chat.Message) ([]chat.Message, error) {
	return dst, nil
}

// PairOf is a generic alias: it needs type arguments, which a spec cannot give.
type PairOf[T any] = Pair[T]

// IntPair instantiates Pair: a spec may name it.
type IntPair = Pair[int]

// ContextAlias is an alias of a use resolver.
type ContextAlias = CustomerContext

// Loaders is an interface with a loader method; it cannot be an env.
type Loaders interface {
	AccountForSender(ctx context.Context, inv *runtime.Invocation) ([]Account, error)
}

// EnvPtr is a named pointer type; it cannot be an env.
type EnvPtr *Env

// Records is a generic loader: generated code cannot infer T.
func Records[T any](ctx context.Context, inv *runtime.Invocation) ([]T, error) { return nil, nil }

// Texts is a generic serializer func.
func Texts[T any](v T) string { return fmt.Sprint(v) }

// BaseEnv holds loaders that EmbeddingEnv promotes.
type BaseEnv struct{}

// BaseNotes is a loader promoted from an embedded struct.
func (BaseEnv) BaseNotes(ctx context.Context, inv *runtime.Invocation) ([]string, error) {
	return []string{"base"}, nil
}

// OtherBase has a method of the same name as BaseEnv's.
type OtherBase struct{}

// BaseNotes makes AmbiguousEnv's selector ambiguous.
func (OtherBase) BaseNotes(ctx context.Context, inv *runtime.Invocation) ([]string, error) {
	return nil, nil
}

// EmbeddingEnv is an env whose loaders come from an embedded struct; Lookup
// is a field of loader type, not a method.
type EmbeddingEnv struct {
	BaseEnv
	Lookup func(ctx context.Context, inv *runtime.Invocation) ([]string, error)
}

// AmbiguousEnv embeds two types with a BaseNotes method at the same depth.
type AmbiguousEnv struct {
	BaseEnv
	OtherBase
}

// Tagged is a use resolver with fields excluded from JSON or YAML by a "-"
// tag, and one whose JSON name is "-".
type Tagged struct {
	Secret  string `json:"-"`
	Hidden  string `yaml:"-"`
	Visible string `json:"visible"`
}

// Resolve adds nothing.
func (t *Tagged) Resolve(ctx context.Context, inv *runtime.Invocation, dst []chat.Message) ([]chat.Message, error) {
	return dst, nil
}

// Dashed has a field whose JSON name is "-" (tag "-,").
type Dashed struct {
	Dash string `json:"-,"`
}

// Resolve adds nothing.
func (d *Dashed) Resolve(ctx context.Context, inv *runtime.Invocation, dst []chat.Message) ([]chat.Message, error) {
	return dst, nil
}

// tierAlias is an unexported alias of an exported type.
type tierAlias = Tier

// Pointers is a use resolver with pointer fields of many element types.
type Pointers struct {
	Any    *any           `yaml:"any"`
	Tier   *Tier          `yaml:"tier"`
	Wait   *time.Duration `yaml:"wait"`
	Twice  **int          `yaml:"twice"`
	Tiers  []tierAlias    `yaml:"tiers"`
	Labels *[]string      `yaml:"labels"`
}

// Resolve adds nothing.
func (p *Pointers) Resolve(ctx context.Context, inv *runtime.Invocation, dst []chat.Message) ([]chat.Message, error) {
	return dst, nil
}

// limitsBase is an unexported embedded struct with an exported field.
type limitsBase struct {
	Quota int
}

// Embedded is a use resolver that embeds a struct (Limits) and an
// unexported one (limitsBase), whose fields are promoted.
type Embedded struct {
	Limits
	limitsBase
	Name string `yaml:"name"`
}

// Resolve adds nothing.
func (e *Embedded) Resolve(ctx context.Context, inv *runtime.Invocation, dst []chat.Message) ([]chat.Message, error) {
	return dst, nil
}

// Loop is a pointer type that points to itself: only nil is a Loop.
type Loop *Loop

// Nest is a slice of itself.
type Nest []Nest

// Recursive is a use resolver with self-referential field types.
type Recursive struct {
	Loop Loop       `yaml:"loop"`
	Nest Nest       `yaml:"nest"`
	Next *Recursive `yaml:"next"`
	Name string     `yaml:"name"`
}

// Resolve adds nothing.
func (r *Recursive) Resolve(ctx context.Context, inv *runtime.Invocation, dst []chat.Message) ([]chat.Message, error) {
	return dst, nil
}

// Accounts is a named slice type: a loader returning it does not unify
// with []T.
type Accounts []Account

// AccountList is an alias of Accounts, still a named slice type.
type AccountList = Accounts

// AccountSlice is an alias of an unnamed slice type, which unifies with []T.
type AccountSlice = []Account

// NamedSliceLoader returns a named slice type through an alias.
func NamedSliceLoader(ctx context.Context, inv *runtime.Invocation) (AccountList, error) {
	return nil, nil
}

// AliasSliceLoader returns an alias of []Account.
func AliasSliceLoader(ctx context.Context, inv *runtime.Invocation) (AccountSlice, error) {
	return nil, nil
}

// Headline is a serializer method whose result is an alias of string.
func (a Account) Headline() Text { return a.Email }

// AccountTitle is a serializer func whose result is an alias of string.
func AccountTitle(a Account) (Text, error) { return a.Plan, nil }
