//go:build unix

package spec

import (
	"fmt"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"
)

// adversarialSpecs builds spec files of about n bytes, each stressing one
// part of Load that a careless implementation makes quadratic.
var adversarialSpecs = map[string]func(n int) string{
	// Tens of thousands of template references on one line: positions of
	// every part are computed from the line's start.
	"template references on one line": func(n int) string {
		return "version: 1\nname: a\nmessage_resolvers: [{load_text: {text: \"" + strings.Repeat("{{ .Persona.Name }}", n/19) + "\"}}]\n"
	},
	// Many template fields, each in its own flow entry on one line.
	"template fields on one line": func(n int) string {
		return "version: 1\nname: a\nmessage_resolvers: [" + strings.Repeat("{load_text: {text: \"{{ .Persona.Name }}\"}}, ", n/44) + "]\n"
	},
	// A template error per reference, all on one line.
	"template errors on one line": func(n int) string {
		return "version: 1\nname: a\nmessage_resolvers: [{load_text: {text: \"" + strings.Repeat("{{ .Nope }}", n/11) + "\"}}]\n"
	},
	// One schema violation per key of one mapping.
	"unknown keys": func(n int) string {
		var b strings.Builder
		b.WriteString("version: 1\nname: a\n")
		for i := 0; b.Len() < n; i++ {
			fmt.Fprintf(&b, "k%d: 1\n", i)
		}
		return b.String()
	},
	// One key as long as the file, compared against the known keys.
	"one huge key": func(n int) string {
		return "version: 1\nname: a\n" + strings.Repeat("k", n) + ": 1\n"
	},
	// A huge template field name, compared against the known fields.
	"one huge template field": func(n int) string {
		return "version: 1\nname: a\nmessage_resolvers: [{load_text: {text: \"{{ ." + strings.Repeat("A", n-100) + " }}\"}}]\n"
	},
	// A huge timezone name, compared against the database's names.
	"one huge timezone": func(n int) string {
		return "version: 1\nname: a\nresponsibilities: [{name: d, schedule: \"@daily\", timezone: " + strings.Repeat("Europe/", (n-100)/7) + "}]\n"
	},
	// Many bad characters: each is reported with its line and column.
	"control characters": func(n int) string {
		return "version: 1\nname: a\ndescription: \"" + strings.Repeat("a\x01", n/2) + "\"\n"
	},
	// A syntax error after many lines: both YAML parsers read them all.
	"syntax error after many lines": func(n int) string {
		return "version: 1\nname: a\ntools:\n" + strings.Repeat("  - example.com/x.Y\n", (n-100)/21) + "bad: `x`\n"
	},
	// Flow nesting just under the bound at which goccy/go-yaml is asked
	// for a column, repeated, with the error at the end.
	"syntax error after deep flow nesting": func(n int) string {
		unit := "a: " + strings.Repeat("[", maxGoccyNesting-1) + strings.Repeat("]", maxGoccyNesting-1) + "\n"
		var b strings.Builder
		for i := 0; b.Len()+len(unit) < n-100; i++ {
			fmt.Fprintf(&b, "k%d", i)
			b.WriteString(unit[1:])
		}
		return b.String() + "bad: `x`\n"
	},
	// A syntax error at the end of a long line.
	"syntax error after a long line": func(n int) string {
		return "version: 1\nname: a\ndescription: " + strings.Repeat("x", n) + ": b\n"
	},
}

// TestLoadTimeIsLinearInSize pins Load's complexity on the adversarial
// specs without asserting a time: loading 4x the input must take less than
// 10x as long (linear gives 4x, quadratic 16x). Time is the process's CPU
// time (getrusage), not the clock, and each size is run several times and
// the fastest run kept, so other work on the machine does not decide the
// ratio. The inputs are 128 and 512 KiB: below about 128 KiB a long line
// takes a cheaper path in the YAML reader, so smaller pairs measure that
// step, not the growth. BenchmarkLoadAdversarial1MiB runs them at the 1 MiB
// limit.
func TestLoadTimeIsLinearInSize(t *testing.T) {
	if testing.Short() {
		t.Skip("times 512 KiB inputs")
	}
	const large = MaxFileSize / 2
	for name, build := range adversarialSpecs {
		t.Run(name, func(t *testing.T) {
			small, big := build(large/4), build(large)
			if len(big) > MaxFileSize {
				t.Fatalf("input is %d bytes, over the limit", len(big))
			}
			fastest := func(src string) time.Duration {
				best := time.Duration(1 << 62)
				for range 3 {
					runtime.GC()
					start := cpuTime(t)
					p, diags := Load("f", []byte(src))
					best = min(best, cpuTime(t)-start)
					if p == nil && len(diags) == 0 {
						t.Fatal("Load returned nothing")
					}
				}
				return best
			}
			ts, tb := fastest(small), fastest(big)
			ratio := float64(tb) / float64(max(ts, time.Microsecond))
			t.Logf("%d bytes: %v; %d bytes: %v; ratio %.1f", len(small), ts, len(big), tb, ratio)
			if ratio > 10 && tb > 5*time.Millisecond {
				t.Errorf("4x the input took %.1fx as long (%v → %v): Load is not linear here", ratio, ts, tb)
			}
		})
	}
}

// BenchmarkLoadAdversarial1MiB loads each adversarial spec at the 1 MiB
// limit (ns/op is the time validate takes on such a file).
func BenchmarkLoadAdversarial1MiB(b *testing.B) {
	for name, build := range adversarialSpecs {
		src := []byte(build(MaxFileSize - 64))
		b.Run(strings.ReplaceAll(name, " ", "-"), func(b *testing.B) {
			b.SetBytes(int64(len(src)))
			for b.Loop() {
				Load("f", src)
			}
		})
	}
}

// cpuTime returns the CPU time (user and system) the process has used.
func cpuTime(t *testing.T) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		t.Skipf("getrusage: %v", err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
