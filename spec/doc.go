// Package spec is the persona spec language v1: the typed, positioned model
// of a *.persona.yaml file, its loading from YAML nodes (gopkg.in/yaml.v3)
// with file:line:col positions kept for every value, and the checks that go
// beyond the JSON Schema (templates, cron schedules, timezones, duplicate
// names, chain order, cross-file name collisions).
//
// Data flows one way: YAML → spec (typed, positioned) → schema check → gen.
// The loader never decodes into structs before validation; it builds the
// JSON value for the schema from the nodes itself, so unquoted dates stay
// strings and .nan is rejected instead of becoming NaN.
package spec
