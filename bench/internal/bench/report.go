package bench

import (
	"fmt"
	"io"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// Table is one scenario's figures as aligned text: the first column is
// left-aligned, numbers right-aligned, the target and verdict columns left.
type Table struct {
	Title string
	Head  []string
	Rows  [][]string
	Notes []string
	// Left lists the columns besides the first that are left-aligned.
	Left []int
}

// Write prints the table.
func (t Table) Write(w io.Writer) error {
	width := make([]int, len(t.Head))
	for _, row := range append([][]string{t.Head}, t.Rows...) {
		for i, c := range row {
			if i < len(width) {
				width[i] = max(width[i], utf8.RuneCountInString(c))
			}
		}
	}
	var b strings.Builder
	b.WriteString(t.Title + "\n")
	for _, row := range append([][]string{t.Head}, t.Rows...) {
		line := make([]string, len(width))
		for i := range width {
			c := ""
			if i < len(row) {
				c = row[i]
			}
			pad := strings.Repeat(" ", width[i]-utf8.RuneCountInString(c))
			if i == 0 || slices.Contains(t.Left, i) {
				line[i] = c + pad
			} else {
				line[i] = pad + c
			}
		}
		b.WriteString("  " + strings.TrimRight(strings.Join(line, "  "), " ") + "\n")
	}
	for _, n := range t.Notes {
		b.WriteString("  note: " + n + "\n")
	}
	b.WriteString("\n")
	_, err := io.WriteString(w, b.String())
	return err
}

// Check holds one figure against a target of issue 5 or 13.
type Check struct {
	Metric string  `json:"metric"`
	Value  float64 `json:"value"`
	Target string  `json:"target"`
	Met    bool    `json:"met"`
	// Miss says by how much a missed target was missed, such as "40% short".
	Miss string `json:"miss,omitempty"`
}

// atMost checks v <= limit.
func atMost(metric string, v, limit float64, unit string) Check {
	c := Check{Metric: metric, Value: v, Target: "<= " + num(limit) + unit, Met: v <= limit}
	if !c.Met {
		if limit == 0 {
			c.Miss = num(v) + unit + " over"
		} else {
			c.Miss = fmt.Sprintf("%s over (x%.2f)", pct(v/limit-1), v/limit)
		}
	}
	return c
}

// atLeast checks v >= floor.
func atLeast(metric string, v, floor float64, unit string) Check {
	c := Check{Metric: metric, Value: v, Target: ">= " + num(floor) + unit, Met: v >= floor}
	if !c.Met {
		c.Miss = pct(1-v/floor) + " short"
	}
	return c
}

// verdict is a check's last column.
func (c Check) verdict() string {
	if c.Met {
		return "met"
	}
	return "MISSED: " + c.Miss
}

// checkRow is a metric row: name, value, target, verdict.
func checkRow(name, value string, c Check) []string {
	return []string{name, value, c.Target, c.verdict()}
}

// findCheck returns the check of metric among cs.
func findCheck(cs []Check, metric string) (Check, bool) {
	for _, c := range cs {
		if c.Metric == metric {
			return c, true
		}
	}
	return Check{}, false
}

// metricRedisCPU names the checks of Redis CPU per job (issue 13).
const metricRedisCPU = "Redis CPU per job"

// lifeWindow says what the Redis CPU per job of a firing scenario covers.
const lifeWindow = "Redis CPU per job = growth of INFO used_cpu_user+used_cpu_sys from the first create call until the last delivery has settled, " +
	"divided by the jobs: their whole life (create, wait, claim, fire, ack) and whatever else Redis did meanwhile, kairos's background work included"

// lifeNote is lifeWindow for the window u, which went on tail seconds after
// the last delivery (--life-tail).
func lifeNote(u Usage, tail float64) string {
	s := lifeWindow
	if tail > 0 {
		s += "; counted until " + num(tail) + " s after the last delivery (--life-tail)"
	}
	return s + fmt.Sprintf(" (%.1f s; %s)", u.Seconds, fmtCPU(u))
}

// redisCPUCheck holds Redis CPU per job against a limit of issue 13; none
// when Redis's figures are unknown.
func redisCPUCheck(u Usage, jobs int, limit float64) []Check {
	if !u.Redis {
		return nil
	}
	return []Check{atMost(metricRedisCPU, u.redisUSPerJob(jobs), limit, " µs")}
}

// redisCPURow shows Redis CPU per job, with its check among cs if any.
func redisCPURow(name string, u Usage, jobs int, cs []Check) []string {
	if !u.Redis {
		return []string{name, "n/a (Redis not read: give --redis-url)", "", ""}
	}
	v := fmtUS(u.redisUSPerJob(jobs))
	if c, ok := findCheck(cs, metricRedisCPU); ok {
		return checkRow(name, v, c)
	}
	return []string{name, v, "", ""}
}

// fmtUS prints microseconds.
func fmtUS(us float64) string { return strconv.FormatFloat(us, 'f', 1, 64) + " µs" }

func pct(f float64) string { return strconv.FormatFloat(100*f, 'f', 0, 64) + "%" }

// num prints a number without noise: 20000, 1.5, 0.25.
func num(f float64) string { return strconv.FormatFloat(f, 'f', -1, 64) }

// quantiles returns the q-quantiles of v (nearest rank), sorting v.
func quantiles(v []int64, qs ...float64) []int64 {
	slices.Sort(v)
	out := make([]int64, len(qs))
	if len(v) == 0 {
		return out
	}
	for i, q := range qs {
		rank := int(math.Ceil(q*float64(len(v)))) - 1
		out[i] = v[min(max(rank, 0), len(v)-1)]
	}
	return out
}

func durQuantiles(d []time.Duration, qs ...float64) []float64 {
	v := make([]int64, len(d))
	for i, x := range d {
		v[i] = int64(x)
	}
	q := quantiles(v, qs...)
	out := make([]float64, len(q))
	for i, x := range q {
		out[i] = nsToMS(x)
	}
	return out
}

func nsToMS(ns int64) float64 { return math.Round(float64(ns)/1e3) / 1e3 }

// fmtMS prints milliseconds with sensible precision.
func fmtMS(ms float64) string {
	switch a := math.Abs(ms); {
	case a >= 100:
		return strconv.FormatFloat(ms, 'f', 0, 64) + " ms"
	case a >= 10:
		return strconv.FormatFloat(ms, 'f', 1, 64) + " ms"
	}
	return strconv.FormatFloat(ms, 'f', 2, 64) + " ms"
}

// fmtInt prints an integer with thousands separators.
func fmtInt(n int64) string {
	s := strconv.FormatInt(n, 10)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}

func fmtRate(perSec float64, unit string) string {
	return fmtInt(int64(math.Round(perSec))) + " " + unit
}

func fmtBytes(n float64) string {
	switch {
	case n >= 1<<30:
		return strconv.FormatFloat(n/(1<<30), 'f', 2, 64) + " GiB"
	case n >= 1<<20:
		return strconv.FormatFloat(n/(1<<20), 'f', 1, 64) + " MiB"
	}
	return strconv.FormatFloat(n, 'f', 0, 64) + " B"
}

func fmtSeconds(s float64) string { return strconv.FormatFloat(s, 'f', 2, 64) + " s" }

// fmtCPU prints CPU use as a share of one core.
func fmtCPU(u Usage) string {
	s := strconv.FormatFloat(u.ProcessPct, 'f', 0, 64) + "% process"
	if u.Redis {
		s += ", " + strconv.FormatFloat(u.RedisPct, 'f', 0, 64) + "% redis"
	}
	if u.StallPct > 0 {
		s += "; CPU waited for " + strconv.FormatFloat(u.StallPct, 'f', 0, 64) + "% of the time"
	}
	return s
}

// countersNote prints a phase's counters, such as "pool_waits=12 gc_cycles=3".
func countersNote(u Usage) string {
	if len(u.Counters) == 0 {
		return ""
	}
	names := slices.Sorted(maps.Keys(u.Counters))
	parts := make([]string, len(names))
	for i, n := range names {
		parts[i] = n + "=" + fmtInt(u.Counters[n])
	}
	return fmt.Sprintf("over the %.1fs measured: %s", u.Seconds, strings.Join(parts, " "))
}

// deliveryRows are the rows every firing scenario shows.
func deliveryRows(d Delivery) (rows [][]string, checks []Check) {
	early := atMost("early", float64(d.Early), 0, "")
	missing := atMost("missing", float64(d.Missing), 0, "")
	dup := atMost("duplicated", float64(d.Duplicated), 0, "")
	rows = [][]string{
		{"delivered", fmtInt(int64(d.Delivered)) + " / " + fmtInt(int64(d.Jobs)), "", ""},
		checkRow("fired early", fmtInt(int64(d.Early)), early),
		checkRow("missing", fmtInt(int64(d.Missing)), missing),
		checkRow("duplicated", fmtInt(int64(d.Duplicated)), dup),
	}
	if d.Stray > 0 {
		rows = append(rows, []string{"stray hits (no job of this run)", fmtInt(d.Stray), "0", "UNEXPECTED"})
	}
	return rows, []Check{early, missing, dup}
}
