package webhook_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"

	"github.com/personagen/personagen/runtime"
	"github.com/personagen/personagen/runtime/mail"
	"github.com/personagen/personagen/runtime/service"
	"github.com/personagen/personagen/runtime/transport/webhook"
)

type printDeliverer struct{}

func (printDeliverer) Deliver(_ context.Context, r io.Reader, env service.Envelope) (*mail.Ingested, error) {
	raw, _ := io.ReadAll(r)
	fmt.Printf("%s: %d bytes for %q\n", env.Source, len(raw), env.Recipients)
	return &mail.Ingested{}, nil
}

func (printDeliverer) Accepts(string) *runtime.Persona { return nil }

// A raw-MIME endpoint mounted on the host's own mux: only authenticated posts are delivered.
func ExampleNewRaw() {
	e, err := webhook.NewRaw(webhook.Options{Secret: "s3cret", Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		panic(err)
	}
	mux := http.NewServeMux()
	mux.Handle("/inbound", e.Handler(printDeliverer{}))
	srv := httptest.NewServer(mux)
	defer srv.Close()

	msg := "From: ann@cust.example\r\nTo: support@acme.example\r\nSubject: hi\r\n\r\nHello.\r\n"
	for _, auth := range []string{"", "Bearer s3cret"} {
		req, _ := http.NewRequest(http.MethodPost, srv.URL+"/inbound", strings.NewReader(msg))
		req.Header.Set("Content-Type", "message/rfc822")
		req.Header.Set("X-Envelope-To", "support@acme.example")
		if auth != "" {
			req.Header.Set("Authorization", auth)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			panic(err)
		}
		resp.Body.Close()
		fmt.Println(resp.StatusCode)
	}
	// Output:
	// 401
	// webhook:raw: 73 bytes for ["support@acme.example"]
	// 200
}
