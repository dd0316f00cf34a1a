package gen

import (
	"bytes"
	"encoding/json"
	"fmt"
	"go/constant"
	"go/types"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"unicode"
)

// A tool's input schema is derived from its Go input type at generate
// time, following what encoding/json accepts when the runtime decodes the
// model's arguments into that type (tool.New decodes strictly, so every
// object is closed). The rules, which docs/generator.md ("Tools: schemas
// derived from Go types") states for users:
//
//   - struct → object: one property per field encoding/json decodes
//     (exported, not `json:"-"`), named by its json tag or Go name,
//     embedded structs flattened by encoding/json's rules (the shallowest
//     field wins, then a tagged one, else the name is dropped);
//     "additionalProperties": false. A property is required unless its
//     field is a pointer, is tagged omitempty or omitzero, or is promoted
//     through an embedded pointer.
//   - string, bool; integers (sized ones with their bounds, unsigned ones
//     with minimum 0), floats → number; []byte → base64 string; slices →
//     array; [N]T → array of at most N items; map[K]V with K of string
//     kind → object whose additionalProperties is V's schema.
//   - a named type with exported typed constants in its package (string,
//     integer or bool) → enum of their values in declaration order.
//   - time.Time → string date-time; time.Duration → integer
//     (nanoseconds); json.Number → number;
//     json.RawMessage, any → unconstrained ({}); a type with an
//     UnmarshalText method (and no UnmarshalJSON) → string.
//   - descriptions: a field's doc comment (or line comment), else its
//     type's doc comment unless the type is the standard library's; the
//     input type's own doc comment is not used (the tool's description
//     says what the input is for).
//   - refused, naming the field path: chan, func, complex, unsafe.Pointer,
//     interfaces with methods, maps with non-string keys, types with their
//     own UnmarshalJSON, the `,string` tag option, embedded pointers to
//     unexported structs, recursive types, schemas beyond maxSchemaNodes.

// maxSchemaNodes bounds the size of a derived schema: a type graph
// without cycles can still expand exponentially (each struct holding two
// of the next).
const maxSchemaNodes = 5000

// jsonSchema is a derived JSON Schema, written by (*jsonSchema).write in
// a fixed key order so generated files are deterministic and diffs read
// well. The zero value is the unconstrained schema {}.
type jsonSchema struct {
	typ             string
	description     string
	format          string
	contentEncoding string
	enum            []string // JSON literals
	minimum         string   // a JSON number literal, or ""
	maximum         string
	maxItems        int64 // -1: none
	items           *jsonSchema
	propertyNames   *jsonSchema
	values          *jsonSchema // additionalProperties of a map
	properties      []schemaProperty
	required        []string
	closed          bool // "additionalProperties": false
}

type schemaProperty struct {
	name   string
	schema *jsonSchema
}

// schemaDeriver derives the schema of one tool's input type.
type schemaDeriver struct {
	docs  *docs
	stack []*types.Named // named types being derived, outermost first
	nodes int
}

// schemaError is why an input type has no schema; path is the Go path of
// the field it concerns (host.OrderQuery.Items[].Callback).
type schemaError struct {
	path, msg string
}

func (e *schemaError) Error() string { return e.path + ": " + e.msg }

// deriveInputSchema derives the schema of a tool's input type in, a
// struct or a pointer to one (toolInput checked), as a JSON object; root
// starts the field paths of its errors.
func deriveInputSchema(in types.Type, root string, d *docs) (*jsonSchema, error) {
	sd := &schemaDeriver{docs: d}
	s, err := sd.schema(in, root)
	if err != nil {
		return nil, err
	}
	s.description = "" // the tool's description says what the input is for
	return s, nil
}

// isStructInput reports whether t is a struct or a pointer to one.
func isStructInput(t types.Type) bool {
	t = types.Unalias(t)
	if p, ok := t.(*types.Pointer); ok {
		t = types.Unalias(p.Elem())
	}
	_, ok := t.Underlying().(*types.Struct)
	return ok
}

