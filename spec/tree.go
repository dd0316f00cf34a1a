package spec

import (
	"encoding/json"
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"
)

// Bounds on what one spec file may expand to. A spec is a few dozen values;
// these stop alias bombs ("billion laughs") and pathological nesting long
// before they cost memory or time.
const (
	// MaxAliasExpansion is the number of values that alias references in one
	// file may expand to, in total.
	MaxAliasExpansion = 1000
	// MaxDepth is the deepest nesting of mappings and lists accepted.
	MaxDepth = 64
)

// tnode is one YAML value, resolved by the YAML 1.2 core schema and
// positioned; the loader's working form between yaml.Node and the typed
// model.
type tnode struct {
	kind  ValueKind
	pos   Pos
	plain bool   // an untagged, unquoted scalar
	str   string // ValueString value; the literal for numbers
	b     bool
	i     int64
	f     float64
	items []*tnode
	keys  []*tnode // ValueMap keys (kind ValueString), parallel to vals
	vals  []*tnode
	index map[string]int // key → position in keys, built by lookup
}

// lookup returns the index of key k of a mapping node, or -1. It builds a
// map on first use, so looking up every key of a large mapping (one schema
// violation per key) stays linear.
func (n *tnode) lookup(k string) int {
	if n.index == nil {
		n.index = make(map[string]int, len(n.keys))
		for i, key := range n.keys {
			n.index[key.str] = i
		}
	}
	if i, ok := n.index[k]; ok {
		return i
	}
	return -1
}

// get returns the value of key k of a mapping node, or nil.
func (n *tnode) get(k string) *tnode {
	if n == nil || n.kind != ValueMap {
		return nil
	}
	for i, key := range n.keys {
		if key.str == k {
			return n.vals[i]
		}
	}
	return nil
}

// treeBuilder converts a yaml.Node document into a tnode tree, reporting
// every YAML-level problem as a diagnostic. Scalars are resolved by the
// YAML 1.2 core schema here, from the node's text, tag and style: yaml.v3's
// own resolution is YAML 1.1-flavoured (010 is 8, 1_000 is 1000, 0b1 is 1)
// and is not used.
type treeBuilder struct {
	file    string
	src     *source
	diags   []Diagnostic
	budget  int // remaining alias expansion
	inAlias int
	bombed  bool
	// use is the position of the outermost alias being expanded (zero
	// outside aliases): every value built through an alias is placed at the
	// alias, where it is used, not at its anchor.
	use Pos
	// aliases maps an alias's position to the anchor it expands, so
	// diagnostics there can name the anchor.
	aliases map[Pos]aliasUse
	// built holds the anchored nodes already built where they are defined;
	// a YAML-level problem inside one was reported there and is not
	// repeated at each alias.
	built map[*yaml.Node]bool
	// quiet holds the use positions of such unrepeated problems, so the
	// schema's complaint about the null they left is dropped too.
	quiet map[Pos]bool
	// open holds the collections being built, so an alias to one of them
	// (a value that contains itself) is reported as the cycle it is.
	open map[*yaml.Node]bool
	// path is the instance path of the value being built (keys, and list
	// indices as decimal strings), so its type errors name their key the
	// way the schema check's do (pathLabel).
	path []string
}

// aliasUse is one alias (*name) and the position of its anchor (&name).
type aliasUse struct {
	name   string
	anchor Pos
}

func (b *treeBuilder) errorf(pos Pos, format string, args ...any) {
	if b.inAlias > 0 && b.use.IsValid() {
		b.quiet[pos] = true
		return
	}
	b.diags = append(b.diags, Diagnostic{Pos: pos, Message: fmt.Sprintf(format, args...)})
}

// typeErrorf reports a value that is not of the type its tag or spelling
// says, named by its key as the schema check names its type errors
// ("model.max_tokens: ..."); a value at the top of the file has no key.
func (b *treeBuilder) typeErrorf(pos Pos, format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	if label := pathLabel(b.path); label != "" {
		msg = label + ": " + msg
	}
	b.errorf(pos, "%s", msg)
}

