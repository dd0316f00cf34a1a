package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/personagen/personagen/runtime/console"
)

func init() {
	register(command{name: "console", summary: "serve the web console of a store (127.0.0.1 by default; credentials from the environment)", run: runConsole})
}

// runConsole serves the web console until ctx ends (Ctrl-C).
func runConsole(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("console", "", stderr)
	sf := addStoreFlags(fs, false)
	listen := fs.String("listen", "127.0.0.1:8081", "address to serve on; keep it on 127.0.0.1 behind a TLS proxy")
	prefix := fs.String("prefix", "", "path to serve under (/console), for a proxy that forwards a path")
	if code, ok := parseFlags(fs, args); !ok {
		return code
	}
	if !wantArgs(fs, "console", 0, stderr) {
		return exitUsage
	}
	auth, err := console.AuthFromEnv()
	if err != nil {
		fmt.Fprintf(stderr, "personagen console: %v\n", err)
		return exitUsage
	}
	st, code := sf.open(ctx, "console", stderr)
	if st == nil {
		return code
	}
	defer st.Close()
	c, err := console.New(console.Config{Store: st, Auth: auth, Prefix: *prefix, Logger: slog.New(slog.NewTextHandler(stderr, nil))})
	if err != nil {
		fmt.Fprintf(stderr, "personagen console: %v\n", err)
		return exitUsage
	}
	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		fmt.Fprintf(stderr, "personagen console: %v\n", err)
		return exitFail
	}
	if host, _, _ := net.SplitHostPort(ln.Addr().String()); !net.ParseIP(host).IsLoopback() {
		fmt.Fprintf(stderr, "personagen console: warning: serving on %s, which is not a loopback address: put it behind TLS\n", ln.Addr())
	}
	srv := &http.Server{Handler: c, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		<-ctx.Done()
		shut, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		srv.Shutdown(shut)
	}()
	fmt.Fprintf(stdout, "console on http://%s%s/\n", ln.Addr(), *prefix)
	if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
		fmt.Fprintf(stderr, "personagen console: %v\n", err)
		return exitFail
	}
	return exitOK
}
