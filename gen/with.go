package gen

import (
	"fmt"
	"go/types"
	"math"
	"reflect"
	"strconv"
	"strings"

	"github.com/agnivade/levenshtein"

	"github.com/personagen/personagen/spec"
)

// typeExpr resolves t into the spelling generated code uses, caused by
// the spec at pos, or reports (prefixed by what) why generated code cannot
// spell it: an unexported or function-local type, a type of a package the
// output package cannot import, a type parameter, an anonymous struct, a
// channel, a function. An alias is spelled by its own name when generated
// code can name it, else by what it stands for.
func (c *checker) typeExpr(t types.Type, pos spec.Pos, what string) (typeExpr, bool) {
	switch t := t.(type) {
	case *types.Basic:
		if t.Info()&types.IsUntyped != 0 || t.Kind() == types.UnsafePointer || t.Kind() == types.Invalid {
			break
		}
		return typeExpr{kind: typeBasic, name: t.Name(), pos: pos}, true
	case *types.Alias:
		if c.nameable(t.Obj()) == "" {
			return c.namedExpr(t.Obj(), t.TypeArgs(), pos, what)
		}
		return c.typeExpr(t.Rhs(), pos, what)
	case *types.Named:
		return c.namedExpr(t.Obj(), t.TypeArgs(), pos, what)
	case *types.Pointer:
		elem, ok := c.typeExpr(t.Elem(), pos, what)
		return typeExpr{kind: typePointer, elem: &elem, pos: pos}, ok
	case *types.Slice:
		elem, ok := c.typeExpr(t.Elem(), pos, what)
		return typeExpr{kind: typeSlice, elem: &elem, pos: pos}, ok
	case *types.Array:
		elem, ok := c.typeExpr(t.Elem(), pos, what)
		return typeExpr{kind: typeArray, elem: &elem, length: t.Len(), pos: pos}, ok
	case *types.Map:
		key, ok1 := c.typeExpr(t.Key(), pos, what)
		elem, ok2 := c.typeExpr(t.Elem(), pos, what)
		return typeExpr{kind: typeMap, key: &key, elem: &elem, pos: pos}, ok1 && ok2
	case *types.Interface:
		if t.Empty() {
			return typeExpr{kind: typeAny, pos: pos}, true
		}
	}
	c.errf(pos, "%stype %s cannot be written in generated code", what, typeString(t))
	return typeExpr{kind: typeAny, pos: pos}, false
}

// nameable says why generated code in the output package cannot name the
// declared type obj, or "" when it can.
func (c *checker) nameable(obj *types.TypeName) string {
	if obj.Pkg() == nil {
		return "" // error, comparable
	}
	if !obj.Exported() {
		return "is not exported"
	}
	if obj.Parent() != obj.Pkg().Scope() {
		return "is declared inside a function"
	}
	if msg := c.importable(obj.Pkg().Path()); msg != "" {
		return msg
	}
	return ""
}

func (c *checker) namedExpr(obj *types.TypeName, args *types.TypeList, pos spec.Pos, what string) (typeExpr, bool) {
	if obj.Pkg() == nil {
		return typeExpr{kind: typeBasic, name: obj.Name(), pos: pos}, true
	}
	if why := c.nameable(obj); why != "" {
		switch why {
		case "is not exported", "is declared inside a function":
			c.errf(pos, "%stype %s %s and cannot be named in generated code", what, typeString(obj.Type()), why)
		default:
			c.errf(pos, "%sgenerated code must name type %s, and cannot: %s", what, typeString(obj.Type()), why)
		}
		return typeExpr{kind: typeAny, pos: pos}, false
	}
	c.importPkg(obj.Pkg().Path())
	te := typeExpr{kind: typeNamed, path: obj.Pkg().Path(), name: obj.Name(), pos: pos}
	ok := true
	if args != nil {
		for i := range args.Len() {
			a, aok := c.typeExpr(args.At(i), pos, what)
			te.args = append(te.args, a)
			ok = ok && aok
		}
	}
	return te, ok
}

