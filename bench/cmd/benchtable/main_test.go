package main

import (
	"strings"
	"testing"
)

func TestMedianOfOddAndEvenCounts(t *testing.T) {
	for _, c := range []struct {
		in   []float64
		want float64
		ok   bool
	}{
		{nil, 0, false},
		{[]float64{3}, 3, true},
		{[]float64{5, 1, 3}, 3, true},
		{[]float64{4, 1, 3, 2}, 2.5, true},
	} {
		got, ok := median(c.in)
		if got != c.want || ok != c.ok {
			t.Errorf("median(%v) = %v, %v; want %v, %v", c.in, got, ok, c.want, c.ok)
		}
	}
}

func TestTrimProcsRemovesOnlyTheGomaxprocsSuffix(t *testing.T) {
	for in, want := range map[string]string{
		"Assembly/eino-2":            "Assembly/eino",
		"Assembly/eino-16":           "Assembly/eino",
		"Assembly/eino":              "Assembly/eino",
		"RecordRound/find_or_create": "RecordRound/find_or_create",
		"Replay/mysql/x-":            "Replay/mysql/x-",
	} {
		if got := trimProcs(in); got != want {
			t.Errorf("trimProcs(%q) = %q, want %q", in, got, want)
		}
	}
}

const sample = `goos: linux
cpu: Test CPU
BenchmarkAssembly/personagen-2   100  100000 ns/op  120000 cpu-ns/op  1000 B/op  100 allocs/op
BenchmarkAssembly/personagen-2   100  300000 ns/op  120000 cpu-ns/op  1000 B/op  100 allocs/op
BenchmarkAssembly/personagen-2   100  200000 ns/op  120000 cpu-ns/op  1000 B/op  100 allocs/op
BenchmarkAssembly/baseline-2     100  150000 ns/op  90000 cpu-ns/op  2000 B/op  9 allocs/op
BenchmarkAssembly/baseline-2     100  170000 ns/op  110000 cpu-ns/op  2000 B/op  9 allocs/op
BenchmarkAssembly/ratio-2        100  300000 ns/op  1.100 personagen/baseline
BenchmarkAssembly/langchaingo-2  100  900000 ns/op  1000 B/op  700 allocs/op
BenchmarkAssembly/eino-2         100  590000 ns/op  1000 B/op  500 allocs/op
BenchmarkConversion/assembly-2  100  400000 ns/op  1000 B/op  100 allocs/op
BenchmarkConversion/anthropic-2  100  80000 ns/op  500 B/op  30 allocs/op
BenchmarkConversion/openai_chat-2  100  120000 ns/op  500 B/op  30 allocs/op
BenchmarkRecordRound/multi_row_insert-2  10  400000 ns/op  3.000 roundtrips/op  100 B/op  10 allocs/op
BenchmarkRecordRound/find_or_create-2    10  800000 ns/op  18.00 roundtrips/op  100 B/op  20 allocs/op
BenchmarkClaim/mysql/insert/1_schedulers-2  100  1000000 ns/op  1.000 roundtrips/claim  1.000 roundtrips/fire
BenchmarkClaim/mysql/insert/4_schedulers-2  100  2000000 ns/op  7.000 roundtrips/fire
BenchmarkClaim/mysql/lock_then_insert/1_schedulers-2  100  3000000 ns/op  4.000 roundtrips/claim  4.000 roundtrips/fire
BenchmarkClaim/mysql/lock_then_insert/4_schedulers-2  100  4000000 ns/op  21.00 roundtrips/fire
`

