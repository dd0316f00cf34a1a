package schedule

import (
	"fmt"
	"iter"
	"math/bits"
	"strings"
	"time"

	"github.com/robfig/cron/v3"

	"github.com/personagen/personagen/internal/zone"
)

// Cron is a responsibility's schedule: a cron expression read in a time zone. Its fires are
// instants; Next, Prev and Fires compute them. A Cron is immutable and safe for concurrent use.
//
// A 5-field expression (minute hour day-of-month month day-of-week, or a descriptor such as
// @daily) names wall-clock times of the zone. Each wall-clock time W it names fires exactly
// once, at the first instant at which the zone's clock reads W or later:
//
//   - a time that occurs once fires then;
//   - a time in a spring-forward gap (02:30 on a night the clocks jump from 02:00 to 03:00)
//     fires at the end of the gap, the first valid instant after it (03:00); several gap times
//     of one night fire once together there, and with a time the expression names at that
//     instant (03:00) once;
//   - a time in a fall-back overlap (02:30 on a night the clocks go back from 03:00 to 02:00)
//     fires once, at its first occurrence (02:30 summer time), not again an hour later.
//
// So fires are strictly increasing, no fire repeats, and a daily expression fires exactly once
// on every local day. A schedule that fires several times an hour fires nothing in the
// repeated hour of a fall-back night (its times already fired in the first pass); write such a
// schedule in UTC, or as @every, for a steady interval.
//
// "@every d" is an interval, not a wall-clock time: it fires at every whole multiple of d
// counted from the Unix epoch (1970-01-01 00:00 UTC), whatever the zone, so all replicas agree
// on its fires; "@every 1h30m" fires at 00:00, 01:30, 03:00, ... UTC.
type Cron struct {
	expr string
	loc  *time.Location
	// spec holds the parsed fields (nil for @every), with Location UTC: robfig/cron's Next is
	// exact on wall-clock times read as UTC, which have no gaps and no overlaps.
	spec  *cron.SpecSchedule
	every time.Duration
}

// horizon is how many years Next and Prev look for a fire before they report none: enough for
// a 29 February across a century year that is not a leap year (2096 to 2104).
const horizon = 10

// Parse reads expr, a cron expression as robfig/cron/v3's ParseStandard accepts it (the
// parser spec validation uses), in the IANA time zone timezone ("" means UTC), loaded with
// zone.Load like validation does. Errors, each naming the expression: an expression that does
// not parse, one that sets its own zone (TZ=... or CRON_TZ=...: use timezone), an @every
// interval under one second or not a whole number of seconds, an expression that never fires (30 February), or a zone that
// zone.Load refuses.
func Parse(expr, timezone string) (*Cron, error) {
	if strings.HasPrefix(expr, "TZ=") || strings.HasPrefix(expr, "CRON_TZ=") {
		return nil, fmt.Errorf("schedule %q sets a timezone; give the zone as the responsibility's timezone instead", expr)
	}
	loc, err := zone.Load(timezone)
	if err != nil {
		return nil, fmt.Errorf("schedule %q: %w", expr, err)
	}
	parsed, err := cron.ParseStandard(expr)
	if err != nil {
		return nil, fmt.Errorf("schedule %q is not a valid 5-field cron expression (minute hour day-of-month month day-of-week): %w", expr, err)
	}
	c := &Cron{expr: expr, loc: loc}
	switch s := parsed.(type) {
	case cron.ConstantDelaySchedule:
		// robfig/cron rounds an interval under a second up to one and drops the fraction of a
		// longer one; refuse both, as validation does.
		rest, _ := strings.CutPrefix(strings.TrimSpace(expr), "@every ")
		if d, err := time.ParseDuration(strings.TrimSpace(rest)); err == nil {
			switch {
			case d < time.Second:
				return nil, fmt.Errorf("schedule %q: an @every interval must be at least 1s (got %v)", expr, d)
			case d%time.Second != 0:
				return nil, fmt.Errorf("schedule %q: an @every interval must be whole seconds (got %v; robfig/cron would drop the %v and run every %v)", expr, d, d%time.Second, d.Truncate(time.Second))
			}
		}
		c.every = s.Delay
		return c, nil
	case *cron.SpecSchedule:
		spec := *s
		spec.Location = time.UTC
		c.spec = &spec
	default:
		return nil, fmt.Errorf("schedule %q: unsupported schedule type %T", expr, parsed)
	}
	if _, ok := c.nextWall(time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)); !ok {
		return nil, fmt.Errorf("schedule %q never fires: the months it names have no such day", expr)
	}
	return c, nil
}

