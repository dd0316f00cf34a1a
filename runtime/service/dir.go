package service

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/personagen/personagen/runtime/mail"
)

// Dir is a Receiver that drains a directory of .eml files, for local use and tests: each pass
// delivers every *.eml file of Path (not its subdirectories; names starting with "." are skipped),
// in name order, and moves a delivered file into Path/.done. A file that can never be delivered
// (larger than the parser's limit) moves into Path/.failed, with the reason in a file of the same
// name plus ".error"; any other error leaves the file where it is for the next pass. Path, .done
// and .failed are created (mode 0750, parents too) when missing: when Receive starts and at every
// /readyz of the service; a Path that cannot be created or is not a directory makes /readyz answer
// 503 with the reason. A file is delivered before it is moved, so a crash between the two delivers
// it again on the next pass, which stores nothing (ingestion is idempotent by Message-ID). Writers
// must put a file in place whole — write it under another name (or elsewhere on the same file
// system) and rename it to *.eml — as a maildir's tmp/new convention does.
type Dir struct {
	// Path is the directory.
	Path string
	// Interval is the time between passes (default DefaultPollInterval).
	Interval time.Duration
}

// Receive drains the directory every Interval until ctx ends. Each pass first creates Path and
// its .done and .failed directories when missing; while it cannot, the pass delivers nothing
// (/readyz answers 503 with the reason) and the next pass tries again, so a directory fixed by
// hand is drained without a restart. It returns nil when ctx ends.
func (d Dir) Receive(ctx context.Context, to Deliverer) error {
	every := d.Interval
	if every <= 0 {
		every = DefaultPollInterval
	}
	for {
		if d.checkDir() == nil { // unusable meanwhile: /readyz says why, and the next pass tries again
			d.pass(ctx, to)
		}
		t := time.NewTimer(every)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil
		case <-t.C:
		}
	}
}

// dirMode is the mode of the directories Dir and DirSender create.
const dirMode = 0o750

// dirChecker is implemented by this package's transports that work in a directory (Dir,
// DirSender): checkDir creates what is missing and says what is wrong when it cannot. The
// service checks its transports when Run starts and at every /readyz.
type dirChecker interface {
	checkDir() error
}

// checkDir creates Path, Path/.done and Path/.failed when missing. Its error names the
// directory and what to do.
func (d Dir) checkDir() error {
	for _, dir := range []string{d.Path, filepath.Join(d.Path, ".done"), filepath.Join(d.Path, ".failed")} {
		if err := makeDir(dir, "Dir.Path"); err != nil {
			return err
		}
	}
	return nil
}

// makeDir creates dir (and its parents) when missing; field names the setting that chose it,
// for the error.
func makeDir(dir, field string) error {
	if dir == "" {
		return fmt.Errorf("service: %s is empty (name a directory)", field)
	}
	if err := os.MkdirAll(dir, dirMode); err != nil {
		return fmt.Errorf("service: directory %q cannot be created or used: %w (make it a directory this process can write, or set %s to one)", dir, err, field)
	}
	return nil
}

// pass delivers the files in the directory now.
func (d Dir) pass(ctx context.Context, to Deliverer) {
	entries, err := os.ReadDir(d.Path)
	if err != nil {
		return
	}
	names := make([]string, 0, len(entries))
	for _, e := range entries {
		if n := e.Name(); e.Type().IsRegular() && strings.HasSuffix(n, ".eml") && !strings.HasPrefix(n, ".") {
			names = append(names, n)
		}
	}
	slices.Sort(names)
	for _, n := range names {
		if ctx.Err() != nil {
			return
		}
		path := filepath.Join(d.Path, n)
		f, err := os.Open(path)
		if err != nil {
			continue
		}
		_, err = to.Deliver(ctx, f, Envelope{Source: "dir:" + path})
		f.Close()
		switch {
		case err == nil:
			os.Rename(path, filepath.Join(d.Path, ".done", n))
		case errors.Is(err, mail.ErrTooLarge):
			failed := filepath.Join(d.Path, ".failed", n)
			if os.Rename(path, failed) == nil {
				os.WriteFile(failed+".error", []byte(err.Error()+"\n"), 0o644)
			}
		}
	}
}

// DirSender is a Sender that writes each reply, as rendered, to Path/<Message-ID>.eml (the
// Message-ID with every character outside [A-Za-z0-9@._+-] replaced by "_"), for local use and
// tests. A file is written under a temporary name and renamed into place, so a reader never sees
// half a reply; sending a reply again rewrites the same file. Path is created (mode 0750,
// parents too) when missing: when Run starts, at every /readyz, and by a send that finds it
// gone; a Path
// that cannot be created or is not a directory makes /readyz answer 503 with the reason.
type DirSender struct {
	// Path is the directory.
	Path string
}

// Send writes m.Raw to its file, creating Path again when it is missing. Errors: checkDir's and the
// file system's (transient: the service retries).
func (d DirSender) Send(ctx context.Context, m Outgoing) error {
	name := filepath.Join(d.Path, fileName(m.MessageID)+".eml")
	tmp, err := os.CreateTemp(d.Path, ".sending-*")
	if err != nil { // the directory is gone (made again) or unusable (checkDir says why)
		if err := d.checkDir(); err != nil {
			return fmt.Errorf("%w (writing reply %s)", err, m.MessageID)
		}
		tmp, err = os.CreateTemp(d.Path, ".sending-*")
	}
	if err != nil {
		return fmt.Errorf("service: write reply %s: %w", m.MessageID, err)
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(m.Raw); err != nil {
		tmp.Close()
		return fmt.Errorf("service: write reply %s: %w", m.MessageID, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("service: write reply %s: %w", m.MessageID, err)
	}
	if err := os.Rename(tmp.Name(), name); err != nil {
		return fmt.Errorf("service: write reply %s: %w", m.MessageID, err)
	}
	return nil
}

// checkDir creates Path when missing. Its error names the directory and what to do.
func (d DirSender) checkDir() error { return makeDir(d.Path, "DirSender.Path") }

// fileName makes a Message-ID safe as a file name.
func fileName(id string) string {
	b := []byte(id)
	for i, c := range b {
		ok := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("@._+-", c) >= 0
		if !ok || (i == 0 && c == '.') {
			b[i] = '_'
		}
	}
	if len(b) == 0 {
		return "_"
	}
	return string(b)
}
