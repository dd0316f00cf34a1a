package console

import (
	"fmt"
	"math"
	"time"

	"github.com/personagen/personagen/runtime/store"
)

// chart is a bar chart drawn as server-side SVG: stacked bars, horizontal grid lines with
// their values, tick labels under the bars, a legend. Every coordinate is a number and every
// text is escaped by the template; colours are classes of the console's stylesheet.
type chart struct {
	Title         string
	Width, Height int
	Bars          []bar
	Grid          []gridLine
	Ticks         []tick
	Legend        []legendKey
}

type bar struct {
	X, Y, W, H float64
	Class      string
	Title      string
}

type gridLine struct {
	X1, Y1, X2, Y2 float64
	TX, TY         float64
	Label          string
}

type tick struct {
	X, Y  float64
	Label string
}

type legendKey struct{ Class, Label string }

// series is one stacked part of a chart's bars: its class, legend label and value per bar.
type series struct {
	class, label string
	values       []float64
}

// Chart geometry, in SVG user units.
const (
	chartW, chartH    = 720, 220
	chartLeft         = 52 // room for the grid labels
	chartTop          = 8
	chartBottom       = 28 // room for the ticks
	chartGap          = 0.2
	chartGridLines    = 4
	chartTickEveryMax = 12
)

// stacked draws n bars of the given series stacked in order, labelled by label(i) under every
// few bars, with a title for each part (titles(i, s)).
func stacked(title string, n int, ss []series, label func(i int) string, format func(float64) string) chart {
	c := chart{Title: title, Width: chartW, Height: chartH}
	top := 0.0
	for i := range n {
		sum := 0.0
		for _, s := range ss {
			sum += s.values[i]
		}
		top = math.Max(top, sum)
	}
	top = niceCeil(top/chartGridLines) * chartGridLines // every grid line at a round value
	plotH := float64(chartH - chartTop - chartBottom)
	plotW := float64(chartW - chartLeft)
	slot := plotW / float64(n)
	for g := 0; g <= chartGridLines; g++ {
		v := top * float64(g) / chartGridLines
		y := float64(chartTop) + plotH - plotH*float64(g)/chartGridLines
		c.Grid = append(c.Grid, gridLine{X1: chartLeft, Y1: y, X2: chartW, Y2: y, TX: 2, TY: y + 4, Label: format(v)})
	}
	every := max(1, int(math.Ceil(float64(n)/chartTickEveryMax)))
	for i := range n {
		x := chartLeft + float64(i)*slot + slot*chartGap/2
		w := slot * (1 - chartGap)
		y := float64(chartTop) + plotH
		for _, s := range ss {
			v := s.values[i]
			if v <= 0 || top == 0 {
				continue
			}
			h := plotH * v / top
			y -= h
			c.Bars = append(c.Bars, bar{X: round2(x), Y: round2(y), W: round2(w), H: round2(h), Class: s.class,
				Title: fmt.Sprintf("%s: %s %s", label(i), format(v), s.label)})
		}
		if i%every == 0 {
			c.Ticks = append(c.Ticks, tick{X: round2(x), Y: chartH - 8, Label: label(i)})
		}
	}
	for _, s := range ss {
		c.Legend = append(c.Legend, legendKey{Class: s.class, Label: s.label})
	}
	return c
}

// niceCeil rounds v up to 1, 2 or 5 times a power of ten (1 for 0).
func niceCeil(v float64) float64 {
	if v <= 0 {
		return 1
	}
	p := math.Pow(10, math.Floor(math.Log10(v)))
	for _, m := range []float64{1, 2, 5, 10} {
		if m*p >= v {
			return m * p
		}
	}
	return 10 * p
}

func round2(v float64) float64 { return math.Round(v*100) / 100 }

// runsChart is the chart of the runs started in each of the 24 hours from start, stacked by
// status.
func runsChart(start time.Time, counts []store.RunCount) chart {
	const n = 24
	ss := make([]series, len(store.RunStatuses))
	for i, st := range store.RunStatuses {
		ss[i] = series{class: string(st), label: string(st), values: make([]float64, n)}
	}
	for _, c := range counts {
		i := int(c.Hour.Sub(start) / time.Hour)
		for j, st := range store.RunStatuses {
			if st == c.Status && i >= 0 && i < n {
				ss[j].values[i] += float64(c.Runs)
			}
		}
	}
	return stacked("Runs started per hour, by status", n, ss,
		func(i int) string { return start.Add(time.Duration(i) * time.Hour).Format("15h") },
		func(v float64) string { return tokens(int64(v)) })
}

// tokensChart is the chart of the model tokens of the runs started on each of the 14 days from
// start: input, cache reads, cache writes, output.
func tokensChart(start time.Time, days []store.DayUsage) chart {
	const n = 14
	ss := []series{
		{class: "input", label: "input"}, {class: "cacheread", label: "cache read"},
		{class: "cachewrite", label: "cache write"}, {class: "output", label: "output"},
	}
	for i := range ss {
		ss[i].values = make([]float64, n)
	}
	for _, d := range days {
		i := int(d.Day.Sub(start) / (24 * time.Hour))
		if i < 0 || i >= n {
			continue
		}
		ss[0].values[i] += float64(d.Usage.InputTokens)
		ss[1].values[i] += float64(d.Usage.CacheReadTokens)
		ss[2].values[i] += float64(d.Usage.CacheWriteTokens)
		ss[3].values[i] += float64(d.Usage.OutputTokens)
	}
	return stacked("Model tokens per day (input, cache read, cache write, output)", n, ss,
		func(i int) string { return start.Add(time.Duration(i) * 24 * time.Hour).Format("Jan 2") },
		func(v float64) string { return shortCount(v) })
}

// shortCount formats a count as 950, 12k, 3.4M.
func shortCount(v float64) string {
	switch {
	case v >= 1e6:
		return trimZero(fmt.Sprintf("%.1f", v/1e6)) + "M"
	case v >= 1e3:
		return trimZero(fmt.Sprintf("%.1f", v/1e3)) + "k"
	}
	return fmt.Sprintf("%.0f", v)
}

func trimZero(s string) string {
	if len(s) > 2 && s[len(s)-2:] == ".0" {
		return s[:len(s)-2]
	}
	return s
}
