package spec

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"maps"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"

	"gopkg.in/yaml.v3"

	"github.com/personagen/personagen/schema"
)

// MaxFileSize is the largest spec file accepted, in bytes.
const MaxFileSize = 1 << 20

// validator compiles the embedded schema once; it is immutable after that.
var validator = sync.OnceValues(schema.New)

// Load parses and checks one spec; name is the path used in positions.
// The checks, all run and all reported: the text (UTF-8 only, no control
// characters, no characters that YAML 1.1 and 1.2 read differently; see
// checkText); %YAML directives (only 1.2); YAML syntax (at yaml.v3's line,
// and a column where one can be found); one document per file; duplicate
// keys, non-string keys, merge keys, unsupported tags, scalars outside the
// YAML 1.2 core schema or ambiguous between 1.1 and 1.2 (010), NaN and
// infinities, out-of-range integers; alias expansion past
// MaxAliasExpansion values and nesting past MaxDepth; the JSON Schema
// (unknown keys at the key with a suggestion, wrong types at the value,
// YAML 1.1 booleans and numbers); then the semantic checks (Go references,
// bare loaders without env, templates and their chain, paths that leave
// the root, cron schedules, timezones, duplicate responsibility and tool
// names, thread_summary before thread_history, one of each per chain). A
// problem inside a value reused through an alias is reported at the alias
// and names the anchor. It returns the persona when there are no
// diagnostics, else nil and the diagnostics sorted by position. It never
// panics, whatever data holds, and its time is linear in len(data).
func Load(name string, data []byte) (p *Persona, diags []Diagnostic) {
	if len(data) > MaxFileSize {
		return nil, []Diagnostic{{Pos: Pos{File: name, Line: 1, Col: 1}, Message: fmt.Sprintf("spec file is larger than %d bytes (1 MiB)", MaxFileSize)}}
	}
	defer func() {
		if r := recover(); r != nil {
			p, diags = nil, []Diagnostic{{Pos: Pos{File: name, Line: 1, Col: 1}, Message: fmt.Sprintf("YAML parser failed: %v", r)}}
		}
	}()
	if diags := checkText(name, data); len(diags) > 0 {
		return nil, diags
	}
	data, diags = yamlDirectives(name, data)
	if len(diags) > 0 {
		return nil, diags
	}
	src := newSource(data)
	root, diags := parseYAML(name, src, data)
	if root == nil {
		return nil, diags
	}
	tb := &treeBuilder{
		file: name, src: src, budget: MaxAliasExpansion,
		aliases: make(map[Pos]aliasUse), built: make(map[*yaml.Node]bool), quiet: make(map[Pos]bool),
		open: make(map[*yaml.Node]bool),
	}
	tree := tb.build(root, 0)
	diags = append(diags, tb.diags...)
	if tree.kind == ValueNull && len(diags) == 0 {
		return nil, []Diagnostic{emptyDocument(name, src, root)}
	}

	v, err := validator()
	if err != nil {
		return nil, append(diags, Diagnostic{Pos: Pos{File: name}, Message: err.Error()})
	}
	// A value the YAML layer rejected (NaN, a custom tag) became null; the
	// schema's complaint about that null at the same place would repeat it.
	yamlAt := maps.Clone(tb.quiet)
	for _, d := range diags {
		yamlAt[d.Pos] = true
	}
	schemaAt := make(map[Pos]bool)
	var later []Diagnostic
	for _, vi := range v.Validate(toJSON(tree)) {
		d := schemaDiagnostic(tree, vi)
		if yamlAt[d.Pos] {
			continue
		}
		schemaAt[d.Pos] = true
		later = append(later, d)
	}
	pb := &personaBuilder{file: name, src: src, skip: schemaAt}
	persona := pb.persona(tree)
	later = append(later, pb.diags...)
	for i, d := range later {
		if a, ok := tb.aliases[d.Pos]; ok {
			later[i].Message += fmt.Sprintf(" (in the value of alias *%s, anchored at line %d:%d)", a.name, a.anchor.Line, a.anchor.Col)
		}
	}
	diags = append(diags, later...)
	if len(diags) > 0 {
		for i := range diags {
			diags[i].Message = printable(diags[i].Message)
		}
		return nil, SortDiagnostics(diags)
	}
	return persona, nil
}