// structFields checks the `with` entries against the fields of st (the
// underlying struct of named), in spec order. what is the path shown in
// messages (with, with.limits).
func (c *checker) structFields(entries []spec.MapEntry, named types.Type, st *types.Struct, what string) []fieldPlan {
	var fields []fieldPlan
	seen := make(map[string]spec.Pos)
	for _, e := range entries {
		fv, msg := findField(st, e.Key.Value)
		if fv == nil {
			if embedded, ok := promotedField(named, st, e.Key.Value); ok && !exported(embedded) {
				c.errf(e.Key.Pos, "%s: %s is a field of the embedded %s, which is not exported: generated code cannot set it", what, e.Key.Value, embedded)
				continue
			} else if ok {
				c.errf(e.Key.Pos, "%s: %s is a field of the embedded %s; a composite literal cannot set a promoted field: write it under the embedded field (%s: {%s: …})", what, e.Key.Value, embedded, embedded, e.Key.Value)
				continue
			}
			c.errf(e.Key.Pos, "%s: %s%s", what, fmt.Sprintf(msg, typeString(named), e.Key.Value), suggest(e.Key.Value, fieldNames(st)))
			continue
		}
		if prev, dup := seen[fv.Name()]; dup {
			c.errf(e.Key.Pos, "%s: %s sets field %s again (first set at %s)", what, e.Key.Value, fv.Name(), prev)
			continue
		}
		seen[fv.Name()] = e.Key.Pos
		val := c.value(e.Value, fv.Type(), what+"."+e.Key.Value)
		fields = append(fields, fieldPlan{name: fv.Name(), goType: typeString(fv.Type()), keyPos: e.Key.Pos, value: val})
	}
	return fields
}

// tagName returns the name a struct tag gives the field under key (yaml
// or json), and false when the tag gives none or excludes the field
// ("-"; a field named "-" is tagged "-,", as encoding/json and yaml.v3
// read it).
func tagName(tag, key string) (string, bool) {
	v, ok := reflect.StructTag(tag).Lookup(key)
	if !ok || v == "-" {
		return "", false
	}
	name, _, _ := strings.Cut(v, ",")
	return name, name != ""
}

// findField finds the exported field of st a `with` key names: the field
// name itself, or its yaml or json tag name. msg is a format taking the
// struct type and the key when there is none.
func findField(st *types.Struct, key string) (*types.Var, string) {
	for i := range st.NumFields() {
		if f := st.Field(i); f.Name() == key {
			if !f.Exported() {
				return nil, "%s field %s is not exported"
			}
			return f, ""
		}
	}
	for i := range st.NumFields() {
		f := st.Field(i)
		for _, k := range []string{"yaml", "json"} {
			if name, ok := tagName(st.Tag(i), k); ok && name == key && f.Exported() {
				return f, ""
			}
		}
	}
	return nil, "%s has no field %s"
}

// promotedField reports whether key names a field promoted into named
// from an embedded field, and that embedded field's name.
func promotedField(named types.Type, st *types.Struct, key string) (string, bool) {
	if !exported(key) {
		return "", false
	}
	obj, index, _ := types.LookupFieldOrMethod(named, false, nil, key)
	if _, ok := obj.(*types.Var); !ok || len(index) < 2 {
		return "", false
	}
	return st.Field(index[0]).Name(), true
}

func fieldNames(st *types.Struct) []string {
	var names []string
	for i := range st.NumFields() {
		if f := st.Field(i); f.Exported() {
			names = append(names, f.Name())
			for _, k := range []string{"yaml", "json"} {
				if name, ok := tagName(st.Tag(i), k); ok {
					names = append(names, name)
				}
			}
		}
	}
	return names
}

// suggest returns `; did you mean "x"?` for the closest candidate within
// an edit distance of 2 (ties: the first), or "".
func suggest(name string, candidates []string) string {
	best, bestD := "", 3
	for _, c := range candidates {
		if d := levenshtein.ComputeDistance(strings.ToLower(name), strings.ToLower(c)); d < bestD {
			best, bestD = c, d
		}
	}
	if best == "" {
		return ""
	}
	return fmt.Sprintf("; did you mean %s?", best)
}

