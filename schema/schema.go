package schema

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"fmt"

	"github.com/santhosh-tekuri/jsonschema/v5"
)

//go:embed persona.schema.json
var document []byte

// ID is the schema's $id, the URL it is compiled under.
const ID = "https://github.com/personagen/personagen/schema/persona.schema.json"

// JSON returns a copy of persona.schema.json exactly as embedded (UTF-8,
// two-space indented, trailing newline).
func JSON() []byte { return bytes.Clone(document) }

// Validator checks JSON values against the embedded schema. Create one with
// New and reuse it: it is immutable and safe for concurrent use.
type Validator struct {
	compiled *jsonschema.Schema
	doc      map[string]any
}

// New compiles the embedded schema. It returns an error (wrapping the
// jsonschema or encoding/json error) only if the embedded document is
// broken, which the package's tests rule out.
func New() (*Validator, error) {
	var doc map[string]any
	dec := json.NewDecoder(bytes.NewReader(document))
	dec.UseNumber()
	if err := dec.Decode(&doc); err != nil {
		return nil, fmt.Errorf("schema: decode persona.schema.json: %w", err)
	}
	c := jsonschema.NewCompiler()
	c.Draft = jsonschema.Draft2020
	if err := c.AddResource(ID, bytes.NewReader(document)); err != nil {
		return nil, fmt.Errorf("schema: add persona.schema.json: %w", err)
	}
	compiled, err := c.Compile(ID)
	if err != nil {
		return nil, fmt.Errorf("schema: compile persona.schema.json: %w", err)
	}
	return &Validator{compiled: compiled, doc: doc}, nil
}
