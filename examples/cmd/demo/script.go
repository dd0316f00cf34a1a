package main

import (
	"encoding/json"
	"fmt"
	netmail "net/mail"
	"strings"

	"github.com/personagen/personagen/runtime"
	"github.com/personagen/personagen/runtime/chat"
	"github.com/personagen/personagen/runtime/history"
	"github.com/personagen/personagen/runtime/provider/scripted"
)

// scriptFor returns the scripted model of one run, keyed by the Message-ID of the message
// answered or by the fire's responsibility. The final answers are written from the tool results
// in the request, as a model would:
//
//   - c3@brightline.io, the refund that did not arrive: two tool rounds (the first with two
//     parallel calls), then the reply;
//   - c4@brightline.io, the customer's follow-up: the reply, from the thread (the first run's
//     rounds replayed);
//   - daily-digest, the research assistant's digest: two rounds of two parallel calls, then the
//     digest;
//   - any other message (answered, by persona): one reply saying that the scripted model has no
//     answer written for it.
func scriptFor(key string, answered *history.Message, persona *runtime.Persona) *scripted.Model {
	call := func(id, name, input string) chat.ToolCall {
		return chat.ToolCall{ID: id, Name: name, Input: json.RawMessage(input)}
	}
	usage := func(in, cached, out int64) chat.Usage {
		return chat.Usage{InputTokens: in, CacheReadTokens: cached, OutputTokens: out}
	}
	switch key {
	case "c3@brightline.io":
		return scripted.New(
			scripted.Turn{
				Text: "Let me check the refund and what the help center says about refunds that do not arrive.",
				ToolCalls: []chat.ToolCall{
					call("toolu_01", "lookup_order", `{"number":"INV-2025-0117"}`),
					call("toolu_02", "search_help_center", `{"query":"refund not on the card statement"}`),
				},
				Usage: usage(3120, 2816, 96),
			},
			scripted.Turn{
				Text: "The refund bounced off a replaced card, so billing has to send it by bank transfer.",
				ToolCalls: []chat.ToolCall{
					call("toolu_03", "escalate_ticket", `{"summary":"Refund RF-2025-0311 (EUR 432.00, the duplicate capture on INV-2025-0117) was returned by Brightline's card issuer on 5 March because the card was replaced. Please refund by bank transfer; Jonas Brandt (billing contact) will send the account details.","reason":"refund"}`),
				},
				Usage: usage(3795, 3120, 118),
			},
			scripted.Turn{Reply: func(req *chat.Request) (*chat.Response, error) {
				ticket := field(lastResult(req, "escalate_ticket"), "ticket")
				return answer("Hi Jonas,\n\nthank you for checking. The refund of EUR 432.00 (RF-2025-0311) went out on 3 March, "+
					"but your card issuer returned it on 5 March because the card it was charged to has been replaced. "+
					"A refund can only go back to the card that was charged, so I have asked our billing team to send the money "+
					"by bank transfer instead (ticket "+ticket+"). They will write to you for the account details; "+
					"a transfer usually arrives within two business days.\n\nSorry for the extra step.\n\nMira, Acme Tracker Support",
					usage(3990, 3795, 142)), nil
			}},
		)
	case "c4@brightline.io":
		return scripted.New(scripted.Turn{Reply: func(req *chat.Request) (*chat.Response, error) {
			handled := "our billing team"
			if r := lastResult(req, "escalate_ticket"); r != "" { // from the replayed round
				handled = "the colleague handling ticket " + field(r, "ticket")
			}
			return answer("Hi Jonas,\n\nthanks, the IBAN is all billing needs: "+handled+
				" sees this thread and will send the EUR 432.00 to DE02 1203 0000 0000 2020 51. "+
				"The new card cannot receive the refund, since it was never charged.\n\nMira, Acme Tracker Support",
				usage(4410, 3990, 77)), nil
		}})
	case "daily-digest":
		return scripted.New(
			scripted.Turn{
				ToolCalls: []chat.ToolCall{
					call("call_01", "web_search", `{"query":"AI coding assistants code review agents IDE","since":"2025-03-06"}`),
					call("call_02", "web_search", `{"query":"EU Data Act cloud switching data portability","since":"2025-03-06"}`),
				},
				Usage: usage(1480, 0, 64),
			},
			scripted.Turn{
				ToolCalls: []chat.ToolCall{
					call("call_03", "web_fetch", `{"url":"https://news.example/2025/03/ide-review-agents"}`),
					call("call_04", "web_fetch", `{"url":"https://news.example/2025/03/data-act-switching"}`),
				},
				Usage: usage(1930, 1480, 58),
			},
			scripted.Turn{Reply: func(req *chat.Request) (*chat.Response, error) {
				return answer("Subject: Daily digest, 7 March 2025\n\nRead first\n"+
					"- Code review agents move into the IDE: three vendors now review pull requests inside the editor. "+
					"Why it matters: it overlaps the review automation on our roadmap. https://news.example/2025/03/ide-review-agents\n"+
					"- EU Data Act: cloud switching rules apply from 12 September 2025; customers must be able to export and switch within 30 days. "+
					"Why it matters: workspace export must be ready by then. https://news.example/2025/03/data-act-switching\n\n"+
					"Confidence: high for both (primary reporting, fetched in full).", usage(2870, 1930, 171)), nil
			}},
		)
	}
	greeting, subject, signer := "Hello", "", ""
	if answered != nil {
		if a, err := netmail.ParseAddress(answered.From); err == nil && a.Name != "" {
			greeting = "Hello " + strings.Fields(a.Name)[0]
		}
		subject = answered.Subject
	}
	if persona != nil {
		signer = persona.Mailbox.Name
		if signer == "" {
			signer = persona.Name
		}
	}
	return scripted.New(scripted.Turn{
		Text: greeting + ",\n\nthank you for your message" + quoted(subject) + ". This answer comes from the demo's scripted model, " +
			"which has answers written only for the example support thread; run the demo with -model anthropic, openai or " +
			"openai-responses to have a model answer it.\n\n" + signer,
		Usage: usage(1200, 0, 60),
	})
}

// quoted is ` "subject"`, or nothing for a blank subject.
func quoted(subject string) string {
	if strings.TrimSpace(subject) == "" {
		return ""
	}
	return ` "` + subject + `"`
}

func answer(text string, u chat.Usage) *chat.Response {
	return &chat.Response{Message: chat.AssistantMessage(text), StopReason: chat.StopEndTurn, Usage: u}
}

// lastResult is the result text of the request's last call of the tool name.
func lastResult(req *chat.Request, name string) string {
	ids := map[string]bool{}
	out := ""
	for _, m := range req.Messages {
		for _, c := range m.ToolCalls {
			ids[c.ID] = c.Name == name
		}
		if m.Role == chat.RoleTool && ids[m.ToolCallID] {
			out = m.Text
		}
	}
	return out
}

// field is a string field of a JSON object result, or a note that it is missing.
func field(result, key string) string {
	var v map[string]any
	if json.Unmarshal([]byte(result), &v) == nil {
		if s, ok := v[key].(string); ok {
			return s
		}
	}
	return fmt.Sprintf("(no %s in %q)", key, strings.TrimSpace(result))
}