func (sd *schemaDeriver) fail(path, format string, args ...any) error {
	return &schemaError{path: path, msg: fmt.Sprintf(format, args...)}
}

// schema derives the schema of t, found at path.
func (sd *schemaDeriver) schema(t types.Type, path string) (*jsonSchema, error) {
	sd.nodes++
	if sd.nodes > maxSchemaNodes {
		return nil, sd.fail(path, "the input schema would have more than %d subschemas (a type graph this large expands exponentially); simplify the input type", maxSchemaNodes)
	}
	t = types.Unalias(t)
	if p, ok := t.(*types.Pointer); ok {
		return sd.schema(p.Elem(), path)
	}
	named, _ := t.(*types.Named)
	if named != nil {
		if s, ok := wellKnown(named); ok {
			return s, nil
		}
		for _, outer := range sd.stack {
			if types.Identical(outer, named) {
				return nil, sd.fail(path, "%s refers to itself: a tool's input schema is written out in full, so it cannot describe a recursive type; bound the nesting with distinct types, or take this part as json.RawMessage and decode it in the tool", typeString(named))
			}
		}
		sd.stack = append(sd.stack, named)
		defer func() { sd.stack = sd.stack[:len(sd.stack)-1] }()
	}
	if m := unmarshaler(t, "UnmarshalJSON"); m != "" {
		return nil, sd.fail(path, "%s has its own UnmarshalJSON (%s), so its JSON form is whatever that method accepts, which the generator cannot see; use a plain struct or basic type, or json.RawMessage", typeString(t), m)
	}
	if m := unmarshaler(t, "UnmarshalText"); m != "" {
		return &jsonSchema{typ: "string", description: sd.typeDoc(named), maxItems: -1}, nil
	}
	s := &jsonSchema{maxItems: -1, description: sd.typeDoc(named)}
	switch u := t.Underlying().(type) {
	case *types.Basic:
		if err := basicSchema(s, u); err != nil {
			return nil, sd.fail(path, "%s", err)
		}
		if named != nil {
			s.enum = enumValues(named)
		}
	case *types.Slice:
		if isByte(u.Elem()) {
			s.typ, s.contentEncoding = "string", "base64"
			return s, nil
		}
		items, err := sd.schema(u.Elem(), path+"[]")
		if err != nil {
			return nil, err
		}
		s.typ, s.items = "array", items
	case *types.Array:
		items, err := sd.schema(u.Elem(), path+"[]")
		if err != nil {
			return nil, err
		}
		s.typ, s.items, s.maxItems = "array", items, u.Len()
	case *types.Map:
		key := types.Unalias(u.Key())
		kb, ok := key.Underlying().(*types.Basic)
		if !ok || kb.Kind() != types.String {
			return nil, sd.fail(path, "a map with %s keys: JSON object keys are strings, so a tool's input takes maps with string keys only (map[string]T)", typeString(u.Key()))
		}
		values, err := sd.schema(u.Elem(), path+"[key]")
		if err != nil {
			return nil, err
		}
		s.typ, s.values = "object", values
		if kn, ok := key.(*types.Named); ok {
			if enum := enumValues(kn); enum != nil {
				s.propertyNames = &jsonSchema{enum: enum, maxItems: -1}
			}
		}
	case *types.Struct:
		if err := sd.object(s, u, path); err != nil {
			return nil, err
		}
	case *types.Pointer:
		return sd.schema(u.Elem(), path) // a named pointer type
	case *types.Interface:
		if !u.Empty() {
			return nil, sd.fail(path, "%s is an interface with methods, into which encoding/json cannot decode; use a concrete type, or any", typeString(t))
		}
	case *types.Chan:
		return nil, sd.fail(path, "a channel has no JSON form; remove the field from the input type or tag it json:\"-\"")
	case *types.Signature:
		return nil, sd.fail(path, "a function has no JSON form; remove the field from the input type or tag it json:\"-\"")
	default:
		return nil, sd.fail(path, "%s has no JSON form a tool input can take", typeString(t))
	}
	return s, nil
}

