package spec

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
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

// ReadFile reads and loads the spec at path (see Load). A file that cannot
// be read gives one diagnostic at Pos{File: path}. (It is not named
// LoadFile because that is the load_file resolver's type.)
func ReadFile(path string) (*Persona, []Diagnostic) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, []Diagnostic{{Pos: Pos{File: path}, Message: fmt.Sprintf("cannot read spec: %v", errors.Unwrap(err))}}
	}
	return Load(path, data)
}

// Load parses and checks one spec; name is the path used in positions.
// The checks, all run and all reported: YAML syntax (yaml.v3 gives a line,
// not a column; those diagnostics have column 1); one document per file;
// duplicate keys, non-string keys, merge keys, unsupported tags, NaN and
// infinities, out-of-range integers; alias expansion past
// MaxAliasExpansion values and nesting past MaxDepth; the JSON Schema
// (unknown keys at the key with a suggestion, wrong types at the value,
// YAML 1.1 booleans); then the semantic checks (Go references, bare
// loaders without env, templates and their chain, cron schedules,
// timezones, duplicate responsibility and tool names, thread_summary before
// thread_history, one of each per chain). It returns the persona when there
// are no diagnostics, else nil and the diagnostics sorted by position. It
// never panics, whatever data holds.
func Load(name string, data []byte) (p *Persona, diags []Diagnostic) {
	if len(data) > MaxFileSize {
		return nil, []Diagnostic{{Pos: Pos{File: name, Line: 1, Col: 1}, Message: fmt.Sprintf("spec file is larger than %d bytes", MaxFileSize)}}
	}
	defer func() {
		if r := recover(); r != nil {
			p, diags = nil, []Diagnostic{{Pos: Pos{File: name, Line: 1, Col: 1}, Message: fmt.Sprintf("YAML parser failed: %v", r)}}
		}
	}()
	root, diags := parseYAML(name, data)
	if root == nil {
		return nil, diags
	}
	tb := &treeBuilder{file: name, budget: MaxAliasExpansion}
	tree := tb.build(root, 0)
	diags = append(diags, tb.diags...)

	v, err := validator()
	if err != nil {
		return nil, append(diags, Diagnostic{Pos: Pos{File: name}, Message: err.Error()})
	}
	// A value the YAML layer rejected (NaN, a custom tag) became null; the
	// schema's complaint about that null at the same place would repeat it.
	yamlAt := make(map[Pos]bool)
	for _, d := range diags {
		yamlAt[d.Pos] = true
	}
	schemaAt := make(map[Pos]bool)
	for _, vi := range v.Validate(toJSON(tree)) {
		d := schemaDiagnostic(tree, vi)
		if yamlAt[d.Pos] {
			continue
		}
		schemaAt[d.Pos] = true
		diags = append(diags, d)
	}
	pb := &personaBuilder{file: name, lines: splitLines(data), skip: schemaAt}
	persona := pb.persona(tree)
	diags = append(diags, pb.diags...)
	if len(diags) > 0 {
		return nil, SortDiagnostics(diags)
	}
	return persona, nil
}

var yamlLine = regexp.MustCompile(`^yaml: line (\d+): (.*)$`)

// parseYAML decodes exactly one YAML document into a node tree.
func parseYAML(name string, data []byte) (*yaml.Node, []Diagnostic) {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, []Diagnostic{{Pos: Pos{File: name, Line: 1, Col: 1}, Message: "spec is empty"}}
		}
		return nil, []Diagnostic{yamlError(name, data, err)}
	}
	var second yaml.Node
	switch err := dec.Decode(&second); {
	case errors.Is(err, io.EOF):
	case err != nil:
		return nil, []Diagnostic{yamlError(name, data, err)}
	default:
		return nil, []Diagnostic{{Pos: Pos{File: name, Line: second.Line, Col: second.Column}, Message: "a spec file holds one YAML document; remove the second one (---)"}}
	}
	return &doc, nil
}

// yamlParserProblems are the messages of yaml.v3's parser (as opposed to
// its scanner). For them yaml.v3 reports the 0-based line of the enclosing
// construct (yaml.v3 decode.go, parser.fail), which we shift to 1-based;
// scanner errors already carry a 1-based line.
var yamlParserProblems = map[string]bool{
	"did not find expected ',' or ']'":       true,
	"did not find expected ',' or '}'":       true,
	"did not find expected '-' indicator":    true,
	"did not find expected <document start>": true,
	"did not find expected <stream-start>":   true,
	"did not find expected key":              true,
	"did not find expected node content":     true,
	"found duplicate %TAG directive":         true,
	"found duplicate %YAML directive":        true,
	"found incompatible YAML document":       true,
	"found undefined tag handle":             true,
}

// yamlError turns a yaml.v3 syntax error into a diagnostic. yaml.v3 gives
// a line (sometimes that of the enclosing collection) and no column; the
// column is reported as 1. A line that starts with a tab gets a hint, since
// yaml.v3's own message ("found character that cannot start any token")
// does not say what is wrong.
func yamlError(name string, data []byte, err error) Diagnostic {
	msg := strings.TrimPrefix(err.Error(), "yaml: ")
	line := 1
	if m := yamlLine.FindStringSubmatch(err.Error()); m != nil {
		line, _ = strconv.Atoi(m[1])
		msg = m[2]
		if yamlParserProblems[msg] {
			line++
		}
	}
	if lines := bytes.Split(data, []byte("\n")); line <= len(lines) && bytes.HasPrefix(lines[line-1], []byte("\t")) {
		msg += "; YAML indents with spaces, not tabs"
	}
	return Diagnostic{Pos: Pos{File: name, Line: line, Col: 1}, Message: "invalid YAML: " + msg}
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
			for i, k := range n.keys {
				if k.str == tok {
					key, n = k, n.vals[i]
					break
				}
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
	case schema.WrongType:
		msg = wrongTypeMessage(n, vi)
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

func wrongTypeMessage(n *tnode, vi schema.Violation) string {
	wantsBool := slices.Contains(vi.Expected, "boolean")
	wantsString := slices.Contains(vi.Expected, "string")
	switch {
	case wantsBool && n.kind == ValueString && n.plain && yaml11Bools[n.str]:
		return fmt.Sprintf("%s is a YAML 1.1 boolean, read as a string; use true or false", n.str)
	case wantsString && n.kind == ValueNull:
		return vi.Message + "; write a value, or remove the key"
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

func splitLines(data []byte) [][]rune {
	var out [][]rune
	for _, l := range strings.Split(string(data), "\n") {
		out = append(out, []rune(strings.TrimSuffix(l, "\r")))
	}
	return out
}
