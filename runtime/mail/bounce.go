package mail

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"mime"
	"net/textproto"
	"regexp"
	"strings"
)

// bounceDetail is the subaddress detail prefix of a bounce address: local+bounce-TOKEN@domain.
const bounceDetail = "bounce-"

// maxLocalPart is the longest local part RFC 5321 (4.5.3.1.1) lets an address have, in octets.
const maxLocalPart = 64

// bounceToken matches the Message-ID local parts a bounce address can carry: lower-case letters
// and digits (ReplyMessageID's hex digits), since addresses compare case-insensitively.
var bounceToken = regexp.MustCompile(`^[0-9a-z]+$`)

// BounceAddress returns the envelope sender (SMTP MAIL FROM) for a reply with the Message-ID
// messageID (without angle brackets) sent from the persona's address from: the subaddress
// local+bounce-TOKEN@domain of from, where TOKEN is the local part of messageID, so a delivery
// report sent back to it names the reply even when it quotes nothing of it (BounceMessageID
// reads it back). It returns from itself (without angle brackets) when messageID's domain is
// not from's domain, when its local part is not lower-case letters and digits (ReplyMessageID's
// ids always are), or when the subaddress's local part would be longer than 64 octets. Either
// way the address reaches the persona (PersonaFor accepts subaddresses), so reports come back
// to its mailbox.
func BounceAddress(from, messageID string) string {
	from = strings.TrimSpace(strings.TrimSuffix(strings.TrimPrefix(strings.TrimSpace(from), "<"), ">"))
	at := strings.LastIndexByte(from, '@')
	idAt := strings.LastIndexByte(messageID, '@')
	if at <= 0 || idAt <= 0 {
		return from
	}
	local, domain := from[:at], from[at+1:]
	token, idDomain := messageID[:idAt], messageID[idAt+1:]
	if !strings.EqualFold(domain, idDomain) || !bounceToken.MatchString(token) {
		return from
	}
	bounceLocal := local + SubaddressDelimiter + bounceDetail + token
	if len(bounceLocal) > maxLocalPart {
		return from
	}
	return bounceLocal + "@" + domain
}

// BounceMessageID returns the Message-ID (without angle brackets) that a bounce address of
// BounceAddress encodes, with ok false for any other address.
func BounceMessageID(address string) (messageID string, ok bool) {
	base, detail, ok := Subaddress(canonicalAddress(address))
	if !ok {
		return "", false
	}
	token, found := strings.CutPrefix(detail, bounceDetail)
	if !found || !bounceToken.MatchString(token) {
		return "", false
	}
	return token + base[strings.LastIndexByte(base, '@'):], true
}

// Bounce is a report that a sent message could not be delivered to a recipient.
type Bounce struct {
	// MessageID is the id (without angle brackets) of the message that bounced: the Message-ID
	// of the original the report returns (a message/rfc822 or text/rfc822-headers part), else
	// the one its bounce address (BounceAddress) encodes.
	MessageID string
	// Recipient is the address that failed (the report's Final-Recipient), "" when the report
	// does not say.
	Recipient string
	// Status is the enhanced status code (RFC 3463), "5.1.1"; always of class 5.
	Status string
	// Diagnostic is the remote server's reply as the report gives it (its Diagnostic-Code, "smtp;
	// 550 5.1.1 <ann@cust.example>: Recipient address rejected"), or for a report in plain text
	// the line that holds the status code; at most 900 bytes.
	Diagnostic string
}

// String renders the bounce's diagnostic with its recipient in front, the text a store records:
// "ann@cust.example: smtp; 550 5.1.1 …" (the diagnostic alone without a recipient).
func (b Bounce) String() string {
	if b.Recipient == "" {
		return b.Diagnostic
	}
	return clipBytes(b.Recipient+": "+b.Diagnostic, maxDetailBytes)
}

// enhancedStatus matches an enhanced status code (RFC 3463: class.subject.detail).
var enhancedStatus = regexp.MustCompile(`\b([245])\.(\d{1,3})\.(\d{1,3})\b`)

// ParseBounce reads m as a report that a message could not be delivered and returns what failed;
// ok is false when m is no such report. envelope are the envelope recipients m was received
// for (SMTP RCPT TO; none when unknown). Two forms are read:
//
//   - a delivery status notification (RFC 3464: a message/delivery-status part, normally in a
//     multipart/report; report-type=delivery-status): the first recipient whose Action is
//     "failed" gives Recipient, Status and Diagnostic (a report of delays, relays or successful
//     deliveries only is no bounce); the original's Message-ID comes from the returned message
//     (message/rfc822, message/global, or only its header in text/rfc822-headers), else from a
//     bounce address among m's recipients;
//   - a report in plain text that quotes no original (Microsoft Exchange's non-delivery reports,
//     for one): only when it is addressed to a bounce address (which gives the Message-ID), it is
//     from a mail system (MAILER-DAEMON or postmaster, or a null sender, or m's NoReply says it
//     is a delivery report), and its text holds a status code of class 5; the first such code
//     and its line give Status and Diagnostic.
//
// An automatic reply to a bounce address (an out-of-office notice, RFC 3834 says to answer the
// envelope sender) is none of these, and is not a bounce.
func ParseBounce(m *Message, envelope ...string) (Bounce, bool) {
	bounceID := ""
	for _, a := range append(append(append(addrs(m.Addresses.To), addrs(m.Addresses.Cc)...), addrs(m.Addresses.Bcc)...), envelope...) {
		if id, ok := BounceMessageID(a); ok {
			bounceID = id
			break
		}
	}
	var status []byte
	var original []byte
	for _, a := range m.Attachments {
		switch partMediaType(a.ContentType) {
		case "message/delivery-status", "message/global-delivery-status":
			if status == nil {
				status = a.Data
			}
		case "message/rfc822", "message/global", "text/rfc822-headers", "message/global-headers":
			if original == nil {
				original = a.Data
			}
		}
	}
	if status != nil {
		b, ok := failedRecipient(status)
		if !ok {
			return Bounce{}, false
		}
		b.MessageID = originalMessageID(original)
		if b.MessageID == "" {
			b.MessageID = bounceID
		}
		return b, b.MessageID != ""
	}
	if bounceID == "" || !fromMailSystem(m) {
		return Bounce{}, false
	}
	for _, line := range strings.Split(m.Text, "\n") {
		for _, code := range enhancedStatus.FindAllStringSubmatch(line, -1) {
			if code[1] == "5" {
				return Bounce{MessageID: bounceID, Status: code[0], Diagnostic: clipBytes(strings.TrimSpace(line), maxDetailBytes)}, true
			}
		}
	}
	return Bounce{}, false
}

