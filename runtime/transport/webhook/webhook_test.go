package webhook

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/personagen/personagen/runtime"
	"github.com/personagen/personagen/runtime/mail"
	"github.com/personagen/personagen/runtime/service"
	"github.com/personagen/personagen/runtime/store"
	"github.com/personagen/personagen/runtime/transport/internal/transporttest"
)

const message = "From: Ann <ann@cust.example>\r\nTo: support@acme.example\r\nSubject: my order\r\nMessage-ID: <w1@cust.example>\r\n\r\nWhere is it?\r\n"

var support = transporttest.Persona("support", "support@acme.example")

var slogDiscard = slog.New(slog.DiscardHandler)

func deliverer(t *testing.T) *transporttest.Deliverer {
	t.Helper()
	return transporttest.NewDeliverer(transporttest.Open(t, transporttest.ScratchDSN(t, store.DialectSQLite)), support)
}

// post sends body to h and returns the status and the answer's text.
func post(t testing.TB, h http.Handler, target, contentType string, body []byte, header http.Header) (int, string) {
	t.Helper()
	r := httptest.NewRequest(http.MethodPost, target, bytes.NewReader(body))
	if contentType != "" {
		r.Header.Set("Content-Type", contentType)
	}
	for k, vs := range header {
		for _, v := range vs {
			r.Header.Add(k, v)
		}
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	return w.Code, strings.TrimSpace(w.Body.String())
}

func stored(t *testing.T, d *transporttest.Deliverer) []string {
	return transporttest.Stored(t, d.Store, "support")
}

type failing struct{ err error }

func (f failing) Deliver(_ context.Context, r io.Reader, _ service.Envelope) (*mail.Ingested, error) {
	io.Copy(io.Discard, r)
	return nil, f.err
}
func (failing) Accepts(string) *runtime.Persona { return nil }

func TestConstructorsRefuseToRunWithoutCredentials(t *testing.T) {
	if _, err := NewRaw(Options{}); !errors.Is(err, ErrNoCredentials) {
		t.Errorf("raw: %v", err)
	}
	if _, err := NewPostmark(Options{}); !errors.Is(err, ErrNoCredentials) {
		t.Errorf("postmark: %v", err)
	}
	if _, err := NewSendGrid(Options{}); !errors.Is(err, ErrNoCredentials) {
		t.Errorf("sendgrid: %v", err)
	}
	if _, err := NewMailgun(MailgunOptions{Options: Options{Secret: "s"}}); !errors.Is(err, ErrNoCredentials) {
		t.Errorf("mailgun without a signing key: %v", err)
	}
	if _, err := NewRaw(Options{Username: "u"}); err == nil {
		t.Error("a username without a password was accepted")
	}
}

func TestRawEndpointAuthenticatesThenStores(t *testing.T) {
	d := deliverer(t)
	e, err := NewRaw(Options{Secret: "s3cret", Username: "hook", Password: "pw", MaxBodyBytes: 4000})
	if err != nil {
		t.Fatal(err)
	}
	h := e.Handler(d)
	basic := func(u, p string) http.Header {
		r := httptest.NewRequest("POST", "/", nil)
		r.SetBasicAuth(u, p)
		return r.Header
	}
	refused := []struct {
		name   string
		target string
		header http.Header
		body   string
		status int
	}{
		{"no credentials", "/raw", nil, message, 401},
		{"a wrong secret", "/raw", http.Header{"Authorization": {"Bearer nope"}}, message, 401},
		{"a wrong secret in the query", "/raw?secret=nope", nil, message, 401},
		{"a wrong password", "/raw", basic("hook", "nope"), message, 401},
		{"an empty body", "/raw?secret=s3cret", nil, "  \r\n", 400},
		{"a body over the limit", "/raw?secret=s3cret", nil, message + strings.Repeat("x", 5000), 413},
	}
	for _, tt := range refused {
		if code, text := post(t, h, tt.target, "message/rfc822", []byte(tt.body), tt.header); code != tt.status {
			t.Errorf("%s: %d %q, want %d", tt.name, code, text, tt.status)
		}
	}
	if got := stored(t, d); len(got) != 0 {
		t.Fatalf("stored after refusals: %q", got)
	}
	for _, header := range []http.Header{{"Authorization": {"Bearer s3cret"}}, basic("hook", "pw")} {
		if code, text := post(t, h, "/raw", "message/rfc822", []byte(message), header); code != 200 {
			t.Errorf("authenticated post: %d %q", code, text)
		}
	}
	if code, _ := post(t, h, "/raw?secret=s3cret", "", []byte(message), http.Header{"X-Envelope-To": {"support@acme.example, help@acme.example"}, "X-Envelope-From": {"<ann@cust.example>"}}); code != 200 {
		t.Errorf("query secret: %d", code)
	}
	if got := stored(t, d); !slices.Equal(got, []string{"inbound w1@cust.example"}) {
		t.Errorf("stored %q, want the message once", got)
	}
	envs := d.Envelopes()
	if last := envs[len(envs)-1]; last.Source != "webhook:raw" || last.Sender != "ann@cust.example" || !slices.Equal(last.Recipients, []string{"support@acme.example", "help@acme.example"}) {
		t.Errorf("envelope %+v", last)
	}
	r := httptest.NewRequest(http.MethodGet, "/raw?secret=s3cret", nil)
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	if w.Code != 405 {
		t.Errorf("GET: %d", w.Code)
	}
}

func TestEndpointsAnswer503UntilCommittedAndRefuseTooLargeMessages(t *testing.T) {
	e, _ := NewRaw(Options{Secret: "s"})
	auth := http.Header{"Authorization": {"Bearer s"}}
	if code, text := post(t, e.Handler(failing{errors.New("store: gone")}), "/", "", []byte(message), auth); code != 503 || text != "message not stored, try again later" {
		t.Errorf("store failure: %d %q", code, text)
	}
	if code, _ := post(t, e.Handler(failing{service.Permanent(errors.New("no"))}), "/", "", []byte(message), auth); code != 400 {
		t.Errorf("permanent failure: %d", code)
	}
	d := deliverer(t)
	d.Parser = &mail.Parser{MaxSize: 50}
	if code, _ := post(t, e.Handler(d), "/", "", []byte(message), auth); code != 413 {
		t.Errorf("over the parser's limit: %d", code)
	}
	p, _ := NewPostmark(Options{Secret: "s"})
	body, _ := json.Marshal(map[string]string{"RawEmail": message})
	if code, _ := post(t, p.Handler(d), "/", "application/json", body, auth); code != 403 {
		t.Errorf("postmark, over the parser's limit: %d, want 403 (no retries)", code)
	}
	if got := stored(t, d); len(got) != 0 {
		t.Errorf("stored %q", got)
	}
}

func TestPostmarkReadsRawEmail(t *testing.T) {
	d := deliverer(t)
	e, err := NewPostmark(Options{Username: "postmark", Password: "pw"})
	if err != nil {
		t.Fatal(err)
	}
	h := e.Handler(d)
	auth := func() http.Header {
		r := httptest.NewRequest("POST", "/", nil)
		r.SetBasicAuth("postmark", "pw")
		return r.Header
	}
	full, _ := json.Marshal(map[string]any{"From": "ann@cust.example", "OriginalRecipient": "support@acme.example", "MessageID": "22c74902", "TextBody": "Where is it?", "RawEmail": message})
	noRaw, _ := json.Marshal(map[string]any{"From": "ann@cust.example", "TextBody": "Where is it?"})
	tests := []struct {
		name, contentType string
		body              []byte
		header            http.Header
		status            int
		text              string
	}{
		{"no credentials", "application/json", full, nil, 401, "unauthorized"},
		{"no RawEmail", "application/json", noRaw, auth(), 403, `no RawEmail: enable "Include raw email content in JSON payload" on the Postmark inbound stream`},
		{"not JSON", "application/json", []byte("From: x"), auth(), 403, "not Postmark's inbound JSON: invalid character 'F' looking for beginning of value"},
		{"another content type", "text/plain", full, auth(), 403, `Content-Type "text/plain": want application/json`},
		{"the inbound JSON", "application/json; charset=utf-8", full, auth(), 200, "ok"},
	}
	for _, tt := range tests {
		if code, text := post(t, h, "/postmark", tt.contentType, tt.body, tt.header); code != tt.status || text != tt.text {
			t.Errorf("%s: %d %q, want %d %q", tt.name, code, text, tt.status, tt.text)
		}
	}
	if got := stored(t, d); !slices.Equal(got, []string{"inbound w1@cust.example"}) {
		t.Errorf("stored %q", got)
	}
	if envs := d.Envelopes(); len(envs) != 1 || envs[0].Source != "webhook:postmark" || !slices.Equal(envs[0].Recipients, []string{"support@acme.example"}) {
		t.Errorf("envelopes %+v", envs)
	}
}

// form builds a multipart/form-data body of fields (and, for names in files, file parts).
func form(t testing.TB, fields [][2]string, files map[string]bool) (string, []byte) {
	t.Helper()
	var b bytes.Buffer
	w := multipart.NewWriter(&b)
	for _, f := range fields {
		if files[f[0]] {
			fw, _ := w.CreateFormFile(f[0], f[0]+".eml")
			fw.Write([]byte(f[1]))
		} else {
			w.WriteField(f[0], f[1])
		}
	}
	w.Close()
	return w.FormDataContentType(), b.Bytes()
}

func TestSendGridReadsTheRawEmailField(t *testing.T) {
	d := deliverer(t)
	e, err := NewSendGrid(Options{Secret: "s3cret"})
	if err != nil {
		t.Fatal(err)
	}
	h := e.Handler(d)
	envelope := `{"to":["support@acme.example"],"from":""}`
	ct, body := form(t, [][2]string{{"envelope", envelope}, {"email", message}, {"spam_score", "0.1"}}, nil)
	if code, _ := post(t, h, "/sendgrid", ct, body, nil); code != 401 {
		t.Errorf("no secret: %d", code)
	}
	ctParsed, parsed := form(t, [][2]string{{"envelope", envelope}, {"text", "Where is it?"}}, nil)
	if code, text := post(t, h, "/sendgrid?secret=s3cret", ctParsed, parsed, nil); code != 400 ||
		text != `no email field: check "POST the raw, full MIME message" in SendGrid's Inbound Parse settings` {
		t.Errorf("parsed mode: %d %q", code, text)
	}
	ctBad, bad := form(t, [][2]string{{"envelope", "{"}, {"email", message}}, nil)
	if code, _ := post(t, h, "/sendgrid?secret=s3cret", ctBad, bad, nil); code != 400 {
		t.Errorf("a broken envelope: %d", code)
	}
	if code, text := post(t, h, "/sendgrid?secret=s3cret", ct, body, nil); code != 200 {
		t.Fatalf("raw mode: %d %q", code, text)
	}
	ctFile, file := form(t, [][2]string{{"envelope", envelope}, {"email", message}}, map[string]bool{"email": true})
	if code, text := post(t, h, "/sendgrid?secret=s3cret", ctFile, file, nil); code != 200 {
		t.Fatalf("email as a file part: %d %q", code, text)
	}
	if got := stored(t, d); !slices.Equal(got, []string{"inbound w1@cust.example"}) {
		t.Errorf("stored %q", got)
	}
	env := d.Envelopes()[0]
	if env.Source != "webhook:sendgrid" || env.Sender != "" || !slices.Equal(env.Recipients, []string{"support@acme.example"}) {
		t.Errorf("envelope %+v", env)
	}
	// The null sender of the envelope shows as a Return-Path, so a bounce is not answered.
	var reasons []string
	if err := d.Store.DB().Select(&reasons, `SELECT not_to_answer FROM messages WHERE mailbox = 'support'`); err != nil || !slices.Equal(reasons, []string{"null-sender: Return-Path: <>"}) {
		t.Errorf("not-to-answer %q, %v; want the null sender's reason", reasons, err)
	}
}

func TestMailgunChecksTheSignatureAndItsAge(t *testing.T) {
	d := deliverer(t)
	e, err := NewMailgun(MailgunOptions{SigningKey: "key-123"})
	if err != nil {
		t.Fatal(err)
	}
	now := time.Unix(1772445600, 0)
	e.now = func() time.Time { return now }
	h := e.Handler(d)
	sign := func(key string, ts time.Time, token string) [][2]string {
		mac := hmac.New(sha256.New, []byte(key))
		stamp := strconv.FormatInt(ts.Unix(), 10)
		mac.Write([]byte(stamp + token))
		return [][2]string{{"timestamp", stamp}, {"token", token}, {"signature", hex.EncodeToString(mac.Sum(nil))}}
	}
	fields := func(sig [][2]string, more ...[2]string) [][2]string {
		return append(append(sig, [2]string{"recipient", "support@acme.example"}, [2]string{"sender", "ann@cust.example"}), more...)
	}
	token := strings.Repeat("t", 50)
	tests := []struct {
		name   string
		fields [][2]string
		status int
	}{
		{"no signature", fields(nil, [2]string{"body-mime", message}), 401},
		{"signed with another key", fields(sign("key-999", now, token), [2]string{"body-mime", message}), 401},
		{"a timestamp 6 minutes old", fields(sign("key-123", now.Add(-6*time.Minute), token), [2]string{"body-mime", message}), 401},
		{"a timestamp 6 minutes ahead", fields(sign("key-123", now.Add(6*time.Minute), token), [2]string{"body-mime", message}), 401},
		{"a parsed post (no body-mime)", fields(sign("key-123", now, token), [2]string{"body-plain", "Where is it?"}), 406},
		{"signed, 4 minutes old", fields(sign("key-123", now.Add(-4*time.Minute), token), [2]string{"body-mime", message}), 200},
	}
	for _, tt := range tests {
		ct, body := form(t, tt.fields, nil)
		if code, text := post(t, h, "/mailgun", ct, body, nil); code != tt.status {
			t.Errorf("%s: %d %q, want %d", tt.name, code, text, tt.status)
		}
	}
	// The URL-encoded form Mailgun also posts.
	v := url.Values{}
	for _, f := range fields(sign("key-123", now, token), [2]string{"body-mime", message}) {
		v.Add(f[0], f[1])
	}
	if code, text := post(t, h, "/mailgun", "application/x-www-form-urlencoded", []byte(v.Encode()), nil); code != 200 {
		t.Errorf("URL-encoded: %d %q", code, text)
	}
	if got := stored(t, d); !slices.Equal(got, []string{"inbound w1@cust.example"}) {
		t.Errorf("stored %q", got)
	}
	env := d.Envelopes()[0]
	if env.Source != "webhook:mailgun" || env.Sender != "ann@cust.example" || !slices.Equal(env.Recipients, []string{"support@acme.example"}) {
		t.Errorf("envelope %+v", env)
	}
}

func TestServerServesEndpointsAtPaths(t *testing.T) {
	raw, _ := NewRaw(Options{Secret: "s"})
	pm, _ := NewPostmark(Options{Secret: "s"})
	s, err := NewServer(":0", map[string]*Endpoint{"/raw": raw, "/postmark": pm})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(s.Addr().String(), "127.0.0.1:") {
		t.Errorf("bound to %s, want 127.0.0.1", s.Addr())
	}
	d := deliverer(t)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Receive(ctx, d) }()
	req, _ := http.NewRequest("POST", "http://"+s.Addr().String()+"/raw?secret=s", strings.NewReader(message))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Errorf("POST /raw: %d", resp.StatusCode)
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("Receive: %v", err)
	}
	if got := stored(t, d); len(got) != 1 {
		t.Errorf("stored %q", got)
	}
	if _, err := NewServer(":0", nil); err == nil {
		t.Error("a server without endpoints")
	}
	if _, err := NewServer(":0", map[string]*Endpoint{"raw": raw}); err == nil {
		t.Error("a path without /")
	}
}

