package gen

import (
	"fmt"
	"go/types"
	"math"
	"reflect"
	"strconv"
	"strings"
	"time"

	"github.com/agnivade/levenshtein"
	"github.com/dave/jennifer/jen"

	"github.com/personagen/personagen/spec"
)

// typeCode renders t as Go source, every named type qualified. It reports
// types a generated file cannot spell (unexported types of other packages,
// type parameters, anonymous structs, channels, functions) at pos.
func (g *fileGen) typeCode(t types.Type, pos spec.Pos) jen.Code {
	switch t := t.(type) {
	case *types.Basic:
		if t.Info()&types.IsUntyped != 0 || t.Kind() == types.UnsafePointer || t.Kind() == types.Invalid {
			break
		}
		return jen.Id(t.Name())
	case *types.Alias:
		return g.namedCode(t.Obj(), t.TypeArgs(), pos)
	case *types.Named:
		return g.namedCode(t.Obj(), t.TypeArgs(), pos)
	case *types.Pointer:
		return jen.Op("*").Add(g.typeCode(t.Elem(), pos))
	case *types.Slice:
		return jen.Index().Add(g.typeCode(t.Elem(), pos))
	case *types.Array:
		return jen.Index(jen.Lit(int(t.Len()))).Add(g.typeCode(t.Elem(), pos))
	case *types.Map:
		return jen.Map(g.typeCode(t.Key(), pos)).Add(g.typeCode(t.Elem(), pos))
	case *types.Interface:
		if t.Empty() {
			return jen.Any()
		}
	}
	g.errf(pos, "type %s cannot be written in generated code", typeString(t))
	return jen.Id("any")
}

func (g *fileGen) namedCode(obj *types.TypeName, args *types.TypeList, pos spec.Pos) jen.Code {
	if obj.Pkg() == nil {
		return jen.Id(obj.Name()) // error, comparable
	}
	if !obj.Exported() {
		g.errf(pos, "type %s is not exported and cannot be named in generated code", typeString(obj.Type()))
		return jen.Id("any")
	}
	code := g.qual(obj.Pkg().Path(), obj.Name())
	if args != nil && args.Len() > 0 {
		var ts []jen.Code
		for i := range args.Len() {
			ts = append(ts, g.typeCode(args.At(i), pos))
		}
		code = code.Types(ts...)
	}
	return code
}

// structFields renders the `with` entries as the keyed fields of a
// composite literal of st (the underlying struct of named), in spec order,
// each behind line directives at its key and at its value (atKV). what is
// the path shown in messages (with, with.limits).
func (g *fileGen) structFields(entries []spec.MapEntry, named types.Type, st *types.Struct, what string) []jen.Code {
	var items []jen.Code
	seen := make(map[string]spec.Pos)
	for _, e := range entries {
		fv, msg := findField(st, e.Key.Value)
		if fv == nil {
			g.errf(e.Key.Pos, "%s: %s%s", what, fmt.Sprintf(msg, typeString(named), e.Key.Value), suggest(e.Key.Value, fieldNames(st)))
			continue
		}
		if prev, dup := seen[fv.Name()]; dup {
			g.errf(e.Key.Pos, "%s: %s sets field %s again (first set at %s)", what, e.Key.Value, fv.Name(), prev)
			continue
		}
		seen[fv.Name()] = e.Key.Pos
		val := g.literal(e.Value, fv.Type(), what+"."+e.Key.Value)
		items = append(items, g.atKV(e.Key.Pos, e.Value.Pos, jen.Id(fv.Name()), val))
	}
	return items
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
		tag := reflect.StructTag(st.Tag(i))
		for _, k := range []string{"yaml", "json"} {
			name, _, _ := strings.Cut(tag.Get(k), ",")
			if name == key && f.Exported() {
				return f, ""
			}
		}
	}
	return nil, "%s has no field %s"
}

