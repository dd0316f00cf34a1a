package mail_test

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/personagen/personagen/runtime"
	"github.com/personagen/personagen/runtime/mail"
	"github.com/personagen/personagen/runtime/store"
)

// An email ingested into the store for the persona whose mailbox it reaches, and a reply to it
// rendered as the email the outbox sends.
func ExampleIngest() {
	ctx := context.Background()
	st, err := store.Open(ctx, ":memory:")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer st.Close()
	if err := st.Migrate(ctx); err != nil {
		fmt.Println(err)
		return
	}
	shop := &runtime.Persona{Name: "shop-assistant"}
	shop.Mailbox.Address = "shop@example.com"
	shop.Mailbox.Name = "Example Shop"

	raw := strings.Join([]string{
		"From: Ada Lovelace <ada@example.com>",
		"To: shop@example.com",
		"Subject: =?ISO-8859-1?Q?Bestellung_f=FCr_K=F6ln?=",
		"Date: Mon, 2 Mar 2026 10:00:00 +0100",
		"Message-ID: <q1@example.com>",
		"Content-Type: text/plain; charset=ISO-8859-1",
		"Content-Transfer-Encoding: quoted-printable",
		"",
		"Ist A-17 schon unterwegs?",
		"",
	}, "\r\n")
	in, err := mail.Ingest(ctx, st, strings.NewReader(raw), mail.Ingestion{Personas: []*runtime.Persona{shop}})
	if err != nil {
		fmt.Println(err)
		return
	}
	d := in.Deliveries[0]
	fmt.Println(d.Persona.Name, d.Message.ThreadID, d.Message.Seq, d.Answer())
	fmt.Printf("%s | %s | %s\n", d.Message.From, d.Message.Subject, d.Message.Date.UTC())

	reply, err := mail.NewReply(shop, &d.Message, "reply:shop-assistant/1", "Ja, A-17 ist seit Montag unterwegs.",
		time.Date(2026, 3, 2, 9, 30, 0, 0, time.UTC))
	if err != nil {
		fmt.Println(err)
		return
	}
	eml, err := mail.Render(reply)
	if err != nil {
		fmt.Println(err)
		return
	}
	header, _, _ := strings.Cut(string(eml), "\r\n\r\n")
	for _, line := range strings.Split(header, "\r\n") {
		if !strings.HasPrefix(line, "Content-") && !strings.HasPrefix(line, "MIME-Version") {
			fmt.Println(line)
		}
	}
	// Output:
	// shop-assistant shop-assistant/6dd6691600689a7cde4cb565b8804e2c 1 true
	// Ada Lovelace <ada@example.com> | Bestellung für Köln | 2026-03-02 09:00:00 +0000 UTC
	// From: Example Shop <shop@example.com>
	// To: Ada Lovelace <ada@example.com>
	// Subject: =?utf-8?q?Re=3A_Bestellung_f=C3=BCr_K=C3=B6ln?=
	// Date: Mon, 02 Mar 2026 09:30:00 +0000
	// Message-ID: <47dce0a495176279e8f569e378f67ddb@example.com>
	// In-Reply-To: <q1@example.com>
	// References: <q1@example.com>
	// Auto-Submitted: auto-replied
	// X-Auto-Response-Suppress: OOF, AutoReply
}