// fromMailSystem reports whether m comes from a mail system rather than a person or an
// auto-responder: a delivery report, a null sender, or MAILER-DAEMON or postmaster as its From.
func fromMailSystem(m *Message) bool {
	switch m.NoReply.Reason {
	case ReasonDeliveryReport, ReasonNullSender, ReasonMailerDaemon:
		return true
	}
	local, _, _ := strings.Cut(m.Sender().Address, "@")
	return strings.EqualFold(local, "postmaster") || strings.EqualFold(local, "mailer-daemon")
}

// partMediaType returns the lower-case media type of a Content-Type value.
func partMediaType(ct string) string {
	mt, _, err := mime.ParseMediaType(ct)
	if err != nil {
		mt, _, _ = strings.Cut(ct, ";")
	}
	return strings.ToLower(strings.TrimSpace(mt))
}

// failedRecipient reads a message/delivery-status body (RFC 3464 §2.1: a per-message group of
// fields, then one group per recipient, separated by blank lines) and returns its first
// recipient whose Action is failed.
func failedRecipient(data []byte) (Bounce, bool) {
	r := textproto.NewReader(bufio.NewReader(bytes.NewReader(data)))
	for {
		h, err := r.ReadMIMEHeader() // the per-message group has no Action
		if strings.EqualFold(fieldValue(h.Get("Action")), "failed") {
			b := Bounce{Recipient: typedAddress(h.Get("Final-Recipient"))}
			if b.Recipient == "" {
				b.Recipient = typedAddress(h.Get("Original-Recipient"))
			}
			b.Status = "5.0.0"
			if code := enhancedStatus.FindStringSubmatch(h.Get("Status")); code != nil && code[1] == "5" {
				b.Status = code[0]
			}
			b.Diagnostic = clipBytes(oneLine(h.Get("Diagnostic-Code")), maxDetailBytes)
			if b.Diagnostic == "" {
				b.Diagnostic = b.Status
			}
			return b, true
		}
		if err != nil {
			return Bounce{}, false
		}
	}
}

// fieldValue returns a header value without comments and surrounding space.
func fieldValue(v string) string { return strings.TrimSpace(stripComments(v)) }

// typedAddress returns the address of an RFC 3464 address field ("rfc822; ann@cust.example"),
// without angle brackets.
func typedAddress(v string) string {
	_, a, ok := strings.Cut(v, ";")
	if !ok {
		a = v
	}
	return strings.Trim(strings.TrimSpace(a), "<>")
}

// originalMessageID returns the Message-ID (without angle brackets) of a returned message or
// message header, "" when there is none.
func originalMessageID(data []byte) string {
	if data == nil {
		return ""
	}
	h, _ := textproto.NewReader(bufio.NewReader(bytes.NewReader(data))).ReadMIMEHeader()
	id := fieldValue(h.Get("Message-Id"))
	id = strings.TrimSpace(strings.TrimSuffix(strings.TrimPrefix(id, "<"), ">"))
	if strings.ContainsAny(id, " \t<>") {
		return ""
	}
	return id
}

// BounceStore records bounces; runtime/store implements it.
type BounceStore interface {
	// MarkBounced records on the reply of mailbox with Message-ID messageID that it bounced,
	// with the status code and the diagnostic text; marked is false when mailbox has no such
	// reply, or when the reply was marked bounced before (the first report stays).
	MarkBounced(ctx context.Context, mailbox, messageID, status, diagnostic string) (marked bool, err error)
}

// RecordBounce marks bounced the reply that an ingested message reports as undeliverable
// (ParseBounce, with envelope the envelope recipients it was received for), in the mailbox of
// each persona it was delivered to, and returns the bounce and how many replies it marked. A
// receiver's host calls it after Ingest stored the message, for a second copy as well (the first
// may have been stored by a process that crashed before marking). It does nothing for a message
// that is no bounce, or one for a Message-ID no mailbox holds as a reply. Errors: the store's,
// wrapped; a retry is safe (a reply is marked once).
func RecordBounce(ctx context.Context, st BounceStore, in *Ingested, envelope ...string) (b Bounce, marked int, err error) {
	if in == nil || in.Message == nil || len(in.Deliveries) == 0 {
		return Bounce{}, 0, nil
	}
	b, ok := ParseBounce(in.Message, envelope...)
	if !ok {
		return Bounce{}, 0, nil
	}
	for _, d := range in.Deliveries {
		ok, err := st.MarkBounced(ctx, d.Persona.Name, b.MessageID, b.Status, b.String())
		if err != nil {
			return b, marked, fmt.Errorf("mail: record the bounce of %s for %s: %w", b.MessageID, d.Persona.Name, err)
		}
		if ok {
			marked++
		}
	}
	return b, marked, nil
}
