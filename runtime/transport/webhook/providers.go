package webhook

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// NewPostmark returns an endpoint for Postmark's inbound webhook, which posts each message as a
// JSON document (https://postmarkapp.com/developer/webhooks/inbound-webhook). The message is
// read from its RawEmail field, the whole message as received — which Postmark sends only when
// the inbound stream has "Include raw email content in JSON payload" enabled: without it the
// request is refused (403), since the parsed fields lose the original MIME. OriginalRecipient
// gives the envelope recipient. Postmark posts again after any answer but 200 and stops after
// a 403 ("If we receive a 403 response, we will stop retries",
// https://postmarkapp.com/developer/user-guide/inbound/parse-an-email), so a request refused
// for good is answered 403. Authenticate with basic credentials in the webhook URL. Errors:
// ErrNoCredentials, or a bad option.
func NewPostmark(o Options) (*Endpoint, error) {
	return newEndpoint("postmark", o, http.StatusForbidden, true)
}

// postmarkInbound holds the fields of Postmark's inbound JSON this endpoint reads.
type postmarkInbound struct {
	RawEmail          *string `json:"RawEmail"`
	OriginalRecipient string  `json:"OriginalRecipient"`
}

func (e *Endpoint) readPostmark(r *http.Request) (inbound, error) {
	if mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type")); mt != "application/json" {
		return inbound{}, e.refused("Content-Type %q: want application/json", r.Header.Get("Content-Type"))
	}
	var p postmarkInbound
	if err := json.NewDecoder(r.Body).Decode(&p); err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			return inbound{}, err
		}
		return inbound{}, e.refused("not Postmark's inbound JSON: %v", err)
	}
	if p.RawEmail == nil || strings.TrimSpace(*p.RawEmail) == "" {
		return inbound{}, e.refused(`no RawEmail: enable "Include raw email content in JSON payload" on the Postmark inbound stream`)
	}
	in := inbound{raw: []byte(*p.RawEmail)}
	if p.OriginalRecipient != "" {
		in.env.Recipients = []string{p.OriginalRecipient}
	}
	return in, nil
}

// NewSendGrid returns an endpoint for SendGrid's Inbound Parse webhook with "POST the raw, full
// MIME message" checked (https://www.twilio.com/docs/sendgrid/for-developers/parsing-email/setting-up-the-inbound-parse-webhook):
// a multipart/form-data post whose email field holds the message as received, and whose
// envelope field is a JSON object {"to": [...], "from": "..."}, the SMTP envelope. Without the
// raw option there is no email field and the request is refused (400). SendGrid posts again
// after any 4xx or 5xx for up to three days, and keeps nothing after a 2xx. Authenticate with
// basic credentials in the webhook URL or a secret query parameter. Errors: ErrNoCredentials,
// or a bad option.
func NewSendGrid(o Options) (*Endpoint, error) {
	return newEndpoint("sendgrid", o, http.StatusBadRequest, true)
}

func (e *Endpoint) readSendGrid(r *http.Request) (inbound, error) {
	if err := e.parseForm(r); err != nil {
		return inbound{}, err
	}
	raw, err := formField(r, "email")
	if err != nil {
		return inbound{}, err
	}
	if raw == nil {
		return inbound{}, e.refused(`no email field: check "POST the raw, full MIME message" in SendGrid's Inbound Parse settings`)
	}
	var in inbound
	var envelope struct {
		To   []string `json:"to"`
		From *string  `json:"from"`
	}
	if v := r.FormValue("envelope"); v != "" {
		if err := json.Unmarshal([]byte(v), &envelope); err != nil {
			return inbound{}, e.refused("envelope field: %v", err)
		}
	}
	in.env.Recipients = envelope.To
	if envelope.From != nil {
		in.env.Sender = *envelope.From
	}
	in.raw = withReturnPath(raw, in.env.Sender, envelope.From != nil)
	return in, nil
}

// MailgunOptions configure a Mailgun endpoint.
type MailgunOptions struct {
	Options
	// SigningKey is the HTTP webhook signing key of the Mailgun account (its control panel,
	// "Webhooks"). Required.
	SigningKey string
	// MaxAge is how far a request's timestamp may lie from now, either way (the replay window;
	// DefaultMailgunMaxAge).
	MaxAge time.Duration
}