// wellKnown is the schema of a standard library type whose JSON form is
// not its Go structure.
func wellKnown(n *types.Named) (*jsonSchema, bool) {
	obj := n.Obj()
	if obj.Pkg() == nil {
		return nil, false
	}
	switch obj.Pkg().Path() + "." + obj.Name() {
	case "time.Time":
		return &jsonSchema{typ: "string", format: "date-time", maxItems: -1}, true
	case "time.Duration":
		return &jsonSchema{typ: "integer", description: "a duration in nanoseconds", minimum: intBounds[types.Int64][0], maximum: intBounds[types.Int64][1], maxItems: -1}, true
	case "encoding/json.RawMessage":
		return &jsonSchema{maxItems: -1}, true
	case "encoding/json.Number":
		return &jsonSchema{typ: "number", maxItems: -1}, true
	}
	return nil, false
}

// unmarshaler returns the signature of t's method name (UnmarshalJSON or
// UnmarshalText: func([]byte) error), declared or promoted, on t or *t,
// as messages write it ("promoted from time.Time" when it comes from an
// embedded field); "" when t has none.
func unmarshaler(t types.Type, name string) string {
	recv := t
	if _, isPtr := t.Underlying().(*types.Pointer); !isPtr {
		if _, isIface := t.Underlying().(*types.Interface); !isIface {
			recv = types.NewPointer(t)
		}
	}
	obj, index, _ := types.LookupFieldOrMethod(recv, true, nil, name)
	fn, ok := obj.(*types.Func)
	if !ok {
		return ""
	}
	sig := fn.Signature()
	if sig.Params().Len() != 1 || sig.Results().Len() != 1 || !types.Identical(sig.Results().At(0).Type(), errorType) {
		return ""
	}
	if sl, ok := sig.Params().At(0).Type().Underlying().(*types.Slice); !ok || !isByte(sl.Elem()) {
		return ""
	}
	if len(index) > 1 {
		if r := sig.Recv(); r != nil {
			return "promoted from " + typeString(deref(r.Type()))
		}
	}
	return "declared by " + typeString(t)
}

func isByte(t types.Type) bool {
	b, ok := types.Unalias(t).Underlying().(*types.Basic)
	return ok && b.Kind() == types.Uint8
}

// intBounds are the bounds of sized integer kinds, as JSON numbers.
var intBounds = map[types.BasicKind][2]string{
	types.Int8: {"-128", "127"}, types.Int16: {"-32768", "32767"},
	types.Int32: {"-2147483648", "2147483647"}, types.Int64: {"-9223372036854775808", "9223372036854775807"},
	types.Uint8: {"0", "255"}, types.Uint16: {"0", "65535"}, types.Uint32: {"0", "4294967295"},
	types.Uint64: {"0", "18446744073709551615"},
}

// basicSchema fills s for a basic type.
func basicSchema(s *jsonSchema, b *types.Basic) error {
	info := b.Info()
	switch {
	case info&types.IsBoolean != 0:
		s.typ = "boolean"
	case info&types.IsString != 0:
		s.typ = "string"
	case info&types.IsInteger != 0:
		s.typ = "integer"
		if bounds, ok := intBounds[b.Kind()]; ok {
			s.minimum, s.maximum = bounds[0], bounds[1]
		} else if info&types.IsUnsigned != 0 {
			s.minimum = "0" // uint, uintptr: the upper bound depends on the platform
		}
	case info&types.IsFloat != 0:
		s.typ = "number"
	case info&types.IsComplex != 0:
		return fmt.Errorf("%s has no JSON form (encoding/json cannot decode complex numbers); use two float64 fields", b.Name())
	default:
		return fmt.Errorf("%s has no JSON form a tool input can take", b.Name())
	}
	return nil
}

