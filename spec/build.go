package spec

import (
	"fmt"
	"math"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/robfig/cron/v3"

	"github.com/personagen/personagen/internal/zone"
)

// personaBuilder turns a tree into the typed model, tolerating values of
// the wrong shape (the schema reports them) and running the semantic
// checks on everything that has the right shape.
type personaBuilder struct {
	file  string
	src   *source
	skip  map[Pos]bool // positions the schema already reported
	diags []Diagnostic
	env   bool
}

func (b *personaBuilder) errorf(pos Pos, format string, args ...any) {
	if b.skip[pos] {
		return
	}
	b.diags = append(b.diags, Diagnostic{Pos: pos, Message: fmt.Sprintf(format, args...)})
}

func str(n *tnode) (String, bool) {
	if n == nil || n.kind != ValueString {
		return String{}, false
	}
	return String{Value: n.str, Pos: n.pos}, true
}

func integer(n *tnode) (Int, bool) {
	switch {
	case n == nil:
	case n.kind == ValueInt:
		return Int{Value: n.i, Pos: n.pos}, true
	case n.kind == ValueFloat && n.f == math.Trunc(n.f) && math.Abs(n.f) < 1<<53:
		return Int{Value: int64(n.f), Pos: n.pos}, true
	}
	return Int{}, false
}

func float(n *tnode) (Float, bool) {
	switch {
	case n == nil:
	case n.kind == ValueInt:
		return Float{Value: float64(n.i), Pos: n.pos}, true
	case n.kind == ValueFloat:
		return Float{Value: n.f, Pos: n.pos}, true
	}
	return Float{}, false
}

func boolean(n *tnode, def bool) Bool {
	if n != nil && n.kind == ValueBool {
		return Bool{Value: n.b, Pos: n.pos}
	}
	return Bool{Value: def}
}

func list(n *tnode) []*tnode {
	if n == nil || n.kind != ValueList {
		return nil
	}
	return n.items
}

func (b *personaBuilder) persona(t *tnode) *Persona {
	p := &Persona{File: b.file, Pos: t.pos}
	if t.kind != ValueMap {
		return p
	}
	p.Version, _ = integer(t.get("version"))
	p.Name, _ = str(t.get("name"))
	p.Description, _ = str(t.get("description"))
	if n := t.get("env"); n != nil {
		b.env = true
		p.Env = b.ref(n, true)
	}
	if n := t.get("model"); n != nil && n.kind == ValueMap {
		p.Model = b.model(n)
	}
	p.Tools = b.tools(list(t.get("tools")))
	p.MessageResolvers = b.chain(t.get("message_resolvers"), "message_resolvers", ScopeMessage)
	p.ResponsibilityResolvers = b.chain(t.get("responsibility_resolvers"), "responsibility_resolvers", ScopeResponsibility)
	seen := make(map[string]Pos)
	for _, n := range list(t.get("responsibilities")) {
		r, ok := b.responsibility(n)
		if !ok {
			continue
		}
		if first, dup := seen[r.Name.Value]; dup {
			b.errorf(r.Name.Pos, "duplicate responsibility name %q (first at line %d)", r.Name.Value, first.Line)
			continue
		}
		seen[r.Name.Value] = r.Name.Pos
		p.Responsibilities = append(p.Responsibilities, r)
	}
	if n := t.get("mailbox"); n != nil && n.kind == ValueMap {
		p.Mailbox = b.mailbox(n, p.Name)
	}
	b.checkToolChains(p, t.get("message_resolvers") != nil, t.get("responsibility_resolvers") != nil)
	if n := t.get("cache"); n != nil && n.kind == ValueMap {
		p.Cache = &Cache{Pos: n.pos}
		p.Cache.TTL, _ = str(n.get("ttl"))
	}
	return p
}