func (b *treeBuilder) pos(n *yaml.Node) Pos {
	if b.use.IsValid() {
		return b.use
	}
	return Pos{File: b.file, Line: n.Line, Col: n.Column}
}

func (b *treeBuilder) build(n *yaml.Node, depth int) *tnode {
	if b.inAlias > 0 {
		b.budget--
		if b.budget < 0 {
			return &tnode{kind: ValueNull, pos: b.pos(n)}
		}
	}
	if depth > MaxDepth {
		b.errorf(b.pos(n), "nesting deeper than %d levels", MaxDepth)
		return &tnode{kind: ValueNull, pos: b.pos(n)}
	}
	if n.Anchor != "" && b.inAlias == 0 {
		b.built[n] = true
	}
	switch n.Kind {
	case yaml.DocumentNode:
		if len(n.Content) == 0 {
			return &tnode{kind: ValueNull, pos: b.pos(n)}
		}
		return b.build(n.Content[0], depth)
	case yaml.AliasNode:
		return b.alias(n, depth)
	case yaml.MappingNode:
		b.open[n] = true
		defer delete(b.open, n)
		t := &tnode{kind: ValueMap, pos: b.pos(n)}
		b.collectionTag(n, t.pos, "!!map", "a mapping")
		seen := make(map[string]Pos)
		for i := 0; i+1 < len(n.Content); i += 2 {
			kn, vn := n.Content[i], n.Content[i+1]
			key, ok := b.key(kn)
			if !ok {
				continue
			}
			if first, dup := seen[key.str]; dup {
				b.errorf(key.pos, "duplicate key %q (first at line %d:%d)", key.str, first.Line, first.Col)
				continue
			}
			seen[key.str] = key.pos
			t.keys = append(t.keys, key)
			b.path = append(b.path, key.str)
			t.vals = append(t.vals, b.build(vn, depth+1))
			b.path = b.path[:len(b.path)-1]
		}
		return t
	case yaml.SequenceNode:
		b.open[n] = true
		defer delete(b.open, n)
		t := &tnode{kind: ValueList, pos: b.pos(n)}
		b.collectionTag(n, t.pos, "!!seq", "a list")
		for i, c := range n.Content {
			b.path = append(b.path, strconv.Itoa(i))
			t.items = append(t.items, b.build(c, depth+1))
			b.path = b.path[:len(b.path)-1]
		}
		return t
	case yaml.ScalarNode:
		return b.scalar(n)
	}
	b.errorf(b.pos(n), "unsupported YAML node")
	return &tnode{kind: ValueNull, pos: b.pos(n)}
}

// alias builds the value an alias refers to, placed at the alias.
func (b *treeBuilder) alias(n *yaml.Node, depth int) *tnode {
	p := b.pos(n)
	if n.Alias == nil {
		b.diags = append(b.diags, Diagnostic{Pos: p, Message: fmt.Sprintf("unknown alias *%s", n.Value)})
		return &tnode{kind: ValueNull, pos: p}
	}
	if b.open[n.Alias] {
		b.diags = append(b.diags, Diagnostic{Pos: p, Message: fmt.Sprintf("alias *%s refers to a value that contains it (a cycle); a spec value cannot contain itself", n.Value)})
		return &tnode{kind: ValueNull, pos: p}
	}
	if b.inAlias > 8 {
		b.diags = append(b.diags, Diagnostic{Pos: p, Message: fmt.Sprintf("alias *%s is nested too deeply", n.Value)})
		return &tnode{kind: ValueNull, pos: p}
	}
	outer := !b.use.IsValid()
	if outer {
		b.aliases[p] = aliasUse{name: n.Value, anchor: Pos{File: b.file, Line: n.Alias.Line, Col: n.Alias.Column}}
		if !b.built[n.Alias] {
			// The anchor's own place was never built (it sits under a
			// key reported as a duplicate): report its problems here.
			b.inAlias++
			t := b.build(n.Alias, depth)
			b.inAlias--
			return t
		}
		b.use = p
	}
	b.inAlias++
	t := b.build(n.Alias, depth)
	b.inAlias--
	if outer {
		b.use = Pos{}
	}
	if b.budget < 0 && !b.bombed {
		b.bombed = true
		b.diags = append(b.diags, Diagnostic{Pos: p, Message: fmt.Sprintf("alias *%s: aliases in this file expand to more than %d values", n.Value, MaxAliasExpansion)})
	}
	return t
}