// emptyDocument is the diagnostic for a document that holds no mapping:
// nothing at all, or a null.
func emptyDocument(name string, src *source, root *yaml.Node) Diagnostic {
	const want = "a spec is a mapping with at least version: 1 and name: NAME"
	n := root
	if len(n.Content) > 0 {
		n = n.Content[0]
	}
	if n.Kind == yaml.ScalarNode && n.Value == "" && n.Style == 0 {
		return Diagnostic{Pos: Pos{File: name, Line: 1, Col: 1}, Message: "spec is empty; " + want}
	}
	return Diagnostic{Pos: Pos{File: name, Line: n.Line, Col: n.Column}, Message: "the document is null; " + want}
}

// onlyMarkers reports whether src holds nothing but blank lines,
// comments, directives and document markers (--- and ...): a file yaml.v3
// may refuse with a parser message although it is simply empty.
func onlyMarkers(src *source) bool {
	for _, l := range src.lines {
		t := strings.TrimSpace(string(l))
		if t != "" && t != "---" && t != "..." && !strings.HasPrefix(t, "#") && !strings.HasPrefix(t, "%") {
			return false
		}
	}
	return true
}

var yamlLine = regexp.MustCompile(`^yaml: line (\d+): (.*)$`)

// parseYAML decodes exactly one YAML document into a node tree.
func parseYAML(name string, src *source, data []byte) (*yaml.Node, []Diagnostic) {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, []Diagnostic{{Pos: Pos{File: name, Line: 1, Col: 1}, Message: "spec is empty; a spec is a mapping with at least version: 1 and name: NAME"}}
		}
		if onlyMarkers(src) {
			return nil, []Diagnostic{{Pos: Pos{File: name, Line: 1, Col: 1}, Message: "spec is empty; a spec is a mapping with at least version: 1 and name: NAME"}}
		}
		return nil, []Diagnostic{yamlError(name, src, data, err)}
	}
	var second yaml.Node
	switch err := dec.Decode(&second); {
	case errors.Is(err, io.EOF):
	case err != nil:
		return nil, []Diagnostic{yamlError(name, src, data, err)}
	default:
		return nil, []Diagnostic{{Pos: Pos{File: name, Line: second.Line, Col: second.Column}, Message: "a spec file holds one YAML document; remove the second one (---)"}}
	}
	return &doc, nil
}

// SortDiagnostics sorts ds in place by file, line, column, then message,
// drops exact duplicates, and returns the result.
func SortDiagnostics(ds []Diagnostic) []Diagnostic {
	sort.SliceStable(ds, func(i, j int) bool {
		if ds[i].Pos != ds[j].Pos {
			return ds[i].Pos.Before(ds[j].Pos)
		}
		return ds[i].Message < ds[j].Message
	})
	return slices.Compact(ds)
}

