// Package examples holds the example persona specs, their prompt files and
// the programs that run them. Prompts embeds the prompt files so the
// generated personas can read them from any working directory (pass
// runtime.FSFiles(examples.Prompts) as runtime.Options.Files).
package examples

import "embed"

// Prompts holds prompts/ and personas/, the files the example specs'
// load_file and load_transcript entries name, at the same relative paths.
//
//go:embed prompts personas
var Prompts embed.FS
