package gen

import (
	"context"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/personagen/personagen/spec"
)

// TestDerivedSchemasMatchTheirGoTypes holds, for every method and function
// tool of the golden cases, that the schema derived at generate time and
// the Go input type agree as encoding/json sees them. A program built
// against the fixture host gives each input type a populated value (every
// field set, enum fields to a listed value) and checks with
// santhosh-tekuri/jsonschema/v5, compiled as tool.New compiles it: the
// schema compiles; it accepts the value's JSON encoding, which has exactly
// the schema's properties at every level and decodes strictly into the
// input type; it rejects the encoding with an unknown property added to
// any object; and without each top-level property it rejects the
// encoding exactly when that property is required.
func TestDerivedSchemasMatchTheirGoTypes(t *testing.T) {
	mod, _, cases := casesModule(t)
	t.Chdir(mod)
	var all []*spec.Persona
	for _, c := range cases {
		specs, _ := spec.LoadPaths([]string{c})
		all = append(all, specs...)
	}
	host, err := loadHost(context.Background(), mod, all)
	if err != nil {
		t.Fatal(err)
	}

	imports := map[string]string{}
	alias := func(path string) string {
		if a, ok := imports[path]; ok {
			return a
		}
		a := fmt.Sprintf("p%d", len(imports))
		imports[path] = a
		return a
	}
	var entries []string
	n := 0
	for _, c := range cases {
		specs, diags := spec.LoadPaths([]string{c})
		if len(diags) > 0 {
			continue
		}
		plan, err := checkSpecs(specs, host, Options{Package: "out", OutDir: filepath.Join(c, "out"), Root: c, LineBase: "."})
		if err != nil {
			continue
		}
		for _, fp := range plan.files {
			for _, tp := range fp.tools {
				d := tp.derived
				if d == nil {
					continue
				}
				var in string
				if d.method {
					env := fp.env.typ
					in = fmt.Sprintf("reflect.TypeOf((*%s.%s).%s).In(3)", alias(env.path), env.name, d.fn.name)
				} else {
					in = fmt.Sprintf("reflect.TypeOf(%s.%s).In(2)", alias(d.fn.path), d.fn.name)
				}
				entries = append(entries, fmt.Sprintf("\t{%s, %s, %s},", strconv.Quote(c+" "+d.name), in, strconv.Quote(string(d.schema))))
				n++
			}
		}
	}
	if n < 6 {
		t.Fatalf("only %d derived tools in the golden cases", n)
	}
	var imps []string
	for _, path := range slices.Sorted(maps.Keys(imports)) {
		imps = append(imps, fmt.Sprintf("\t%s %q", imports[path], path))
	}
	src := strings.Replace(schemaCheckProgram, "\t// IMPORTS\n", strings.Join(imps, "\n")+"\n", 1)
	src = strings.Replace(src, "\t// CASES\n", strings.Join(entries, "\n")+"\n", 1)
	writeFile(t, filepath.Join(mod, "schemacheck", "main.go"), []byte(src))
	out, err := goCmd(t, mod, "run", "./schemacheck")
	if err != nil {
		t.Fatalf("schema check failed:\n%s", out)
	}
	if got := strings.Count("\n"+out, "\nok "); got != n {
		t.Fatalf("%d of %d tools checked:\n%s", got, n, out)
	}
	t.Logf("%d derived schemas checked:\n%s", n, out)
}

