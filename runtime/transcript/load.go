package transcript

import (
	"context"
	"errors"
	"fmt"

	"github.com/personagen/personagen/runtime"
	"github.com/personagen/personagen/runtime/chat"
)

// Load is the load_transcript resolver: it reads the transcript file at Path through Files and
// appends the messages it holds, in file order. Path follows (*runtime.Files).ReadFile for a
// static path: absolute paths are read as is, relative ones inside Files (nil Files = the
// working directory at read time). A file that is empty or blank contributes nothing.
//
// Resolve reads and parses the file on every call (no cache, so an edited file is seen by the
// next run). Errors, returned with dst unchanged: an empty Path; the read error (a missing file
// is a *runtime.FileNotFoundError, matchable with errors.Is(err, fs.ErrNotExist)); a parse error
// wrapping the *ParseError and naming the path and its resolved location, e.g.
// `transcript "prompts/few.chat" (resolved to /srv/app/prompts/few.chat): line 4: …`.
// It re-creates scout-ai's Chat.load of a chat file without processing it (seed 002).
type Load struct {
	Path  string
	Files *runtime.Files
}

// Resolve implements runtime.Resolver. It checks ctx before reading; inv is not used.
func (l *Load) Resolve(ctx context.Context, _ *runtime.Invocation, dst []chat.Message) ([]chat.Message, error) {
	if err := ctx.Err(); err != nil {
		return dst, err
	}
	if l.Path == "" {
		return dst, errors.New("load_transcript: empty path")
	}
	data, resolved, err := l.Files.ReadFile(l.Path)
	if err != nil {
		return dst, fmt.Errorf("load_transcript: %w", err)
	}
	msgs, err := Parse(string(data))
	if err != nil {
		return dst, fmt.Errorf("transcript %q (resolved to %s): %w", l.Path, resolved, err)
	}
	return append(dst, msgs...), nil
}

var _ runtime.Resolver = (*Load)(nil)