// counting is a Deliverer that stores nothing and counts its calls.
type counting struct{ n int }

func (c *counting) Deliver(_ context.Context, r io.Reader, _ service.Envelope) (*mail.Ingested, error) {
	io.Copy(io.Discard, r)
	c.n++
	return &mail.Ingested{}, nil
}
func (*counting) Accepts(string) *runtime.Persona { return nil }

// FuzzEndpoints posts any body with any content type to each endpoint, authenticated. For any
// input: no panic, an answer of 200 exactly when the message was delivered, and otherwise one
// of the documented refusals (never a 5xx: the Deliverer did not fail). Run it longer with
//
//	go test ./runtime/transport/webhook -run '^$' -fuzz FuzzEndpoints -fuzztime 5m
func FuzzEndpoints(f *testing.F) {
	ct, body := form(f, [][2]string{{"envelope", `{"to":["a@b"]}`}, {"email", message}}, nil)
	f.Add(uint8(2), ct, body)
	pm, _ := json.Marshal(map[string]string{"RawEmail": message, "OriginalRecipient": "a@b"})
	f.Add(uint8(1), "application/json", pm)
	f.Add(uint8(0), "message/rfc822", []byte(message))
	f.Add(uint8(3), "application/x-www-form-urlencoded", []byte("body-mime=x&timestamp=1&token=t&signature=00"))
	f.Add(uint8(2), "multipart/form-data; boundary=x", []byte("--x\r\nContent-Disposition: form-data; name=\"email\"\r\n\r\n"))
	raw, _ := NewRaw(Options{Secret: "s", MaxBodyBytes: 1 << 16})
	pmEnd, _ := NewPostmark(Options{Secret: "s", MaxBodyBytes: 1 << 16})
	sg, _ := NewSendGrid(Options{Secret: "s", MaxBodyBytes: 1 << 16})
	mg, _ := NewMailgun(MailgunOptions{SigningKey: "k", Options: Options{MaxBodyBytes: 1 << 16}})
	endpoints := []*Endpoint{raw, pmEnd, sg, mg}
	for _, e := range endpoints {
		e.opts.Logger = slogDiscard
	}
	f.Fuzz(func(t *testing.T, which uint8, contentType string, body []byte) {
		e := endpoints[int(which)%len(endpoints)]
		d := &counting{}
		code, _ := post(t, e.Handler(d), "/?secret=s", contentType, body, nil)
		allowed := map[int]bool{200: true, 400: true, 403: true, 406: true, 413: true}
		if e.kind == "mailgun" {
			allowed[401] = true // a signature that does not verify
		}
		if !allowed[code] {
			t.Errorf("%s endpoint answered %d", e.kind, code)
		}
		if (code == 200) != (d.n == 1) || d.n > 1 {
			t.Errorf("%s endpoint answered %d after %d deliveries", e.kind, code, d.n)
		}
	})
}
