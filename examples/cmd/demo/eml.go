package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	netmail "net/mail"
	"os"
	"strings"
	"time"

	"github.com/personagen/personagen/runtime"
	"github.com/personagen/personagen/runtime/agent"
	"github.com/personagen/personagen/runtime/history"
	"github.com/personagen/personagen/runtime/mail"
	"github.com/personagen/personagen/runtime/store"
)

// emlFile is one -eml argument, read and checked before anything is stored.
type emlFile struct {
	name string
	raw  []byte
	// sent: the file is from a persona's own address. The demo's files are the operator's own
	// archive, so it vouches for them: such a file is ingested as the persona's sent mail
	// (mail.Ingestion.Sent). A host receiving mail from the internet must not decide this from
	// the From alone, which anyone can write.
	sent bool
}

// isSentMail reports whether m is from one of the personas' own addresses (see emlFile.sent).
func isSentMail(m *mail.Message, personas []*runtime.Persona) bool {
	for _, d := range mail.Route(m, personas) {
		if d.Own {
			return true
		}
	}
	return false
}

// runEML is the -eml demo: it reads and checks every file first (so a bad one stores nothing),
// ingests them in order, answers the last one that is to be answered — each persona it is for
// that may answer it — and sends the replies.
func (d *demo) runEML(ctx context.Context, w io.Writer) error {
	files, err := readEML(d.cfg.files, d.personas(), d.clock.Now())
	if err != nil {
		return err
	}
	var ingested []ingestedFile
	for _, f := range files {
		got, err := mail.Ingest(ctx, d.st, bytes.NewReader(f.raw), mail.Ingestion{Personas: d.personas(), Arrived: d.clock.Now(), Sent: f.sent})
		if err != nil {
			return fmt.Errorf("%s: %w", f.name, err)
		}
		ingested = append(ingested, ingestedFile{Name: f.name, Ingested: got})
	}

	// The last file that is to be answered. A second copy of a message ingested earlier in this
	// call changes nothing, so it is not a candidate; a copy of a message stored by an earlier
	// call is (the runner finds its run: finished, it is read back; cut off, it resumes).
	last := -1
	candidate := make([][]bool, len(ingested))
	seen := map[string]bool{}
	for i, f := range ingested {
		candidate[i] = make([]bool, len(f.Deliveries))
		for j, dl := range f.Deliveries {
			key := dl.Persona.Name + "\x00" + dl.Message.MessageID
			if toAnswer(dl) && !(dl.Duplicate && seen[key]) {
				candidate[i][j], last = true, i
			}
			seen[key] = true
		}
	}
	var runs []demoRun
	if last >= 0 {
		for j, dl := range ingested[last].Deliveries {
			if !candidate[last][j] {
				continue
			}
			m := store.Message{Message: dl.Message, Mailbox: dl.Persona.Name}
			res, approved, err := d.reply(ctx, d.runner(m.MessageID, &dl.Message, dl.Persona), agent.Inbound{Persona: dl.Persona, Message: m, CorrelationID: "demo-eml"})
			if err != nil {
				return fmt.Errorf("%s: %s reply: %w", ingested[last].Name, dl.Persona.Name, err)
			}
			sent, err := sendOutbox(ctx, d.st, dl.Persona, d.cfg.outEML)
			if err != nil {
				return err
			}
			title := fmt.Sprintf("%s answers %s from %s (%s store)", dl.Persona.Name, m.MessageID, ingested[last].Name, d.st.Dialect())
			if res.AlreadyFinished {
				title += ": answered before, the finished run is read back"
			}
			runs = append(runs, demoRun{Title: title, Result: res, Tools: dl.Persona.Tools, Sent: sent, Approvals: approved})
		}
	}
	if d.cfg.json {
		return printJSON(w, output{Ingested: ingested, Runs: runs, Tickets: d.env.Tickets()})
	}
	printIngested(w, "the files -eml names, in order", ingested)
	if last < 0 {
		fmt.Fprintln(w, "# nothing to answer: each message is a persona's own mail, flagged not to be answered, or a second copy of one ingested above")
		return nil
	}
	for _, f := range ingested[last+1:] {
		for _, dl := range f.Deliveries {
			fmt.Fprintf(w, "# not answered: %s for %s, %s\n", f.Name, dl.Persona.Name, skipReason(dl))
		}
	}
	fmt.Fprintln(w)
	for _, r := range runs {
		printRun(w, r)
		fmt.Fprintln(w)
	}
	if t := d.env.Tickets(); len(t) > 0 {
		printTickets(w, d.env)
	}
	return nil
}