// schemaDiagnostic places a schema violation: unknown keys at the key,
// everything else at the value (a missing key at the mapping lacking it).
func schemaDiagnostic(tree *tnode, vi schema.Violation) Diagnostic {
	n, key := tree, (*tnode)(nil)
	for _, tok := range vi.Path {
		switch n.kind {
		case ValueMap:
			if i := n.lookup(tok); i >= 0 {
				key, n = n.keys[i], n.vals[i]
			}
		case ValueList:
			if i, err := strconv.Atoi(tok); err == nil && i < len(n.items) {
				key, n = nil, n.items[i]
			}
		}
	}
	label := pathLabel(vi.Path)
	msg := vi.Message
	pos := n.pos
	switch vi.Kind {
	case schema.UnknownKey:
		if key != nil {
			pos = key.pos
		}
		label = pathLabel(vi.Path[:len(vi.Path)-1])
		k := vi.Path[len(vi.Path)-1]
		msg = strings.Replace(msg, strconv.Quote(k), quoteOdd(k), 1)
		if before, after, ok := strings.Cut(k, ":"); ok && key != nil && key.plain && before != "" && after != "" {
			msg += fmt.Sprintf(" (a colon needs a space after it to end a key: write %s: %s)", before, after)
		}
	case schema.WrongType:
		msg = wrongTypeMessage(n, vi)
	default:
		if n.kind == ValueString && strings.Contains(msg, "(got "+strconv.Quote(n.str)+")") {
			msg = withOddRunes(msg, n.str)
		}
	}
	if label != "" {
		msg = label + ": " + msg
	}
	return Diagnostic{Pos: pos, Message: msg}
}

// yaml11Bools are the YAML 1.1 spellings of booleans that YAML 1.2 (and
// yaml.v3) read as strings.
var yaml11Bools = map[string]bool{
	"y": true, "Y": true, "yes": true, "Yes": true, "YES": true,
	"n": true, "N": true, "no": true, "No": true, "NO": true,
	"on": true, "On": true, "ON": true, "off": true, "Off": true, "OFF": true,
}

// yaml11Number matches plain scalars that YAML 1.1 (and yaml.v3) read as
// numbers but the YAML 1.2 core schema reads as strings: digit separators
// (1_000), binary (0b101), upper-case or signed hex and octal (0X1F, -0x1).
var yaml11Number = regexp.MustCompile(`^[-+]?(?:0[bB][01_]+|0[xX][0-9a-fA-F_]+|0[oO][0-7_]+|[0-9][0-9_]*(?:\.[0-9_]*)?(?:[eE][-+]?[0-9]+)?)$`)

func wrongTypeMessage(n *tnode, vi schema.Violation) string {
	wantsBool := slices.Contains(vi.Expected, "boolean")
	wantsString := slices.Contains(vi.Expected, "string")
	wantsNumber := slices.Contains(vi.Expected, "number") || slices.Contains(vi.Expected, "integer")
	switch {
	case wantsBool && n.kind == ValueString && n.plain && yaml11Bools[n.str]:
		return fmt.Sprintf("%s is a YAML 1.1 boolean, read as a string; use true or false", n.str)
	case wantsNumber && n.kind == ValueString && n.plain && yaml11Number.MatchString(n.str):
		msg := fmt.Sprintf("%s is a YAML 1.1 number, read as a string by YAML 1.2", n.str)
		if i, err := strconv.ParseInt(strings.ReplaceAll(n.str, "_", ""), 0, 64); err == nil {
			msg += fmt.Sprintf("; write %d", i)
		} else if f, err := strconv.ParseFloat(strings.ReplaceAll(n.str, "_", ""), 64); err == nil {
			msg += fmt.Sprintf("; write %s", strconv.FormatFloat(f, 'g', -1, 64))
		}
		return msg
	case n.kind == ValueNull && slices.Contains(vi.Expected, "object"):
		return vi.Message // the schema says how to write the mapping
	case n.kind == ValueNull && vi.Optional:
		return vi.Message + "; write a value, or remove the key"
	case n.kind == ValueNull && len(vi.Path) > 0:
		return vi.Message + "; write a value (the key is required)"
	case wantsString && n.plain && (n.kind == ValueInt || n.kind == ValueFloat || n.kind == ValueBool):
		return vi.Message + "; quote the value to make it a string"
	}
	return vi.Message
}

// pathLabel renders an instance path as message_resolvers[2].load_file.path.
func pathLabel(path []string) string {
	var b strings.Builder
	for _, p := range path {
		if _, err := strconv.Atoi(p); err == nil {
			b.WriteString("[" + p + "]")
			continue
		}
		if b.Len() > 0 {
			b.WriteByte('.')
		}
		b.WriteString(p)
	}
	return b.String()
}