// MustParse is Parse for expressions known to be valid (tests, examples); it panics on error.
func MustParse(expr, timezone string) *Cron {
	c, err := Parse(expr, timezone)
	if err != nil {
		panic(err)
	}
	return c
}

// String returns the expression and the zone, as in "0 8 * * * (Europe/Berlin)".
func (c *Cron) String() string { return fmt.Sprintf("%s (%s)", c.expr, c.loc) }

// Location returns the zone the expression is read in.
func (c *Cron) Location() *time.Location { return c.loc }

// Next returns the first fire strictly after t, in the schedule's location, and true; or the
// zero time and false when the schedule does not fire within ten years after t.
func (c *Cron) Next(t time.Time) (time.Time, bool) {
	if c.every > 0 {
		return c.everyFloor(t).Add(c.every).In(c.loc), true
	}
	w, ok := c.nextWall(maxWall(t, c.loc))
	if !ok {
		return time.Time{}, false
	}
	return instant(w, c.loc), true
}

// Prev returns the last fire at or before t, in the schedule's location, and true; or the zero
// time and false when the schedule did not fire within ten years before t.
func (c *Cron) Prev(t time.Time) (time.Time, bool) {
	if c.every > 0 {
		return c.everyFloor(t).In(c.loc), true
	}
	w, ok := c.prevWall(maxWall(t, c.loc))
	if !ok {
		return time.Time{}, false
	}
	return instant(w, c.loc), true
}

// Fires yields the fires after after and at or before through, oldest first, in the
// schedule's location.
func (c *Cron) Fires(after, through time.Time) iter.Seq[time.Time] {
	return func(yield func(time.Time) bool) {
		for t := after; ; {
			next, ok := c.Next(t)
			if !ok || next.After(through) || !yield(next) {
				return
			}
			t = next
		}
	}
}

// unixEpoch anchors @every intervals.
var unixEpoch = time.Unix(0, 0).UTC()

// everyFloor returns the last multiple of c.every since the Unix epoch at or before t.
func (c *Cron) everyFloor(t time.Time) time.Time {
	d := t.Sub(unixEpoch) // saturates far outside 1678-2262, where no scheduler runs
	n := d / c.every
	if d%c.every < 0 {
		n--
	}
	return unixEpoch.Add(n * c.every)
}

// Wall-clock times below are time.Time values in UTC whose fields are the zone's clock reading
// (2026-03-29 02:30 Berlin is 2026-03-29 02:30 UTC): a naive date and time, ordered as the
// clock reads, with no gaps or overlaps.

// wall returns the clock reading of the zone loc at instant u.
func wall(u time.Time, loc *time.Location) time.Time {
	_, offset := u.In(loc).Zone()
	return u.UTC().Add(time.Duration(offset) * time.Second)
}

// maxOffsetJump bounds how far a zone's clock has ever been set back at once (a day, with a
// margin): an earlier zone period's clock readings can exceed the present one's only within it.
const maxOffsetJump = 48 * time.Hour

// maxWall returns the latest clock reading of loc at or before instant t. It is the reading at
// t, except just after a fall-back, when the clock read later times before it was set back. A
// wall-clock time W has fired by t exactly when W <= maxWall(t).
func maxWall(t time.Time, loc *time.Location) time.Time {
	m := wall(t, loc)
	for p := t; ; {
		_, start, _ := period(p, loc)
		if start.IsZero() || t.Sub(start) > maxOffsetJump {
			return m
		}
		before := start.Add(-time.Nanosecond)
		if w := wall(before, loc); w.After(m) {
			m = w
		}
		p = before
	}
}

// instant returns the first instant at which loc's clock reads w or later: w itself when it
// occurs, its first occurrence when it occurs twice, the end of the gap when the clocks skip
// it. It walks the zone's periods from a day before w, in each of which the clock runs evenly.
func instant(w time.Time, loc *time.Location) time.Time {
	// The clock reads less than w at p: offsets are within [-12h, +14h].
	p := w.Add(-27 * time.Hour)
	for {
		offset, _, end := period(p, loc)
		u := w.Add(-offset)
		if u.Before(p) {
			u = p
		}
		if end.IsZero() || u.Before(end) {
			return u.In(loc)
		}
		p = end
	}
}