func kindName(v spec.Value) string {
	switch v.Kind {
	case spec.ValueNull:
		return "null"
	case spec.ValueBool:
		return "a boolean"
	case spec.ValueInt:
		return "an integer"
	case spec.ValueFloat:
		return "a number"
	case spec.ValueString:
		return "a string"
	case spec.ValueList:
		return "a list"
	}
	return "a mapping"
}

// isDuration reports whether t is time.Duration (or an alias of it).
func isDuration(t types.Type) bool {
	n, ok := types.Unalias(t).(*types.Named)
	return ok && n.Obj().Pkg() != nil && n.Obj().Pkg().Path() == "time" && n.Obj().Name() == "Duration"
}

// value checks v against the Go type t and returns it typed, or reports
// at v.Pos why it cannot be a value of t.
func (c *checker) value(v spec.Value, t types.Type, what string) valuePlan {
	bad := func() valuePlan {
		c.errf(v.Pos, "%s: %s is not a valid %s value", what, kindName(v), typeString(t))
		return valuePlan{kind: valueNil, pos: v.Pos}
	}
	failed := valuePlan{kind: valueNil, pos: v.Pos}
	if v.Kind == spec.ValueNull {
		switch t.Underlying().(type) {
		case *types.Pointer, *types.Slice, *types.Map, *types.Interface:
			return valuePlan{kind: valueNil, pos: v.Pos}
		}
		return bad()
	}
	if isDuration(t) {
		switch v.Kind {
		case spec.ValueInt, spec.ValueFloat:
			// A bare number would compile as nanoseconds, silently.
			c.errf(v.Pos, "%s: %s is not a duration; write a duration string such as \"90s\" or \"5m\" (a bare number would mean nanoseconds)", what, kindName(v))
			return failed
		case spec.ValueString:
		default:
			return bad()
		}
		d, err := parseDuration(v.Str)
		if err != nil {
			c.errf(v.Pos, "%s: %v", what, err)
			return failed
		}
		return valuePlan{kind: valueDuration, pos: v.Pos, dur: int64(d)}
	}
	switch u := t.Underlying().(type) {
	case *types.Basic:
		return c.basicValue(v, t, u, what)
	case *types.Interface:
		if !u.Empty() {
			c.errf(v.Pos, "%s: cannot write a value of interface type %s in a spec", what, typeString(t))
			return failed
		}
		return valuePlan{kind: valueAny, pos: v.Pos, spec: v}
	case *types.Pointer:
		if selfPointer(t) {
			c.errf(v.Pos, "%s: type %s is a pointer to itself, so null is its only value", what, typeString(t))
			return failed
		}
		elem := u.Elem()
		inner := c.value(v, elem, what)
		switch elem.Underlying().(type) {
		case *types.Basic, *types.Interface:
			// new(T(x)): the conversion gives the pointer its element
			// type (new("x") would be a *string for a *Tier or *any).
			te, ok := c.typeExpr(elem, v.Pos, what+": ")
			if !ok {
				return failed
			}
			return valuePlan{kind: valueNewConv, pos: v.Pos, typ: te, elems: []valuePlan{inner}}
		case *types.Struct:
			return valuePlan{kind: valueAddr, pos: v.Pos, elems: []valuePlan{inner}}
		}
		return valuePlan{kind: valueNew, pos: v.Pos, elems: []valuePlan{inner}}
	case *types.Slice, *types.Array:
		if v.Kind != spec.ValueList {
			return bad()
		}
		var elem types.Type
		if s, ok := u.(*types.Slice); ok {
			elem = s.Elem()
		} else {
			a := u.(*types.Array)
			elem = a.Elem()
			if int64(len(v.List)) > a.Len() {
				c.errf(v.Pos, "%s: %d values do not fit in %s", what, len(v.List), typeString(t))
				return failed
			}
		}
		te, ok := c.typeExpr(t, v.Pos, what+": ")
		if !ok {
			return failed
		}
		vp := valuePlan{kind: valueSlice, pos: v.Pos, typ: te}
		for i, e := range v.List {
			vp.elems = append(vp.elems, c.value(e, elem, fmt.Sprintf("%s[%d]", what, i)))
		}
		return vp
	case *types.Map:
		if v.Kind != spec.ValueMap {
			return bad()
		}
		if k, ok := u.Key().Underlying().(*types.Basic); !ok || k.Kind() != types.String {
			c.errf(v.Pos, "%s: map key type %s is not a string type", what, typeString(u.Key()))
			return failed
		}
		te, ok := c.typeExpr(t, v.Pos, what+": ")
		if !ok {
			return failed
		}
		vp := valuePlan{kind: valueMap, pos: v.Pos, typ: te}
		for _, e := range v.Map {
			vp.keys = append(vp.keys, e.Key)
			vp.elems = append(vp.elems, c.value(e.Value, u.Elem(), what+"."+e.Key.Value))
		}
		return vp
	case *types.Struct:
		if v.Kind != spec.ValueMap {
			return bad()
		}
		if _, named := types.Unalias(t).(*types.Named); !named {
			c.errf(v.Pos, "%s: anonymous struct type %s cannot be written in generated code", what, typeString(t))
			return failed
		}
		te, ok := c.typeExpr(t, v.Pos, what+": ")
		if !ok {
			return failed
		}
		return valuePlan{kind: valueStruct, pos: v.Pos, typ: te, fields: c.structFields(v.Map, t, u, what)}
	}
	c.errf(v.Pos, "%s: values of type %s cannot be written in a spec", what, typeString(t))
	return failed
}

