package host

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/personagen/personagen/runtime"
	"github.com/personagen/personagen/runtime/tool"
)

// The tools the example personas offer. SearchHelpCenter, WebSearch and WebFetch are
// package-level values over content this package ships (the help center, a small web); the
// specs name them. LookupOrder and EscalateTicket are methods of Env, since they read and change
// the host's data; the support-agent spec names them as method tools, and the generator derives
// their input schemas from OrderQuery and Escalation (the field doc comments below are what the
// model reads about each property).

// HelpQuery is the input of search_help_center.
type HelpQuery struct {
	// Query is what to search for, in the customer's words.
	Query string `json:"query"`
}

// Article is a help-center article.
type Article struct {
	Title    string   `json:"title"`
	URL      string   `json:"url"`
	Excerpt  string   `json:"excerpt"`
	Keywords []string `json:"-"`
}

// HelpCenter is Acme Tracker's help center, the content search_help_center searches.
var HelpCenter = []Article{
	{Title: "Refunds: when the money arrives", URL: "https://help.acme.example/billing/refunds",
		Excerpt:  "Card refunds reach the card within 5 business days. A refund to a card that was replaced or closed is returned to us by the card issuer; we then refund by bank transfer.",
		Keywords: []string{"refund", "statement", "card", "money", "arrive", "returned"}},
	{Title: "Switching to annual billing", URL: "https://help.acme.example/billing/annual",
		Excerpt:  "Annual billing starts with your next renewal; the first annual invoice is pro-rated.",
		Keywords: []string{"annual", "billing", "switch", "invoice", "renewal"}},
	{Title: "Adding a billing contact", URL: "https://help.acme.example/billing/contacts",
		Excerpt:  "Owners can add billing contacts under Settings → Billing; contacts receive every invoice.",
		Keywords: []string{"billing", "contact", "invoice", "owner"}},
}

// SearchHelpCenter searches HelpCenter: the articles sharing a word with the query, best match
// first, at most three.
var SearchHelpCenter = tool.Must(tool.New(tool.Def{
	Name:        "search_help_center",
	Description: "Search Acme Tracker's help-center articles; returns titles, links and excerpts.",
	InputSchema: json.RawMessage(`{"type":"object","properties":{"query":{"type":"string","minLength":1,"description":"what to search for, in the customer's words"}},"required":["query"],"additionalProperties":false}`),
	Idempotent:  true,
}, func(ctx context.Context, inv *runtime.Invocation, q HelpQuery) ([]Article, error) {
	type hit struct {
		a     Article
		score int
	}
	var hits []hit
	for _, a := range HelpCenter {
		if n := matches(q.Query, a.Keywords); n > 0 {
			hits = append(hits, hit{a, n})
		}
	}
	slices.SortStableFunc(hits, func(x, y hit) int { return y.score - x.score })
	out := []Article{}
	for i, h := range hits {
		if i == 3 {
			break
		}
		out = append(out, h.a)
	}
	return out, nil
}))

// matches counts the keywords that occur in text, ignoring case.
func matches(text string, keywords []string) int {
	text = strings.ToLower(text)
	n := 0
	for _, k := range keywords {
		if strings.Contains(text, k) {
			n++
		}
	}
	return n
}

// Page is a page of the example web.
type Page struct {
	Title     string    `json:"title"`
	URL       string    `json:"url"`
	Published time.Time `json:"published"`
	Snippet   string    `json:"snippet"`
	Text      string    `json:"-"`
	Keywords  []string  `json:"-"`
}

// Web is the small web the research assistant's tools search and fetch.
var Web = []Page{
	{Title: "Code review agents move into the IDE", URL: "https://news.example/2025/03/ide-review-agents",
		Published: time.Date(2025, 3, 6, 9, 0, 0, 0, time.UTC),
		Snippet:   "Three vendors shipped agents that review pull requests inside the editor.",
		Text:      "Three vendors shipped code review agents this week that run inside the IDE and comment on pull requests before they are opened. Early users report fewer review rounds; security teams ask where the code is sent.",
		Keywords:  []string{"ai", "coding", "code review", "agents", "ide", "assistant"}},
	{Title: "EU Data Act: cloud switching rules apply from September", URL: "https://news.example/2025/03/data-act-switching",
		Published: time.Date(2025, 3, 6, 15, 30, 0, 0, time.UTC),
		Snippet:   "Providers must let customers export their data and switch within 30 days.",
		Text:      "From 12 September 2025 the EU Data Act requires cloud and SaaS providers to let customers export their data in a structured format and switch providers within 30 days, with switching charges phased out by 2027.",
		Keywords:  []string{"eu", "data act", "portability", "cloud", "switching", "export"}},
}

// WebQuery is the input of web_search.
type WebQuery struct {
	// Query is what to search for.
	Query string `json:"query"`
	// Since keeps pages published on or after this date (YYYY-MM-DD).
	Since string `json:"since,omitempty"`
}

