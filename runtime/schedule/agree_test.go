package schedule_test

import (
	"fmt"
	"testing"

	"github.com/personagen/personagen/runtime/schedule"
	"github.com/personagen/personagen/spec"
)

// TestParseRefusesWhatValidationRefuses holds the promise that a schedule that validates is the
// schedule that fires: for each expression and zone, schedule.Parse accepts exactly what
// personagen validate accepts in a responsibility. "@every 1h0m0.5s" was accepted by Parse
// (firing every hour) and refused by validation.
func TestParseRefusesWhatValidationRefuses(t *testing.T) {
	exprs := []string{"30 2 * * *", "@daily", "@every 1s", "@every 0s", "@every -1s", "@every 500ms",
		"@every 1500ms", "@every 1h0m0.5s", "@every 1h30m", "@every 1000000000ns", "@every  1h", "@every 1h ",
		"@reboot", "@Daily", "0 24 * * *", "0 8 31 4 *", "0 8 30 2 *", "0 8 29 2 *", "0 8 * * 7",
		"0 8 L * *", "*/0 * * * *", "0 8 * * MON-FRI", "0 8 ? * *", "  0 8 * * *  ", "0\t8 * * *",
		"0 8 * * * *", "TZ=UTC 0 8 * * *", "CRON_TZ=UTC 0 8 * * *", "tz=UTC 0 8 * * *", " TZ=UTC 0 8 * * *", ""}
	zones := []string{"UTC", "Europe/Berlin", "Pacific/Apia", "US/Pacific", "Local", "europe/berlin", "right/UTC"}
	for _, zone := range zones {
		for _, expr := range exprs {
			_, err := schedule.Parse(expr, zone)
			src := fmt.Sprintf("version: 1\nname: p\nresponsibilities:\n  - {name: r, schedule: %q, timezone: %q}\n", expr, zone)
			_, diags := spec.Load("p.persona.yaml", []byte(src))
			if (err == nil) != (len(diags) == 0) {
				t.Errorf("schedule %q in %q: Parse error %v, validation %v; want both to accept or both to refuse", expr, zone, err, diags)
			}
		}
	}
}
