package zone

import (
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestLoadReadsTheEmbeddedDatabase(t *testing.T) {
	tests := []struct {
		name           string
		winter, summer int // UTC offsets in hours on 15 January and 15 July 2024
	}{
		{"Europe/Berlin", 1, 2},
		{"America/New_York", -5, -4},
		{"Asia/Kolkata", 5, 5}, // and half an hour, checked below
		{"Etc/GMT+5", -5, -5},
		{"US/Pacific", -8, -7}, // a backward-compatibility link is a database name too
		{"Australia/Sydney", 11, 10},
	}
	for _, tt := range tests {
		loc, err := Load(tt.name)
		if err != nil {
			t.Fatalf("Load(%q): %v", tt.name, err)
		}
		if loc.String() != tt.name {
			t.Errorf("Load(%q).String() = %q", tt.name, loc.String())
		}
		for _, c := range []struct {
			month time.Month
			want  int
		}{{time.January, tt.winter}, {time.July, tt.summer}} {
			_, off := time.Date(2024, c.month, 15, 12, 0, 0, 0, time.UTC).In(loc).Zone()
			if off/3600 != c.want {
				t.Errorf("%s in %v: offset %ds, want %dh", tt.name, c.month, off, c.want)
			}
		}
	}
	if loc, _ := Load("Asia/Kolkata"); loc != nil {
		if _, off := time.Date(2024, 1, 1, 0, 0, 0, 0, loc).Zone(); off != 5*3600+1800 {
			t.Errorf("Asia/Kolkata offset %d, want 19800", off)
		}
	}
}

func TestLoadEmptyAndUTCAreUTC(t *testing.T) {
	for _, name := range []string{"", "UTC"} {
		if loc, err := Load(name); loc != time.UTC || err != nil {
			t.Errorf("Load(%q) = %v, %v; want time.UTC", name, loc, err)
		}
	}
	if loc, err := Load("Etc/UTC"); err != nil || loc.String() != "Etc/UTC" {
		t.Errorf("Load(Etc/UTC) = %v, %v", loc, err)
	}
}

func TestLoadReturnsTheSameLocationTwice(t *testing.T) {
	a, _ := Load("Europe/Paris")
	b, _ := Load("Europe/Paris")
	if a == nil || a != b {
		t.Errorf("Load twice gave %p and %p", a, b)
	}
}

// TestEveryDatabaseNameLoads reads every entry of the embedded zip, so a
// damaged copy fails here rather than at a user's timezone.
func TestEveryDatabaseNameLoads(t *testing.T) {
	files, err := database()
	if err != nil {
		t.Fatal(err)
	}
	if len(files) < 500 {
		t.Fatalf("embedded database has %d zones, want the full IANA set (about 600)", len(files))
	}
	for name := range files {
		if _, err := Load(name); err != nil {
			t.Errorf("Load(%q): %v", name, err)
		}
	}
}

func TestLoadRefusesMachineDependentAndUnknownNames(t *testing.T) {
	tests := []struct{ name, want string }{
		{"Local", `timezone "Local" is the machine's own zone, so the time would differ from machine to machine; name an IANA zone such as Europe/Berlin, or UTC`},
		{"localtime", `timezone "localtime" is the machine's own zone, so the time would differ from machine to machine; name an IANA zone such as Europe/Berlin, or UTC`},
		{"right/Europe/Berlin", `timezone "right/Europe/Berlin" exists only in some machines' zoneinfo; write "Europe/Berlin"`},
		{"posix/America/New_York", `timezone "posix/America/New_York" exists only in some machines' zoneinfo; write "America/New_York"`},
		{"posix/Nowhere", `timezone "posix/Nowhere" exists only in some machines' zoneinfo; name an IANA zone such as Europe/Berlin`},
		{"posixrules", `timezone "posixrules" exists only in some machines' zoneinfo; name an IANA zone such as Europe/Berlin`},
		{"/etc/localtime", `timezone "/etc/localtime" is a file path; name an IANA zone such as Europe/Berlin`},
		{"../zoneinfo/UTC", `timezone "../zoneinfo/UTC" is a file path; name an IANA zone such as Europe/Berlin`},
		{"europe/berlin", `unknown timezone "europe/berlin"; did you mean "Europe/Berlin"?`},
		{"Europe/Berln", `unknown timezone "Europe/Berln"; did you mean "Europe/Berlin"?`},
		{" Europe/Berlin", `unknown timezone " Europe/Berlin"; did you mean "Europe/Berlin"?`},
		{"Mars/Olympus_Mons", `unknown timezone "Mars/Olympus_Mons": not in the IANA tz database (2025c); name a zone such as Europe/Berlin, or UTC`},
		{"Europe", `unknown timezone "Europe": not in the IANA tz database (2025c); name a zone such as Europe/Berlin, or UTC`},
		{"utc", `unknown timezone "utc"; did you mean "UTC"?`},
		{"Europe/Berlin\x00", `unknown timezone "Europe/Berlin\x00"; did you mean "Europe/Berlin"?`},
		{strings.Repeat("Europe/Berlin", 100000), `unknown timezone "` + strings.Repeat("Europe/Berlin", 100000) + `": not in the IANA tz database (2025c); name a zone such as Europe/Berlin, or UTC`},
	}
	for _, tt := range tests {
		loc, err := Load(tt.name)
		if loc != nil || err == nil || err.Error() != tt.want {
			name := tt.name
			if len(name) > 40 {
				name = name[:40] + "…"
			}
			t.Errorf("Load(%q) = %v, %v\nwant error %s", name, loc, err, tt.want[:min(len(tt.want), 200)])
		}
	}
}

// TestLoadIgnoresZONEINFOAndTheSystem pins machine independence: a zone
// that only a ZONEINFO directory holds loads through time.LoadLocation but
// not through Load.
func TestLoadIgnoresZONEINFOAndTheSystem(t *testing.T) {
	dir := t.TempDir()
	utc, err := database()
	if err != nil {
		t.Fatal(err)
	}
	rc, err := utc["Etc/UTC"].Open()
	if err != nil {
		t.Fatal(err)
	}
	data, err := io.ReadAll(rc)
	rc.Close()
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(dir, "Mars"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "Mars", "Base"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv("ZONEINFO", dir)
	if _, err := time.LoadLocation("Mars/Base"); err != nil {
		t.Fatalf("precondition: time.LoadLocation should read ZONEINFO=%s: %v", dir, err)
	}
	if loc, err := Load("Mars/Base"); err == nil {
		t.Errorf("Load(Mars/Base) = %v; want an error, ZONEINFO must not count", loc)
	}
}