func fieldNames(st *types.Struct) []string {
	var names []string
	for i := range st.NumFields() {
		if f := st.Field(i); f.Exported() {
			names = append(names, f.Name())
			tag := reflect.StructTag(st.Tag(i))
			for _, k := range []string{"yaml", "json"} {
				if name, _, _ := strings.Cut(tag.Get(k), ","); name != "" && name != "-" {
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

// literal renders v as a Go expression assignable to t, or reports at
// v.Pos why it cannot be one.
func (g *fileGen) literal(v spec.Value, t types.Type, what string) jen.Code {
	bad := func() jen.Code {
		g.errf(v.Pos, "%s: %s is not a valid %s value", what, kindName(v), typeString(t))
		return jen.Nil()
	}
	if v.Kind == spec.ValueNull {
		switch t.Underlying().(type) {
		case *types.Pointer, *types.Slice, *types.Map, *types.Interface:
			return jen.Nil()
		}
		return bad()
	}
	if n, ok := types.Unalias(t).(*types.Named); ok && n.Obj().Pkg() != nil && n.Obj().Pkg().Path() == "time" && n.Obj().Name() == "Duration" {
		switch v.Kind {
		case spec.ValueInt, spec.ValueFloat:
			// A bare number would compile as nanoseconds, silently.
			g.errf(v.Pos, "%s: %s is not a duration; write a duration string such as \"90s\" or \"5m\" (a bare number would mean nanoseconds)", what, kindName(v))
			return jen.Nil()
		case spec.ValueString:
		default:
			return bad()
		}
		d, err := parseDuration(v.Str)
		if err != nil {
			g.errf(v.Pos, "%s: %v", what, err)
			return jen.Nil()
		}
		return durationCode(d)
	}
	switch u := t.Underlying().(type) {
	case *types.Basic:
		return g.basicLit(v, t, u, what)
	case *types.Interface:
		if !u.Empty() {
			g.errf(v.Pos, "%s: cannot write a value of interface type %s in a spec", what, typeString(t))
			return jen.Nil()
		}
		return anyLit(v)
	case *types.Pointer:
		elem := u.Elem()
		inner := g.literal(v, elem, what)
		if _, isBasic := elem.Underlying().(*types.Basic); isBasic {
			return jen.New(jen.Add(g.typeCode(elem, v.Pos)).Call(inner))
		}
		if _, isStruct := elem.Underlying().(*types.Struct); isStruct {
			return jen.Op("&").Add(inner)
		}
		return jen.New(inner)
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
				g.errf(v.Pos, "%s: %d values do not fit in %s", what, len(v.List), typeString(t))
				return jen.Nil()
			}
		}
		var items []jen.Code
		for i, e := range v.List {
			items = append(items, g.at(e.Pos, g.literal(e, elem, fmt.Sprintf("%s[%d]", what, i))))
		}
		return jen.Add(g.typeCode(t, v.Pos)).Add(multi("{", "}", items))
	case *types.Map:
		if v.Kind != spec.ValueMap {
			return bad()
		}
		if k, ok := u.Key().Underlying().(*types.Basic); !ok || k.Kind() != types.String {
			g.errf(v.Pos, "%s: map key type %s is not a string type", what, typeString(u.Key()))
			return jen.Nil()
		}
		var items []jen.Code
		for _, e := range v.Map {
			val := g.literal(e.Value, u.Elem(), what+"."+e.Key.Value)
			items = append(items, g.atKV(e.Key.Pos, e.Value.Pos, jen.Lit(e.Key.Value), val))
		}
		return jen.Add(g.typeCode(t, v.Pos)).Add(multi("{", "}", items))
	case *types.Struct:
		if v.Kind != spec.ValueMap {
			return bad()
		}
		if _, named := types.Unalias(t).(*types.Named); !named {
			g.errf(v.Pos, "%s: anonymous struct type %s cannot be written in generated code", what, typeString(t))
			return jen.Nil()
		}
		items := g.structFields(v.Map, t, u, what)
		return jen.Add(g.typeCode(t, v.Pos)).Add(multi("{", "}", items))
	}
	g.errf(v.Pos, "%s: values of type %s cannot be written in a spec", what, typeString(t))
	return jen.Nil()
}

func (g *fileGen) basicLit(v spec.Value, t types.Type, u *types.Basic, what string) jen.Code {
	info := u.Info()
	switch {
	case info&types.IsBoolean != 0 && v.Kind == spec.ValueBool:
		return jen.Lit(v.Bool)
	case info&types.IsString != 0 && v.Kind == spec.ValueString:
		return jen.Lit(v.Str)
	case info&types.IsInteger != 0 && v.Kind == spec.ValueInt:
		if !intFits(v.Int, u.Kind()) {
			g.errf(v.Pos, "%s: %d overflows %s", what, v.Int, typeString(t))
			return jen.Nil()
		}
		return jen.Op(strconv.FormatInt(v.Int, 10))
	case info&types.IsFloat != 0 && (v.Kind == spec.ValueInt || v.Kind == spec.ValueFloat):
		f := v.Float
		if v.Kind == spec.ValueInt {
			f = float64(v.Int)
		}
		if u.Kind() == types.Float32 && math.Abs(f) > math.MaxFloat32 {
			g.errf(v.Pos, "%s: %s overflows %s", what, v.Str, typeString(t))
			return jen.Nil()
		}
		return jen.Op(strconv.FormatFloat(f, 'g', -1, 64))
	}
	g.errf(v.Pos, "%s: %s is not a valid %s value", what, kindName(v), typeString(t))
	return jen.Nil()
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

// durationCode writes d readably: a multiple of its largest exact unit
// (4 * time.Hour, 90 * time.Second), or nanoseconds.
func durationCode(d time.Duration) jen.Code {
	units := []struct {
		name string
		d    time.Duration
	}{{"Hour", time.Hour}, {"Minute", time.Minute}, {"Second", time.Second}, {"Millisecond", time.Millisecond}, {"Microsecond", time.Microsecond}}
	for _, u := range units {
		if d != 0 && d%u.d == 0 {
			return jen.Lit(int(d/u.d)).Op("*").Qual("time", u.name)
		}
	}
	return jen.Qual("time", "Duration").Call(jen.Lit(int(d)))
}
