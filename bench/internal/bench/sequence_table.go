package bench

import (
	"fmt"
	"strconv"
)

// Tables prints each phase's table, numbered in the order they ran, and
// the summary against issue 44's targets.
func (r *SequenceResult) Tables() []Table {
	var out []Table
	phase := func(n int, t Table) { t.Title = fmt.Sprintf("sequence %d, %s", n, t.Title); out = append(out, t) }
	if r.BurstEmpty != nil {
		phase(1, r.BurstEmpty.table())
	}
	if r.BurstFar != nil {
		t := r.BurstFar.table()
		if c, ok := r.farCheck(); ok {
			t.Rows = append(t.Rows, checkRow("drain time / burst-empty's", fmtTimes(r.FarRatio), c))
		}
		phase(2, t)
	}
	if r.Pending != nil {
		phase(3, r.pendingTable())
	}
	if r.Precision != nil {
		phase(4, r.Precision.table())
	}
	if r.Burst != nil {
		phase(5, r.Burst.table())
	}
	return append(out, r.summaryTable())
}

// farCheck holds burst-far's drain time over burst-empty's to its target;
// false when either did not drain.
func (r *SequenceResult) farCheck() (Check, bool) {
	if r.BurstEmpty == nil || r.BurstFar == nil || r.FarRatio <= 0 {
		return Check{}, false
	}
	return atMost("burst behind one far job / on an empty store", r.FarRatio, seqFarRatio, "x"), true
}

func (r *SequenceResult) pendingTable() Table {
	p := r.Pending
	t := Table{Title: fmt.Sprintf("pending: %s jobs due an hour ahead (spread over %g minutes), loaded through the batch endpoint", fmtInt(int64(p.Loaded)), pendingSpread.Minutes()),
		Head: []string{"metric", "value", "target", "verdict"}, Left: []int{2, 3}}
	t.Rows = p.loadRows()
	var perJob *Check
	if p.MemoryPerJob > 0 {
		c := atMost("bytes per pending job", p.MemoryPerJob, seqBytes, " B")
		perJob = &c
	}
	t.Rows = append(t.Rows, p.costRows(perJob)...)
	if r.RemoveSeconds > 0 {
		t.Rows = append(t.Rows, []string{"time to remove them (after phase 5)", fmtSeconds(r.RemoveSeconds), "", ""})
	}
	t.Notes = p.notes("")
	return t
}

// summary holds the sequence's figures to issue 44's targets: the checks,
// and the rows of the summary table. A phase that did not run has no rows.
func (r *SequenceResult) summary() (checks []Check, rows [][]string) {
	add := func(metric, row, value string, c Check) {
		c.Metric = metric
		checks = append(checks, c)
		rows = append(rows, checkRow(row, value, c))
	}
	pending := 0
	if r.Pending != nil {
		pending = r.Pending.Loaded
	}
	if br := r.Burst; br != nil {
		if c, ok := findCheck(br.Checks, "drain time"); ok {
			add("burst among pending: drain time", fmt.Sprintf("burst of %s among %s pending, drained", fmtInt(int64(br.Jobs)), fmtInt(int64(pending))),
				fmtSeconds(br.DrainSeconds), c)
		}
	}
	if c, ok := r.farCheck(); ok {
		add(c.Metric, "burst behind one far job / same burst on an empty store", fmtTimes(r.FarRatio), c)
	}
	if p := r.Precision; p != nil {
		run := fmt.Sprintf("precision, %s over %gs among %s", fmtInt(int64(p.Jobs)), p.OverSeconds, fmtInt(int64(pending)))
		for _, m := range []struct{ metric, value string }{
			{"lateness p99", fmtMS(p.Delivery.P99MS)},
			{"lateness max", fmtMS(p.Delivery.MaxMS)},
			{"early", fmtInt(int64(p.Delivery.Early))},
		} {
			if c, ok := findCheck(p.Checks, m.metric); ok {
				add("precision among pending: "+m.metric, run+": "+m.metric, m.value, c)
			}
		}
		name := fmt.Sprintf("Redis CPU per job life, %s s tail (precision)", num(r.LifeTailSeconds))
		if c, ok := findCheck(p.Checks, metricRedisCPU); ok {
			add("precision among pending: Redis CPU per job life", name, fmtUS(p.RedisCPUPerJobUS), c)
		} else {
			rows = append(rows, redisCPURow(name, p.Life, p.Jobs, nil))
		}
	}
	if p := r.Pending; p != nil && p.MemoryPerJob > 0 {
		add("bytes per pending job", "bytes per pending job", fmtBytes(p.MemoryPerJob), atMost("", p.MemoryPerJob, seqBytes, " B"))
	}
	lost := 0
	for _, d := range r.deliveries() {
		lost += d.Missing + d.Duplicated
	}
	add("missing or duplicated, every phase", "jobs missing or duplicated, every phase", fmtInt(int64(lost)), atMost("", float64(lost), 0, ""))
	return checks, rows
}

// deliveries are the deliveries of the phases that ran.
func (r *SequenceResult) deliveries() []Delivery {
	var out []Delivery
	for _, br := range []*BurstResult{r.BurstEmpty, r.BurstFar, r.Burst} {
		if br != nil {
			out = append(out, br.Delivery)
		}
	}
	if r.Precision != nil {
		out = append(out, r.Precision.Delivery)
	}
	return out
}

func (r *SequenceResult) summaryTable() Table {
	t := Table{Title: "sequence: issue 44's targets (for 2 cores)", Head: []string{"metric", "value", "target", "verdict"}, Left: []int{2, 3}}
	_, t.Rows = r.summary()
	stall := 0.0
	for _, u := range r.windows() {
		stall = max(stall, u.StallPct)
	}
	if stall > 0 {
		t.Notes = append(t.Notes, "CPU waited for up to "+strconv.FormatFloat(stall, 'f', 0, 64)+"% of a phase's time: other work on this machine slowed the figures")
	}
	return t
}

// windows are the measured windows of the phases that ran, job lives included.
func (r *SequenceResult) windows() []Usage {
	var out []Usage
	for _, br := range []*BurstResult{r.BurstEmpty, r.BurstFar, r.Burst} {
		if br != nil {
			out = append(out, br.CPU, br.Life)
		}
	}
	if r.Pending != nil {
		out = append(out, r.Pending.CPU)
	}
	if r.Precision != nil {
		out = append(out, r.Precision.CPU, r.Precision.Life)
	}
	return out
}

// fmtTimes prints a ratio such as 1.25x.
func fmtTimes(f float64) string { return strconv.FormatFloat(f, 'f', 2, 64) + "x" }