// DefaultMailgunMaxAge is the replay window of a Mailgun endpoint: a signed request whose
// timestamp is further from now is refused. A request replayed within it delivers its message
// again, which stores nothing (ingestion is idempotent by Message-ID).
const DefaultMailgunMaxAge = 5 * time.Minute

// NewMailgun returns an endpoint for a Mailgun route whose forward() URL ends in "mime", so
// Mailgun posts the raw message in the body-mime field
// (https://documentation.mailgun.com/docs/mailgun/user-manual/receive-forward-store/receive-http).
// Each request is authenticated by its signature, timestamp and token fields: signature must
// be the hex HMAC-SHA256 of timestamp and token concatenated, keyed with the webhook signing
// key, and timestamp (seconds since 1970) within MaxAge of now; recipient and sender give the
// envelope. Mailgun posts again after any answer but 200 and 406 ("Not Applicable"), so a
// request refused for good is answered 406. Basic credentials or a secret may be required on
// top. Errors: no SigningKey, or a bad option.
func NewMailgun(o MailgunOptions) (*Endpoint, error) {
	if o.SigningKey == "" {
		return nil, fmt.Errorf("mailgun endpoint: %w", ErrNoCredentials)
	}
	if o.MaxAge < 0 {
		return nil, errors.New("webhook: mailgun endpoint: negative MaxAge")
	}
	if o.MaxAge == 0 {
		o.MaxAge = DefaultMailgunMaxAge
	}
	e, err := newEndpoint("mailgun", o.Options, http.StatusNotAcceptable, false)
	if err != nil {
		return nil, err
	}
	e.mailgun = o
	return e, nil
}

// errBadSignature answers a Mailgun request that is not signed with the key.
var errBadSignature = errors.New("webhook: mailgun: bad or expired signature")

func (e *Endpoint) readMailgun(r *http.Request) (inbound, error) {
	if err := e.parseForm(r); err != nil {
		return inbound{}, err
	}
	if !e.mailgunSigned(r.FormValue("timestamp"), r.FormValue("token"), r.FormValue("signature")) {
		return inbound{}, errBadSignature
	}
	raw, err := formField(r, "body-mime")
	if err != nil {
		return inbound{}, err
	}
	if raw == nil {
		return inbound{}, e.refused(`no body-mime field: the route's forward() URL must end in "mime"`)
	}
	var in inbound
	for _, a := range strings.Split(r.FormValue("recipient"), ",") {
		if a = strings.TrimSpace(a); a != "" {
			in.env.Recipients = append(in.env.Recipients, a)
		}
	}
	_, hasSender := r.Form["sender"]
	in.env.Sender = r.FormValue("sender")
	in.raw = withReturnPath(raw, in.env.Sender, hasSender)
	return in, nil
}

// mailgunSigned checks a Mailgun signature and its timestamp's age.
func (e *Endpoint) mailgunSigned(timestamp, token, signature string) bool {
	ts, err := strconv.ParseInt(timestamp, 10, 64)
	if err != nil || token == "" {
		return false
	}
	age := e.now().Sub(time.Unix(ts, 0))
	if age > e.mailgun.MaxAge || age < -e.mailgun.MaxAge {
		return false
	}
	mac := hmac.New(sha256.New, []byte(e.mailgun.SigningKey))
	io.WriteString(mac, timestamp+token)
	want := mac.Sum(nil)
	got, err := hex.DecodeString(signature)
	return err == nil && hmac.Equal(got, want)
}

// parseForm reads a form post (multipart or URL-encoded) into r.Form, all in memory (the body
// is bounded already).
func (e *Endpoint) parseForm(r *http.Request) error {
	err := r.ParseMultipartForm(e.opts.MaxBodyBytes)
	if errors.Is(err, http.ErrNotMultipart) {
		err = r.ParseForm()
	}
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			return err
		}
		return e.refused("not a form post: %v", err)
	}
	return nil
}

// formField returns a form field's value, or the content of a file part of that name (nil when
// there is neither).
func formField(r *http.Request, name string) ([]byte, error) {
	if vs, ok := r.Form[name]; ok && len(vs) > 0 && vs[0] != "" {
		return []byte(vs[0]), nil
	}
	if r.MultipartForm != nil {
		if fs := r.MultipartForm.File[name]; len(fs) > 0 {
			f, err := fs[0].Open()
			if err != nil {
				return nil, err
			}
			defer f.Close()
			return io.ReadAll(f)
		}
	}
	return nil, nil
}
