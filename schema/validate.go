package schema

import (
	"encoding/json"
	"fmt"
	"math/big"
	"slices"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/agnivade/levenshtein"
	"github.com/santhosh-tekuri/jsonschema/v5"
)

// Kind classifies a Violation.
type Kind int

const (
	// Invalid is any violation other than the two below (required, enum,
	// pattern, bounds, ...). Path points at the offending value, or at the
	// mapping that lacks a required key.
	Invalid Kind = iota
	// UnknownKey: the mapping at Path[:len(Path)-1] has a key Path[len-1]
	// the schema does not allow. Point at the key.
	UnknownKey
	// WrongType: the value at Path has a JSON type the schema does not
	// allow; Expected lists the allowed types. Point at the value.
	WrongType
)

// Violation is one way an instance breaks the schema.
type Violation struct {
	Kind Kind
	// Path is the instance location: object keys and decimal list indexes,
	// from the root.
	Path []string
	// Message is human-readable and does not repeat the path.
	Message string
	// Expected is set for WrongType: "object", "array", "string",
	// "integer", "number", "boolean", "null".
	Expected []string
	// Got is the instance's JSON type for WrongType.
	Got string
	// Optional is set for WrongType when the value belongs to a key its
	// mapping may omit, so removing the key is one way to fix it (false for
	// required keys, list items and the root).
	Optional bool
}

// Validate checks instance, a JSON value made of map[string]any, []any,
// string, bool, nil and json.Number (integers and floats as written). It
// returns every violation, sorted by path then message; nil means valid.
// Passing other Go types is a programming error: Validate panics when it
// meets one where the schema declares a type (always at the root).
func (v *Validator) Validate(instance any) []Violation {
	var out []Violation
	v.walk(v.doc, instance, nil, false, &out)
	typed := make(map[string]bool)
	for _, vi := range out {
		if vi.Kind == WrongType {
			typed[pointer(vi.Path)] = true
		}
	}
	if err := v.compiled.Validate(instance); err != nil {
		ve, ok := err.(*jsonschema.ValidationError)
		if !ok {
			out = append(out, Violation{Message: err.Error()})
		} else {
			for _, leaf := range leaves(ve, nil) {
				vis, keep := v.fromLeaf(leaf, instance)
				if !keep {
					continue
				}
				for _, vi := range vis {
					if !underTyped(vi.Path, typed) {
						out = append(out, vi)
					}
				}
			}
		}
	}
	sort.SliceStable(out, func(i, j int) bool {
		a, b := strings.Join(out[i].Path, "\x00"), strings.Join(out[j].Path, "\x00")
		if a != b {
			return a < b
		}
		return out[i].Message < out[j].Message
	})
	return slices.CompactFunc(out, func(a, b Violation) bool {
		return a.Message == b.Message && slices.Equal(a.Path, b.Path)
	})
}

// resolve follows $ref (local "#/..." pointers only) and merges the
// referencing schema's own keywords over the target's.
func (v *Validator) resolve(s map[string]any) map[string]any {
	for depth := 0; depth < 16; depth++ {
		ref, ok := s["$ref"].(string)
		if !ok {
			return s
		}
		target, _ := lookup(v.doc, strings.TrimPrefix(ref, "#")).(map[string]any)
		merged := make(map[string]any, len(target)+len(s))
		for k, x := range target {
			merged[k] = x
		}
		for k, x := range s {
			if k != "$ref" {
				merged[k] = x
			}
		}
		s = merged
	}
	return s
}

func (v *Validator) walk(s map[string]any, inst any, path []string, optional bool, out *[]Violation) {
	s = v.resolve(s)
	if types := schemaTypes(s); types != nil && !typeAllowed(types, inst) {
		*out = append(*out, Violation{
			Kind:     WrongType,
			Path:     slices.Clone(path),
			Expected: types,
			Got:      jsonType(inst),
			Message:  wrongTypeMessage(s, types, inst),
			Optional: optional,
		})
		return
	}
	switch x := inst.(type) {
	case map[string]any:
		props, _ := s["properties"].(map[string]any)
		closed := s["additionalProperties"] == false
		required := requiredKeys(s)
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		var known []string // props' keys, sorted once for all unknown keys
		for _, k := range keys {
			p := append(slices.Clone(path), k)
			if ps, ok := props[k].(map[string]any); ok {
				v.walk(ps, x[k], p, !slices.Contains(required, k), out)
			} else if closed {
				if known == nil {
					known = make([]string, 0, len(props))
					for pk := range props {
						known = append(known, pk)
					}
					sort.Strings(known)
				}
				*out = append(*out, Violation{Kind: UnknownKey, Path: p, Message: unknownKeyMessage(k, known)})
			}
		}
	case []any:
		items, ok := s["items"].(map[string]any)
		if !ok {
			return
		}
		for i, e := range x {
			v.walk(items, e, append(slices.Clone(path), strconv.Itoa(i)), false, out)
		}
	}
}

