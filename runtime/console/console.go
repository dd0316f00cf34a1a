package console

import (
	"bytes"
	"embed"
	"errors"
	"fmt"
	"html/template"
	"io/fs"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/personagen/personagen/runtime/store"
)

// ContentSecurityPolicy is the Content-Security-Policy of every response: nothing runs (no
// script of any origin, no plugin, no frame), styles come only from the console's own
// stylesheet, forms post only to the console, no other page may frame it, and nothing else
// loads (images, fonts, media, connections: default-src 'none'). Email content is escaped
// besides; the policy is the second wall.
const ContentSecurityPolicy = "default-src 'none'; style-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"

//go:embed templates/*.html
var templateFS embed.FS

//go:embed static
var staticFS embed.FS

// Config is what New needs.
type Config struct {
	// Store is the store the console reads and acts on (required).
	Store *store.Store
	// Auth holds the credentials every request must present (required; AuthFromEnv reads
	// them from the environment).
	Auth Auth
	// Prefix is the path the host mounts the handler under, without a trailing slash ("" for
	// the root, "/console"); the handler expects requests with the prefix still on their path.
	Prefix string
	// Logger receives a record of every action (who, what, why, the outcome). nil =
	// slog.Default().
	Logger *slog.Logger
	// Now is the clock of the overview's charts; nil = the store's (store.Store.Now).
	Now func() time.Time
}

// Console is the web console: an http.Handler serving the pages and actions of a store. Create
// it with New; mount it where the host wants (nothing listens unless the host serves it).
type Console struct {
	st     *store.Store
	auth   Auth
	prefix string
	log    *slog.Logger
	now    func() time.Time
	pages  map[string]*template.Template
	mux    *http.ServeMux
	static http.Handler
	cop    *http.CrossOriginProtection
}

// New checks cfg and returns the console. Errors: no Store; ErrNoAuth (wrapped) when cfg.Auth
// holds no credentials (the console never serves without authentication); a bad Auth (a user
// without a password, a token or password shorter than 12 characters); a Prefix that does not
// start with "/" or ends with one.
func New(cfg Config) (*Console, error) {
	if cfg.Store == nil {
		return nil, errors.New("console: Config.Store is nil")
	}
	if err := cfg.Auth.check(); err != nil {
		return nil, err
	}
	if cfg.Prefix != "" && (!strings.HasPrefix(cfg.Prefix, "/") || strings.HasSuffix(cfg.Prefix, "/")) {
		return nil, fmt.Errorf("console: Config.Prefix %q must start with / and not end with one (\"/console\")", cfg.Prefix)
	}
	c := &Console{st: cfg.Store, auth: cfg.Auth, prefix: cfg.Prefix, log: cfg.Logger, now: cfg.Now,
		cop: http.NewCrossOriginProtection()}
	if c.log == nil {
		c.log = slog.Default()
	}
	if c.now == nil {
		c.now = cfg.Store.Now
	}
	pages, err := parseTemplates(c.funcs())
	if err != nil {
		return nil, err
	}
	c.pages = pages
	sub, _ := fs.Sub(staticFS, "static")
	c.static = http.StripPrefix(c.prefix+"/static/", http.FileServerFS(sub))
	c.mux = http.NewServeMux()
	for path, h := range map[string]http.HandlerFunc{
		"GET /{$}":                c.overview,
		"GET /threads":            c.threads,
		"GET /thread":             c.thread,
		"GET /runs":               c.runs,
		"GET /run":                c.run,
		"GET /fires":              c.fires,
		"GET /outbox":             c.outbox,
		"GET /actions":            c.actions,
		"GET /approvals":          c.approvals,
		"POST /run/retry":         c.postRetry,
		"POST /run/abandon":       c.postAbandon,
		"POST /fires/run":         c.postFireRun,
		"POST /outbox/resend":     c.postResend,
		"POST /approvals/approve": c.postApprove,
		"POST /approvals/deny":    c.postDeny,
	} {
		method, p, _ := strings.Cut(path, " ")
		c.mux.HandleFunc(method+" "+c.prefix+p, h)
	}
	c.mux.Handle("GET "+c.prefix+"/static/", c.static)
	return c, nil
}

