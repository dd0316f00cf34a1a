package zone

import (
	"archive/zip"
	"bytes"
	_ "embed"
	"fmt"
	"io"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/agnivade/levenshtein"
)

// DataVersion is the IANA tz database release that the embedded copy holds.
const DataVersion = "2025c"

//go:embed zoneinfo.zip
var zipData []byte

// database indexes the embedded zip by zone name ("Europe/Berlin").
var database = sync.OnceValues(func() (map[string]*zip.File, error) {
	r, err := zip.NewReader(bytes.NewReader(zipData), int64(len(zipData)))
	if err != nil {
		return nil, fmt.Errorf("embedded tz database: %w", err)
	}
	files := make(map[string]*zip.File, len(r.File))
	for _, f := range r.File {
		if !f.FileInfo().IsDir() {
			files[f.Name] = f
		}
	}
	return files, nil
})

var (
	mu     sync.Mutex
	loaded = map[string]*time.Location{}
)

// Load returns the location named name from the embedded tz database.
// "" and "UTC" are time.UTC. Names are exact and case-sensitive, as in
// the database ("Europe/Berlin", "Etc/GMT+5", "US/Pacific"). Load returns
// an error, whose text says what to write instead, for Local and
// localtime (the machine's own zone), right/... and posix/... names and
// posixrules (files some systems add to their zoneinfo), file paths, and
// any other name the database lacks (with the closest name suggested when
// one is near). The returned Location is shared and safe for concurrent
// use; Load itself is safe for concurrent use.
func Load(name string) (*time.Location, error) {
	if name == "" || name == "UTC" {
		return time.UTC, nil
	}
	mu.Lock()
	loc, ok := loaded[name]
	mu.Unlock()
	if ok {
		return loc, nil
	}
	files, err := database()
	if err != nil {
		return nil, err
	}
	f, ok := files[name]
	if !ok {
		return nil, unknown(name, files)
	}
	rc, err := f.Open()
	if err != nil {
		return nil, fmt.Errorf("timezone %q: embedded tz database: %w", name, err)
	}
	data, err := io.ReadAll(rc)
	rc.Close()
	if err != nil {
		return nil, fmt.Errorf("timezone %q: embedded tz database: %w", name, err)
	}
	loc, err = time.LoadLocationFromTZData(name, data)
	if err != nil {
		return nil, fmt.Errorf("timezone %q: embedded tz database: %w", name, err)
	}
	mu.Lock()
	loaded[name] = loc
	mu.Unlock()
	return loc, nil
}

// unknown explains why name is not in the database and what to write.
func unknown(name string, files map[string]*zip.File) error {
	switch {
	case name == "Local" || name == "localtime":
		return fmt.Errorf("timezone %q is the machine's own zone, so the time would differ from machine to machine; name an IANA zone such as Europe/Berlin, or UTC", name)
	case strings.HasPrefix(name, "right/") || strings.HasPrefix(name, "posix/") || name == "posixrules":
		msg := fmt.Sprintf("timezone %q exists only in some machines' zoneinfo", name)
		if _, rest, _ := strings.Cut(name, "/"); files[rest] != nil {
			msg += fmt.Sprintf("; write %q", rest)
		} else {
			msg += "; name an IANA zone such as Europe/Berlin"
		}
		return fmt.Errorf("%s", msg)
	case strings.HasPrefix(name, "/") || strings.HasPrefix(name, "\\") || strings.HasPrefix(name, "."):
		return fmt.Errorf("timezone %q is a file path; name an IANA zone such as Europe/Berlin", name)
	}
	if s := suggest(name, files); s != "" {
		return fmt.Errorf("unknown timezone %q; did you mean %q?", name, s)
	}
	return fmt.Errorf("unknown timezone %q: not in the IANA tz database (%s); name a zone such as Europe/Berlin, or UTC", name, DataVersion)
}

// maxSuggestLen bounds the names suggest compares (edit distance costs
// the product of the lengths); no zone name is near one this long.
const maxSuggestLen = 64

// suggest returns the database name closest to name: one differing only
// in case, else the nearest by edit distance when it is near enough.
func suggest(name string, files map[string]*zip.File) string {
	if len(name) > maxSuggestLen {
		return ""
	}
	names := make([]string, 0, len(files))
	for n := range files {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		if strings.EqualFold(n, name) {
			return n
		}
	}
	best, bestD := "", 1<<30
	for _, n := range names {
		if d := levenshtein.ComputeDistance(name, n); d < bestD {
			best, bestD = n, d
		}
	}
	if bestD <= max(1, len([]rune(name))/5) {
		return best
	}
	return ""
}