// TestTableUsesMediansAndChecksTargets: the assembly rows use the median 200 µs (not the mean);
// against the baseline (median 160 µs) 1.25× meets the 1.25× target, with the CPU-time ratio
// noted; against the faster peer (eino) the alloc target (100/500 ≤ 1/3) is met and time is
// not judged; RecordRound is 2× faster, below the 2.5× target; a claim takes one round trip and
// is faster than the lock; missing rows say so.
func TestTableUsesMediansAndChecksTargets(t *testing.T) {
	s := newResults()
	if err := s.read(strings.NewReader(sample), "sample"); err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	printTable(&b, s)
	out := b.String()
	for _, want := range []string{
		"| request assembly vs the hand-written baseline | 200 µs, 100 allocs, 1000 B | 160 µs, 9 allocs, 1.95 KiB | 1.25 (1.25× slower) | 11.11 | CPU time 120 µs vs 100 µs (1.20); interleaved: 1.10× | ≤1.25× the baseline's time | yes |",
		"| request assembly vs eino | 200 µs, 100 allocs, 1000 B | 590 µs, 500 allocs, 1000 B | 0.34 (2.95× faster) | 0.20 |  | fastest peer: ≤1/3 allocs | yes |",
		"| request assembly vs langchaingo | 200 µs, 100 allocs, 1000 B | 900 µs, 700 allocs, 1000 B | 0.22 (4.50× faster) | 0.14 |  | (slower peer: informational) | — |",
		"| 0.50 (2.00× faster) | 0.50 | 3 round trips (baseline 18) | 3 round trips, ≥2.5× faster | **no** |",
		"| convert the 173-message request to Anthropic SDK params vs assembling it | 80.0 µs, 30 allocs, 500 B | 400 µs, 100 allocs, 1000 B | 0.20 (5.00× faster) | 0.30 |  | conversion ≤ 1/4 of assembly | yes |",
		"| convert to Chat Completions SDK params vs assembling | 120 µs, 30 allocs, 500 B | 400 µs, 100 allocs, 1000 B | 0.30 (3.33× faster) | 0.30 |  | conversion ≤ 1/4 of assembly | **no** |",
		"missing: Conversion/openai_responses",
		"missing: Replay/mysql/replay, Replay/mysql/baseline",
		"| claim a fire, 4 schedulers contending, MariaDB, vs lock-then-insert | 2.00 ms | 4.00 ms | 0.50 (2.00× faster) | — | 1 round trip per claim (lock-then-insert 4); 500 claims/s, 7 round trips per fire over all 4 | 1 round trip per claim, not slower than the lock | yes |",
		"missing: Claim/mysql/insert/16_schedulers, Claim/mysql/lock_then_insert/16_schedulers",
		"Medians of 3 runs each",
		"cpu: Test CPU",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("table lacks %q:\n%s", want, out)
		}
	}
}

const growthSample = `goos: linux
BenchmarkReplayScale/mysql/thread=100/plain-2       10  1000000 ns/op  3.000 queries/op  196.0 rows/op
BenchmarkReplayScale/mysql/thread=100/plain-2       10  3000000 ns/op  3.000 queries/op  196.0 rows/op
BenchmarkReplayScale/mysql/thread=100/plain-2       10  2000000 ns/op  3.000 queries/op  196.0 rows/op
BenchmarkReplayScale/mysql/thread=100000/plain-2    10  2500000 ns/op  3.000 queries/op  197.0 rows/op
BenchmarkReplayScale/mysql/thread=1000/plain-2      10  2100000 ns/op  3.000 queries/op  196.0 rows/op
BenchmarkReplayScale/sqlite/others=1/compacted-2    10   400000 ns/op  5.000 queries/op  72.00 pages/op
BenchmarkReplayScale/sqlite/others=10000/compacted-2 10  900000 ns/op  5.000 queries/op  170.0 pages/op
BenchmarkReplayScale/sqlite/thread=100/compacted-2  10   500000 ns/op  5.000 queries/op  305.0 pages/op
BenchmarkReplayScale/sqlite/thread=1000/plain-2     10   500000 ns/op  3.000 queries/op  300.0 pages/op
`