// collectionTag reports an explicit tag on a mapping or list other than
// the core schema's own (want: !!map or !!seq).
func (b *treeBuilder) collectionTag(n *yaml.Node, p Pos, want, what string) {
	if n.Style&yaml.TaggedStyle != 0 && n.Tag != want {
		b.typeErrorf(p, "YAML tag %s is not supported on %s (%s)", n.Tag, what, supportedTags)
	}
}

const supportedTags = "only the YAML 1.2 core schema's !!str, !!int, !!float, !!bool, !!null, !!map and !!seq are; remove the tag"

// key checks that a mapping key is a string scalar; an error is named by
// the mapping's own key.
func (b *treeBuilder) key(n *yaml.Node) (*tnode, bool) {
	p := b.pos(n)
	switch {
	case n.Kind == yaml.AliasNode:
		b.typeErrorf(p, "mapping keys must be plain strings, not aliases")
		return nil, false
	case n.Kind != yaml.ScalarNode:
		b.typeErrorf(p, "mapping keys must be strings, not a %s", nodeKindWord(n))
		return nil, false
	case n.Tag == "!!merge":
		b.typeErrorf(p, "merge keys (<<) are not supported; write the keys out")
		return nil, false
	}
	if tag := b.scalarTag(n); tag != "!!str" {
		b.typeErrorf(p, "mapping keys must be strings; %s is %s (quote it)", n.Value, tagWord(tag))
		return nil, false
	}
	return &tnode{kind: ValueString, pos: p, str: n.Value, plain: n.Style == 0}, true
}

// scalarTag returns the core-schema tag of a scalar: its explicit tag, or
// !!str for a quoted, block or "!"-tagged scalar, or what the plain text
// resolves to (resolvePlain).
func (b *treeBuilder) scalarTag(n *yaml.Node) string {
	switch {
	case n.Style&yaml.TaggedStyle != 0:
		return n.Tag
	case n.Style != 0:
		return "!!str"
	case b.nonSpecificTag(n):
		return "!!str"
	}
	return resolvePlain(n.Value)
}

// nonSpecificTag reports whether a plain scalar carries the non-specific
// tag "!" (`! 12`, a string in YAML), which yaml.v3 drops without a trace
// in the node; the source at the node's position shows it, after any
// anchor.
func (b *treeBuilder) nonSpecificTag(n *yaml.Node) bool {
	line := b.src.line(n.Line)
	i := n.Column - 1
	if i < 0 || i >= len(line) {
		return false
	}
	for i < len(line) && line[i] == '&' { // properties may come in either order
		for i < len(line) && line[i] != ' ' && line[i] != '\t' {
			i++
		}
		for i < len(line) && (line[i] == ' ' || line[i] == '\t') {
			i++
		}
	}
	return i+1 < len(line) && line[i] == '!' && (line[i+1] == ' ' || line[i+1] == '\t')
}

