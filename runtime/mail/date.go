package mail

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// zoneOffsets are the zone names a Date header may carry instead of a numeric offset, in
// seconds east of UTC: RFC 5322's obsolete zones (UT, GMT and the US zones, section 4.3) and
// other abbreviations common in real mail whose meaning is not in doubt. A name outside this
// table (and the military single letters, which RFC 5322 says to read as -0000) is read as
// UTC and recorded as a problem. net/mail's ParseDate reads every such name as +0000, which
// puts an EST message five hours off.
var zoneOffsets = map[string]int{
	"UT": 0, "UTC": 0, "GMT": 0, "Z": 0, "WET": 0,
	"EST": -5 * 3600, "EDT": -4 * 3600,
	"CST": -6 * 3600, "CDT": -5 * 3600,
	"MST": -7 * 3600, "MDT": -6 * 3600,
	"PST": -8 * 3600, "PDT": -7 * 3600,
	"AKST": -9 * 3600, "AKDT": -8 * 3600,
	"HST": -10 * 3600,
	"BST": 1 * 3600, "CET": 1 * 3600, "MET": 1 * 3600, "WEST": 1 * 3600,
	"CEST": 2 * 3600, "MEST": 2 * 3600, "EET": 2 * 3600,
	"EEST": 3 * 3600, "MSK": 3 * 3600,
	"HKT": 8 * 3600, "SGT": 8 * 3600, "AWST": 8 * 3600,
	"JST": 9 * 3600, "KST": 9 * 3600,
	"ACST": 9*3600 + 1800, "AEST": 10 * 3600, "AEDT": 11 * 3600,
	"NZST": 12 * 3600, "NZDT": 13 * 3600,
}

var monthNames = map[string]time.Month{
	"jan": time.January, "feb": time.February, "mar": time.March, "apr": time.April,
	"may": time.May, "jun": time.June, "jul": time.July, "aug": time.August,
	"sep": time.September, "oct": time.October, "nov": time.November, "dec": time.December,
}

var dayNames = map[string]bool{"mon": true, "tue": true, "wed": true, "thu": true, "fri": true, "sat": true, "sun": true}

// parseDate reads a Date header leniently: RFC 5322 dates and their obsolete forms (no day of
// week, two- or three-digit years, no seconds, named zones, comments, extra spaces), the
// asctime form some mbox tools write ("Mon Jan  2 15:04:05 2006"), and RFC 3339. It returns
// the instant and, when the value was read with an assumption (a zone that is missing or
// unknown), a note saying so; ok is false when no date could be read.
func parseDate(v string) (t time.Time, note string, ok bool) {
	v = strings.TrimSpace(stripComments(v))
	if v == "" {
		return time.Time{}, "", false
	}
	if t, err := time.Parse(time.RFC3339Nano, v); err == nil {
		return t, "", true
	}
	var (
		day, year, hour, min, sec = -1, -1, -1, -1, 0
		yearDigits                int
		month                     time.Month
		offset                    int
		zoneSeen                  bool
	)
	fields := strings.FieldsFunc(v, func(r rune) bool { return r == ' ' || r == '\t' || r == ',' })
	for _, f := range fields {
		switch {
		case strings.Contains(f, ":") && hour < 0:
			// A time, possibly with a numeric zone stuck to it ("15:04:05+0200").
			clock := f
			if i := strings.IndexAny(f, "+-"); i > 0 {
				clock = f[:i]
				if off, ok := numericZone(f[i:]); ok {
					offset, zoneSeen = off, true
				}
			}
			h, m, s, ok := clockTime(clock)
			if !ok {
				return time.Time{}, "", false
			}
			hour, min, sec = h, m, s
		case (f[0] == '+' || f[0] == '-') && len(f) > 1:
			off, ok := numericZone(f)
			if !ok {
				return time.Time{}, "", false
			}
			offset, zoneSeen = off, true
		case len(f) == 10 && f[4] == '-' && f[7] == '-' && isDigits(f[:4]+f[5:7]+f[8:]) && year < 0:
			// An ISO date ("2006-01-02 15:04:05 +0000", written by some scripts).
			year, yearDigits = atoi(f[:4]), 4
			month, day = time.Month(atoi(f[5:7])), atoi(f[8:])
			if month < time.January || month > time.December {
				return time.Time{}, "", false
			}
		case isDigits(f):
			n, _ := strconv.Atoi(f)
			switch {
			case day < 0 && len(f) <= 2 && month == 0 && year < 0:
				day = n
			case day < 0 && len(f) <= 2 && month != 0:
				day = n
			case year < 0:
				year, yearDigits = n, len(f)
			default:
				return time.Time{}, "", false
			}
		default:
			word := strings.ToLower(strings.TrimRight(f, "."))
			if len(word) >= 3 {
				if m, ok := monthNames[word[:3]]; ok && month == 0 {
					month = m
					continue
				}
				if dayNames[word[:3]] {
					continue
				}
			}
			if off, ok := zoneOffsets[strings.ToUpper(f)]; ok && !zoneSeen {
				offset, zoneSeen = off, true
				continue
			}
			if !zoneSeen && hour >= 0 && isLetters(f) {
				note = fmt.Sprintf("zone %q is unknown; read as UTC", f)
				zoneSeen = true
				continue
			}
			// Words such as "at" between the parts are ignored.
		}
	}
	if day < 1 || month == 0 || year < 0 || hour < 0 {
		return time.Time{}, "", false
	}
	switch {
	case yearDigits <= 2 && year < 50:
		year += 2000
	case yearDigits <= 3:
		year += 1900
	}
	if day > daysIn(month, year) {
		return time.Time{}, "", false
	}
	if !zoneSeen {
		note = "no zone; read as UTC"
	}
	return time.Date(year, month, day, hour, min, sec, 0, time.FixedZone(zoneName(offset), offset)), note, true
}

