package spec

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// GoName derives the exported Go identifier for a persona (or any spec)
// name. It is the single derivation shared by the collision check and the
// generator, so the two can never disagree.
//
// Rules: the name is split into words at every rune that cannot appear in a
// Go identifier, and at underscores (support-agent, support_agent and
// "support agent" all give SupportAgent); each word's first rune is
// upper-cased and the rest kept; when the result does not start with an
// upper-case letter (a leading digit, a script without case such as 中文, or
// empty input) it is prefixed with "X". Because the result is always
// exported, it can never be a Go keyword or predeclared identifier (those
// are all lower case). The function is pure and deterministic.
func GoName(s string) string {
	var b strings.Builder
	b.Grow(len(s) + 1)
	upperNext := true
	for _, r := range s {
		if r == utf8.RuneError || r == '_' || !(unicode.IsLetter(r) || unicode.IsDigit(r)) {
			upperNext = true
			continue
		}
		if upperNext {
			r = unicode.ToUpper(r)
			upperNext = false
		}
		b.WriteRune(r)
	}
	out := b.String()
	first, _ := utf8.DecodeRuneInString(out)
	if out == "" || !unicode.IsUpper(first) {
		return "X" + out
	}
	return out
}

// GoFileName returns the base name of the Go file generated for the
// persona named name: the name with hyphens as underscores plus ".go"
// (support-agent → support_agent.go). When that name would be a test file
// or carry a GOOS/GOARCH build constraint (agent-test, bot-linux),
// "_persona" is inserted before ".go" (agent_test_persona.go), so two
// names can map to one file (bot-test and bot-test-persona);
// CheckCollisions reports that. It is the one mapping shared by validate
// and the generator.
func GoFileName(name string) string {
	base := strings.ReplaceAll(name, "-", "_")
	if base == "" {
		base = "persona"
	}
	if i := strings.LastIndexByte(base, '_'); i >= 0 && constraintSuffix[base[i+1:]] {
		base += "_persona"
	}
	return base + ".go"
}

// GoFileName returns GoFileName(p.Name.Value).
func (p *Persona) GoFileName() string { return GoFileName(p.Name.Value) }

// constraintSuffix holds the file-name elements the go command treats
// specially (_test, and every GOOS and GOARCH it knows).
var constraintSuffix = map[string]bool{
	"test": true,
	"aix":  true, "android": true, "darwin": true, "dragonfly": true, "freebsd": true, "hurd": true,
	"illumos": true, "ios": true, "js": true, "linux": true, "nacl": true, "netbsd": true,
	"openbsd": true, "plan9": true, "solaris": true, "wasip1": true, "windows": true, "zos": true,
	"386": true, "amd64": true, "amd64p32": true, "arm": true, "armbe": true, "arm64": true,
	"arm64be": true, "loong64": true, "mips": true, "mipsle": true, "mips64": true, "mips64le": true,
	"mips64p32": true, "mips64p32le": true, "ppc": true, "ppc64": true, "ppc64le": true,
	"riscv": true, "riscv64": true, "s390": true, "s390x": true, "sparc": true, "sparc64": true,
	"wasm": true,
}
