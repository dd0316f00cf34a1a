package review

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/personagen/personagen/runtime/mail"
)

// FixtureDir is the directory, next to the specs, that holds the fixtures: a fixture of the
// persona named P is the file FixtureDir/P/<name>.yaml beside P's spec.
const FixtureDir = "fixtures"

// Fixture is one review fixture: a thread a persona answers (or a responsibility it fires),
// read from FixtureDir/<persona>/<name>.yaml. Paths inside are relative to the fixture file's
// directory. Exactly one of Mail, Transcript and Fire is set.
type Fixture struct {
	// File is the fixture's path as given to LoadFixture; Persona is its directory's name (the
	// persona it is for), Name its file name without ".yaml".
	File, Persona, Name string
	// Description says what the fixture is for (optional).
	Description string
	// Mail is the thread as .eml files, in the order they were received. Mail from the
	// persona's own address or alias is stored as its sent mail (an outbound turn).
	Mail []Value
	// Answer is the message answered: one of Mail; absent, the last message of Mail that is to be
	// answered (inbound, not automatic).
	Answer *Value
	// Transcript is a thread as a transcript file (runtime/transcript): its user turns are
	// inbound messages From (default "Customer <customer@example.com>"), its assistant turns the
	// persona's replies, its tool calls and results the rounds of the run that answered the
	// user turn before them, all under Subject (default "Fixture"); the last user turn is the
	// message answered.
	Transcript *Value
	From       string
	Subject    string
	// Fire is a responsibility of the persona, run as a scheduled run at At (default
	// 2025-01-06T08:00:00Z).
	Fire *Value
	At   time.Time
	// Env is the Go function that builds the persona's env for the review, as import/path.Func
	// of signature func(context.Context) (*Env, error); absent, the env is new(Env).
	Env *Value
	// Rounds are tool rounds recorded for messages of Mail, in order; a round answers Answers
	// (one of Mail) within run Run (default "fixture-run-<k>", k the round's message's index),
	// and rounds of one run take turn indexes 0, 1, ...
	Rounds []Round
	// Summary compacts the thread through one of Mail, with the summary's Text.
	Summary *Summary
	// Stubs replace resolvers that must not run in a review by fixed text.
	Stubs []Stub
}

// Value is a string from a fixture with its position.
type Value struct {
	Value     string
	Line, Col int
}

// Round is one recorded tool round of a fixture.
type Round struct {
	Answers Value
	Run     string
	Calls   []Call
}

// Call is one call of a Round: its ID, the tool's Name, the Input (a JSON object) and the
// Result text; Failed marks a result of a tool that failed.
type Call struct {
	ID, Name string
	Input    json.RawMessage
	Result   string
	Failed   bool
}

// Summary is a fixture's compaction: the thread through Through (one of Mail) is summarised as
// Text.
type Summary struct {
	Through Value
	Text    string
}

// Stub stands for one resolver of the persona's chains: the load_record entry of loader
// LoadRecord, or the use entry of resolver type Use (import/path.Type), contributes Text (one
// message of the entry's role; nothing when blank) instead of running.
type Stub struct {
	LoadRecord *Value
	Use        *Value
	Text       string
}

// Problem is a problem of a fixture, at File:Line:Col (Line 0: the whole file).
type Problem struct {
	File      string
	Line, Col int
	Message   string
}

// Error renders "file:line:col: message".
func (p Problem) Error() string {
	if p.Line == 0 {
		return p.File + ": " + p.Message
	}
	return fmt.Sprintf("%s:%d:%d: %s", p.File, p.Line, p.Col, p.Message)
}

// FindFixtures returns the fixture files of the specs in dir: dir/FixtureDir/*/*.yaml, sorted.
func FindFixtures(dir string) []string {
	out, _ := filepath.Glob(filepath.Join(dir, FixtureDir, "*", "*.yaml"))
	sort.Strings(out)
	return out
}

// LoadFixture reads and checks the fixture at path: the YAML (unknown keys are problems), one
// of mail, transcript and fire, every file it names readable (and every .eml parseable),
// answer, rounds and summary naming files of mail, calls with an id, a name, an input that is
// a JSON object. It returns the fixture, or nil with every problem found, in file order.
func LoadFixture(path string) (*Fixture, []Problem) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, []Problem{{File: path, Message: err.Error()}}
	}
	f := &Fixture{File: path, Persona: filepath.Base(filepath.Dir(path)), Name: strings.TrimSuffix(filepath.Base(path), filepath.Ext(path))}
	l := &loader{f: f}
	var doc yaml.Node
	if err := yaml.Unmarshal(raw, &doc); err != nil {
		return nil, []Problem{{File: path, Message: "not YAML: " + err.Error()}}
	}
	if len(doc.Content) == 0 || doc.Content[0].Kind != yaml.MappingNode {
		return nil, []Problem{{File: path, Line: 1, Col: 1, Message: "a fixture is a mapping: mail (or transcript, or fire), answer, env, rounds, summary, stubs"}}
	}
	l.top(doc.Content[0])
	if len(l.problems) > 0 {
		sort.SliceStable(l.problems, func(i, j int) bool {
			a, b := l.problems[i], l.problems[j]
			return a.Line < b.Line || a.Line == b.Line && a.Col < b.Col
		})
		return nil, l.problems
	}
	return f, nil
}

