package main

import (
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
)

// The replay-scale benchmark of runtime/store: ReplayScale/<database>/<series>=<size>/<mode>.
const scalePrefix = "ReplayScale/"

// growthSeries is one line of the growth table: one database, one series (thread length or
// other threads), one replay mode, with the sizes measured.
type growthSeries struct {
	db, series, mode string
	sizes            []int
}

func (g growthSeries) name(size int) string {
	return fmt.Sprintf("%s%s/%s=%d/%s", scalePrefix, g.db, g.series, size, g.mode)
}

// growthTarget is the target for a series: the largest size's median time at most
// maxRatio times the smallest's, for the sizes named.
type growthTarget struct {
	smallest, largest int
	maxRatio          float64
}

// growthTargets: a 50-message window from a 100,000-message thread within 2× of one from a
// 100-message thread (without compaction), and compacted replay with 10,000 other threads
// within 2× of 1 other thread.
var growthTargets = map[[2]string]growthTarget{
	{"thread", "plain"}:     {100, 100000, 2},
	{"others", "compacted"}: {1, 10000, 2},
}

// scaleSeries finds the growth series in s, ordered by database, series, mode.
func scaleSeries(s *results) []growthSeries {
	bySeries := map[[3]string][]int{}
	for name := range s.values {
		rest, ok := strings.CutPrefix(name, scalePrefix)
		if !ok {
			continue
		}
		parts := strings.Split(rest, "/")
		if len(parts) != 3 {
			continue
		}
		series, size, ok := strings.Cut(parts[1], "=")
		if !ok {
			continue
		}
		n, err := strconv.Atoi(size)
		if err != nil {
			continue
		}
		key := [3]string{parts[0], series, parts[2]}
		bySeries[key] = append(bySeries[key], n)
	}
	var out []growthSeries
	for k, sizes := range bySeries {
		slices.Sort(sizes)
		out = append(out, growthSeries{db: k[0], series: k[1], mode: k[2], sizes: slices.Compact(sizes)})
	}
	order := func(v string, first ...string) int {
		if i := slices.Index(first, v); i >= 0 {
			return i
		}
		return len(first)
	}
	slices.SortFunc(out, func(a, b growthSeries) int {
		for _, c := range [][2]int{
			{order(a.db, "mysql", "sqlite"), order(b.db, "mysql", "sqlite")},
			{order(a.series, "thread", "others"), order(b.series, "thread", "others")},
			{order(a.mode, "plain", "compacted"), order(b.mode, "plain", "compacted")},
		} {
			if c[0] != c[1] {
				return c[0] - c[1]
			}
		}
		return strings.Compare(a.db+a.series+a.mode, b.db+b.series+b.mode)
	})
	return out
}

// printGrowth writes the replay growth table: per series the median time at each size with
// its ratio to the smallest size, what the database read (rows or pages per replay, which do
// not depend on the machine's load), and the target where the issue sets one. Nothing is
// printed when the input has no ReplayScale results.
func printGrowth(w io.Writer, s *results) {
	all := scaleSeries(s)
	if len(all) == 0 {
		return
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Replay of a 50-message window as the thread grows (thread=N messages) and as the database grows")
	fmt.Fprintln(w, "around a 100-message thread (others=K threads of 10 messages); × is the ratio to the smallest size.")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "| database | series | replay | sizes: median time (× smallest) | reads per replay | largest ÷ smallest | target | met |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|---|---|")
	for _, g := range all {
		base, ok := s.median(g.name(g.sizes[0]), "ns/op")
		var cells []string
		for _, n := range g.sizes {
			t, ok2 := s.median(g.name(n), "ns/op")
			if !ok || !ok2 {
				cells = append(cells, fmt.Sprintf("%s: —", count(n)))
				continue
			}
			cells = append(cells, fmt.Sprintf("%s: %s (%.2f×)", count(n), dur(t), t/base))
		}
		reads := "—"
		for _, unit := range []string{"rows/op", "pages/op"} {
			lo, okLo := s.median(g.name(g.sizes[0]), unit)
			hi, okHi := s.median(g.name(g.sizes[len(g.sizes)-1]), unit)
			if okLo && okHi {
				reads = fmt.Sprintf("%s → %s %s", num(lo), num(hi), strings.TrimSuffix(unit, "/op"))
			}
		}
		ratio := "—"
		if hi, ok2 := s.median(g.name(g.sizes[len(g.sizes)-1]), "ns/op"); ok && ok2 && len(g.sizes) > 1 {
			ratio = fmt.Sprintf("%.2f", hi/base)
		}
		target, verdict := "(informational)", "—"
		if tg, ok := growthTargets[[2]string{g.series, g.mode}]; ok {
			target = fmt.Sprintf("%s ≤ %g× %s", count(tg.largest), tg.maxRatio, count(tg.smallest))
			lo, okLo := s.median(g.name(tg.smallest), "ns/op")
			hi, okHi := s.median(g.name(tg.largest), "ns/op")
			switch {
			case !okLo || !okHi:
				verdict = "**no data** (bench/run sets PERSONAGEN_BENCH_SCALE=full)"
			case hi/lo <= tg.maxRatio:
				verdict = fmt.Sprintf("yes (%.2f×)", hi/lo)
			default:
				verdict = fmt.Sprintf("**no** (%.2f×)", hi/lo)
			}
		}
		fmt.Fprintf(w, "| %s | %s | %s | %s | %s | %s | %s | %s |\n", dbName(g.db), g.series, g.mode,
			strings.Join(cells, "; "), reads, ratio, target, verdict)
	}
}

func dbName(d string) string {
	switch d {
	case "mysql":
		return "MariaDB"
	case "sqlite":
		return "SQLite"
	}
	return d
}

// count renders an integer with thousands separators: 100000 → "100,000".
func count(n int) string {
	s := strconv.Itoa(n)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}