// period returns loc's offset at instant p and a span [start, end) around p in which the
// offset stays the same (zero start or end: unbounded that way), from time.Time.ZoneBounds.
// The span is exact at every zone change, but ZoneBounds may also split a period (at year
// boundaries, for zones whose changes follow a rule), and in a leap year it ends the span
// that holds 31 December at that day's start, before p itself; such a span ends at the next
// new year (UTC), where Go's rule evaluation starts again. A start after p is reported as
// unknown (zero).
func period(p time.Time, loc *time.Location) (offset time.Duration, start, end time.Time) {
	zoned := p.In(loc)
	_, sec := zoned.Zone()
	start, end = zoned.ZoneBounds()
	if !end.IsZero() && !end.After(p) {
		end = time.Date(p.UTC().Year()+1, time.January, 1, 0, 0, 0, 0, time.UTC)
	}
	if start.After(p) {
		start = time.Time{}
	}
	return time.Duration(sec) * time.Second, start, end
}

// nextWall returns the first wall-clock time after w that the expression names.
func (c *Cron) nextWall(w time.Time) (time.Time, bool) {
	// robfig/cron's Next searches five years past its start; carry on past that.
	for start, limit := w, w.AddDate(horizon, 0, 0); start.Before(limit); {
		if n := c.spec.Next(start); !n.IsZero() {
			return n, n.Before(limit)
		}
		start = time.Date(start.Year()+5, time.January, 1, 0, 0, 0, 0, time.UTC).Add(-time.Second)
	}
	return time.Time{}, false
}

// prevWall returns the last wall-clock time at or before w that the expression names. It is
// robfig/cron's Next run backwards over the same parsed fields: step back to the end of the
// previous month, day, hour or minute until every field matches.
func (c *Cron) prevWall(w time.Time) (time.Time, bool) {
	s := c.spec
	t := w.Truncate(time.Second)
	limit := w.AddDate(-horizon, 0, 0)
	for !t.Before(limit) {
		y, mo, d := t.Date()
		switch {
		case s.Month&(1<<uint(mo)) == 0:
			t = time.Date(y, mo, 1, 0, 0, 0, 0, time.UTC).Add(-time.Second)
		case !dayMatches(s, t):
			t = time.Date(y, mo, d, 0, 0, 0, 0, time.UTC).Add(-time.Second)
		default:
			h, ok := highestAtMost(s.Hour, t.Hour())
			if !ok {
				t = time.Date(y, mo, d, 0, 0, 0, 0, time.UTC).Add(-time.Second)
				continue
			}
			if h < t.Hour() {
				t = time.Date(y, mo, d, h, 59, 59, 0, time.UTC)
			}
			m, ok := highestAtMost(s.Minute, t.Minute())
			if !ok {
				t = time.Date(y, mo, d, h, 0, 0, 0, time.UTC).Add(-time.Second)
				continue
			}
			if m < t.Minute() {
				t = time.Date(y, mo, d, h, m, 59, 0, time.UTC)
			}
			sec, ok := highestAtMost(s.Second, t.Second())
			if !ok {
				t = time.Date(y, mo, d, h, m, 0, 0, time.UTC).Add(-time.Second)
				continue
			}
			return time.Date(y, mo, d, h, m, sec, 0, time.UTC), true
		}
	}
	return time.Time{}, false
}

// highestAtMost returns the highest value at most v whose bit is set in field (a robfig/cron
// bit set: bit n for value n, bit 63 marking a star).
func highestAtMost(field uint64, v int) (int, bool) {
	mask := field & (uint64(2)<<uint(v) - 1)
	if mask == 0 {
		return 0, false
	}
	return bits.Len64(mask) - 1, true
}

// starBit is the bit robfig/cron sets in a field written as * or ?.
const starBit = 1 << 63

// dayMatches reports whether the day of t matches the day-of-month and day-of-week fields, as
// robfig/cron (and Vixie cron) read them: when either is a star both must match, else either.
func dayMatches(s *cron.SpecSchedule, t time.Time) bool {
	dom := s.Dom&(1<<uint(t.Day())) != 0
	dow := s.Dow&(1<<uint(t.Weekday())) != 0
	if s.Dom&starBit != 0 || s.Dow&starBit != 0 {
		return dom && dow
	}
	return dom || dow
}
