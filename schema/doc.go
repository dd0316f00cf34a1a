// Package schema holds the JSON Schema (2020-12) of persona specs,
// persona.schema.json, embedded, and validates a spec's JSON value against
// it. It is the single source of truth for what a spec may contain: editors
// read the same file (written by `personagen schema -o`), and the spec
// loader calls Validate before building any typed value. Start from New and
// Validator.Validate.
//
// Validation runs in two passes. An own walk over the value, driven by the
// schema's properties, items and types, reports unknown keys (one violation
// per key, with the closest known key suggested) and wrong types (at the
// value). santhosh-tekuri/jsonschema/v5 then checks everything else
// (required, enum, const, pattern, bounds, min/maxProperties); its errors
// for unknown keys and types are dropped because the walk reports them more
// precisely. Violations carry the instance path so the caller can map them
// back to YAML positions. The package knows nothing about YAML.
package schema