type loader struct {
	f        *Fixture
	problems []Problem
}

func (l *loader) errorf(n *yaml.Node, format string, args ...any) {
	p := Problem{File: l.f.File, Message: fmt.Sprintf(format, args...)}
	if n != nil {
		p.Line, p.Col = n.Line, n.Column
	}
	l.problems = append(l.problems, p)
}

// fields calls fn for each key of mapping n, refusing keys not in known.
func (l *loader) fields(n *yaml.Node, where string, known []string, fn func(key string, k, v *yaml.Node)) {
	if n.Kind != yaml.MappingNode {
		l.errorf(n, "%s must be a mapping", where)
		return
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		found := false
		for _, s := range known {
			found = found || s == k.Value
		}
		if !found {
			l.errorf(k, "unknown key %q in %s; expected one of: %s", k.Value, where, strings.Join(known, ", "))
			continue
		}
		fn(k.Value, k, v)
	}
}

func (l *loader) str(n *yaml.Node, key string) (Value, bool) {
	if n.Kind != yaml.ScalarNode || n.Tag == "!!null" {
		l.errorf(n, "%s must be a string", key)
		return Value{}, false
	}
	return Value{Value: n.Value, Line: n.Line, Col: n.Column}, true
}

func (l *loader) top(n *yaml.Node) {
	f := l.f
	var answer, through []*Value
	l.fields(n, "the fixture", []string{"description", "mail", "answer", "transcript", "from", "subject", "fire", "at", "env", "rounds", "summary", "stubs"}, func(key string, k, v *yaml.Node) {
		switch key {
		case "description":
			if s, ok := l.str(v, key); ok {
				f.Description = s.Value
			}
		case "mail":
			if v.Kind != yaml.SequenceNode || len(v.Content) == 0 {
				l.errorf(v, "mail must be a list of .eml files (relative to the fixture)")
				return
			}
			for _, e := range v.Content {
				if s, ok := l.str(e, "a mail entry"); ok {
					f.Mail = append(f.Mail, s)
					l.checkEML(s)
				}
			}
		case "answer", "transcript", "fire", "env":
			s, ok := l.str(v, key)
			if !ok {
				return
			}
			switch key {
			case "answer":
				f.Answer = &s
				answer = append(answer, f.Answer)
			case "transcript":
				f.Transcript = &s
				l.checkFile(s)
			case "fire":
				f.Fire = &s
			case "env":
				f.Env = &s
				if i := strings.LastIndexByte(s.Value, '.'); i <= 0 || !strings.Contains(s.Value[:i], "/") && !strings.Contains(s.Value[:i], ".") {
					l.errorf(v, "env %q must be a qualified Go function, import/path.Func, of signature func(context.Context) (*Env, error)", s.Value)
				}
			}
		case "from", "subject":
			if s, ok := l.str(v, key); ok {
				if key == "from" {
					f.From = s.Value
				} else {
					f.Subject = s.Value
				}
			}
		case "at":
			if s, ok := l.str(v, key); ok {
				t, err := time.Parse(time.RFC3339, s.Value)
				if err != nil {
					l.errorf(v, "at %q is not an RFC 3339 time (2025-03-07T08:00:00+01:00)", s.Value)
				}
				f.At = t
			}
		case "rounds":
			if v.Kind != yaml.SequenceNode {
				l.errorf(v, "rounds must be a list")
				return
			}
			for _, e := range v.Content {
				r := Round{}
				l.fields(e, "a round", []string{"answers", "run", "calls"}, func(key string, k, v *yaml.Node) {
					switch key {
					case "answers":
						if s, ok := l.str(v, key); ok {
							r.Answers = s
						}
					case "run":
						if s, ok := l.str(v, key); ok {
							r.Run = s.Value
						}
					case "calls":
						r.Calls = l.calls(v)
					}
				})
				if r.Answers.Value == "" {
					l.errorf(e, "a round needs answers: the mail file of the message its run answered")
				}
				if len(r.Calls) == 0 {
					l.errorf(e, "a round needs at least one call")
				}
				f.Rounds = append(f.Rounds, r)
			}
		case "summary":
			s := &Summary{}
			l.fields(v, "summary", []string{"through", "text"}, func(key string, k, v *yaml.Node) {
				if x, ok := l.str(v, key); ok {
					if key == "through" {
						s.Through = x
					} else {
						s.Text = x.Value
					}
				}
			})
			if s.Through.Value == "" || strings.TrimSpace(s.Text) == "" {
				l.errorf(v, "summary needs through (a mail file) and text")
			}
			f.Summary = s
		case "stubs":
			if v.Kind != yaml.SequenceNode {
				l.errorf(v, "stubs must be a list")
				return
			}
			for _, e := range v.Content {
				st := Stub{}
				l.fields(e, "a stub", []string{"load_record", "use", "text"}, func(key string, k, v *yaml.Node) {
					x, ok := l.str(v, key)
					if !ok {
						return
					}
					switch key {
					case "load_record":
						st.LoadRecord = &x
					case "use":
						st.Use = &x
					case "text":
						st.Text = x.Value
					}
				})
				if (st.LoadRecord == nil) == (st.Use == nil) {
					l.errorf(e, "a stub names exactly one of load_record (a loader) and use (a resolver type)")
				}
				f.Stubs = append(f.Stubs, st)
			}
		}
	})
	kinds := 0
	for _, set := range []bool{len(f.Mail) > 0, f.Transcript != nil, f.Fire != nil} {
		if set {
			kinds++
		}
	}
	if kinds != 1 {
		l.errorf(n, "a fixture has exactly one of mail (.eml files), transcript (a .chat file) and fire (a responsibility)")
	}
	if f.Summary != nil {
		through = append(through, &f.Summary.Through)
	}
	for i := range f.Rounds {
		through = append(through, &f.Rounds[i].Answers)
	}
	for _, v := range append(answer, through...) {
		if v.Value == "" {
			continue
		}
		if !l.inMail(v.Value) {
			l.problems = append(l.problems, Problem{File: f.File, Line: v.Line, Col: v.Col,
				Message: fmt.Sprintf("%q is not one of the fixture's mail files; name it as the mail list does", v.Value)})
		}
	}
}

