package gen

import (
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/personagen/personagen/runtime/transcript"
)

// parseTranscript checks a static transcript file at generation time with
// the runtime's own parser. It reports the 1-based line and message of the
// first problem.
func parseTranscript(text string) (line int, msg string, bad bool) {
	_, err := transcript.Parse(text)
	if err == nil {
		return 0, "", false
	}
	var pe *transcript.ParseError
	if errors.As(err, &pe) {
		return pe.Line, pe.Msg, true
	}
	return 1, err.Error(), true
}

// maxStaticFile bounds what the generator reads of a static prompt or
// transcript file (64 MiB): the check must not exhaust memory on a device
// file or a runaway file.
const maxStaticFile = 64 << 20

// statRegular checks that path names a regular file (following symbolic
// links) without opening it: opening a named pipe would block until a
// writer comes, and the runtime reads prompt files whole, which a pipe or
// device cannot serve reliably.
func statRegular(path string) error {
	st, err := os.Stat(path)
	if err != nil {
		return err
	}
	switch {
	case st.IsDir():
		return fmt.Errorf("is a directory, not a file")
	case !st.Mode().IsRegular():
		return fmt.Errorf("is not a regular file (%s)", fileKind(st.Mode()))
	}
	return nil
}

// readRegular reads a regular file of at most maxStaticFile bytes.
func readRegular(path string) ([]byte, error) {
	if err := statRegular(path); err != nil {
		return nil, err
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxStaticFile+1))
	if err != nil {
		return nil, err
	}
	if len(data) > maxStaticFile {
		return nil, fmt.Errorf("is larger than %d bytes", maxStaticFile)
	}
	return data, nil
}

// fileKind names a non-regular file mode.
func fileKind(m os.FileMode) string {
	switch {
	case m&os.ModeNamedPipe != 0:
		return "a named pipe"
	case m&os.ModeSocket != 0:
		return "a socket"
	case m&os.ModeCharDevice != 0:
		return "a character device"
	case m&os.ModeDevice != 0:
		return "a device"
	}
	return "mode " + m.String()
}