// ServeHTTP serves the console: every request must authenticate (401 with a Basic challenge
// otherwise); every POST must come from the console's own pages (403 for a cross-origin
// request or a missing or wrong CSRF token); every response carries ContentSecurityPolicy and
// the other headers of securityHeaders.
func (c *Console) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	securityHeaders(w.Header())
	who, ok := c.auth.identify(r)
	if !ok {
		w.Header().Set("WWW-Authenticate", `Basic realm="personagen console", charset="UTF-8"`)
		http.Error(w, "401 unauthorized: the console needs credentials", http.StatusUnauthorized)
		return
	}
	if r.Method == http.MethodPost {
		if err := c.cop.Check(r); err != nil {
			http.Error(w, "403 forbidden: a cross-origin request", http.StatusForbidden)
			return
		}
		r.Body = http.MaxBytesReader(w, r.Body, 64<<10)
		if !c.auth.validCSRF(who, r.PostFormValue("csrf")) {
			http.Error(w, "403 forbidden: the form's CSRF token is missing or wrong; reload the page", http.StatusForbidden)
			return
		}
	}
	c.mux.ServeHTTP(w, r.WithContext(withWho(r.Context(), who)))
}

// securityHeaders sets the headers every response carries.
func securityHeaders(h http.Header) {
	h.Set("Content-Security-Policy", ContentSecurityPolicy)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("X-Frame-Options", "DENY")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("Cross-Origin-Opener-Policy", "same-origin")
	h.Set("Cross-Origin-Resource-Policy", "same-origin")
	h.Set("Cache-Control", "no-store")
}

// render writes page with data, or a 500 naming the template error.
func (c *Console) render(w http.ResponseWriter, r *http.Request, status int, page string, data any) {
	t := c.pages[page]
	var b bytes.Buffer
	if err := t.ExecuteTemplate(&b, "layout", pageData{c: c, r: r, Page: page, Data: data}); err != nil {
		c.log.Error("console: rendering a page failed", "page", page, "error", err)
		http.Error(w, "500 internal error: the page could not be rendered", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	w.Write(b.Bytes())
}

// fail renders the error page: 404 for what the store does not hold, 400 for a bad request
// (the store's ErrInvalid), 409 for a refused action, 500 otherwise.
func (c *Console) fail(w http.ResponseWriter, r *http.Request, err error) {
	status := http.StatusInternalServerError
	switch {
	case errors.Is(err, ErrNotFound), errors.Is(err, store.ErrRunNotFound), errors.Is(err, store.ErrMessageNotFound):
		status = http.StatusNotFound
	case errors.Is(err, store.ErrInvalid), errors.Is(err, errBadRequest):
		status = http.StatusBadRequest
	case errors.Is(err, ErrRefused):
		status = http.StatusConflict
	}
	if status == http.StatusInternalServerError {
		c.log.Error("console: a request failed", "path", r.URL.Path, "error", store.RedactDSN(err.Error()))
	}
	c.render(w, r, status, "error", map[string]any{"Status": status, "Text": http.StatusText(status), "Err": err.Error()})
}

// errBadRequest marks a request the console cannot read (a missing or malformed parameter).
var errBadRequest = errors.New("bad request")

// pageData is what every template gets: the page's own data and what the layout needs.
type pageData struct {
	c    *Console
	r    *http.Request
	Page string
	Data any
}

// CSRF is the token the page's forms carry.
func (p pageData) CSRF() string { return p.c.auth.csrfToken(who(p.r.Context())) }

// Who is who the request authenticated as.
func (p pageData) Who() string { return who(p.r.Context()) }

// Prefix is the path the console is mounted under.
func (p pageData) Prefix() string { return p.c.prefix }

// Flash is the message an action left for the page it redirected to ("" for none).
func (p pageData) Flash() string { return p.r.URL.Query().Get("done") }