// selfPointer reports whether following t's pointer elements leads back
// to a type already met (type Loop *Loop): no value but nil has it.
func selfPointer(t types.Type) bool {
	var seen []types.Type
	for {
		p, ok := t.Underlying().(*types.Pointer)
		if !ok {
			return false
		}
		for _, s := range seen {
			if types.Identical(s, t) {
				return true
			}
		}
		seen = append(seen, t)
		t = p.Elem()
	}
}

func (c *checker) basicValue(v spec.Value, t types.Type, u *types.Basic, what string) valuePlan {
	info := u.Info()
	switch {
	case info&types.IsBoolean != 0 && v.Kind == spec.ValueBool:
		return valuePlan{kind: valueBool, pos: v.Pos, boolean: v.Bool}
	case info&types.IsString != 0 && v.Kind == spec.ValueString:
		return valuePlan{kind: valueString, pos: v.Pos, str: v.Str}
	case info&types.IsInteger != 0 && v.Kind == spec.ValueInt:
		if !intFits(v.Int, u.Kind()) {
			c.errf(v.Pos, "%s: %d overflows %s", what, v.Int, typeString(t))
			return valuePlan{kind: valueNil, pos: v.Pos}
		}
		return valuePlan{kind: valueNumber, pos: v.Pos, lit: strconv.FormatInt(v.Int, 10)}
	case info&types.IsFloat != 0 && (v.Kind == spec.ValueInt || v.Kind == spec.ValueFloat):
		f := v.Float
		if v.Kind == spec.ValueInt {
			f = float64(v.Int)
		}
		if u.Kind() == types.Float32 && math.Abs(f) > math.MaxFloat32 {
			c.errf(v.Pos, "%s: %s overflows %s", what, v.Str, typeString(t))
			return valuePlan{kind: valueNil, pos: v.Pos}
		}
		return valuePlan{kind: valueNumber, pos: v.Pos, lit: strconv.FormatFloat(f, 'g', -1, 64)}
	}
	c.errf(v.Pos, "%s: %s is not a valid %s value", what, kindName(v), typeString(t))
	return valuePlan{kind: valueNil, pos: v.Pos}
}

func intFits(n int64, k types.BasicKind) bool {
	switch k {
	case types.Int8:
		return n >= math.MinInt8 && n <= math.MaxInt8
	case types.Int16:
		return n >= math.MinInt16 && n <= math.MaxInt16
	case types.Int32:
		return n >= math.MinInt32 && n <= math.MaxInt32
	case types.Int, types.Int64:
		return true
	case types.Uint8:
		return n >= 0 && n <= math.MaxUint8
	case types.Uint16:
		return n >= 0 && n <= math.MaxUint16
	case types.Uint32:
		return n >= 0 && n <= math.MaxUint32
	case types.Uint, types.Uint64, types.Uintptr:
		return n >= 0
	}
	return false
}
