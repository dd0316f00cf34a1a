package service

import (
	"context"
	"os"
	"os/signal"
	"syscall"
)

// NotifyContext returns a context that ends at the first SIGINT or SIGTERM, for Run: the
// service then stops gracefully. A second signal calls kill (Service.Kill) to stop at once.
// stop releases the signal handlers.
func NotifyContext(parent context.Context, kill func()) (ctx context.Context, stop func()) {
	ctx, cancel := context.WithCancel(parent)
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	done := make(chan struct{})
	go func() {
		select {
		case <-sigs:
			cancel()
		case <-done:
			return
		}
		select {
		case <-sigs:
			kill()
		case <-done:
		}
	}()
	return ctx, func() {
		signal.Stop(sigs)
		close(done)
		cancel()
	}
}