// toAnswer reports whether a delivery is to be answered: an inbound message that is not flagged
// not to be answered. A second copy of such a message is answered too: the runner then returns
// the run that answered the first copy (its key derives from the message id), or resumes it.
func toAnswer(d mail.Delivered) bool {
	return d.Message.Direction == history.Inbound && !d.NoReply.Skip()
}

// skipReason says why a delivery after the one answered is not answered.
func skipReason(d mail.Delivered) string {
	switch {
	case d.NoReply.Skip():
		return "flagged not to be answered (" + d.NoReply.String() + ")"
	case d.Message.Direction != history.Inbound:
		return "the persona's own mail"
	}
	return "a second copy of a message ingested above (nothing written)"
}

// readEML reads and checks every file before anything is stored: each must be readable, an
// email (it has a header), and for at least one persona's mailbox. The error lists every bad
// file.
func readEML(names []string, personas []*runtime.Persona, arrived time.Time) ([]emlFile, error) {
	var files []emlFile
	var bad []error
	for _, name := range names {
		f, err := readOne(name, personas, arrived)
		if err != nil {
			bad = append(bad, err)
			continue
		}
		files = append(files, f)
	}
	if len(bad) > 0 {
		lines := make([]string, len(bad))
		for i, err := range bad {
			lines[i] = "  " + err.Error()
		}
		return nil, fmt.Errorf("%d of the %d -eml files cannot be ingested, so nothing was stored:\n%s",
			len(bad), len(names), strings.Join(lines, "\n"))
	}
	return files, nil
}

func readOne(name string, personas []*runtime.Persona, arrived time.Time) (emlFile, error) {
	info, err := os.Stat(name)
	if err != nil {
		return emlFile{}, fmt.Errorf("%s: cannot read it: %w", name, pathError(err))
	}
	if info.IsDir() {
		return emlFile{}, fmt.Errorf("%s: a directory, not an .eml file", name)
	}
	if !info.Mode().IsRegular() {
		return emlFile{}, fmt.Errorf("%s: not a regular file", name)
	}
	if info.Size() > mail.DefaultMaxSize {
		return emlFile{}, fmt.Errorf("%s: %d bytes: %w (%d bytes)", name, info.Size(), mail.ErrTooLarge, mail.DefaultMaxSize)
	}
	raw, err := os.ReadFile(name)
	if err != nil {
		return emlFile{}, fmt.Errorf("%s: cannot read it: %w", name, pathError(err))
	}
	m, err := mail.Parse(bytes.NewReader(raw), arrived)
	if err != nil {
		return emlFile{}, fmt.Errorf("%s: %w", name, err)
	}
	if !isEmail(m) {
		return emlFile{}, fmt.Errorf("%s: not an email: it has none of the header fields From, To, Cc, Subject, Date and Message-ID (a message begins with such lines, then a blank line)", name)
	}
	if len(mail.Route(m, personas)) == 0 {
		var boxes []string
		for _, p := range personas {
			if p.Mailbox.Address != "" {
				boxes = append(boxes, append([]string{p.Mailbox.Address}, p.Mailbox.Aliases...)...)
			}
		}
		return emlFile{}, fmt.Errorf("%s: for no persona's mailbox: it is from %s to %s, and the personas receive mail at %s",
			name, addressList(addresses(m.Addresses.From)), addressList(recipients(m)), strings.Join(boxes, ", "))
	}
	return emlFile{name: name, raw: raw, sent: isSentMail(m, personas)}, nil
}

// isEmail reports whether m's header has at least one of the fields every email has one of.
func isEmail(m *mail.Message) bool {
	for _, f := range []string{"From", "To", "Cc", "Subject", "Date", "Message-Id"} {
		if _, ok := m.Header[f]; ok {
			return true
		}
	}
	return false
}

// recipients are the bare To, Cc and Bcc addresses of m.
func recipients(m *mail.Message) []string {
	var out []string
	for _, list := range [][]string{addresses(m.Addresses.To), addresses(m.Addresses.Cc), addresses(m.Addresses.Bcc)} {
		out = append(out, list...)
	}
	return out
}

// addressList joins addresses for an error message ("no one" for none).
func addressList(list []string) string {
	if len(list) == 0 {
		return "no one"
	}
	return strings.Join(list, ", ")
}

// pathError is the reason inside an *fs.PathError (which names the operation and the path the
// message already gives), or err.
func pathError(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// addresses are the bare addresses of a parsed list.
func addresses(list []netmail.Address) []string {
	out := make([]string, len(list))
	for i, a := range list {
		out[i] = a.Address
	}
	return out
}
