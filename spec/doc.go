// Package spec is the persona spec language v1: the typed, positioned model
// of a *.persona.yaml file, its loading from YAML nodes (gopkg.in/yaml.v3)
// with file:line:col positions kept for every value, and the checks that go
// beyond the JSON Schema (templates, cron schedules, timezones, duplicate
// names, chain order, cross-file name collisions). Start from LoadPaths (every spec under
// the given paths, with every diagnostic) or Load (one file's bytes), which return Personas.
// The language itself is docs/spec.md in the repository.
//
// Data flows one way: YAML → spec (typed, positioned) → schema check → gen.
// The loader never decodes into structs before validation; it checks the
// text itself first (UTF-8, characters YAML allows), resolves every scalar
// by the YAML 1.2 core schema from the node's text, tag and style (not by
// yaml.v3's YAML 1.1-flavoured rules), and builds the JSON value for the
// schema from the nodes, so unquoted dates and 1_000 stay strings, 010 and
// .nan are rejected, and a value reused through an alias is placed at the
// alias. Its time is linear in the file's size.
//
// A diagnostic about a value names it by its path before the message
// (model.max_tokens: ..., message_resolvers[0].thread_history.limit: ...),
// whichever step found it: a type error of the schema check, a tag the
// value does not fit (!!bool yes), a spelling the core schema cannot read
// (010, .nan, an integer out of range), a tag that is not supported, or a
// mapping key that is not a string (named by its mapping's path).
package spec