// tools builds the tools list: each entry a string (a package-level value)
// or a mapping naming a method of env or a package function. It refuses a
// value listed twice, a mapping with neither or both of method and func, a
// method without env, a derived name longer than 64 characters, and a tool
// name used twice (at the second use, naming the first).
func (b *personaBuilder) tools(entries []*tnode) []Tool {
	var out []Tool
	values := make(map[string]Pos)
	names := make(map[string]Pos)
	for _, n := range entries {
		switch n.kind {
		case ValueString:
			r := b.ref(n, true)
			if r == nil {
				continue
			}
			if first, dup := values[r.String()]; dup {
				b.errorf(r.Pos, "tool %s is listed twice (first at line %d)", r, first.Line)
				continue
			}
			values[r.String()] = r.Pos
			out = append(out, Tool{Pos: r.Pos, Value: r})
		case ValueMap:
			t, ok := b.tool(n)
			if !ok {
				continue
			}
			if t.Value != nil {
				if first, dup := values[t.Value.String()]; dup {
					b.errorf(t.Value.Pos, "tool %s is listed twice (first at line %d)", t.Value, first.Line)
					continue
				}
				values[t.Value.String()] = t.Value.Pos
				out = append(out, t)
				continue
			}
			at := t.Name.Pos
			if !at.IsValid() {
				at = t.Ref().Pos
			}
			if first, dup := names[t.Name.Value]; dup {
				b.errorf(at, "tool name %s is used twice (first at line %d:%d); give one of them another name with name:", t.Name.Value, first.Line, first.Col)
				continue
			}
			names[t.Name.Value] = at
			out = append(out, t)
		}
	}
	return out
}

// tool builds a mapping entry of tools.
func (b *personaBuilder) tool(n *tnode) (Tool, bool) {
	t := Tool{Pos: n.pos}
	method, fn := n.get("method"), n.get("func")
	if value := n.get("value"); value != nil {
		return b.valueTool(n, value, method, fn)
	}
	switch {
	case method == nil && fn == nil:
		b.errorf(n.pos, "a tools mapping names a method of env (method: Name), a package function (func: import/path.Func) or a value (value: import/path.Name); write one of them")
		return t, false
	case method != nil && fn != nil:
		b.errorf(fn.pos, "a tools mapping names a method or a function, not both; keep method: or func:")
		return t, false
	case method != nil:
		s, ok := str(method)
		if !ok {
			return t, false
		}
		r, err := CheckGoRef(s.Value)
		switch {
		case err != nil:
			b.errorf(s.Pos, "%s", withOddRunes(fmt.Sprintf("method %q is not a valid Go reference: %v (want an exported method name of env)", s.Value, err), s.Value))
			return t, false
		case r.IsQualified():
			b.errorf(s.Pos, "method %q names a method of env, so it takes the bare name; for a package function write func: %s", s.Value, s.Value)
			return t, false
		case !b.env:
			b.errorf(s.Pos, "method %s is a method of env, which this spec does not set; set env, or write func: import/path.%s", s.Value, s.Value)
			return t, false
		}
		r.Pos = s.Pos
		t.Method = &r
	default:
		t.Func = b.ref(fn, true)
		if t.Func == nil {
			return t, false
		}
	}
	ref := t.Ref()
	if s, ok := str(n.get("name")); ok {
		t.Name = s
	} else {
		t.Name = String{Value: ToolName(ref.Name)}
		if len(t.Name.Value) > 64 {
			b.errorf(ref.Pos, "the tool name derived from %s, %s, is longer than 64 characters (the model APIs' limit); give a shorter one with name:", ref.Name, t.Name.Value)
			return t, false
		}
	}
	t.Description, _ = str(n.get("description"))
	t.Idempotent = boolean(n.get("idempotent"), false)
	b.toolRule(n, &t)
	return t, true
}

// ref parses a Go reference; qualified requires the import path form.
func (b *personaBuilder) ref(n *tnode, qualified bool) *GoRef {
	s, ok := str(n)
	if !ok {
		return nil
	}
	r, err := CheckGoRef(s.Value)
	switch {
	case err != nil:
		b.errorf(s.Pos, "%s", withOddRunes(fmt.Sprintf("%q is not a valid Go reference: %v (want import/path.Name)", s.Value, err), s.Value))
		return nil
	case qualified && !r.IsQualified():
		b.errorf(s.Pos, "%q is not a valid Go reference here: it needs an import path (want import/path.%s)", s.Value, s.Value)
		return nil
	}
	r.Pos = s.Pos
	return &r
}