// clockTime reads hh:mm or hh:mm:ss (fractions of a second ignored); 60 seconds (a leap second)
// reads as 59.
func clockTime(s string) (h, m, sec int, ok bool) {
	parts := strings.Split(s, ":")
	if len(parts) < 2 || len(parts) > 3 {
		return 0, 0, 0, false
	}
	if len(parts) == 3 {
		parts[2], _, _ = strings.Cut(parts[2], ".")
	}
	vals := make([]int, len(parts))
	for i, p := range parts {
		if !isDigits(p) || len(p) > 2 {
			return 0, 0, 0, false
		}
		vals[i], _ = strconv.Atoi(p)
	}
	h, m = vals[0], vals[1]
	if len(vals) == 3 {
		sec = min(vals[2], 59)
		if vals[2] > 60 {
			return 0, 0, 0, false
		}
	}
	if h > 23 || m > 59 {
		return 0, 0, 0, false
	}
	return h, m, sec, true
}

// numericZone reads +hhmm, -hhmm, +hh:mm or +hh as seconds east of UTC.
func numericZone(s string) (int, bool) {
	sign := 1
	if s[0] == '-' {
		sign = -1
	}
	digits := strings.ReplaceAll(s[1:], ":", "")
	if !isDigits(digits) {
		return 0, false
	}
	var h, m int
	switch len(digits) {
	case 2:
		h, _ = strconv.Atoi(digits)
	case 4:
		h, _ = strconv.Atoi(digits[:2])
		m, _ = strconv.Atoi(digits[2:])
	default:
		return 0, false
	}
	if h > 23 || m > 59 {
		return 0, false
	}
	return sign * (h*3600 + m*60), true
}

// zoneName names a fixed zone by its offset ("+0200"), so equal instants format alike.
func zoneName(offset int) string {
	sign := '+'
	if offset < 0 {
		sign, offset = '-', -offset
	}
	return fmt.Sprintf("%c%02d%02d", sign, offset/3600, offset%3600/60)
}

func daysIn(m time.Month, year int) int {
	return time.Date(year, m+1, 0, 0, 0, 0, 0, time.UTC).Day()
}

func atoi(s string) int {
	n, _ := strconv.Atoi(s)
	return n
}

func isDigits(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

func isLetters(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i] | 0x20; c < 'a' || c > 'z' {
			return false
		}
	}
	return s != ""
}
