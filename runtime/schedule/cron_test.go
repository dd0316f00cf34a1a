package schedule

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/robfig/cron/v3"

	"github.com/personagen/personagen/internal/zone"
)

func mustTime(t *testing.T, s string) time.Time {
	t.Helper()
	v, err := time.Parse(time.RFC3339, s)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// firesFrom returns the first n fires of c after from, as RFC 3339 in c's zone.
func firesFrom(c *Cron, from time.Time, n int) []string {
	var out []string
	for f := range c.Fires(from, from.AddDate(horizon, 0, 0)) {
		out = append(out, f.Format(time.RFC3339))
		if len(out) == n {
			break
		}
	}
	return out
}

// TestRobfigCronMishandlesDST pins the behaviour of robfig/cron/v3's own Next that Cron exists
// to fix: it skips a daily time that falls in the spring-forward gap and fires twice for one in
// the fall-back overlap.
func TestRobfigCronMishandlesDST(t *testing.T) {
	berlin, err := zone.Load("Europe/Berlin")
	if err != nil {
		t.Fatal(err)
	}
	parsed, err := cron.ParseStandard("30 2 * * *")
	if err != nil {
		t.Fatal(err)
	}
	spec := *parsed.(*cron.SpecSchedule)
	spec.Location = berlin
	next := func(from string, n int) []string {
		var out []string
		for t0 := mustTime(t, from); len(out) < n; {
			t0 = spec.Next(t0)
			out = append(out, t0.In(berlin).Format(time.RFC3339))
		}
		return out
	}
	spring := next("2026-03-28T12:00:00Z", 2)
	if want := []string{"2026-03-30T02:30:00+02:00", "2026-03-31T02:30:00+02:00"}; !equal(spring, want) {
		t.Errorf("robfig spring-forward fires = %v, want %v (29 March skipped)", spring, want)
	}
	fall := next("2026-10-24T12:00:00Z", 3)
	if want := []string{"2026-10-25T02:30:00+02:00", "2026-10-25T02:30:00+01:00", "2026-10-26T02:30:00+01:00"}; !equal(fall, want) {
		t.Errorf("robfig fall-back fires = %v, want %v (25 October twice)", fall, want)
	}
}

func equal(a, b []string) bool { return strings.Join(a, " ") == strings.Join(b, " ") }

func TestNextAcrossDST(t *testing.T) {
	tests := []struct {
		name, expr, zone, from string
		want                   []string
	}{
		{"gap time fires at the end of the gap", "30 2 * * *", "Europe/Berlin", "2026-03-27T12:00:00Z",
			[]string{"2026-03-28T02:30:00+01:00", "2026-03-29T03:00:00+02:00", "2026-03-30T02:30:00+02:00"}},
		{"overlap time fires once, at its first occurrence", "30 2 * * *", "Europe/Berlin", "2026-10-23T12:00:00Z",
			[]string{"2026-10-24T02:30:00+02:00", "2026-10-25T02:30:00+02:00", "2026-10-26T02:30:00+01:00"}},
		{"times outside the change are untouched", "0 8 * * *", "Europe/Berlin", "2026-03-28T00:00:00Z",
			[]string{"2026-03-28T08:00:00+01:00", "2026-03-29T08:00:00+02:00", "2026-03-30T08:00:00+02:00"}},
		{"several gap times and the time after the gap fire once together", "*/15 2,3 * * *", "Europe/Berlin", "2026-03-28T23:00:00Z",
			[]string{"2026-03-29T03:00:00+02:00", "2026-03-29T03:15:00+02:00", "2026-03-29T03:30:00+02:00", "2026-03-29T03:45:00+02:00", "2026-03-30T02:00:00+02:00"}},
		{"an hourly schedule fires the repeated hour once", "0 * * * *", "Europe/Berlin", "2026-10-24T23:30:00Z",
			[]string{"2026-10-25T02:00:00+02:00", "2026-10-25T03:00:00+01:00", "2026-10-25T04:00:00+01:00"}},
		{"New York spring forward", "30 2 * * *", "America/New_York", "2026-03-07T12:00:00Z",
			[]string{"2026-03-08T03:00:00-04:00", "2026-03-09T02:30:00-04:00"}},
		{"New York fall back", "30 1 * * *", "America/New_York", "2026-10-31T12:00:00Z",
			[]string{"2026-11-01T01:30:00-04:00", "2026-11-02T01:30:00-05:00"}},
		{"southern hemisphere spring forward in October", "30 2 * * *", "Australia/Sydney", "2026-10-03T00:00:00Z",
			[]string{"2026-10-04T03:00:00+11:00", "2026-10-05T02:30:00+11:00"}},
		{"a half-hour change", "15 2 * * *", "Australia/Lord_Howe", "2026-10-02T12:00:00Z",
			[]string{"2026-10-03T02:15:00+10:30", "2026-10-04T02:30:00+11:00", "2026-10-05T02:15:00+11:00"}},
		{"a two-hour change", "30 1 * * *", "Antarctica/Troll", "2026-03-28T12:00:00Z",
			[]string{"2026-03-29T03:00:00+02:00", "2026-03-30T01:30:00+02:00"}},
		{"a gap at midnight", "0 0 * * *", "America/Havana", "2026-03-07T12:00:00Z",
			[]string{"2026-03-08T01:00:00-04:00", "2026-03-09T00:00:00-04:00"}},
		{"a skipped day fires at the start of the next", "0 12 * * *", "Pacific/Apia", "2011-12-29T00:00:00Z",
			[]string{"2011-12-29T12:00:00-10:00", "2011-12-31T00:00:00+14:00", "2011-12-31T12:00:00+14:00"}},
		{"no DST", "30 2 * * *", "Asia/Kolkata", "2026-03-28T00:00:00Z",
			[]string{"2026-03-29T02:30:00+05:30", "2026-03-30T02:30:00+05:30"}},
		{"UTC", "30 2 * * *", "", "2026-03-28T03:00:00Z",
			[]string{"2026-03-29T02:30:00Z", "2026-03-30T02:30:00Z"}},
		{"a leap day across 2100", "0 8 29 2 *", "UTC", "2097-01-01T00:00:00Z",
			[]string{"2104-02-29T08:00:00Z"}},
		{"@every counts from the Unix epoch", "@every 1h30m", "Europe/Berlin", "2026-03-29T00:10:00Z",
			[]string{"2026-03-29T03:30:00+02:00", "2026-03-29T05:00:00+02:00", "2026-03-29T06:30:00+02:00"}},
		{"a descriptor", "@daily", "Europe/Berlin", "2026-03-28T12:00:00Z",
			[]string{"2026-03-29T00:00:00+01:00", "2026-03-30T00:00:00+02:00"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := MustParse(tt.expr, tt.zone)
			if got := firesFrom(c, mustTime(t, tt.from), len(tt.want)); !equal(got, tt.want) {
				t.Errorf("%v fires after %s:\n got %v\nwant %v", c, tt.from, got, tt.want)
			}
		})
	}
}

func TestNextIsStrictlyAfter(t *testing.T) {
	c := MustParse("30 2 * * *", "Europe/Berlin")
	at := mustTime(t, "2026-03-29T01:00:00Z") // the gap fire itself
	next, ok := c.Next(at)
	if !ok || next.Format(time.RFC3339) != "2026-03-30T02:30:00+02:00" {
		t.Errorf("Next(a fire) = %v, %v; want the next day's fire", next, ok)
	}
	next, _ = c.Next(at.Add(-time.Nanosecond))
	if !next.Equal(at) {
		t.Errorf("Next(a nanosecond before a fire) = %v, want %v", next, at)
	}
	// Inside the repeated hour the 02:30 fire already happened at 02:30 summer time.
	next, _ = c.Next(mustTime(t, "2026-10-25T01:15:00Z")) // 02:15 winter time
	if next.Format(time.RFC3339) != "2026-10-26T02:30:00+01:00" {
		t.Errorf("Next(in the repeated hour, before its second 02:30) = %v, want the next day's fire", next)
	}
}

func TestPrev(t *testing.T) {
	tests := []struct{ expr, zone, at, want string }{
		{"30 2 * * *", "Europe/Berlin", "2026-03-29T01:00:00Z", "2026-03-29T03:00:00+02:00"},
		{"30 2 * * *", "Europe/Berlin", "2026-03-29T00:59:59Z", "2026-03-28T02:30:00+01:00"},
		{"30 2 * * *", "Europe/Berlin", "2026-10-25T01:45:00Z", "2026-10-25T02:30:00+02:00"},
		{"0 8 * * 1-5", "Europe/Berlin", "2026-03-29T12:00:00Z", "2026-03-27T08:00:00+01:00"}, // a Sunday
		{"0 8 29 2 *", "UTC", "2103-06-01T00:00:00Z", "2096-02-29T08:00:00Z"},
		{"@every 1h30m", "UTC", "2026-03-29T01:30:00Z", "2026-03-29T01:30:00Z"},
		{"@every 1h30m", "UTC", "2026-03-29T01:29:59Z", "2026-03-29T00:00:00Z"},
		{"@every 7m", "UTC", "1969-12-31T23:59:00Z", "1969-12-31T23:53:00Z"},
	}
	for _, tt := range tests {
		c := MustParse(tt.expr, tt.zone)
		got, ok := c.Prev(mustTime(t, tt.at))
		if !ok || got.Format(time.RFC3339) != tt.want {
			t.Errorf("%v: Prev(%s) = %v, %v; want %s", c, tt.at, got, ok, tt.want)
		}
	}
}

func TestWithoutDSTEveryDayIs24Hours(t *testing.T) {
	for _, z := range []string{"UTC", "Asia/Kolkata", "Asia/Tokyo", "Etc/GMT+5", "America/Phoenix"} {
		c := MustParse("30 2 * * *", z)
		var prev time.Time
		n := 0
		for f := range c.Fires(mustTime(t, "2025-12-31T12:00:00Z"), mustTime(t, "2026-12-31T12:00:00Z")) {
			if f.Hour() != 2 || f.Minute() != 30 {
				t.Fatalf("%v fired at %v", c, f)
			}
			if !prev.IsZero() && f.Sub(prev) != 24*time.Hour {
				t.Fatalf("%v: %v after %v", c, f, prev)
			}
			prev = f
			n++
		}
		if n != 365 {
			t.Errorf("%v fired %d times in 2026, want 365", c, n)
		}
	}
}

func TestParseErrors(t *testing.T) {
	tests := []struct{ expr, zone, want string }{
		{"61 * * * *", "UTC", `schedule "61 * * * *" is not a valid 5-field cron expression (minute hour day-of-month month day-of-week): end of range (61) above maximum (59): 61`},
		{"* * * *", "UTC", `schedule "* * * *" is not a valid 5-field cron expression (minute hour day-of-month month day-of-week): expected exactly 5 fields, found 4: [* * * *]`},
		{"", "UTC", `schedule "" is not a valid 5-field cron expression (minute hour day-of-month month day-of-week): empty spec string`},
		{"CRON_TZ=Europe/Berlin 0 8 * * *", "UTC", `schedule "CRON_TZ=Europe/Berlin 0 8 * * *" sets a timezone; give the zone as the responsibility's timezone instead`},
		{"@every 500ms", "UTC", `schedule "@every 500ms": an @every interval must be at least 1s (got 500ms)`},
		{"@every 1500ms", "UTC", `schedule "@every 1500ms": an @every interval must be whole seconds (got 1.5s; robfig/cron would drop the 500ms and run every 1s)`},
		{"@every 1h0.5s", "UTC", `schedule "@every 1h0.5s": an @every interval must be whole seconds (got 1h0m0.5s; robfig/cron would drop the 500ms and run every 1h0m0s)`},
		{"0 0 30 2 *", "UTC", `schedule "0 0 30 2 *" never fires: the months it names have no such day`},
		{"0 8 * * *", "Europe/Berln", `schedule "0 8 * * *": `},
		{"0 8 * * *", "Local", `schedule "0 8 * * *": `},
	}
	for _, tt := range tests {
		_, err := Parse(tt.expr, tt.zone)
		if err == nil || !strings.HasPrefix(err.Error(), tt.want) || (strings.HasSuffix(tt.want, ": ") && err.Error() == tt.want) {
			t.Errorf("Parse(%q, %q) = %v, want %s...", tt.expr, tt.zone, err, tt.want)
		}
	}
	// The zone error is zone.Load's, so it reads as validation's does.
	_, want := zone.Load("Europe/Berln")
	if _, err := Parse("0 8 * * *", "Europe/Berln"); err == nil || err.Error() != `schedule "0 8 * * *": `+want.Error() {
		t.Errorf("Parse with a misspelt zone = %v, want the zone loader's error %v", err, want)
	}
}

// propertyZones have DST of every shape: northern and southern, negative (Dublin), half-hour
// (Lord Howe), two-hour (Troll), at midnight (Havana, Santiago), abolished (Tehran, Sao Paulo),
// moving with Ramadan (Casablanca), a skipped day (Apia 2011), none (Kolkata, UTC).
var propertyZones = []string{
	"Europe/Berlin", "America/New_York", "Australia/Sydney", "Europe/Dublin", "Australia/Lord_Howe",
	"Antarctica/Troll", "America/Havana", "America/Santiago", "Asia/Tehran", "America/Sao_Paulo",
	"Africa/Casablanca", "Pacific/Apia", "Pacific/Chatham", "Asia/Kolkata", "UTC",
}

// randomExpr returns a random 5-field expression that fires at least every few days.
func randomExpr(r *rand.Rand) string {
	pick := func(opts ...string) string { return opts[r.IntN(len(opts))] }
	minute := pick("*", "*/15", "0", "30", "0,30", "5-10", "59", fmt.Sprint(r.IntN(60)))
	hour := pick("*", "0", "1", "2", "3", "1-3", "*/2", "23", fmt.Sprint(r.IntN(24)), "0,2,12")
	dom := pick("*", "*", "*", "*/2", "1-10,20-31")
	dow := pick("*", "*", "*", "1-5", "0,6")
	return strings.Join([]string{minute, hour, dom, "*", dow}, " ")
}

// bruteForceFires lists the fires in (from, through] minute by minute: a fire happens at the
// first whole minute at which the zone's clock has reached a wall-clock minute the expression
// names that it had not reached before. Modern zone changes fall on whole minutes.
func bruteForceFires(c *Cron, from, through time.Time) []string {
	names := func(w time.Time) bool { return c.spec.Next(w.Add(-time.Second)).Equal(w) }
	var out []string
	reached := wall(from.Add(-72*time.Hour), c.loc)
	for u := from.Add(-27 * time.Hour).Truncate(time.Minute); !u.After(through); u = u.Add(time.Minute) {
		now := wall(u, c.loc)
		fired := false
		for w := reached.Truncate(time.Minute).Add(time.Minute); !w.After(now); w = w.Add(time.Minute) {
			if w.After(reached) && names(w) {
				fired = true
				break
			}
		}
		if now.After(reached) {
			reached = now
		}
		if fired && u.After(from) {
			out = append(out, u.In(c.loc).Format(time.RFC3339))
		}
	}
	return out
}

// transitions returns the instants at which loc's offset changes in year.
func transitions(loc *time.Location, year int) []time.Time {
	var out []time.Time
	t := time.Date(year, 1, 1, 0, 0, 0, 0, time.UTC)
	offset, _, _ := period(t, loc)
	for {
		_, _, end := period(t, loc)
		if end.IsZero() || end.Year() > year {
			return out
		}
		if next, _, _ := period(end, loc); next != offset {
			out = append(out, end)
			offset = next
		}
		t = end
	}
}

// TestFiresMatchBruteForce compares Fires with a minute-by-minute walk of the zone's clock, on
// random expressions, around every zone change of random years and in a random quiet week.
func TestFiresMatchBruteForce(t *testing.T) {
	r := rand.New(rand.NewPCG(17, 2026))
	for _, z := range propertyZones {
		loc, err := zone.Load(z)
		if err != nil {
			t.Fatal(err)
		}
		for _, year := range []int{2016, 2011 + r.IntN(17)} {
			windows := []time.Time{
				time.Date(year, time.Month(1+r.IntN(12)), 1+r.IntN(28), 0, 0, 0, 0, time.UTC),
				time.Date(year, time.December, 31, 12, 0, 0, 0, time.UTC), // see period
			}
			windows = append(windows, transitions(loc, year)...)
			expr := randomExpr(r)
			c := MustParse(expr, z)
			for _, at := range windows {
				from, through := at.Add(-26*time.Hour), at.Add(26*time.Hour)
				var got []string
				for f := range c.Fires(from, through) {
					got = append(got, f.Format(time.RFC3339))
				}
				if want := bruteForceFires(c, from, through); !equal(got, want) {
					t.Fatalf("%v fires in (%v, %v]:\n got %v\nwant %v", c, from, through, got, want)
				}
			}
		}
	}
}

// TestDailyFiresOncePerLocalDay: a daily expression fires exactly once on every local day, on
// that day, with fires strictly increasing, through several years of every property zone.
func TestDailyFiresOncePerLocalDay(t *testing.T) {
	r := rand.New(rand.NewPCG(8, 30))
	for _, z := range propertyZones {
		if z == "Pacific/Apia" {
			continue // 30 December 2011 never happened there
		}
		expr := fmt.Sprintf("%d %d * * *", r.IntN(60), r.IntN(24))
		c := MustParse(expr, z)
		start := 2016 + r.IntN(8)
		from := time.Date(start, 1, 1, 0, 0, 0, 0, c.loc).Add(-time.Nanosecond)
		through := time.Date(start+3, 1, 1, 0, 0, 0, 0, c.loc).Add(-time.Nanosecond)
		day := time.Date(start, 1, 1, 0, 0, 0, 0, time.UTC)
		var prev time.Time
		for f := range c.Fires(from, through) {
			if !f.After(prev) {
				t.Fatalf("%v: fire %v after %v", c, f, prev)
			}
			if y, m, d := f.Date(); time.Date(y, m, d, 0, 0, 0, 0, time.UTC) != day {
				t.Fatalf("%v: fire %v, want one on %s", c, f, day.Format(time.DateOnly))
			}
			prev, day = f, day.AddDate(0, 0, 1)
		}
		if want := time.Date(start+3, 1, 1, 0, 0, 0, 0, time.UTC); day != want {
			t.Errorf("%v: fires ended before %s, want through %d", c, day.Format(time.DateOnly), start+2)
		}
	}
}

// TestNextAndPrevAgree: at random instants, Prev(t) <= t < Next(t), nothing fires between
// them, and each is a fire (Prev of a fire is itself).
func TestNextAndPrevAgree(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 29))
	base := time.Date(2010, 1, 1, 0, 0, 0, 0, time.UTC)
	for i := range 3000 {
		z := propertyZones[i%len(propertyZones)]
		c := MustParse(randomExpr(r), z)
		at := base.Add(time.Duration(r.Int64N(int64(18 * 365 * 24 * time.Hour))))
		if i%3 == 0 { // near a zone change
			if ts := transitions(c.loc, at.Year()); len(ts) > 0 {
				at = ts[r.IntN(len(ts))].Add(time.Duration(r.Int64N(int64(6*time.Hour))) - 3*time.Hour)
			}
		}
		prev, okPrev := c.Prev(at)
		next, okNext := c.Next(at)
		if !okPrev || !okNext || prev.After(at) || !next.After(at) {
			t.Fatalf("%v at %v: Prev %v %v, Next %v %v", c, at, prev, okPrev, next, okNext)
		}
		if n, _ := c.Next(prev); !n.Equal(next) {
			t.Fatalf("%v at %v: Next(Prev) = %v, want Next = %v", c, at, n, next)
		}
		if p, _ := c.Prev(next); !p.Equal(next) {
			t.Fatalf("%v at %v: Prev(Next) = %v, want %v", c, at, p, next)
		}
	}
}
