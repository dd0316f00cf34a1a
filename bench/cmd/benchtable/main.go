// Command benchtable reads `go test -bench` output files and prints the comparison table of
// bench/run: per row, ours against a peer or a baseline as a ratio of medians (time and
// allocations), the absolute medians, the target and whether it is met.
//
// Usage: benchtable FILE...
//
// Results are grouped by full benchmark name without the GOMAXPROCS suffix; every unit (ns/op,
// B/op, allocs/op and custom metrics such as queries/op) gets its median over the -count runs.
// A row whose benchmarks are missing from the input is printed as missing, never dropped.
// Exit status 1 on unreadable input, 0 otherwise (a missed target is reported, not an error).
package main

import (
	"fmt"
	"io"
	"os"

	"golang.org/x/perf/benchfmt"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: benchtable FILE...")
		os.Exit(2)
	}
	set := newResults()
	for _, path := range os.Args[1:] {
		f, err := os.Open(path)
		if err != nil {
			fmt.Fprintln(os.Stderr, "benchtable:", err)
			os.Exit(1)
		}
		err = set.read(f, path)
		f.Close()
		if err != nil {
			fmt.Fprintln(os.Stderr, "benchtable:", err)
			os.Exit(1)
		}
	}
	printTable(os.Stdout, set)
	printGrowth(os.Stdout, set)
}

// results holds every value read, by benchmark name (GOMAXPROCS suffix removed) and unit.
type results struct {
	values map[string]map[string][]float64
	cpu    string
}

func newResults() *results { return &results{values: map[string]map[string][]float64{}} }

// read adds the results of one `go test -bench` output. ns/op values are kept in ns (benchfmt
// normalises them to sec/op).
func (s *results) read(r io.Reader, name string) error {
	br := benchfmt.NewReader(r, name)
	for br.Scan() {
		res, ok := br.Result().(*benchfmt.Result)
		if !ok {
			continue
		}
		if cpu := res.GetConfig("cpu"); cpu != "" {
			s.cpu = cpu
		}
		full := trimProcs(res.Name.String())
		units := s.values[full]
		if units == nil {
			units = map[string][]float64{}
			s.values[full] = units
		}
		for _, v := range res.Values {
			unit, val := v.Unit, v.Value
			if v.OrigUnit != "" {
				unit, val = v.OrigUnit, v.OrigValue
			}
			units[unit] = append(units[unit], val)
		}
	}
	return br.Err()
}

// trimProcs removes a trailing "-N" GOMAXPROCS suffix.
func trimProcs(name string) string {
	for i := len(name) - 1; i >= 0; i-- {
		c := name[i]
		if c == '-' && i < len(name)-1 {
			return name[:i]
		}
		if c < '0' || c > '9' {
			break
		}
	}
	return name
}

// median returns the median of name's values in unit and whether there are any.
func (s *results) median(name, unit string) (float64, bool) {
	return median(s.values[name][unit])
}

// spread returns the smallest and largest of name's values in unit.
func (s *results) spread(name, unit string) (lo, hi float64, ok bool) {
	vs := s.values[name][unit]
	if len(vs) == 0 {
		return 0, 0, false
	}
	lo, hi = vs[0], vs[0]
	for _, v := range vs {
		lo, hi = min(lo, v), max(hi, v)
	}
	return lo, hi, true
}

func (s *results) has(name string) bool {
	_, ok := s.median(name, "ns/op")
	return ok
}

func (s *results) runs(name string) int { return len(s.values[name]["ns/op"]) }