// The YAML 1.2 core schema's resolution of plain scalars (YAML 1.2.2,
// section 10.3.2). Everything else is a string.
var (
	coreInt   = regexp.MustCompile(`^(?:[-+]?[0-9]+|0o[0-7]+|0x[0-9a-fA-F]+)$`)
	coreFloat = regexp.MustCompile(`^[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?$`)
	coreInf   = regexp.MustCompile(`^[-+]?\.(?:inf|Inf|INF)$`)
	coreNaN   = regexp.MustCompile(`^\.(?:nan|NaN|NAN)$`)
	// leadingZero is a decimal integer written with a leading zero, which
	// YAML 1.1 reads as octal and YAML 1.2 as decimal.
	leadingZero = regexp.MustCompile(`^[-+]?0[0-9]+$`)
)

// resolvePlain returns the core-schema tag of an untagged plain scalar.
func resolvePlain(s string) string {
	switch {
	case isCoreNull(s):
		return "!!null"
	case s == "true" || s == "True" || s == "TRUE" || s == "false" || s == "False" || s == "FALSE":
		return "!!bool"
	case coreInt.MatchString(s):
		return "!!int"
	case coreFloat.MatchString(s) || coreInf.MatchString(s) || coreNaN.MatchString(s):
		return "!!float"
	}
	return "!!str"
}

func isCoreNull(s string) bool {
	return s == "" || s == "~" || s == "null" || s == "Null" || s == "NULL"
}

func (b *treeBuilder) scalar(n *yaml.Node) *tnode {
	tag := b.scalarTag(n)
	t := &tnode{pos: b.pos(n), plain: n.Style == 0 && !b.nonSpecificTag(n), str: n.Value}
	bad := func(format string, args ...any) *tnode {
		b.typeErrorf(t.pos, format, args...)
		t.kind, t.str = ValueNull, ""
		return t
	}
	switch tag {
	case "!!str":
		t.kind = ValueString
	case "!!null":
		if !isCoreNull(n.Value) {
			return bad("!!null %s is not null; a null is written ~, null or nothing", n.Value)
		}
		t.kind, t.str = ValueNull, ""
	case "!!bool":
		switch n.Value {
		case "true", "True", "TRUE":
			t.kind, t.b = ValueBool, true
		case "false", "False", "FALSE":
			t.kind, t.b = ValueBool, false
		default:
			return bad("!!bool %s is not a boolean; YAML 1.2 booleans are true and false", n.Value)
		}
	case "!!int":
		if !coreInt.MatchString(n.Value) {
			return bad("!!int %s is not an integer (YAML 1.2 writes 12, 0o14 or 0xC)", n.Value)
		}
		i, msg := parseCoreInt(n.Value)
		if msg != "" {
			return bad("%s", msg)
		}
		t.kind, t.i, t.str = ValueInt, i, strconv.FormatInt(i, 10)
	case "!!float":
		switch {
		case coreInf.MatchString(n.Value) || coreNaN.MatchString(n.Value):
			return bad("%s is not a number JSON can hold (NaN and infinities are not allowed)", n.Value)
		case !coreFloat.MatchString(n.Value):
			return bad("!!float %s is not a number (YAML 1.2 writes 1.5, -2e3 or .5)", n.Value)
		}
		f, err := strconv.ParseFloat(n.Value, 64)
		if err != nil || math.IsInf(f, 0) {
			return bad("number %s is out of range (64-bit floating point)", n.Value)
		}
		if f == 0 && strings.ContainsAny(mantissa(n.Value), "123456789") {
			return bad("number %s is too small for 64-bit floating point: it would be read as 0; write 0 if that is meant", n.Value)
		}
		t.kind, t.f = ValueFloat, f
		// Keep the literal when JSON can spell it (exact, and what the user
		// wrote) and it is short: big.Rat, which the schema check compares
		// numbers with, costs time with the exponent. YAML-only spellings
		// (1., +1, .5, 01.5), long literals and zeros (0e-99999999) are
		// reformatted.
		if !jsonNumber.MatchString(n.Value) || len(n.Value) > maxFloatLiteral || f == 0 {
			t.str = strconv.FormatFloat(f, 'g', -1, 64)
		}
	case "!!map", "!!seq":
		return bad("YAML tag %s is for %s, not a single value", tag, map[string]string{"!!map": "mappings", "!!seq": "lists"}[tag])
	default:
		return bad("YAML tag %s is not supported (%s)", tag, supportedTags)
	}
	return t
}

