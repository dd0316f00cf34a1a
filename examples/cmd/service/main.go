// Command service runs the example personas (examples/*.persona.yaml, generated into
// generated/) as a long-lived service on runtime/service: it answers the mail it receives,
// sends the replies, runs the research assistant's daily digest, and stops cleanly on SIGINT or
// SIGTERM (a second signal stops at once). The model is a deterministic offline one (see
// model.go), so it needs no API key.
//
//	go run ./examples/cmd/service -dsn personagen.db -maildir /tmp/in -sent /tmp/out -health 127.0.0.1:8080
//
// Drop .eml files into -maildir (write them elsewhere and rename them in): each is ingested and
// moved into -maildir/.done, and its reply appears in -sent as <Message-ID>.eml. Behind a mail
// server, -lmtp, -smtp, -imap and -webhook take mail in and -relay (with -dkim-*) sends the
// replies out (docs/mail-transports.md). -health serves
// /healthz, /readyz and /metrics; -console serves the web console (runtime/console), with the
// credentials of PERSONAGEN_CONSOLE_TOKEN or PERSONAGEN_CONSOLE_USER and _PASSWORD. Without -dsn the store is an in-memory SQLite database, gone
// when the process ends; several processes on one -dsn (a SQLite file or MySQL) share the work.
//
// Flags for watching the service at work: -model-latency and -tool-latency slow every model
// call and every tool call (a tool does its work, then waits), -model-outage N fails the first N
// model calls as an overloaded provider does, -tickets FILE records every escalation ticket the
// support persona opens (a side effect that must happen at most once per call).
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"time"

	"github.com/personagen/personagen/examples"
	"github.com/personagen/personagen/examples/host"
	"github.com/personagen/personagen/generated"
	"github.com/personagen/personagen/runtime"
	"github.com/personagen/personagen/runtime/chat"
	"github.com/personagen/personagen/runtime/console"
	"github.com/personagen/personagen/runtime/service"
	"github.com/personagen/personagen/runtime/store"
)

// config is the command line.
type config struct {
	transports
	dsn, health, console, holder, tickets, logFormat string
	modelLatency, toolLatency, grace                 time.Duration
	outage                                           int64
	maxConns                                         int
	noSchedule                                       bool
}

func main() {
	var c config
	flag.StringVar(&c.dsn, "dsn", os.Getenv("PERSONAGEN_DSN"), "store `DSN`: a SQLite file, sqlite:PATH, or mysql://… (default $PERSONAGEN_DSN, else in memory)")
	flag.IntVar(&c.maxConns, "max-conns", store.DefaultMaxOpenConns, "open at most `N` connections to a MySQL / MariaDB -dsn (at least 2 whatever the database; SQLite ignores the bound)")
	flag.StringVar(&c.maildir, "maildir", "", "receive the .eml files dropped into `DIR`")
	flag.StringVar(&c.sent, "sent", "", "send each reply by writing it to `DIR`/<Message-ID>.eml")
	flag.StringVar(&c.smtp, "smtp", "", "receive mail over SMTP on `ADDR` (e.g. 127.0.0.1:2525)")
	flag.StringVar(&c.lmtp, "lmtp", "", "receive mail over LMTP on `ADDR` (host:port or unix:/path; what Postfix delivers to)")
	flag.StringVar(&c.imap, "imap", "", "read mail from an IMAP mailbox: imaps://USER:PASSWORD@HOST/MAILBOX (`URL`)")
	flag.StringVar(&c.webhook, "webhook", "", "serve the webhooks /raw, /postmark, /sendgrid, /mailgun on `ADDR` (secrets from the environment)")
	flag.StringVar(&c.relay, "relay", "", "send replies through the SMTP relay at `HOST:PORT` (user and password from $PERSONAGEN_RELAY_USER, $PERSONAGEN_RELAY_PASSWORD)")
	flag.StringVar(&c.relayTLS, "relay-tls", "starttls", "how -relay is secured: starttls, tls, opportunistic or none")
	flag.StringVar(&c.dkimDomain, "dkim-domain", "", "DKIM-sign every reply for `DOMAIN` (with -dkim-selector and -dkim-key)")
	flag.StringVar(&c.dkimSelector, "dkim-selector", "", "the DKIM `SELECTOR` its public key is published under")
	flag.StringVar(&c.dkimKeyFile, "dkim-key", "", "the DKIM private key, RSA or Ed25519, PEM (`FILE`)")
	flag.StringVar(&c.health, "health", "", "serve /healthz, /readyz and /metrics on `ADDR` (e.g. 127.0.0.1:8080)")
	flag.StringVar(&c.console, "console", "", "serve the web console on `ADDR` (e.g. 127.0.0.1:8081; credentials from $"+console.EnvToken+
		", or $"+console.EnvUser+" and $"+console.EnvPassword+")")
	flag.StringVar(&c.holder, "holder", os.Getenv("PERSONAGEN_WORKER"), "this worker's name, kept across restarts (default $PERSONAGEN_WORKER, else host/pid/random)")
	flag.StringVar(&c.tickets, "tickets", "", "append every escalation ticket to `FILE`")
	flag.StringVar(&c.logFormat, "log", "text", "log format: text or json")
	flag.DurationVar(&c.modelLatency, "model-latency", 0, "delay every model call by `D`")
	flag.DurationVar(&c.toolLatency, "tool-latency", 0, "delay every tool call by `D`, after it did its work")
	flag.DurationVar(&c.grace, "grace", service.DefaultShutdownGrace, "on a stop, let runs in flight finish for `D`")
	flag.Int64Var(&c.outage, "model-outage", 0, "fail the first `N` model calls (status 529, transient)")
	flag.BoolVar(&c.noSchedule, "no-schedule", false, "fire no responsibilities from this process (another replica does)")
	flag.Parse()
	log := slog.New(slog.NewTextHandler(os.Stderr, nil))
	if c.logFormat == "json" {
		log = slog.New(slog.NewJSONHandler(os.Stderr, nil))
	}
	if err := run(c, log); err != nil {
		log.Error("service failed", "error", err)
		os.Exit(1)
	}
}

