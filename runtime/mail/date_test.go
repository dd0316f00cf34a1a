package mail

import (
	"strings"
	"testing"
	"time"
)

func TestParseDateReadsObsoleteForms(t *testing.T) {
	utc := func(y int, mo time.Month, d, h, mi, s int) time.Time {
		return time.Date(y, mo, d, h, mi, s, 0, time.UTC)
	}
	tests := []struct {
		in   string
		want time.Time
		note string
	}{
		{"Mon, 02 Jan 2006 15:04:05 -0700", utc(2006, 1, 2, 22, 4, 5), ""},
		{"2 Jan 2006 15:04:05 +0000", utc(2006, 1, 2, 15, 4, 5), ""},
		{"Mon, 2 Jan 2006 15:04 +0100", utc(2006, 1, 2, 14, 4, 0), ""},
		// The named US zones of RFC 5322 section 4.3 (net/mail reads them all as +0000).
		{"Mon, 02 Jan 2006 15:04:05 EST", utc(2006, 1, 2, 20, 4, 5), ""},
		{"Mon, 02 Jan 2006 15:04:05 EDT", utc(2006, 1, 2, 19, 4, 5), ""},
		{"Mon, 02 Jan 2006 15:04:05 CST", utc(2006, 1, 2, 21, 4, 5), ""},
		{"Mon, 02 Jan 2006 15:04:05 CDT", utc(2006, 1, 2, 20, 4, 5), ""},
		{"Mon, 02 Jan 2006 15:04:05 MST", utc(2006, 1, 2, 22, 4, 5), ""},
		{"Mon, 02 Jan 2006 15:04:05 MDT", utc(2006, 1, 2, 21, 4, 5), ""},
		{"Mon, 02 Jan 2006 15:04:05 PST", utc(2006, 1, 2, 23, 4, 5), ""},
		{"Mon, 02 Jan 2006 15:04:05 PDT", utc(2006, 1, 2, 22, 4, 5), ""},
		{"Mon, 02 Jan 2006 15:04:05 GMT", utc(2006, 1, 2, 15, 4, 5), ""},
		{"Mon, 02 Jan 2006 15:04:05 UT", utc(2006, 1, 2, 15, 4, 5), ""},
		{"Wed, 24 Apr 2019 10:05:02 +0200 (CEST)", utc(2019, 4, 24, 8, 5, 2), ""},
		{"Fri, 07 Oct 1994 16:15:05 -0700 (PDT)", utc(1994, 10, 7, 23, 15, 5), ""},
		// Two- and three-digit years (RFC 5322 section 4.3).
		{"Wed, 02 Jun 10 11:06:27 +0800", utc(2010, 6, 2, 3, 6, 27), ""},
		{"Wed, 02 Jun 99 11:06:27 +0800", utc(1999, 6, 2, 3, 6, 27), ""},
		{"Wed, 02 Jun 103 11:06:27 +0000", utc(2003, 6, 2, 11, 6, 27), ""},
		// Extra spaces, a missing comma, lower case, a full day name, a leap second.
		{"Mon,  9 Jul 2012 22:37:56 -0700", utc(2012, 7, 10, 5, 37, 56), ""},
		{"Monday 9 july 2012 22:37:56 -0700", utc(2012, 7, 10, 5, 37, 56), ""},
		{"Sat, 31 Dec 2016 23:59:60 +0000", utc(2016, 12, 31, 23, 59, 59), ""},
		{"Mon, 2 Jan 2006 15:04:05 -07:00", utc(2006, 1, 2, 22, 4, 5), ""},
		// asctime, as mbox tools write it, and RFC 3339 / ISO forms written by scripts.
		{"Mon Jan  2 15:04:05 2006", utc(2006, 1, 2, 15, 4, 5), "no zone; read as UTC"},
		{"2006-01-02T15:04:05Z", utc(2006, 1, 2, 15, 4, 5), ""},
		{"2006-01-02 15:04:05 +0200", utc(2006, 1, 2, 13, 4, 5), ""},
		// Assumptions are reported.
		{"Mon, 02 Jan 2006 15:04:05", utc(2006, 1, 2, 15, 4, 5), "no zone; read as UTC"},
		{"Mon, 02 Jan 2006 15:04:05 XYZT", utc(2006, 1, 2, 15, 4, 5), `zone "XYZT" is unknown; read as UTC`},
	}
	for _, tt := range tests {
		got, note, ok := parseDate(tt.in)
		if !ok {
			t.Errorf("parseDate(%q) failed", tt.in)
			continue
		}
		if !got.Equal(tt.want) || note != tt.note {
			t.Errorf("parseDate(%q) = %v, %q; want %v, %q", tt.in, got.UTC(), note, tt.want, tt.note)
		}
	}
}

