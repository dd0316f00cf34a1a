package main

import (
	"fmt"
	"path/filepath"

	"github.com/personagen/personagen/runtime/review"
	"github.com/personagen/personagen/spec"
)

// checkFixtures loads the review fixtures next to specs (review.FixtureDir/<persona>/*.yaml
// in each spec's directory) and returns their problems as diagnostics: the fixture's own
// (review.LoadFixture), a directory naming a persona no spec of that directory defines, a fire
// naming a responsibility the persona lacks, a stub naming a resolver its chains lack.
func checkFixtures(specs []*spec.Persona) []spec.Diagnostic {
	var out []spec.Diagnostic
	seen := map[string]bool{}
	for _, s := range specs {
		dir := filepath.Dir(s.File)
		if seen[dir] {
			continue
		}
		seen[dir] = true
		for _, path := range review.FindFixtures(dir) {
			f, problems := review.LoadFixture(path)
			for _, p := range problems {
				out = append(out, spec.Diagnostic{Pos: spec.Pos{File: p.File, Line: p.Line, Col: p.Col}, Message: p.Message})
			}
			if f == nil {
				continue
			}
			var p *spec.Persona
			for _, s := range specs {
				if s.Name.Value == f.Persona && filepath.Dir(s.File) == dir {
					p = s
				}
			}
			if p == nil {
				out = append(out, spec.Diagnostic{Pos: spec.Pos{File: path}, Message: fmt.Sprintf("fixture for unknown persona %q: its directory %s/%s names no persona of the specs in %s", f.Persona, review.FixtureDir, f.Persona, dir)})
				continue
			}
			if f.Fire != nil {
				found := false
				for _, r := range p.Responsibilities {
					found = found || r.Name.Value == f.Fire.Value
				}
				if !found {
					out = append(out, spec.Diagnostic{Pos: spec.Pos{File: path, Line: f.Fire.Line, Col: f.Fire.Col}, Message: fmt.Sprintf("persona %s has no responsibility %q", p.Name.Value, f.Fire.Value)})
				}
			}
			if _, err := stubsFor(p, f); err != nil {
				for _, st := range f.Stubs {
					if _, err := stubsFor(p, &review.Fixture{File: f.File, Stubs: []review.Stub{st}}); err != nil {
						v := st.LoadRecord
						if v == nil {
							v = st.Use
						}
						out = append(out, spec.Diagnostic{Pos: spec.Pos{File: path, Line: v.Line, Col: v.Col}, Message: fmt.Sprintf("persona %s has no resolver %s to stub", p.Name.Value, v.Value)})
					}
				}
			}
		}
	}
	return out
}