func (l *loader) inMail(s string) bool {
	for _, m := range l.f.Mail {
		if m.Value == s {
			return true
		}
	}
	return false
}

func (l *loader) calls(n *yaml.Node) []Call {
	if n.Kind != yaml.SequenceNode {
		l.errorf(n, "calls must be a list")
		return nil
	}
	var out []Call
	for _, e := range n.Content {
		c := Call{}
		l.fields(e, "a call", []string{"id", "name", "input", "result", "failed"}, func(key string, k, v *yaml.Node) {
			switch key {
			case "failed":
				c.Failed = v.Value == "true"
				if v.Tag != "!!bool" {
					l.errorf(v, "failed must be true or false")
				}
			case "input":
				c.Input = l.input(v)
			default:
				x, ok := l.str(v, key)
				if !ok {
					return
				}
				switch key {
				case "id":
					c.ID = x.Value
				case "name":
					c.Name = x.Value
				case "result":
					c.Result = x.Value
				}
			}
		})
		if c.ID == "" || c.Name == "" {
			l.errorf(e, "a call needs an id and a name")
		}
		if c.Input == nil {
			c.Input = json.RawMessage("{}")
		}
		out = append(out, c)
	}
	return out
}

// input reads a call's input: a JSON text, or a YAML mapping (encoded with sorted keys).
func (l *loader) input(v *yaml.Node) json.RawMessage {
	var raw []byte
	if v.Kind == yaml.ScalarNode {
		raw = []byte(v.Value)
	} else {
		var m map[string]any
		if err := v.Decode(&m); err != nil {
			l.errorf(v, "input: %v", err)
			return nil
		}
		raw, _ = json.Marshal(m)
	}
	var obj map[string]json.RawMessage
	if json.Unmarshal(raw, &obj) != nil || obj == nil {
		l.errorf(v, "input must be a JSON object (a JSON text or a mapping)")
		return nil
	}
	var b bytes.Buffer
	_ = json.Compact(&b, raw)
	return b.Bytes()
}

// Path resolves a path of the fixture against its directory.
func (f *Fixture) Path(rel string) string {
	if filepath.IsAbs(rel) {
		return rel
	}
	return filepath.Join(filepath.Dir(f.File), filepath.FromSlash(rel))
}

func (l *loader) checkFile(v Value) []byte {
	raw, err := os.ReadFile(l.f.Path(v.Value))
	if err != nil {
		l.problems = append(l.problems, Problem{File: l.f.File, Line: v.Line, Col: v.Col, Message: fmt.Sprintf("cannot read %s: %v", v.Value, err)})
		return nil
	}
	return raw
}

func (l *loader) checkEML(v Value) {
	raw := l.checkFile(v)
	if raw == nil {
		return
	}
	if _, err := mail.Parse(bytes.NewReader(raw), time.Time{}); err != nil {
		l.problems = append(l.problems, Problem{File: l.f.File, Line: v.Line, Col: v.Col, Message: fmt.Sprintf("%s is not a message: %v", v.Value, err)})
	}
}