func TestParseDateRefusesNonsense(t *testing.T) {
	for _, in := range []string{"", "yesterday", "05/23/2019", "Mon, 32 Jan 2006 15:04:05 +0000",
		"Mon, 30 Feb 2006 15:04:05 +0000", "Mon, 02 Foo 2006 15:04:05 +0000", "Mon, 02 Jan 2006 25:04:05 +0000",
		"Mon, 02 Jan 2006 15:04:05 +9900", "02 Jan 2006", "Jan 2006 15:04:05", "1 2 3 4 15:04"} {
		if got, _, ok := parseDate(in); ok {
			t.Errorf("parseDate(%q) = %v, want failure", in, got)
		}
	}
}

func TestParseFallsBackToArrivalForBadDates(t *testing.T) {
	arrived := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	tests := []struct {
		date    string // "" = no Date header
		problem string
	}{
		{"", "date: no Date header; the arrival time is used"},
		{"not a date", `date: cannot read Date "not a date"; the arrival time is used`},
		{"Thu, 01 Jan 1960 00:00:00 +0000", `date: Date "Thu, 01 Jan 1960 00:00:00 +0000" is absurd (before 1970 or more than a day after arrival); the arrival time is used`},
		{"Mon, 02 Mar 2026 12:00:01 +0000", `date: Date "Mon, 02 Mar 2026 12:00:01 +0000" is absurd (before 1970 or more than a day after arrival); the arrival time is used`},
	}
	for _, tt := range tests {
		raw := "From: a@example.com\r\nMessage-ID: <x@example.com>\r\n"
		if tt.date != "" {
			raw += "Date: " + tt.date + "\r\n"
		}
		m := mustParse(t, raw+"\r\nbody\r\n", arrived)
		if !m.Date.Equal(arrived) || m.DateFromHeader {
			t.Errorf("Date %q: got %v (from header %v), want the arrival time", tt.date, m.Date, m.DateFromHeader)
		}
		if got := problems(m); got != tt.problem {
			t.Errorf("Date %q: problems %q, want %q", tt.date, got, tt.problem)
		}
	}
	// A day after arrival is still believed (clocks drift, zones span 26 hours).
	m := mustParse(t, "From: a@example.com\r\nMessage-ID: <x@example.com>\r\nDate: Mon, 02 Mar 2026 11:59:00 +0000\r\n\r\nbody\r\n", arrived)
	if !m.DateFromHeader || m.Date.UTC() != time.Date(2026, 3, 2, 11, 59, 0, 0, time.UTC) {
		t.Errorf("a date 23h59m after arrival: got %v (from header %v)", m.Date, m.DateFromHeader)
	}
}

// problems joins a message's problems with "; ".
func problems(m *Message) string {
	s := make([]string, len(m.Problems))
	for i, p := range m.Problems {
		s[i] = p.String()
	}
	return strings.Join(s, "; ")
}

func mustParse(t testing.TB, raw string, arrived time.Time) *Message {
	t.Helper()
	m, err := Parse(strings.NewReader(raw), arrived)
	if err != nil {
		t.Fatal(err)
	}
	return m
}