// unknownKeyMessage names the key and suggests the closest allowed key: by
// edit distance to the whole key or to one of its underscore-separated
// words (histroy → thread_history), within half the key's length.
// known is the sorted list of allowed keys.
func unknownKeyMessage(key string, known []string) string {
	n := utf8.RuneCountInString(key)
	limit := max(2, n/2)
	best, bestScore := "", 1<<30
	for _, k := range known {
		// The distance is at least the difference in length: a key far
		// longer than every allowed key (a pasted paragraph) is compared
		// with none of them.
		if n-len(k) > limit {
			continue
		}
		score := levenshtein.ComputeDistance(key, k)
		if strings.Contains(k, "_") {
			for _, w := range strings.Split(k, "_") {
				if d := levenshtein.ComputeDistance(key, w) + 1; len(w) > 2 && d < score {
					score = d
				}
			}
		}
		if score < bestScore {
			best, bestScore = k, score
		}
	}
	if best != "" && bestScore <= limit {
		return fmt.Sprintf("unknown key %q; did you mean %q?", key, best)
	}
	if len(known) == 0 {
		return fmt.Sprintf("unknown key %q; no keys are allowed here", key)
	}
	return fmt.Sprintf("unknown key %q; expected one of: %s", key, strings.Join(known, ", "))
}

func schemaTypes(s map[string]any) []string {
	switch t := s["type"].(type) {
	case string:
		return []string{t}
	case []any:
		var out []string
		for _, e := range t {
			if str, ok := e.(string); ok {
				out = append(out, str)
			}
		}
		return out
	}
	return nil
}

func typeAllowed(types []string, inst any) bool {
	got := jsonType(inst)
	for _, t := range types {
		if t == got || t == "number" && got == "integer" {
			return true
		}
	}
	return false
}

// jsonType names inst's JSON type, "integer" for integral numbers.
func jsonType(inst any) string {
	switch x := inst.(type) {
	case nil:
		return "null"
	case bool:
		return "boolean"
	case string:
		return "string"
	case []any:
		return "array"
	case map[string]any:
		return "object"
	case json.Number:
		if r, ok := new(big.Rat).SetString(string(x)); ok && r.IsInt() {
			return "integer"
		}
		return "number"
	}
	panic(fmt.Sprintf("schema: unsupported instance type %T", inst))
}

var typeWords = map[string]string{
	"object":  "a mapping",
	"array":   "a list",
	"string":  "a string",
	"integer": "an integer",
	"number":  "a number",
	"boolean": "a boolean (true or false)",
	"null":    "null",
}

func article(t string) string {
	if w, ok := typeWords[t]; ok {
		return w
	}
	return t
}

func joinTypes(types []string) string {
	words := make([]string, len(types))
	for i, t := range types {
		words[i] = article(t)
	}
	return strings.Join(words, " or ")
}

func leaves(e *jsonschema.ValidationError, out []*jsonschema.ValidationError) []*jsonschema.ValidationError {
	if len(e.Causes) == 0 {
		return append(out, e)
	}
	for _, c := range e.Causes {
		out = leaves(c, out)
	}
	return out
}