// WebSearch searches Web: the pages sharing a word with the query (published on or after Since,
// when given), at most ten.
var WebSearch = tool.Must(tool.New(tool.Def{
	Name:        "web_search",
	Description: "Search the web; returns up to ten results with titles, links and snippets.",
	InputSchema: json.RawMessage(`{"type":"object","properties":{"query":{"type":"string","minLength":1},"since":{"type":"string","format":"date"}},"required":["query"],"additionalProperties":false}`),
	Idempotent:  true,
}, func(ctx context.Context, inv *runtime.Invocation, q WebQuery) ([]Page, error) {
	var since time.Time
	if q.Since != "" {
		t, err := time.Parse(time.DateOnly, q.Since)
		if err != nil {
			return nil, fmt.Errorf("since: %w", err)
		}
		since = t
	}
	out := []Page{}
	for _, p := range Web {
		if matches(q.Query, p.Keywords) > 0 && !p.Published.Before(since) && len(out) < 10 {
			out = append(out, p)
		}
	}
	return out, nil
}))

// PageRequest is the input of web_fetch.
type PageRequest struct {
	// URL is the page to fetch.
	URL string `json:"url"`
}

// WebFetch returns the text of a page of Web, or an error for a URL it does not hold.
var WebFetch = tool.Must(tool.New(tool.Def{
	Name:        "web_fetch",
	Description: "Fetch a web page and return its main text.",
	InputSchema: json.RawMessage(`{"type":"object","properties":{"url":{"type":"string","format":"uri"}},"required":["url"],"additionalProperties":false}`),
	Idempotent:  true,
}, func(ctx context.Context, inv *runtime.Invocation, r PageRequest) (string, error) {
	for _, p := range Web {
		if p.URL == r.URL {
			return p.Title + "\n\n" + p.Text, nil
		}
	}
	return "", fmt.Errorf("404 not found: %s", r.URL)
}))

// OrderQuery is the input of lookup_order.
type OrderQuery struct {
	// Number is the order or invoice number, e.g. INV-2024-0117.
	Number string `json:"number"`
}

// Order is an order or invoice as lookup_order returns it.
type Order struct {
	Number    string    `json:"number"`
	Customer  string    `json:"customer"`
	AmountEUR float64   `json:"amount_eur"`
	Status    string    `json:"status"`
	Captures  []Payment `json:"captures,omitempty"`
	Refunds   []Payment `json:"refunds,omitempty"`
	Renews    string    `json:"renews,omitempty"`
	Billing   string    `json:"billing,omitempty"`
}

// Payment is one card capture or refund of an order.
type Payment struct {
	ID        string    `json:"id"`
	At        time.Time `json:"at"`
	AmountEUR float64   `json:"amount_eur"`
	Status    string    `json:"status,omitempty"`
}

// LookupOrder looks up an order or invoice by its number and returns its status, amount, card
// captures and refunds.
func (e *Env) LookupOrder(ctx context.Context, inv *runtime.Invocation, in OrderQuery) (Order, error) {
	o, ok := e.Orders[strings.ToUpper(strings.TrimSpace(in.Number))]
	if !ok {
		return Order{}, fmt.Errorf("no order or invoice %q", in.Number)
	}
	return o, nil
}

// EscalationReason says why a thread goes to a human.
type EscalationReason string

// The reasons escalate_ticket accepts.
const (
	ReasonRefund   EscalationReason = "refund"
	ReasonBug      EscalationReason = "bug"
	ReasonSecurity EscalationReason = "security"
	ReasonOther    EscalationReason = "other"
)

// Escalation is the input of escalate_ticket.
type Escalation struct {
	// Summary is one paragraph for the colleague who takes over.
	Summary string `json:"summary"`
	// Reason is why a human must take over.
	Reason EscalationReason `json:"reason"`
}

// Ticket is an escalation ticket as escalate_ticket returns it.
type Ticket struct {
	ID      string           `json:"ticket"`
	Queue   string           `json:"queue"`
	Reason  EscalationReason `json:"reason"`
	Summary string           `json:"-"`
	Thread  string           `json:"-"`
}

// EscalateTicket opens a ticket for a human colleague, in the billing queue for refunds and in
// the support queue otherwise. Every call opens another ticket, so it is not idempotent: a
// runner runs each call of it at most once.
func (e *Env) EscalateTicket(ctx context.Context, inv *runtime.Invocation, in Escalation) (Ticket, error) {
	queue, prefix := "support", "SUP"
	if in.Reason == ReasonRefund {
		queue, prefix = "billing", "BIL"
	}
	thread := ""
	if inv != nil && inv.Inbound != nil {
		thread = inv.Inbound.ThreadID
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	t := Ticket{ID: fmt.Sprintf("%s-%d", prefix, 9001+len(e.tickets)), Queue: queue, Reason: in.Reason, Summary: in.Summary, Thread: thread}
	if e.TicketFile != "" {
		if err := appendTicket(e.TicketFile, t); err != nil {
			return Ticket{}, err
		}
	}
	e.tickets = append(e.tickets, t)
	return t, nil
}

// appendTicket appends t to the file at path as one JSON line and syncs it.
func appendTicket(path string, t Ticket) error {
	f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return fmt.Errorf("escalate_ticket: %w", err)
	}
	line, _ := json.Marshal(map[string]string{"ticket": t.ID, "queue": t.Queue, "reason": string(t.Reason), "thread": t.Thread})
	_, werr := f.Write(append(line, '\n'))
	serr := f.Sync()
	cerr := f.Close()
	if err := errors.Join(werr, serr, cerr); err != nil {
		return fmt.Errorf("escalate_ticket: %w", err)
	}
	return nil
}

// Tickets returns the tickets EscalateTicket opened, oldest first.
func (e *Env) Tickets() []Ticket {
	e.mu.Lock()
	defer e.mu.Unlock()
	return slices.Clone(e.tickets)
}
