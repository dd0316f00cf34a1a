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
// every YAML-level problem as a diagnostic.
type treeBuilder struct {
	file    string
	diags   []Diagnostic
	budget  int // remaining alias expansion
	inAlias int
	bombed  bool
}

func (b *treeBuilder) errorf(pos Pos, format string, args ...any) {
	b.diags = append(b.diags, Diagnostic{Pos: pos, Message: fmt.Sprintf(format, args...)})
}

func (b *treeBuilder) pos(n *yaml.Node) Pos { return Pos{File: b.file, Line: n.Line, Col: n.Column} }

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
	switch n.Kind {
	case yaml.DocumentNode:
		if len(n.Content) == 0 {
			return &tnode{kind: ValueNull, pos: b.pos(n)}
		}
		return b.build(n.Content[0], depth)
	case yaml.AliasNode:
		if n.Alias == nil {
			b.errorf(b.pos(n), "unknown alias *%s", n.Value)
			return &tnode{kind: ValueNull, pos: b.pos(n)}
		}
		if b.inAlias > 8 {
			b.errorf(b.pos(n), "alias *%s is nested too deeply", n.Value)
			return &tnode{kind: ValueNull, pos: b.pos(n)}
		}
		b.inAlias++
		t := b.build(n.Alias, depth)
		b.inAlias--
		if b.budget < 0 && !b.bombed {
			b.bombed = true
			b.errorf(b.pos(n), "alias *%s: aliases in this file expand to more than %d values", n.Value, MaxAliasExpansion)
		}
		return t
	case yaml.MappingNode:
		t := &tnode{kind: ValueMap, pos: b.pos(n)}
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
			t.vals = append(t.vals, b.build(vn, depth+1))
		}
		return t
	case yaml.SequenceNode:
		t := &tnode{kind: ValueList, pos: b.pos(n)}
		for _, c := range n.Content {
			t.items = append(t.items, b.build(c, depth+1))
		}
		return t
	case yaml.ScalarNode:
		return b.scalar(n)
	}
	b.errorf(b.pos(n), "unsupported YAML node")
	return &tnode{kind: ValueNull, pos: b.pos(n)}
}

// key checks that a mapping key is a string scalar.
func (b *treeBuilder) key(n *yaml.Node) (*tnode, bool) {
	p := b.pos(n)
	switch {
	case n.Kind == yaml.AliasNode:
		b.errorf(p, "mapping keys must be plain strings, not aliases")
		return nil, false
	case n.Kind != yaml.ScalarNode:
		b.errorf(p, "mapping keys must be strings, not a %s", nodeKindWord(n))
		return nil, false
	case n.Tag == "!!merge":
		b.errorf(p, "merge keys (<<) are not supported; write the keys out")
		return nil, false
	case n.Tag != "!!str" && n.Tag != "!!timestamp":
		b.errorf(p, "mapping keys must be strings; %s is %s (quote it)", n.Value, tagWord(n.Tag))
		return nil, false
	}
	return &tnode{kind: ValueString, pos: p, str: n.Value, plain: n.Style == 0}, true
}

func (b *treeBuilder) scalar(n *yaml.Node) *tnode {
	t := &tnode{pos: b.pos(n), plain: n.Style == 0, str: n.Value}
	switch n.Tag {
	case "!!str", "!!timestamp":
		// Unquoted dates stay strings: the spec language has no timestamps.
		t.kind = ValueString
	case "!!null":
		t.kind, t.str = ValueNull, ""
	case "!!bool":
		t.kind = ValueBool
		t.b = strings.EqualFold(n.Value, "true")
	case "!!int":
		t.kind = ValueInt
		i, err := parseYAMLInt(n.Value)
		if err != nil {
			b.errorf(t.pos, "integer %s is out of range (64-bit signed)", n.Value)
			t.kind, t.str = ValueNull, ""
			break
		}
		t.i, t.str = i, strconv.FormatInt(i, 10)
	case "!!float":
		t.kind = ValueFloat
		f, err := strconv.ParseFloat(strings.ReplaceAll(n.Value, "_", ""), 64)
		if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
			if lv := strings.ToLower(n.Value); strings.Contains(lv, "nan") || strings.Contains(lv, "inf") {
				b.errorf(t.pos, "%s is not a number JSON can hold (NaN and infinities are not allowed)", n.Value)
			} else {
				b.errorf(t.pos, "number %s is out of range", n.Value)
			}
			t.kind, t.str = ValueNull, ""
			break
		}
		t.f = f
		// Keep the literal when JSON can spell it (exact, and what the user
		// wrote); YAML-only spellings (1., +1, .5) are reformatted.
		t.str = strings.ReplaceAll(n.Value, "_", "")
		if !jsonNumber.MatchString(t.str) {
			t.str = strconv.FormatFloat(f, 'g', -1, 64)
		}
	default:
		b.errorf(t.pos, "YAML tag %s is not supported", n.Tag)
		t.kind, t.str = ValueNull, ""
	}
	return t
}

func parseYAMLInt(s string) (int64, error) {
	s = strings.ReplaceAll(s, "_", "")
	neg := strings.HasPrefix(s, "-")
	u := strings.TrimLeft(s, "+-")
	var (
		i   int64
		err error
	)
	switch {
	case strings.HasPrefix(u, "0b"):
		i, err = strconv.ParseInt(u[2:], 2, 64)
	case strings.HasPrefix(u, "0o"):
		i, err = strconv.ParseInt(u[2:], 8, 64)
	default:
		i, err = strconv.ParseInt(u, 0, 64)
	}
	if neg {
		i = -i
	}
	return i, err
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