// run is the host's whole main: a store, the personas, the models, the transports, the service.
func run(c config, log *slog.Logger) error {
	ctx := context.Background()
	st, err := store.Open(ctx, dsnOrMemory(c.dsn, log), store.WithMaxOpenConns(c.maxConns))
	if err != nil {
		return err
	}
	defer st.Close()
	if err := st.Migrate(ctx); err != nil {
		return err
	}
	env, err := host.ExampleEnv(ctx)
	if err != nil {
		return err
	}
	env.TicketFile = c.tickets
	personas, err := generated.Personas(env, runtime.Options{Files: runtime.FSFiles(examples.Prompts), History: st})
	if err != nil {
		return err
	}
	slowTools(personas, c.toolLatency)
	receivers, sender, err := c.mail(st)
	if err != nil {
		return err
	}
	model := &deskModel{latency: c.modelLatency, outage: c.outage}
	svc, err := service.New(service.Config{Store: st, Personas: personas, Holder: c.holder, Logger: log, ShutdownGrace: c.grace, NoSchedule: c.noSchedule,
		Models:    service.Models{ByProvider: map[string]chat.Model{"anthropic": model, "openai": model, "openai-responses": model}},
		Receivers: receivers, Sender: sender})
	if err != nil {
		return err
	}
	ctx, stop := service.NotifyContext(ctx, svc.Kill)
	defer stop()
	closeHealth, err := serve("-health", c.health, svc.Handler())
	if err != nil {
		return err
	}
	defer closeHealth()
	if c.console != "" {
		auth, err := console.AuthFromEnv()
		if err != nil {
			return fmt.Errorf("-console: %w", err)
		}
		h, err := console.New(console.Config{Store: st, Auth: auth, Logger: log})
		if err != nil {
			return fmt.Errorf("-console: %w", err)
		}
		closeConsole, err := serve("-console", c.console, h)
		if err != nil {
			return err
		}
		defer closeConsole()
	}
	return svc.Run(ctx)
}

// dsnOrMemory is dsn, or an in-memory database (with a warning) when it is empty.
func dsnOrMemory(dsn string, log *slog.Logger) string {
	if dsn != "" {
		return dsn
	}
	log.Warn("no -dsn: the store is in memory and is gone when the process ends")
	return ":memory:"
}

// serve serves h on addr (the value of the flag name) until the returned func is called (""
// serves nothing).
func serve(name, addr string, h http.Handler) (stop func(), err error) {
	if addr == "" {
		return func() {}, nil
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			slog.Error("endpoint stopped", "flag", name, "error", err)
		}
	}()
	return func() { srv.Close() }, nil
}

// slowTools makes every tool of personas wait d after doing its work.
func slowTools(personas []*runtime.Persona, d time.Duration) {
	if d <= 0 {
		return
	}
	for _, p := range personas {
		for i, t := range p.Tools {
			p.Tools[i] = slowTool{Tool: t, d: d}
		}
	}
}

// slowTool is a tool that waits d after doing its work.
type slowTool struct {
	runtime.Tool
	d time.Duration
}

func (t slowTool) Call(ctx context.Context, inv *runtime.Invocation, input json.RawMessage) (string, error) {
	out, err := t.Tool.Call(ctx, inv, input)
	select {
	case <-time.After(t.d):
	case <-ctx.Done():
	}
	return out, err
}