// enumValues returns the values of the exported constants of type n
// declared in n's package, as JSON literals in declaration order (order
// of file name, then position), duplicates dropped; nil when there are
// none or n's kind cannot be listed (floats).
func enumValues(n *types.Named) []string {
	obj := n.Obj()
	if obj.Pkg() == nil {
		return nil
	}
	scope := obj.Pkg().Scope()
	var consts []*types.Const
	for _, name := range scope.Names() {
		c, ok := scope.Lookup(name).(*types.Const)
		if ok && c.Exported() && types.Identical(c.Type(), n) {
			consts = append(consts, c)
		}
	}
	slices.SortStableFunc(consts, func(a, b *types.Const) int { return int(a.Pos() - b.Pos()) })
	var out []string
	for _, c := range consts {
		var lit string
		switch v := c.Val(); v.Kind() {
		case constant.String:
			b, _ := marshalNoEscape(constant.StringVal(v))
			lit = string(b)
		case constant.Int:
			lit = v.ExactString()
		case constant.Bool:
			lit = strconv.FormatBool(constant.BoolVal(v))
		default:
			return nil
		}
		if !slices.Contains(out, lit) {
			out = append(out, lit)
		}
	}
	return out
}

// jsonField is one property of a struct as encoding/json decodes it.
type jsonField struct {
	name       string
	tagged     bool
	index      []int
	field      *types.Var
	omit       bool // omitempty or omitzero
	viaPointer bool // promoted through an embedded pointer
	quoted     bool // the ,string option
	path       string
}

// object fills s with the properties of the struct st.
func (sd *schemaDeriver) object(s *jsonSchema, st *types.Struct, path string) error {
	fields, err := sd.jsonFields(st, path)
	if err != nil {
		return err
	}
	s.typ, s.closed = "object", true
	for _, f := range fields {
		if f.quoted {
			return sd.fail(f.path, "the json tag option ,string (a number or boolean written as a JSON string) is not supported in a tool's input; drop it")
		}
		ps, err := sd.schema(f.field.Type(), f.path)
		if err != nil {
			return err
		}
		if doc := sd.docs.of(f.field); doc != "" {
			ps.description = doc
		}
		s.properties = append(s.properties, schemaProperty{name: f.name, schema: ps})
		if _, ptr := types.Unalias(f.field.Type()).Underlying().(*types.Pointer); !ptr && !f.omit && !f.viaPointer {
			s.required = append(s.required, f.name)
		}
	}
	return nil
}