func (b *personaBuilder) model(t *tnode) *Model {
	m := &Model{Pos: t.pos}
	m.Name, _ = str(t.get("name"))
	m.Provider, _ = str(t.get("provider"))
	if v, ok := integer(t.get("max_tokens")); ok {
		m.MaxTokens = &v
	}
	if v, ok := float(t.get("temperature")); ok {
		m.Temperature = &v
	}
	if v, ok := float(t.get("top_p")); ok {
		m.TopP = &v
	}
	for _, n := range list(t.get("stop")) {
		if s, ok := str(n); ok {
			m.Stop = append(m.Stop, s)
		}
	}
	if n := t.get("extra"); n != nil && n.kind == ValueMap {
		m.Extra = toValue(n).Map
		if m.Extra == nil {
			m.Extra = []MapEntry{}
		}
	}
	b.checkProvider(t, m)
	return m
}

func (b *personaBuilder) role(t *tnode, kind ResolverKind) RoleValue {
	if s, ok := str(t.get("role")); ok {
		return RoleValue{Value: Role(s.Value), Pos: s.Pos}
	}
	return RoleValue{Value: DefaultRole(kind)}
}

func (b *personaBuilder) chain(t *tnode, name string, scope Scope) []Resolver {
	var out []Resolver
	var history, summary *Resolver
	for _, e := range list(t) {
		if e.kind != ValueMap || len(e.keys) != 1 {
			continue
		}
		body := e.vals[0]
		r := Resolver{Kind: ResolverKind(e.keys[0].str), Pos: e.keys[0].pos}
		if body.kind != ValueMap {
			continue
		}
		switch r.Kind {
		case KindLoadFile:
			tpl, ok := b.template(body.get("path"), scope, name, r.Kind)
			if !ok {
				continue
			}
			r.LoadFile = &LoadFile{Pos: body.pos, Path: tpl, Role: b.role(body, r.Kind)}
		case KindLoadText:
			tpl, ok := b.template(body.get("text"), scope, name, r.Kind)
			if !ok {
				continue
			}
			r.LoadText = &LoadText{Pos: body.pos, Text: tpl, Role: b.role(body, r.Kind)}
		case KindLoadRecord:
			lr, ok := b.loadRecord(body)
			if !ok {
				continue
			}
			r.LoadRecord = lr
		case KindLoadTranscript:
			tpl, ok := b.template(body.get("path"), scope, name, r.Kind)
			if !ok {
				continue
			}
			r.LoadTranscript = &LoadTranscript{Pos: body.pos, Path: tpl}
		case KindThreadHistory:
			if history != nil {
				b.errorf(r.Pos, "%s has a second thread_history (first at line %d)", name, history.Pos.Line)
				continue
			}
			r.ThreadHistory = threadHistory(body)
			if st := r.ThreadHistory.Step; st.Pos.IsValid() {
				switch lim := r.ThreadHistory.Limit; {
				case lim.State == LimitUnlimited:
					b.errorf(st.Pos, "step needs a limit: with limit null the whole thread is replayed and there is no window to advance; remove step or set a limit")
				case st.Value > int64(lim.Value):
					b.errorf(st.Pos, "step %d is larger than the limit %d: the window's start advances in steps of at most the window's size; use a step from 1 to %d", st.Value, lim.Value, lim.Value)
				}
			}
		case KindThreadSummary:
			if summary != nil {
				b.errorf(r.Pos, "%s has a second thread_summary (first at line %d)", name, summary.Pos.Line)
				continue
			}
			if history != nil {
				b.errorf(r.Pos, "thread_summary must come before thread_history (line %d): the summary stands for the messages before the replayed ones", history.Pos.Line)
			}
			r.ThreadSummary = &ThreadSummary{Pos: body.pos, Role: b.role(body, r.Kind)}
		case KindUse:
			res := b.ref(body.get("resolver"), true)
			if res == nil {
				continue
			}
			u := &Use{Pos: body.pos, Resolver: *res, Changes: changes(body)}
			if w := body.get("with"); w != nil && w.kind == ValueMap {
				v := toValue(w)
				u.With = &v
			}
			r.Use = u
		default:
			continue
		}
		out = append(out, r)
		switch r.Kind {
		case KindThreadHistory:
			history = &Resolver{Pos: r.Pos}
		case KindThreadSummary:
			summary = &Resolver{Pos: r.Pos}
		}
	}
	return out
}