// schemaCheckProgram is the program TestDerivedSchemasMatchTheirGoTypes
// runs; it prints "ok NAME" per tool, or the problems and exits 1.
const schemaCheckProgram = `package main

import (
	"bytes"
	"encoding"
	"encoding/json"
	"fmt"
	"os"
	"reflect"
	"sort"
	"strings"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v5"
	// IMPORTS
)

var cases = []struct {
	name   string
	in     reflect.Type
	schema string
}{
	// CASES
}

func main() {
	failed := false
	for _, c := range cases {
		if problems := check(c.in, c.schema); len(problems) > 0 {
			failed = true
			fmt.Printf("FAIL %s:\n  %s\n", c.name, strings.Join(problems, "\n  "))
			continue
		}
		fmt.Printf("ok %s\n", c.name)
	}
	if failed {
		os.Exit(1)
	}
}

func check(in reflect.Type, schemaText string) []string {
	var problems []string
	fail := func(format string, a ...any) { problems = append(problems, fmt.Sprintf(format, a...)) }
	c := jsonschema.NewCompiler()
	c.Draft = jsonschema.Draft2020
	c.AssertFormat = true
	if err := c.AddResource("mem:///s.json", strings.NewReader(schemaText)); err != nil {
		return []string{"add: " + err.Error()}
	}
	compiled, err := c.Compile("mem:///s.json")
	if err != nil {
		return []string{"compile: " + err.Error()}
	}
	var schema map[string]any
	if err := json.Unmarshal([]byte(schemaText), &schema); err != nil {
		return []string{"decode schema: " + err.Error()}
	}

	v := reflect.New(in).Elem()
	populate(v)
	raw, err := json.Marshal(v.Interface())
	if err != nil {
		return []string{"marshal: " + err.Error()}
	}
	doc := decode(raw)
	doc = fix(doc, schema)
	// The fixed document must decode strictly into the input type, and its
	// encoding is the value the schema must accept.
	again := reflect.New(in)
	dec := json.NewDecoder(bytes.NewReader(encode(doc)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(again.Interface()); err != nil {
		return []string{fmt.Sprintf("strict decode of %s: %v", encode(doc), err)}
	}
	raw, _ = json.Marshal(again.Elem().Interface())
	doc = decode(raw)
	if err := compiled.Validate(doc); err != nil {
		fail("the schema refuses the encoding of a populated value %s: %v", raw, err)
	}
	sameKeys(doc, schema, "", fail)
	for _, loc := range objects(doc, schema, nil) {
		d := decode(raw)
		obj := at(d, loc)
		obj["zz_unknown_property"] = 1
		if compiled.Validate(d) == nil {
			fail("the schema accepts an unknown property at /%s", strings.Join(loc, "/"))
		}
	}
	// Required as encoding/json sees it: the zero value's encoding leaves
	// out a property the schema must not require (omitempty, omitzero, a
	// field promoted through a nil embedded pointer) and holds a non-null
	// value for one it must require (null is a nil pointer, which is
	// optional, or a nil slice, map or interface, which is not).
	required := map[string]bool{}
	for _, r := range asList(schema["required"]) {
		required[r.(string)] = true
	}
	base := in
	if base.Kind() == reflect.Pointer {
		base = base.Elem()
	}
	zraw, _ := json.Marshal(reflect.New(base).Elem().Interface())
	zero, _ := decode(zraw).(map[string]any)
	props, _ := schema["properties"].(map[string]any)
	for key := range props {
		zv, present := zero[key]
		switch {
		case !present && required[key]:
			fail("property %q is required, but the zero value leaves it out", key)
		case present && zv != nil && !required[key]:
			fail("property %q is optional, but the zero value holds %v", key, zv)
		}
	}
	return problems
}

func decode(b []byte) any {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		panic(err)
	}
	return v
}

func encode(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}

func asList(v any) []any { l, _ := v.([]any); return l }

var textUnmarshaler = reflect.TypeFor[encoding.TextUnmarshaler]()

// populate sets every settable field of v to a non-zero value: strings
// "x", numbers 1, slices of two elements, maps of one, pointers
// allocated; a type that unmarshals itself from text keeps its zero
// value (its MarshalText round-trips).
func populate(v reflect.Value) {
	t := v.Type()
	switch {
	case t == reflect.TypeFor[time.Time]():
		v.Set(reflect.ValueOf(time.Date(2025, 3, 5, 9, 0, 0, 0, time.UTC)))
		return
	case t == reflect.TypeFor[json.RawMessage]():
		v.Set(reflect.ValueOf(json.RawMessage(` + "`" + `{"a":[1,"b"]}` + "`" + `)))
		return
	case t == reflect.TypeFor[json.Number]():
		v.SetString("1.5")
		return
	case reflect.PointerTo(t).Implements(textUnmarshaler):
		return
	}
	switch t.Kind() {
	case reflect.String:
		v.SetString("x")
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		v.SetInt(1)
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		v.SetUint(1)
	case reflect.Float32, reflect.Float64:
		v.SetFloat(1.5)
	case reflect.Slice:
		s := reflect.MakeSlice(t, 2, 2)
		for i := range 2 {
			populate(s.Index(i))
		}
		v.Set(s)
	case reflect.Array:
		for i := range v.Len() {
			populate(v.Index(i))
		}
	case reflect.Map:
		m := reflect.MakeMap(t)
		k := reflect.New(t.Key()).Elem()
		k.SetString("k")
		e := reflect.New(t.Elem()).Elem()
		populate(e)
		m.SetMapIndex(k, e)
		v.Set(m)
	case reflect.Pointer:
		p := reflect.New(t.Elem())
		populate(p.Elem())
		v.Set(p)
	case reflect.Struct:
		for i := range v.NumField() {
			if f := v.Field(i); f.CanSet() {
				populate(f)
			} else if t.Field(i).Anonymous && f.Kind() == reflect.Struct {
				populate(f) // an unexported embedded struct: its exported fields are settable
			}
		}
	case reflect.Interface:
		v.Set(reflect.ValueOf(map[string]any{"a": "b"}))
	}
}

// fix replaces every value whose schema has an enum by the enum's first
// value, and renames map keys to the first of propertyNames' enum.
func fix(doc any, schema map[string]any) any {
	if enum := asList(schema["enum"]); len(enum) > 0 {
		return enum[0]
	}
	switch x := doc.(type) {
	case map[string]any:
		props, _ := schema["properties"].(map[string]any)
		values, _ := schema["additionalProperties"].(map[string]any)
		names, _ := schema["propertyNames"].(map[string]any)
		out := map[string]any{}
		for k, v := range x {
			if enum := asList(names["enum"]); len(enum) > 0 {
				k = enum[0].(string)
			}
			if ps, ok := props[k].(map[string]any); ok {
				out[k] = fix(v, ps)
			} else if values != nil {
				out[k] = fix(v, values)
			} else {
				out[k] = v
			}
		}
		return out
	case []any:
		items, _ := schema["items"].(map[string]any)
		for i, e := range x {
			x[i] = fix(e, items)
		}
	}
	return doc
}

// sameKeys reports objects whose keys differ from their schema's
// properties (a populated value sets every field).
func sameKeys(doc any, schema map[string]any, path string, fail func(string, ...any)) {
	switch x := doc.(type) {
	case map[string]any:
		props, _ := schema["properties"].(map[string]any)
		values, _ := schema["additionalProperties"].(map[string]any)
		if props != nil || schema["additionalProperties"] == false {
			var got, want []string
			for k := range x {
				got = append(got, k)
			}
			for k := range props {
				want = append(want, k)
			}
			sort.Strings(got)
			sort.Strings(want)
			if strings.Join(got, ",") != strings.Join(want, ",") {
				fail("at %s/ the value has keys %v, the schema properties %v", path, got, want)
			}
		}
		for k, v := range x {
			if ps, ok := props[k].(map[string]any); ok {
				sameKeys(v, ps, path+"/"+k, fail)
			} else if values != nil {
				sameKeys(v, values, path+"/"+k, fail)
			}
		}
	case []any:
		items, _ := schema["items"].(map[string]any)
		for _, e := range x {
			sameKeys(e, items, path+"/[]", fail)
		}
	}
}

// objects lists the locations of the objects of doc that stand for
// structs (an object schema that is not a map's), which must be closed.
func objects(doc any, schema map[string]any, loc []string) [][]string {
	var out [][]string
	switch x := doc.(type) {
	case map[string]any:
		props, _ := schema["properties"].(map[string]any)
		values, _ := schema["additionalProperties"].(map[string]any)
		if schema["type"] == "object" && values == nil {
			out = append(out, append([]string(nil), loc...)) // a struct's object
		}
		for k, v := range x {
			s, ok := props[k].(map[string]any)
			if !ok {
				s = values
			}
			if s != nil {
				out = append(out, objects(v, s, append(loc, k))...)
			}
		}
	case []any:
		items, _ := schema["items"].(map[string]any)
		for i, e := range x {
			if items != nil {
				out = append(out, objects(e, items, append(loc, fmt.Sprint(i)))...)
			}
		}
	}
	return out
}

// at returns the object at loc in doc.
func at(doc any, loc []string) map[string]any {
	for _, k := range loc {
		switch x := doc.(type) {
		case map[string]any:
			doc = x[k]
		case []any:
			var i int
			fmt.Sscan(k, &i)
			doc = x[i]
		}
	}
	return doc.(map[string]any)
}
`