// maxFloatLiteral is the longest float literal kept as written. A float64
// holds 17 significant digits and exponents up to ±324, so nothing longer
// can be more exact than its shortest formatting.
const maxFloatLiteral = 32

// mantissa returns a number literal without its exponent.
func mantissa(s string) string {
	if i := strings.IndexAny(s, "eE"); i >= 0 {
		return s[:i]
	}
	return s
}

// parseCoreInt parses a core-schema integer (coreInt matched) into an
// int64, or says why it cannot be one: out of range, or a decimal with a
// leading zero, which YAML 1.1 reads as octal and YAML 1.2 as decimal, so
// the two readings disagree.
func parseCoreInt(s string) (int64, string) {
	if leadingZero.MatchString(s) {
		digits := strings.TrimLeft(s, "+-0")
		if digits == "" {
			digits = "0"
		}
		sign := ""
		if s[0] == '-' {
			sign = "-"
		}
		old, octal := "a string", ""
		if o, err := strconv.ParseInt(sign+digits, 8, 64); err == nil {
			old = "octal " + strconv.FormatInt(o, 10)
			if sign == "" {
				octal = ", 0o" + digits + " for octal"
			}
		}
		return 0, fmt.Sprintf("%s has a leading zero, which YAML 1.1 reads as %s and YAML 1.2 as decimal %s%s; write %s%s%s, or quote it for a string",
			s, old, sign, digits, sign, digits, octal)
	}
	var (
		i   int64
		err error
	)
	switch {
	case strings.HasPrefix(s, "0o"):
		i, err = strconv.ParseInt(s[2:], 8, 64)
	case strings.HasPrefix(s, "0x"):
		i, err = strconv.ParseInt(s[2:], 16, 64)
	default:
		i, err = strconv.ParseInt(s, 10, 64)
	}
	if err != nil {
		return 0, fmt.Sprintf("integer %s is out of range (64-bit signed: %d to %d)", s, math.MinInt64, math.MaxInt64)
	}
	return i, ""
}

func nodeKindWord(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "mapping"
	case yaml.SequenceNode:
		return "list"
	}
	return "value"
}

func tagWord(tag string) string {
	switch tag {
	case "!!int":
		return "an integer"
	case "!!float":
		return "a number"
	case "!!bool":
		return "a boolean"
	case "!!null":
		return "null"
	}
	return "tagged " + tag
}

var jsonNumber = regexp.MustCompile(`^-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][-+]?[0-9]+)?$`)

// toJSON converts the tree to the JSON value the schema validates:
// map[string]any, []any, string, bool, nil, json.Number.
func toJSON(t *tnode) any {
	switch t.kind {
	case ValueBool:
		return t.b
	case ValueInt, ValueFloat:
		return json.Number(t.str)
	case ValueString:
		return t.str
	case ValueList:
		out := make([]any, len(t.items))
		for i, c := range t.items {
			out[i] = toJSON(c)
		}
		return out
	case ValueMap:
		out := make(map[string]any, len(t.keys))
		for i, k := range t.keys {
			out[k.str] = toJSON(t.vals[i])
		}
		return out
	}
	return nil
}

// toValue converts the tree to the exported generic Value.
func toValue(t *tnode) Value {
	v := Value{Kind: t.kind, Pos: t.pos, Bool: t.b, Int: t.i, Float: t.f, Str: t.str}
	if t.kind == ValueInt {
		v.Float = float64(t.i)
	}
	for _, c := range t.items {
		v.List = append(v.List, toValue(c))
	}
	for i, k := range t.keys {
		v.Map = append(v.Map, MapEntry{Key: String{Value: k.str, Pos: k.pos}, Value: toValue(t.vals[i])})
	}
	return v
}