func threadHistory(body *tnode) *ThreadHistory {
	h := &ThreadHistory{
		Pos:               body.pos,
		Limit:             Limit{State: LimitDefault, Value: DefaultHistoryLimit},
		IncludeToolCalls:  boolean(body.get("include_tool_calls"), true),
		ReplayResultLimit: Int{Value: DefaultReplayResultLimit},
	}
	if n := body.get("limit"); n != nil {
		if n.kind == ValueNull {
			h.Limit = Limit{State: LimitUnlimited, Pos: n.pos}
		} else if v, ok := integer(n); ok && v.Value >= 1 && v.Value <= math.MaxInt32 {
			h.Limit = Limit{State: LimitSet, Value: int(v.Value), Pos: v.Pos}
		}
	}
	if v, ok := integer(body.get("replay_result_limit")); ok {
		h.ReplayResultLimit = v
	}
	h.Step = Int{Value: 1}
	if v, ok := integer(body.get("step")); ok {
		h.Step = v
	}
	return h
}

// changes reads a load_record or use entry's changes key (the schema allows
// its three values only); PerMessage when absent.
func changes(body *tnode) ChangesValue {
	if s, ok := str(body.get("changes")); ok {
		return ChangesValue{Value: Changes(s.Value), Pos: s.Pos}
	}
	return ChangesValue{Value: PerMessage}
}

func (b *personaBuilder) loadRecord(body *tnode) (*LoadRecord, bool) {
	s, ok := str(body.get("loader"))
	if !ok {
		return nil, false
	}
	loader, err := CheckGoRef(s.Value)
	if err != nil {
		b.errorf(s.Pos, "%s", withOddRunes(fmt.Sprintf("%q is not a valid Go reference: %v (want Name or import/path.Func)", s.Value, err), s.Value))
		return nil, false
	}
	loader.Pos = s.Pos
	if !loader.IsQualified() && !b.env {
		b.errorf(s.Pos, "loader %s is a method name, which needs env; set env or write import/path.%s", s.Value, s.Value)
		return nil, false
	}
	lr := &LoadRecord{Pos: body.pos, Loader: loader, Role: b.role(body, KindLoadRecord), Changes: changes(body)}
	if sn := body.get("serialize"); sn != nil && sn.kind == ValueMap {
		ser := &Serializer{Pos: sn.pos}
		if m, ok := str(sn.get("method")); ok {
			if r, ok := ParseGoRef(m.Value); ok && !r.IsQualified() {
				r.Pos = m.Pos
				ser.Method = &r
			} else {
				b.errorf(m.Pos, "%s", withOddRunes(fmt.Sprintf("serialize.method %q must be an exported method name", m.Value), m.Value))
			}
		}
		if f := sn.get("func"); f != nil {
			ser.Func = b.ref(f, true)
		}
		if ser.Method == nil && ser.Func == nil {
			return lr, true
		}
		lr.Serialize = ser
	}
	return lr, true
}

// template parses a template field of a kind resolver and checks its
// fields against the chain, and a path (load_file, load_transcript) for
// whether it can ever be read.
func (b *personaBuilder) template(n *tnode, scope Scope, chain string, kind ResolverKind) (Template, bool) {
	s, ok := str(n)
	if !ok {
		return Template{}, false
	}
	start, cols := b.scalarStart(n)
	tpl, errs := ParseTemplate(s.Value, start, cols)
	tpl.Raw = s
	for _, e := range errs {
		b.errorf(e.Pos, "%s", e.Message)
	}
	for _, part := range tpl.Parts {
		if part.Field == nil {
			continue
		}
		f, _ := LookupTemplateField(part.Field)
		switch {
		case f.Scope == ScopeMessage && scope == ScopeResponsibility:
			b.errorf(part.Pos, "{{ %s }} has no value in %s: a scheduled run has no inbound message", f.Name(), chain)
		case f.Scope == ScopeResponsibility && scope == ScopeMessage:
			b.errorf(part.Pos, "{{ %s }} has no value in %s: a reply run has no responsibility", f.Name(), chain)
		}
	}
	if (kind == KindLoadFile || kind == KindLoadTranscript) && len(errs) == 0 {
		if msg := pathProblem(tpl); msg != "" {
			b.errorf(s.Pos, "%s: %s", kind, msg)
			return tpl, false
		}
	}
	return tpl, len(errs) == 0
}

