package spec

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
)

// ReadFile reads and loads the spec at path (see Load). It reads at most
// MaxFileSize+1 bytes, so a huge file or an endless one (/dev/zero) is
// reported as too large without being read whole. Any file named here is
// read, a named pipe too (it blocks until a writer sends the spec). A file
// that cannot be read gives one diagnostic at Pos{File: path}. (It is not
// named LoadFile because that is the load_file resolver's type.)
func ReadFile(path string) (*Persona, []Diagnostic) {
	return readAndLoad(path, false)
}

// readAndLoad is ReadFile; with regularOnly, as for files found by walking
// a directory, anything but a regular file is refused without blocking.
func readAndLoad(path string, regularOnly bool) (*Persona, []Diagnostic) {
	data, err := readSpec(path, regularOnly)
	if err != nil {
		var pe *fs.PathError
		if errors.As(err, &pe) {
			err = pe.Err
		}
		return nil, []Diagnostic{{Pos: Pos{File: path}, Message: fmt.Sprintf("cannot read spec: %v", err)}}
	}
	return Load(path, data)
}

// readSpec reads up to MaxFileSize+1 bytes of path. With regularOnly the
// file is opened without blocking (O_NONBLOCK where the system has it) and
// refused unless it is a regular file, so a named pipe that matches
// *.persona.yaml in a walked directory cannot hang the walk.
func readSpec(path string, regularOnly bool) ([]byte, error) {
	flag := os.O_RDONLY
	if regularOnly {
		flag |= nonBlocking
	}
	f, err := os.OpenFile(path, flag, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if regularOnly {
		info, err := f.Stat()
		if err != nil {
			return nil, err
		}
		if !info.Mode().IsRegular() {
			return nil, errors.New(notRegular(info.Mode()))
		}
	}
	return io.ReadAll(io.LimitReader(f, MaxFileSize+1))
}

// notRegular says what a file that is not a regular file is, and that a
// directory walk does not read it.
func notRegular(m fs.FileMode) string {
	kind := "not a regular file"
	switch {
	case m&fs.ModeNamedPipe != 0:
		kind = "a named pipe, not a regular file"
	case m&fs.ModeSocket != 0:
		kind = "a socket, not a regular file"
	case m&fs.ModeDevice != 0:
		kind = "a device, not a regular file"
	}
	return kind + "; specs found in a directory must be regular files (name it on the command line to read it anyway)"
}