// TestGrowthTableRatiosAndTargets: sizes sorted numerically, ratios to the smallest size's
// median (2 ms), reads from the smallest to the largest size, the 2× targets judged, a series
// missing its large size reported as no data.
func TestGrowthTableRatiosAndTargets(t *testing.T) {
	s := newResults()
	if err := s.read(strings.NewReader(growthSample), "sample"); err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	printGrowth(&b, s)
	out := b.String()
	for _, want := range []string{
		"| MariaDB | thread | plain | 100: 2.00 ms (1.00×); 1,000: 2.10 ms (1.05×); 100,000: 2.50 ms (1.25×) | 196 → 197 rows | 1.25 | 100,000 ≤ 2× 100 | yes (1.25×) |",
		"| SQLite | others | compacted | 1: 400 µs (1.00×); 10,000: 900 µs (2.25×) | 72 → 170 pages | 2.25 | 10,000 ≤ 2× 1 | **no** (2.25×) |",
		"| SQLite | thread | plain | 1,000: 500 µs (1.00×) | 300 → 300 pages | — | 100,000 ≤ 2× 100 | **no data** (bench/run sets PERSONAGEN_BENCH_SCALE=full) |",
		"| SQLite | thread | compacted | 100: 500 µs (1.00×) | 305 → 305 pages | — | (informational) | — |",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("growth table lacks %q:\n%s", want, out)
		}
	}
	if strings.Index(out, "| MariaDB |") > strings.Index(out, "| SQLite |") {
		t.Errorf("MariaDB rows should come first:\n%s", out)
	}
	var empty strings.Builder
	printGrowth(&empty, newResults())
	if empty.Len() != 0 {
		t.Errorf("growth table printed for no ReplayScale results: %q", empty.String())
	}
}

// TestIngestRowJudgesRoundTripsPerPersona: the ingestion row is met when every case of both
// databases reported at most 3 round trips per message and persona (the two-persona case's 4 is
// 2 each), not met when a case costs more, and not met when cases are missing.
func TestIngestRowJudgesRoundTripsPerPersona(t *testing.T) {
	lines := func(worst string) string {
		var b strings.Builder
		for _, db := range []string{"mysql", "sqlite"} {
			for _, c := range ingestCases {
				trips := "2.000"
				switch {
				case c.name == "duplicate":
					trips = "1.000"
				case c.personas == 2:
					trips = "4.000"
				case db == "sqlite" && c.name == "reply_with_attachment":
					trips = worst
				}
				b.WriteString("BenchmarkIngest/" + db + "/" + c.name + "-2  100  300000 ns/op  " + trips + " roundtrips/op  1000 B/op  100 allocs/op\n")
			}
		}
		return b.String()
	}
	for _, c := range []struct{ in, want string }{
		{lines("2.000"), "| at most 2 round trips per message and persona (mysql/reply) | ≤3 round trips per message and persona, every case | yes |"},
		{lines("5.000"), "| at most 5 round trips per message and persona (sqlite/reply_with_attachment) | ≤3 round trips per message and persona, every case | **no** |"},
		{lines("2.000")[:strings.Index(lines("2.000"), "BenchmarkIngest/sqlite")], "| at most 2 round trips per message and persona (mysql/reply); 8 cases missing | ≤3 round trips per message and persona, every case | **no** |"},
	} {
		s := newResults()
		if err := s.read(strings.NewReader(c.in), "sample"); err != nil {
			t.Fatal(err)
		}
		var b strings.Builder
		printTable(&b, s)
		if !strings.Contains(b.String(), c.want) {
			t.Errorf("table lacks %q:\n%s", c.want, b.String())
		}
	}
}

