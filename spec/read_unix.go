//go:build unix

package spec

import (
	"fmt"
	"os"
	"syscall"
)

// nonBlocking opens a named pipe without waiting for a writer.
const nonBlocking = syscall.O_NONBLOCK

// fileID identifies the file at path by device and inode, so hard links
// and symlinks to one file are one spec; ok is false when it cannot be
// stat'ed.
func fileID(path string) (string, bool) {
	info, err := os.Stat(path)
	if err != nil {
		return "", false
	}
	st, ok := info.Sys().(*syscall.Stat_t)
	if !ok {
		return "", false
	}
	return fmt.Sprintf("ino:%d:%d", st.Dev, st.Ino), true
}
