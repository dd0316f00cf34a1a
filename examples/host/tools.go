package host

import "encoding/json"

// Tool is a tool definition: a name the model calls it by, a description
// it reads, and the JSON Schema of its input. It implements runtime.Tool.
// Executing tools is the host's business and outside this package.
type Tool struct {
	ToolName        string
	ToolDescription string
	Schema          json.RawMessage
}

// Name returns the tool's name.
func (t Tool) Name() string { return t.ToolName }

// Description returns what the model reads about the tool.
func (t Tool) Description() string { return t.ToolDescription }

// InputSchema returns the JSON Schema of the tool's input object.
func (t Tool) InputSchema() json.RawMessage { return t.Schema }

// The tools the example personas offer.
var (
	LookupOrder = Tool{
		ToolName:        "lookup_order",
		ToolDescription: "Look up an order or invoice by its number and return its status, amount and dates.",
		Schema:          json.RawMessage(`{"type":"object","properties":{"number":{"type":"string","description":"order or invoice number, e.g. INV-2024-0117"}},"required":["number"]}`),
	}
	SearchHelpCenter = Tool{
		ToolName:        "search_help_center",
		ToolDescription: "Search Acme Tracker's help-center articles; returns titles, links and excerpts.",
		Schema:          json.RawMessage(`{"type":"object","properties":{"query":{"type":"string"}},"required":["query"]}`),
	}
	EscalateTicket = Tool{
		ToolName:        "escalate_ticket",
		ToolDescription: "Hand the thread to a human colleague with a one-paragraph summary and a reason.",
		Schema:          json.RawMessage(`{"type":"object","properties":{"summary":{"type":"string"},"reason":{"type":"string","enum":["refund","bug","security","other"]}},"required":["summary","reason"]}`),
	}
	WebSearch = Tool{
		ToolName:        "web_search",
		ToolDescription: "Search the web; returns up to ten results with titles, links and snippets.",
		Schema:          json.RawMessage(`{"type":"object","properties":{"query":{"type":"string"},"since":{"type":"string","format":"date"}},"required":["query"]}`),
	}
	WebFetch = Tool{
		ToolName:        "web_fetch",
		ToolDescription: "Fetch a web page and return its main text.",
		Schema:          json.RawMessage(`{"type":"object","properties":{"url":{"type":"string","format":"uri"}},"required":["url"]}`),
	}
)
