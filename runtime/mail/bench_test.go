package mail

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/jhillyerd/enmime/v2"
)

// benchMessage returns a realistic 20 KB message: a multipart/mixed holding a
// multipart/alternative (quoted-printable UTF-8 text and HTML) and a base64 PDF attachment,
// with the headers of a real reply (Received lines, References, encoded words).
func benchMessage() []byte {
	var text, html strings.Builder
	for i := range 54 {
		fmt.Fprintf(&text, "Line %d of the customer's question: grüße, the order #%d did not arrive — could you check?\n", i, 1000+i)
		fmt.Fprintf(&html, "<p>Line %d of the customer&#39;s question: <b>grüße</b>, the order #%d did not arrive — could you check?</p>\n", i, 1000+i)
	}
	pdf := bytes.Repeat([]byte("%PDF-1.4 binary \x00\x01\x02\xff stream of the invoice. "), 90)
	b := enmime.Builder().
		From("Jürgen Müller", "juergen@cust.example").
		To("Acme Support", "support@acme.example").
		CC("", "boss@cust.example").
		Subject("Re: Bestellung 1042 – Lieferung fehlt").
		Date(time.Date(2026, 2, 2, 10, 0, 0, 0, time.UTC)).
		Header("Message-ID", "<q3.20260202@cust.example>").
		Header("In-Reply-To", "<r2.20260201@acme.example>").
		Header("References", "<q1.20260130@cust.example> <r1.20260130@acme.example> <q2.20260201@cust.example> <r2.20260201@acme.example>").
		Header("Received", "from mx1.cust.example (mx1.cust.example [192.0.2.1]) by mx.acme.example with ESMTPS id abc123 for <support@acme.example>; Mon, 02 Feb 2026 10:00:01 +0000").
		Header("Received", "from client (unknown [198.51.100.7]) by mx1.cust.example with ESMTPSA id def456; Mon, 02 Feb 2026 10:00:00 +0000").
		Text([]byte(text.String())).
		HTML([]byte(html.String())).
		AddAttachment(pdf, "application/pdf", "Rechnung 1042.pdf").
		RandSeed(1)
	root, err := b.Build()
	if err != nil {
		panic(err)
	}
	var buf bytes.Buffer
	if err := root.Encode(&buf); err != nil {
		panic(err)
	}
	return buf.Bytes()
}

func TestBenchMessageIsTwentyKilobytes(t *testing.T) {
	raw := benchMessage()
	if n := len(raw); n < 19<<10 || n > 21<<10 {
		t.Fatalf("bench message has %d bytes, want about 20 KB", n)
	}
	m := mustParse(t, string(raw), arrival)
	if len(m.Attachments) != 1 || m.HTML == "" || !strings.Contains(m.Text, "grüße") || len(m.References) != 4 || len(m.Problems) != 0 {
		t.Fatalf("bench message parsed to %d attachments, %d bytes of HTML, references %q, problems %q", len(m.Attachments), len(m.HTML), m.References, problems(m))
	}
}

// BenchmarkParse parses the 20 KB message with Parse (personagen) and with enmime's own
// ReadEnvelope (enmime), reporting messages per second. Target: personagen within 1.2× of
// enmime's time.
func BenchmarkParse(b *testing.B) {
	raw := benchMessage()
	b.Run("personagen", func(b *testing.B) {
		b.SetBytes(int64(len(raw)))
		b.ReportAllocs()
		for b.Loop() {
			if _, err := Parse(bytes.NewReader(raw), arrival); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "msgs/s")
	})
	b.Run("enmime", func(b *testing.B) {
		b.SetBytes(int64(len(raw)))
		b.ReportAllocs()
		for b.Loop() {
			if _, err := enmime.ReadEnvelope(bytes.NewReader(raw)); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "msgs/s")
	})
}