// fromLeaf turns one v5 leaf error into violations; keep is false for the
// keywords the walk already reports.
func (v *Validator) fromLeaf(e *jsonschema.ValidationError, instance any) ([]Violation, bool) {
	path := parsePointer(e.InstanceLocation)
	kwPath := e.AbsoluteKeywordLocation
	if i := strings.IndexByte(kwPath, '#'); i >= 0 {
		kwPath = kwPath[i+1:]
	}
	kw := kwPath[strings.LastIndexByte(kwPath, '/')+1:]
	switch kw {
	case "type", "additionalProperties", "$ref":
		return nil, false
	}
	owner, _ := lookup(v.doc, kwPath[:strings.LastIndexByte(kwPath, '/')]).(map[string]any)
	value := lookup(instance, e.InstanceLocation)
	switch kw {
	case "required":
		m, _ := value.(map[string]any)
		req, _ := owner["required"].([]any)
		var out []Violation
		for _, r := range req {
			name, _ := r.(string)
			if _, ok := m[name]; !ok {
				out = append(out, Violation{Path: path, Message: fmt.Sprintf("missing required key %q", name)})
			}
		}
		return out, true
	case "enum":
		vals, _ := owner["enum"].([]any)
		words := make([]string, len(vals))
		for i, x := range vals {
			words[i] = fmt.Sprint(x)
		}
		return []Violation{{Path: path, Message: fmt.Sprintf("must be one of %s (got %s)", strings.Join(words, ", "), show(value))}}, true
	}
	switch kw {
	case "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum":
		op := map[string]string{"minimum": ">=", "maximum": "<=", "exclusiveMinimum": ">", "exclusiveMaximum": "<"}[kw]
		return []Violation{{Path: path, Message: fmt.Sprintf("must be %s %s (got %s)", op, show(owner[kw]), show(value))}}, true
	}
	if kw == "maxLength" {
		// x-message says what the pattern wants; a value too long may well match it.
		n, _ := value.(string)
		return []Violation{{Path: path, Message: fmt.Sprintf("must be at most %s characters (got %d)", show(owner[kw]), utf8.RuneCountInString(n))}}, true
	}
	if msg, ok := owner["x-message"].(string); ok {
		if kw == "minProperties" || kw == "maxProperties" {
			return []Violation{{Path: path, Message: msg}}, true
		}
		return []Violation{{Path: path, Message: fmt.Sprintf("%s (got %s)", msg, show(value))}}, true
	}
	return []Violation{{Path: path, Message: e.Message}}, true
}

func show(v any) string {
	switch x := v.(type) {
	case string:
		return strconv.Quote(x)
	case json.Number:
		return string(x)
	case nil:
		return "null"
	}
	return fmt.Sprint(v)
}

func underTyped(path []string, typed map[string]bool) bool {
	for i := len(path); i >= 0; i-- {
		if typed[pointer(path[:i])] {
			return true
		}
	}
	return false
}

func pointer(path []string) string {
	var b strings.Builder
	for _, p := range path {
		b.WriteByte('/')
		b.WriteString(pointerEscaper.Replace(p))
	}
	return b.String()
}

// JSON Pointer escaping (RFC 6901); a Replacer is safe for concurrent use.
var (
	pointerEscaper   = strings.NewReplacer("~", "~0", "/", "~1")
	pointerUnescaper = strings.NewReplacer("~1", "/", "~0", "~")
)

func parsePointer(p string) []string {
	if p == "" {
		return nil
	}
	parts := strings.Split(strings.TrimPrefix(p, "/"), "/")
	for i, s := range parts {
		parts[i] = pointerUnescaper.Replace(s)
	}
	return parts
}

// lookup resolves a JSON pointer in a decoded JSON value; nil if absent.
func lookup(v any, ptr string) any {
	for _, tok := range parsePointer(ptr) {
		switch x := v.(type) {
		case map[string]any:
			v = x[tok]
		case []any:
			i, err := strconv.Atoi(tok)
			if err != nil || i < 0 || i >= len(x) {
				return nil
			}
			v = x[i]
		default:
			return nil
		}
	}
	return v
}

// requiredKeys returns the keys a mapping schema requires, in schema order.
func requiredKeys(s map[string]any) []string {
	req, _ := s["required"].([]any)
	out := make([]string, 0, len(req))
	for _, r := range req {
		if k, ok := r.(string); ok {
			out = append(out, k)
		}
	}
	return out
}

// wrongTypeMessage says what type was expected and what was found, and, for the common slip of
// writing a key with nothing after it where a mapping belongs (`- thread_summary:`), how to
// write the mapping: {} when every key has a default, else the keys it needs.
func wrongTypeMessage(s map[string]any, types []string, inst any) string {
	msg := fmt.Sprintf("expected %s, got %s", joinTypes(types), article(jsonType(inst)))
	if inst == nil && slices.Equal(types, []string{"object"}) {
		switch req := requiredKeys(s); len(req) {
		case 0:
			msg += "; write {} for a mapping with every field at its default"
		case 1:
			msg += fmt.Sprintf("; write a mapping with its required key %s", req[0])
		default:
			msg += fmt.Sprintf("; write a mapping with its required keys %s", strings.Join(req, ", "))
		}
	}
	return msg
}