// jsonFields lists the fields encoding/json decodes into st, in field
// order, embedded structs flattened and conflicts resolved as its
// typeFields does: among fields of one name the shallowest wins, then the
// one with a json tag name; two left at the same depth hide each other.
func (sd *schemaDeriver) jsonFields(st *types.Struct, path string) ([]jsonField, error) {
	type level struct {
		st         *types.Struct
		typ        types.Type
		index      []int
		viaPointer bool
		path       string
	}
	var fields []jsonField
	var visited []types.Type
	next := []level{{st: st, path: path}}
	var count, nextCount map[*types.Struct]int
	for len(next) > 0 {
		current := next
		next = nil
		count, nextCount = nextCount, make(map[*types.Struct]int)
		for _, lv := range current {
			if lv.typ != nil {
				if slices.ContainsFunc(visited, func(v types.Type) bool { return types.Identical(v, lv.typ) }) {
					continue
				}
				visited = append(visited, lv.typ)
			}
			for i := range lv.st.NumFields() {
				sf := lv.st.Field(i)
				ft := types.Unalias(sf.Type())
				if sf.Embedded() {
					et := ft
					if p, ok := et.(*types.Pointer); ok {
						et = types.Unalias(p.Elem())
					}
					_, isStruct := et.Underlying().(*types.Struct)
					if !sf.Exported() && !isStruct {
						continue
					}
				} else if !sf.Exported() {
					continue
				}
				tag := reflect.StructTag(lv.st.Tag(i)).Get("json")
				if tag == "-" {
					continue
				}
				name, opts, _ := strings.Cut(tag, ",")
				if !validTagName(name) {
					name = ""
				}
				index := append(slices.Clone(lv.index), i)
				fpath := lv.path + "." + sf.Name()
				inner := ft
				ptr := false
				if p, ok := inner.(*types.Pointer); ok {
					inner, ptr = types.Unalias(p.Elem()), true
				}
				innerStruct, isStruct := inner.Underlying().(*types.Struct)
				if name != "" || !sf.Embedded() || !isStruct {
					f := jsonField{
						name: name, tagged: name != "", index: index, field: sf, viaPointer: lv.viaPointer, path: fpath,
						omit:   hasOption(opts, "omitempty") || hasOption(opts, "omitzero"),
						quoted: hasOption(opts, "string"),
					}
					if f.name == "" {
						f.name = sf.Name()
					}
					fields = append(fields, f)
					if count[lv.st] > 1 {
						fields = append(fields, f) // a second copy, so the name annihilates
					}
					continue
				}
				if ptr && !exported(typeName(inner)) {
					return nil, sd.fail(fpath, "an embedded pointer to the unexported struct type %s, which encoding/json cannot set (it fails to decode); embed the struct itself, or export its type", typeString(inner))
				}
				nextCount[innerStruct]++
				if nextCount[innerStruct] == 1 {
					next = append(next, level{st: innerStruct, typ: inner, index: index, viaPointer: lv.viaPointer || ptr, path: fpath})
				}
			}
		}
	}
	slices.SortStableFunc(fields, func(a, b jsonField) int {
		if c := strings.Compare(a.name, b.name); c != 0 {
			return c
		}
		if len(a.index) != len(b.index) {
			return len(a.index) - len(b.index)
		}
		if a.tagged != b.tagged {
			if a.tagged {
				return -1
			}
			return 1
		}
		return slices.Compare(a.index, b.index)
	})
	var out []jsonField
	for i := 0; i < len(fields); {
		j := i + 1
		for j < len(fields) && fields[j].name == fields[i].name {
			j++
		}
		group := fields[i:j]
		if len(group) == 1 || len(group[0].index) != len(group[1].index) || group[0].tagged != group[1].tagged {
			out = append(out, group[0])
		}
		i = j
	}
	slices.SortFunc(out, func(a, b jsonField) int { return slices.Compare(a.index, b.index) })
	return out, nil
}

// typeName is the name of a named type, "" for others.
func typeName(t types.Type) string {
	if n, ok := types.Unalias(t).(*types.Named); ok {
		return n.Obj().Name()
	}
	return ""
}

func hasOption(opts, want string) bool {
	for opts != "" {
		var o string
		o, opts, _ = strings.Cut(opts, ",")
		if o == want {
			return true
		}
	}
	return false
}

// validTagName is encoding/json's isValidTag: a non-empty name of
// letters, digits and the punctuation it allows.
func validTagName(s string) bool {
	if s == "" {
		return false
	}
	for _, c := range s {
		switch {
		case strings.ContainsRune("!#$%&()*+-./:;<=>?@[]^_{|}~ ", c):
		case !unicode.IsLetter(c) && !unicode.IsDigit(c):
			return false
		}
	}
	return true
}

// typeDoc is the doc comment of a named type, "" for others and for the
// standard library's types, whose docs are written for Go programmers (a
// page on time.Time), not for a model filling in a field.
func (sd *schemaDeriver) typeDoc(n *types.Named) string {
	if n == nil {
		return ""
	}
	obj := n.Origin().Obj()
	if obj.Pkg() == nil || standardPackage(obj.Pkg().Path()) {
		return ""
	}
	return sd.docs.of(obj)
}

