// Package examples holds the example persona specs (*.persona.yaml), their prompt files, the
// example support thread as email, and the programs that run them. Start from the specs, the
// constructors generated from them (package generated) and the demo (examples/cmd/demo).
// Prompts embeds the prompt files so the generated personas can read them from any working
// directory (pass runtime.FSFiles(examples.Prompts) as runtime.Options.Files); Mail embeds the
// thread's .eml files.
package examples

import "embed"

// Prompts holds prompts/ and personas/, the files the example specs'
// load_file and load_transcript entries name, at the same relative paths.
//
//go:embed prompts personas
var Prompts embed.FS

// Mail holds mail/*.eml, the example support thread as the raw messages a mail server delivers
// (see mail/README.md), in the order they were sent: the demo ingests them with mail.Ingest.
//
//go:embed mail/*.eml
var Mail embed.FS
