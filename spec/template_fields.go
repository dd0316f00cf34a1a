package spec

// Scope says in which chain a template field has a value.
type Scope int

const (
	// ScopeBoth: the field is set in both chains.
	ScopeBoth Scope = iota
	// ScopeMessage: only in message_resolvers (the inbound message exists).
	ScopeMessage
	// ScopeResponsibility: only in responsibility_resolvers.
	ScopeResponsibility
)

// TemplateField is one field a template may reference.
type TemplateField struct {
	// Path is the field chain without dots: {"Inbound", "Subject"}.
	Path []string
	// Scope is the chain in which the field has a value.
	Scope Scope
	// Doc describes the value as rendered into text.
	Doc string
}

// Name returns the field as written in a template: ".Inbound.Subject".
func (f TemplateField) Name() string {
	s := ""
	for _, p := range f.Path {
		s += "." + p
	}
	return s
}

// TemplateFields is the complete table of fields templates may reference,
// in documentation order. The generator maps each Path onto the runtime's
// Invocation. Read-only: do not modify.
var TemplateFields = []TemplateField{
	{Path: []string{"Persona", "Name"}, Scope: ScopeBoth, Doc: "the persona's name (support-agent)"},
	{Path: []string{"Persona", "Description"}, Scope: ScopeBoth, Doc: "the persona's description"},
	{Path: []string{"CorrelationID"}, Scope: ScopeBoth, Doc: "the run's correlation id"},
	{Path: []string{"Inbound", "ThreadID"}, Scope: ScopeMessage, Doc: "the inbound message's thread id"},
	{Path: []string{"Inbound", "MessageID"}, Scope: ScopeMessage, Doc: "the inbound message's id"},
	{Path: []string{"Inbound", "From"}, Scope: ScopeMessage, Doc: "the sender address"},
	{Path: []string{"Inbound", "To"}, Scope: ScopeMessage, Doc: "the recipient addresses, joined with \", \""},
	{Path: []string{"Inbound", "Cc"}, Scope: ScopeMessage, Doc: "the cc addresses, joined with \", \""},
	{Path: []string{"Inbound", "Subject"}, Scope: ScopeMessage, Doc: "the subject line"},
	{Path: []string{"Inbound", "Date"}, Scope: ScopeMessage, Doc: "the sent date as an email Date header in UTC (runtime.FormatDate: Mon, 02 Jan 2006 15:04:05 +0000)"},
	{Path: []string{"Responsibility", "Name"}, Scope: ScopeResponsibility, Doc: "the responsibility's name"},
	{Path: []string{"Responsibility", "Schedule"}, Scope: ScopeResponsibility, Doc: "the responsibility's cron schedule"},
	{Path: []string{"Responsibility", "Timezone"}, Scope: ScopeResponsibility, Doc: "the responsibility's IANA timezone"},
}
