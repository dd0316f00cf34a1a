package smtp_test

import (
	"context"
	"fmt"
	"io"
	netsmtp "net/smtp"
	"strings"

	"github.com/personagen/personagen/runtime"
	"github.com/personagen/personagen/runtime/mail"
	"github.com/personagen/personagen/runtime/service"
	"github.com/personagen/personagen/runtime/transport/smtp"
)

// printDeliverer stands in for the service: it accepts support's addresses and prints what it
// is handed.
type printDeliverer struct{ personas []*runtime.Persona }

func (d printDeliverer) Deliver(_ context.Context, r io.Reader, env service.Envelope) (*mail.Ingested, error) {
	raw, _ := io.ReadAll(r)
	first, _, _ := strings.Cut(string(raw), "\r\n")
	fmt.Printf("%s from %q to %q: %s\n", env.Source, env.Sender, env.Recipients, first)
	return &mail.Ingested{}, nil
}

func (d printDeliverer) Accepts(address string) *runtime.Persona {
	return mail.PersonaFor(d.personas, address)
}

// A listener delivers what it accepts and refuses every other recipient.
func ExampleNew() {
	p := &runtime.Persona{Name: "support"}
	p.Mailbox.Address = "support@acme.example"
	l, err := smtp.New(smtp.Options{Addr: "127.0.0.1:0"}) // LMTP: true behind Postfix
	if err != nil {
		panic(err)
	}
	ctx, stop := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- l.Receive(ctx, printDeliverer{[]*runtime.Persona{p}}) }()

	msg := "Subject: hi\r\n\r\nWhere is my order?\r\n"
	err = netsmtp.SendMail(l.Addr().String(), nil, "ann@cust.example", []string{"support+orders@acme.example"}, []byte(msg))
	fmt.Println("sent:", err)
	err = netsmtp.SendMail(l.Addr().String(), nil, "ann@cust.example", []string{"bob@elsewhere.example"}, []byte(msg))
	fmt.Println("refused:", err)
	stop()
	<-done
	// Output:
	// smtp from "ann@cust.example" to ["support+orders@acme.example"]: Return-Path: <ann@cust.example>
	// sent: <nil>
	// refused: 550 "5.1.1 <bob@elsewhere.example>: Recipient address rejected: no such persona here"
}
