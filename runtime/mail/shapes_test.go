package mail

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

// shapesArrival is when the messages under testdata/shapes arrive (their Dates are the days
// before).
var shapesArrival = time.Date(2026, time.February, 4, 0, 0, 0, 0, time.UTC)

// TestParseReadsRealWorldShapes parses the messages under testdata/shapes (written for this test
// in the shapes real mail takes; see testdata/shapes/README.md) and pins what the model reads
// from each: the decoded subject and sender, the text and HTML, the attachments, the
// not-to-answer reason with its rule, and every problem, exactly.
func TestParseReadsRealWorldShapes(t *testing.T) {
	type att struct{ name, ctype, data string }
	tests := []struct {
		file, subject, from, text, html string
		atts                            []att
		noReply                         string
		problems                        []string
		replySubject                    string
	}{
		{
			file: "latin1-raw-encoded-word.eml", subject: "Die Hasen und die Frösche", from: "Jürgen Müller <juergen.mueller@gartenbau-mueller.example>",
			text:         "Guten Tag,\n\ndie Frösche sind wieder im Teich.\n\nGrüße\nJürgen Müller\n",
			replySubject: "Re: Die Hasen und die Frösche",
			problems: []string{
				"header: Subject: an encoded word holds raw 8-bit bytes; they are read in its charset iso-8859-1",
				"header: From: an encoded word holds raw 8-bit bytes; they are read in its charset iso-8859-1",
			},
		},
		{
			file: "utf7.eml", subject: "Die Hasen und die Frösche", from: "Jürgen <juergen@gartenbau-mueller.example>",
			text: "Die Frösche hüpfen \"quak\" und 1+1=2.\n", replySubject: "Re: Die Hasen und die Frösche",
		},
		{
			file: "rfc2231-charsets.eml", subject: "Dateien", from: "Lena Fischer <lena.fischer@brightline.example>",
			text: "Anbei drei Dateien.",
			atts: []att{
				{"Frösche.txt", "text/plain", "quak"},
				{"Die Hasen und die Frösche.txt", "application/octet-stream", "hopp"},
				{"Привет.txt", "application/octet-stream", "privet"},
				{"Frösche.dat", "application/octet-stream", "qapla"},
			},
			problems: []string{`header: parameter filename*: unknown charset "x-klingon"; the value is read best-effort (bytes that are not UTF-8 as windows-1252)`},
		},
		{
			file: "leading-space-header.eml", subject: "Frage zur Rechnung", from: "Lena Fischer <lena.fischer@brightline.example>",
			text: "Wann kommt die Rechnung?", html: "<p>Wann kommt die Rechnung?</p>",
			problems: []string{"header: the first header line starts with white space; it is read without it"},
		},
		{
			file: "broken-base64-text.eml", subject: "Bericht", from: "Lena Fischer <lena.fischer@brightline.example>",
			text:     "Hallo Support,\nhier ist der Bericht für März.\nViele Grüße\n",
			problems: []string{`mime: part 0: the base64 data breaks at byte 88 of 175 (a line that is not base64: "This line is a list footer, not base64!"); the 62 bytes decoded before it are kept, the rest is left out`},
		},
		{
			file: "boundary-mismatch.eml", subject: "Rechnung anbei", from: "Lena Fischer <lena.fischer@brightline.example>",
			text:     "Die Rechnung ist angehängt.",
			atts:     []att{{"rechnung.pdf", "application/pdf", "%PDF-1.4 fake"}},
			problems: []string{"mime: part 0: the multipart/mixed's boundary is missing or matches none of its delimiters; it is read with the delimiter ------=_Part_9_3333.4444 that its body holds"},
		},
		{
			file: "nested-multipart-without-boundary.eml", subject: "Zwei Teile", from: "Lena Fischer <lena.fischer@brightline.example>",
			text: "Der Text.\n\nNachsatz.", html: "<p>Der Text.</p>",
			problems: []string{"mime: part 1: the multipart/alternative's boundary is missing or matches none of its delimiters; it is read with the delimiter --inner that its body holds"},
		},
		{
			file: "list-unsubscribe.eml", subject: "Angebote der Woche", from: "Gartenbau Newsletter <news@gartenbau-mueller.example>",
			text:    "Tomaten 20% billiger.\n",
			noReply: "mailing-list: List-Unsubscribe: <https://gartenbau-mueller.example/unsubscribe?u=42>, <mailto:unsubscribe@gartenbau-mueller.example?subject=unsubscribe>",
		},
		{
			file: "return-path-spaces.eml", subject: "Zustellbenachrichtigung", from: "Lena Fischer <lena.fischer@brightline.example>",
			text: "Ihre Nachricht wurde zugestellt.\n", noReply: "null-sender: Return-Path: <>",
		},
		{
			file: "exchange-ndr-text.eml", subject: "Undeliverable: Re: Invoice INV-2025-0117 charged twice", from: "postmaster@brightline.example",
			text:    "Delivery has failed to these recipients or groups:\n\njonas.brandt@brightline.example\nThe e-mail address you entered couldn't be found.\n",
			noReply: "mailer-daemon: postmaster@brightline.example",
		},
		{
			file: "exchange-inbox-rules-loop.eml", subject: "FW: Invoice INV-2025-0117", from: "Jonas Brandt <jonas.brandt@brightline.example>",
			text: "Forwarded by a rule.\n", noReply: "loop: X-MS-Exchange-Inbox-Rules-Loop: jonas.brandt@brightline.example",
		},
		{
			file: "exchange-ooo-generated-source.eml", subject: "Automatic reply: Invoice INV-2025-0117", from: "Jonas Brandt <jonas.brandt@brightline.example>",
			text: "I am out of the office until 10 February.\n", noReply: "auto-submitted: X-MS-Exchange-Generated-Message-Source: Mailbox Rules Agent",
		},
		{
			file: "x-loop.eml", subject: "[Ticket #4711] received", from: "Helpdesk <helpdesk@brightline.example>",
			text: "Your ticket has been received.\n", noReply: "loop: X-Loop: helpdesk@brightline.example",
		},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			raw, err := os.ReadFile(filepath.Join("testdata/shapes", tt.file))
			if err != nil {
				t.Fatal(err)
			}
			m := mustParse(t, string(raw), shapesArrival)
			if m.Subject != tt.subject || m.From != tt.from {
				t.Errorf("subject %q, from %q; want %q, %q", m.Subject, m.From, tt.subject, tt.from)
			}
			if m.Text != tt.text || m.HTML != tt.html {
				t.Errorf("text %q, html %q; want %q, %q", m.Text, m.HTML, tt.text, tt.html)
			}
			var atts []att
			for _, a := range m.Attachments {
				atts = append(atts, att{a.Filename, a.ContentType, string(a.Data)})
			}
			if !slices.Equal(atts, tt.atts) {
				t.Errorf("attachments %q, want %q", atts, tt.atts)
			}
			if got := m.NoReply.String(); got != tt.noReply {
				t.Errorf("not to answer %q, want %q", got, tt.noReply)
			}
			var got []string
			for _, p := range m.Problems {
				got = append(got, p.String())
			}
			if !slices.Equal(got, tt.problems) {
				t.Errorf("problems:\n got %q\nwant %q", got, tt.problems)
			}
			if tt.replySubject != "" {
				r, err := NewReply(supportPersona, &m.Message, "run-1", "Danke.", shapesArrival)
				if err != nil {
					t.Fatal(err)
				}
				if r.Subject != tt.replySubject {
					t.Errorf("the reply's subject %q, want %q", r.Subject, tt.replySubject)
				}
			}
		})
	}
}