const serviceSample = `goos: linux
BenchmarkService/sqlite/direct-2       500  2000000 ns/op  1800000 cpu-ns/op  500.0 msgs/s  10.00 roundtrips/op
BenchmarkService/sqlite/direct_8-2     500  1900000 ns/op  1700000 cpu-ns/op  520.0 msgs/s  10.00 roundtrips/op
BenchmarkService/sqlite/service_1x1-2  400  2500000 ns/op  2300000 cpu-ns/op  400.0 msgs/s  12.02 roundtrips/op
BenchmarkService/sqlite/service_1x8-2  300  3000000 ns/op  2600000 cpu-ns/op  333.3 msgs/s  12.03 roundtrips/op
BenchmarkService/sqlite/service_4x8-2  100  9000000 ns/op  111.1 msgs/s  12.30 roundtrips/op
BenchmarkServiceRatio/sqlite-2           5  1000000000 ns/op  1.300 cpu-service/direct  2.036 extra-roundtrips/op  1.150 service/direct
BenchmarkServiceInFlight/sqlite/model_1s-2  1  17000000000 ns/op  1000 batch  57000 bytes/run  177.0 in-flight  9.600 peak-MiB
BenchmarkServiceInFlight/sqlite/held-2      1  40000000000 ns/op  1000 batch  47000 bytes/run  1000 in-flight  45.20 peak-MiB
BenchmarkService/mysql/direct-2        500  3000000 ns/op  11.00 roundtrips/op  333.3 msgs/s
BenchmarkService/mysql/service_1x1-2   400  4000000 ns/op  14.00 roundtrips/op  250.0 msgs/s
BenchmarkServiceInFlight/mysql/model_1s-2  1  2000000000 ns/op  50.00 batch  16000 bytes/run  50.00 in-flight  1.500 peak-MiB
BenchmarkServiceInFlight/mysql/held-2      1  600000000 ns/op  50.00 batch  18000 bytes/run  50.00 in-flight  1.700 peak-MiB
`

// TestServiceRowsJudgeTripsRatioAndMemory: on SQLite the service adds 2 round trips (2.02, its
// start spread over the batch) and is within 1.2× interleaved, and 1,000 held runs take 45 MiB;
// on MariaDB 3 extra round trips miss the target (judged on the medians without an interleaved
// ratio), and a batch of 50 is no verdict on 1,000 runs.
func TestServiceRowsJudgeTripsRatioAndMemory(t *testing.T) {
	s := newResults()
	if err := s.read(strings.NewReader(serviceSample), "sample"); err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	printTable(&b, s)
	out := b.String()
	for _, want := range []string{
		"| answer a message through the service (1 worker), SQLite, vs Runner.Reply in a loop | 2.50 ms | 2.00 ms | 1.25 (1.25× slower) | — | 2.02 extra round trips per message (12.0 vs 10); interleaved: time 1.15×, CPU 1.30× | ≤ 2 extra round trips, ≤ 1.2× the loop's time (interleaved) | yes |",
		"| answer a message through the service (1 worker), MariaDB, vs Runner.Reply in a loop | 4.00 ms | 3.00 ms | 1.33 (1.33× slower) | — | 3.00 extra round trips per message (14 vs 11); no interleaved ratio | ≤ 2 extra round trips, ≤ 1.2× the loop's time (interleaved) | **no** |",
		"| answer messages through the service (8 workers), SQLite, vs 8 goroutines calling Runner.Reply | 3.00 ms | 1.90 ms | 1.58 (1.58× slower) | — | 333 msgs/s vs 520; 12.03 vs 10.00 round trips per message | (informational) | — |",
		"| 4 service processes × 8 workers, SQLite, vs 1 process × 8 workers | 9.00 ms | 3.00 ms | 3.00 (3.00× slower) | — | 111 msgs/s vs 333; 12.30 vs 12.03 round trips per message | (informational: one database) | — |",
		"| runs in flight in one process, SQLite: a 1 s model vs every call held until all are in flight | 17.0 s | 40.0 s | 0.42 (2.35× faster) | — | held: 1000 of 1000 in flight, 45.9 KiB per run, 45.2 MiB; 1 s model: at most 177 in flight (9.60 MiB) | 1,000 concurrent runs in one process under 1 GiB | yes |",
		"| held: 50 of 50 in flight, 17.6 KiB per run, 1.70 MiB; 1 s model: at most 50 in flight (1.50 MiB) (batch 50: bench/run sets PERSONAGEN_BENCH_SCALE=full) | 1,000 concurrent runs in one process under 1 GiB | **no** |",
		"missing: Service/mysql/service_1x8, Service/mysql/direct_8",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("table lacks %q:\n%s", want, out)
		}
	}
}