// standardPackage reports whether path is a standard library package:
// its first element has no dot.
func standardPackage(path string) bool {
	first, _, _ := strings.Cut(path, "/")
	return !strings.Contains(first, ".")
}

// marshalNoEscape encodes v as JSON without HTML escaping.
func marshalNoEscape(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}

// JSON renders s as indented JSON (two spaces), keys in a fixed order.
// The text can be a Go raw string literal: a backquote (only ever inside
// a JSON string) is written as \u0060, and a byte order mark, which Go
// refuses inside a file, as \ufeff.
func (s *jsonSchema) JSON() []byte {
	var b bytes.Buffer
	s.write(&b, "")
	out := bytes.ReplaceAll(b.Bytes(), []byte("`"), []byte(`\u0060`))
	return bytes.ReplaceAll(out, []byte("\uFEFF"), []byte(`\ufeff`))
}

func jsonString(s string) string {
	b, _ := marshalNoEscape(s)
	return string(b)
}

func (s *jsonSchema) write(b *bytes.Buffer, indent string) {
	type member struct {
		key   string
		value func(indent string)
	}
	lit := func(v string) func(string) { return func(string) { b.WriteString(v) } }
	sub := func(x *jsonSchema) func(string) { return func(in string) { x.write(b, in) } }
	var ms []member
	if s.typ != "" {
		ms = append(ms, member{"type", lit(jsonString(s.typ))})
	}
	if s.description != "" {
		ms = append(ms, member{"description", lit(jsonString(s.description))})
	}
	if s.format != "" {
		ms = append(ms, member{"format", lit(jsonString(s.format))})
	}
	if s.contentEncoding != "" {
		ms = append(ms, member{"contentEncoding", lit(jsonString(s.contentEncoding))})
	}
	if s.enum != nil {
		ms = append(ms, member{"enum", lit("[" + strings.Join(s.enum, ", ") + "]")})
	}
	if s.minimum != "" {
		ms = append(ms, member{"minimum", lit(s.minimum)})
	}
	if s.maximum != "" {
		ms = append(ms, member{"maximum", lit(s.maximum)})
	}
	if s.maxItems >= 0 {
		ms = append(ms, member{"maxItems", lit(strconv.FormatInt(s.maxItems, 10))})
	}
	if s.items != nil {
		ms = append(ms, member{"items", sub(s.items)})
	}
	if s.propertyNames != nil {
		ms = append(ms, member{"propertyNames", sub(s.propertyNames)})
	}
	if s.values != nil {
		ms = append(ms, member{"additionalProperties", sub(s.values)})
	}
	if len(s.properties) > 0 {
		ms = append(ms, member{"properties", func(in string) {
			b.WriteString("{\n")
			for i, p := range s.properties {
				b.WriteString(in + "  " + jsonString(p.name) + ": ")
				p.schema.write(b, in+"  ")
				if i < len(s.properties)-1 {
					b.WriteString(",")
				}
				b.WriteString("\n")
			}
			b.WriteString(in + "}")
		}})
	}
	if len(s.required) > 0 {
		var names []string
		for _, r := range s.required {
			names = append(names, jsonString(r))
		}
		ms = append(ms, member{"required", lit("[" + strings.Join(names, ", ") + "]")})
	}
	if s.closed {
		ms = append(ms, member{"additionalProperties", lit("false")})
	}
	if len(ms) == 0 {
		b.WriteString("{}")
		return
	}
	b.WriteString("{\n")
	for i, m := range ms {
		b.WriteString(indent + "  " + jsonString(m.key) + ": ")
		m.value(indent + "  ")
		if i < len(ms)-1 {
			b.WriteString(",")
		}
		b.WriteString("\n")
	}
	b.WriteString(indent + "}")
}
