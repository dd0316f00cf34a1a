package schedule_test

import (
	"fmt"
	"time"

	"github.com/personagen/personagen/runtime/schedule"
)

// A daily 02:30 in Berlin across both changes of 2026: on 29 March the clocks skip from 02:00
// to 03:00, so the fire runs once at the end of the gap; on 25 October they repeat 02:00 to
// 03:00, and it runs once, at the first 02:30.
func ExampleParse() {
	c, err := schedule.Parse("30 2 * * *", "Europe/Berlin")
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, days := range [][2]string{{"2026-03-27", "2026-03-30"}, {"2026-10-24", "2026-10-26"}} {
		from, _ := time.Parse(time.DateOnly, days[0])
		through, _ := time.Parse(time.DateOnly, days[1])
		for fire := range c.Fires(from, through) {
			fmt.Println(fire.Format("Mon 2006-01-02 15:04 MST"), "=", fire.UTC().Format("15:04 UTC"))
		}
	}
	// Output:
	// Fri 2026-03-27 02:30 CET = 01:30 UTC
	// Sat 2026-03-28 02:30 CET = 01:30 UTC
	// Sun 2026-03-29 03:00 CEST = 01:00 UTC
	// Sat 2026-10-24 02:30 CEST = 00:30 UTC
	// Sun 2026-10-25 02:30 CEST = 00:30 UTC
}

// A run key names one fire of one responsibility: the scheduler's claim, unique in the store.
func ExampleRunKey() {
	at := time.Date(2026, 3, 29, 8, 0, 0, 0, time.FixedZone("CEST", 2*60*60))
	fmt.Println(schedule.RunKey("research-assistant", "daily-digest", at))
	// Output:
	// fire:research-assistant/daily-digest@2026-03-29T06:00:00Z
}