// scalarStart returns where the scalar's text starts and how template
// parts in it are positioned: ColumnsExact when the source line at the
// node's position spells the value verbatim (plain, or quoted without
// escapes), so template errors can point inside the string.
func (b *personaBuilder) scalarStart(n *tnode) (Pos, Columns) {
	p := n.pos
	if strings.ContainsAny(n.str, "\n\r") {
		return p, ColumnsAtStart
	}
	if n.plain && b.src.spells(p.Line, p.Col, n.str) {
		return p, ColumnsExact
	}
	for _, q := range []string{`"`, `'`} {
		if b.src.spells(p.Line, p.Col, q) && b.src.spells(p.Line, p.Col+1, n.str) &&
			b.src.spells(p.Line, p.Col+1+utf8.RuneCountInString(n.str), q) {
			p.Col++
			return p, ColumnsExact
		}
	}
	return p, ColumnsAtStart
}

func (b *personaBuilder) responsibility(t *tnode) (Responsibility, bool) {
	if t.kind != ValueMap {
		return Responsibility{}, false
	}
	r := Responsibility{Pos: t.pos, Timezone: String{Value: "UTC"}}
	var ok bool
	if r.Name, ok = str(t.get("name")); !ok {
		return r, false
	}
	r.Schedule, _ = str(t.get("schedule"))
	if tz, ok := str(t.get("timezone")); ok {
		r.Timezone = tz
		if _, err := zone.Load(tz.Value); err != nil && tz.Value != "" {
			b.errorf(tz.Pos, "%s", withOddRunes(err.Error(), tz.Value))
		}
	}
	if s := r.Schedule.Value; s != "" {
		if msg := checkSchedule(s); msg != "" {
			b.errorf(r.Schedule.Pos, "%s", withOddRunes(msg, s))
		}
	}
	r.Enabled = boolean(t.get("enabled"), true)
	return r, true
}

// scheduleEpoch is the fixed instant from which checkSchedule asks a
// schedule for its next run, so the check never depends on the clock.
var scheduleEpoch = time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)

// checkSchedule returns why s is not a usable schedule, or "" when it is.
// Beyond robfig/cron/v3's ParseStandard it rejects a CRON_TZ= or TZ=
// prefix, leading spaces or any letter case included (the timezone key
// says where a schedule runs); an "@every" duration below one second
// (robfig silently runs those every second) or with a fraction of a
// second (robfig silently drops it: 1500ms would run every 1s); and an
// expression that never fires (day 31 of February or of a 30-day month):
// robfig accepts all of them.
func checkSchedule(s string) string {
	if upper := strings.ToUpper(strings.TrimSpace(s)); strings.HasPrefix(upper, "TZ=") || strings.HasPrefix(upper, "CRON_TZ=") {
		return fmt.Sprintf("schedule %q sets a timezone; use the timezone key instead", s)
	}
	sched, err := cron.ParseStandard(s)
	if err != nil {
		return fmt.Sprintf("schedule %q is not a valid 5-field cron expression (minute hour day-of-month month day-of-week): %v", s, err)
	}
	// robfig reads "@every " + a time.ParseDuration string, exactly so.
	if rest, ok := strings.CutPrefix(s, "@every "); ok {
		if d, err := time.ParseDuration(rest); err == nil {
			switch {
			case d < time.Second:
				return fmt.Sprintf("schedule %q: an @every interval must be at least 1s (got %v)", s, d)
			case d%time.Second != 0:
				return fmt.Sprintf("schedule %q: an @every interval must be whole seconds (got %v; robfig/cron would drop the %v and run every %v)", s, d, d%time.Second, d.Truncate(time.Second))
			}
		}
	}
	if sched.Next(scheduleEpoch).IsZero() {
		return fmt.Sprintf("schedule %q never fires: the months it names have no such day", s)
	}
	return ""
}
