package bench

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Tables prints the result, a table per phase.
func (r *SchedulesResult) Tables() []Table {
	var out []Table
	for _, p := range r.Phases {
		out = append(out, p.table())
	}
	return out
}

func (p *SchedulePhase) table() Table {
	every := fmtDuration(p.EverySeconds)
	how := "their instants spread evenly over each " + every
	if p.Aligned {
		how = fmt.Sprintf("all on the same instants, a burst of %s each %s", fmtInt(int64(p.Schedules)), every)
	}
	ones := p.OneShots
	t := Table{
		Title: fmt.Sprintf("schedules (%s): %s schedules every %s, %d occurrences each over %s (%s occurrences, %s/s), %s",
			p.Name, fmtInt(int64(p.Schedules)), every, p.Each, fmtDuration(p.WindowSeconds), fmtInt(int64(p.Occurrences)), fmtInt(int64(p.PerSec)), how),
		Head: []string{"metric", "schedules"},
	}
	for _, o := range ones {
		t.Head = append(t.Head, fmt.Sprintf("one-shot jobs created %s (%s over %gs)", createdBy(o.BatchSize), fmtInt(int64(o.Jobs)), o.OverSeconds))
	}
	t.Head = append(t.Head, "target", "verdict")
	t.Left = []int{len(t.Head) - 2, len(t.Head) - 1}
	// row is a metric's row: v for the schedules, f's for each one-shot
	// run (none when f is nil), and metric's check if any.
	row := func(name, v string, f func(*PrecisionResult) string, metric string) []string {
		r := []string{name, v}
		for _, o := range ones {
			if f == nil {
				r = append(r, "")
			} else {
				r = append(r, f(o))
			}
		}
		if c, ok := findCheck(p.Checks, metric); ok && metric != "" {
			return append(r, c.Target, c.verdict())
		}
		return append(r, "", "")
	}
	d := p.Delivery
	t.Rows = [][]string{
		row("schedules created", fmt.Sprintf("%s in %s", fmtInt(int64(p.Created)), fmtSeconds(p.CreateSeconds)), nil, ""),
		row("create rate (one PUT each)", fmtRate(p.CreatedPerSec, "schedules/s"), nil, ""),
		row("create latency p50 / p99", fmtMS(p.CreateP50MS)+" / "+fmtMS(p.CreateP99MS), nil, ""),
		row("Redis memory per schedule", orNA(p.MemoryPerSchedule > 0, func() string { return fmtBytes(p.MemoryPerSchedule) }), nil, ""),
		row("Redis CPU per schedule created", fmtRedisUS(p.CreateCPU, p.RedisCPUPerScheduleUS), nil, ""),
		row("created ahead of the first instant", fmtSeconds(p.AheadSeconds), func(o *PrecisionResult) string { return fmtSeconds(o.AheadSeconds) }, ""),
	}
	if w := p.Waiting; w != nil {
		t.Rows = append(t.Rows, row(fmt.Sprintf("CPU while waiting (%s schedules, none due)", fmtInt(int64(p.Created))), fmtCPU(*w)+fmt.Sprintf(" over %.1fs", w.Seconds), nil, ""))
	}
	t.Rows = append(t.Rows,
		row("delivered per second", fmtRate(p.DeliveredPerSec, "/s"), func(o *PrecisionResult) string {
			if o.Delivery.LastMS <= 0 {
				return ""
			}
			return fmtRate(float64(o.Delivery.Delivered)/(o.Delivery.LastMS/1000), "/s")
		}, ""),
		row("lateness min", fmtMS(d.MinMS), func(o *PrecisionResult) string { return fmtMS(o.Delivery.MinMS) }, ""),
		row("lateness p50", fmtMS(d.P50MS), func(o *PrecisionResult) string { return fmtMS(o.Delivery.P50MS) }, ""),
		row("lateness p90", fmtMS(d.P90MS), func(o *PrecisionResult) string { return fmtMS(o.Delivery.P90MS) }, ""),
		row("lateness p99", fmtMS(d.P99MS), func(o *PrecisionResult) string { return fmtMS(o.Delivery.P99MS) }, "lateness p99"),
		row("lateness max", fmtMS(d.MaxMS), func(o *PrecisionResult) string { return fmtMS(o.Delivery.MaxMS) }, "lateness max"),
	)
	if len(d.Slices) > 0 {
		p50s, maxes := make([]string, len(d.Slices)), make([]string, len(d.Slices))
		for i, sl := range d.Slices {
			p50s[i], maxes[i] = strconv.FormatFloat(sl.P50MS, 'f', 1, 64), strconv.FormatFloat(sl.MaxMS, 'f', 1, 64)
		}
		t.Rows = append(t.Rows, row("p50 per tenth of the window (ms)", strings.Join(p50s, " "), nil, ""),
			row("max per tenth of the window (ms)", strings.Join(maxes, " "), nil, ""))
	}
	count := func(n int) string { return fmtInt(int64(n)) }
	t.Rows = append(t.Rows,
		row("delivered", count(d.Delivered)+" / "+count(d.Jobs), func(o *PrecisionResult) string {
			return count(o.Delivery.Delivered) + " / " + count(o.Delivery.Jobs)
		}, ""),
		row("fired early", count(d.Early), func(o *PrecisionResult) string { return count(o.Delivery.Early) }, "early"),
		row("missing", count(d.Missing), func(o *PrecisionResult) string { return count(o.Delivery.Missing) }, "missing"),
		row("duplicated", count(d.Duplicated), func(o *PrecisionResult) string { return count(o.Delivery.Duplicated) }, "duplicated"),
	)
	if d.Stray > 0 {
		r := row("stray hits (no occurrence of this phase)", fmtInt(d.Stray), nil, "")
		r[len(r)-2], r[len(r)-1] = "0", "UNEXPECTED"
		t.Rows = append(t.Rows, r)
	}
	t.Rows = append(t.Rows,
		row("CPU while firing (% of one core)", fmtCPU(p.CPU), func(o *PrecisionResult) string { return fmtCPU(o.CPU) }, ""),
		row("Redis CPU per occurrence / job, while firing", fmtRedisUS(p.CPU, p.RedisCPUPerOccurrenceUS),
			func(o *PrecisionResult) string { return fmtRedisUS(o.CPU, o.CPU.redisUSPerJob(o.Jobs)) }, ""),
		row("Redis CPU per occurrence / job, with its creation", fmtRedisUS(p.CPU, p.lifeUS()),
			func(o *PrecisionResult) string { return fmtRedisUS(o.Life, o.RedisCPUPerJobUS) }, ""),
		row("Redis CPU per occurrence while firing / per one-shot job with its creation", fmtRedisUS(p.CPU, p.RedisCPUPerOccurrenceUS),
			func(o *PrecisionResult) string { return fmtRatio(p.CPU, p.RedisCPUPerOccurrenceUS, o) }, metricOccurrenceCPU),
		row("Redis script time per occurrence / job, while firing", fmtScriptUS(p.CPU, p.fired()),
			func(o *PrecisionResult) string { return fmtScriptUS(o.CPU, o.Jobs) }, ""),
		row("Redis script time per occurrence / job, with its creation", fmtScriptUS(p.CPU.plus(p.CreateCPU), p.fired()),
			func(o *PrecisionResult) string { return fmtScriptUS(o.Life, o.Jobs) }, ""),
		row("script calls per occurrence / job, while firing", fmtScriptCalls(p.CPU, p.fired()),
			func(o *PrecisionResult) string { return fmtScriptCalls(o.CPU, o.Jobs) }, ""),
	)
	t.Notes = append(t.Notes,
		"schedules are created with PUT /v1/topics/{topic}/schedules/{id} (every, start_at, end_at), one call each from --clients clients: the API has no batch of schedules",
		"lateness = arrival at the bench's receiver minus the occurrence's instant, read from its job id (<schedule id>@<unix ms>)",
		"memory per schedule = INFO used_memory growth over the creates / schedules: the schedule's record and queue of instants, its index entry and its first occurrence filed",
		"Redis CPU while firing = growth of INFO used_cpu_user+used_cpu_sys from just before the first instant until the last occurrence settled, background work included "+
			"(claiming, filing each next instant) / occurrences fired meanwhile; with its creation adds the creates' Redis CPU, shared by the schedule's occurrences",
		refillNote(p.Each),
		fmt.Sprintf("each schedule's end_at is the instant after the phase's last, so that every occurrence measured files its next one, as a schedule that goes on does; "+
			"%s of those next ones fired before the measure ended, and count among the occurrences fired", fmtInt(int64(p.fired()-p.Occurrences))))
	t.Notes = append(t.Notes, scriptTimeNote)
	if len(ones) > 0 {
		t.Notes = append(t.Notes, "one-shot jobs: the precision scenario at the same rate, due uniformly, created ahead, once one per POST and once by batches. "+
			"An occurrence while firing (its schedule made once) is held to a one-shot job created one per POST over its whole life, create included "+
			"(issue 14: no more per occurrence than a one-shot job): a job as a client makes one, and as a scheduler outside kairos would make each occurrence; "+
			"the ratio to a job created by batches, the cheapest create, is shown beside it")
		if p.Aligned {
			t.Notes = append(t.Notes, "the one-shot jobs are spread evenly, not in bursts like these schedules")
		}
	}
	if n := countersNote(p.CPU); n != "" {
		t.Notes = append(t.Notes, n)
	}
	if p.CreatedLate > 0 || p.AheadSeconds < 0 {
		t.Notes = append(t.Notes, fmt.Sprintf("INVALID: %s schedules were created after their first instant (creating took longer than the lead; raise --lead)", fmtInt(int64(p.CreatedLate))))
	}
	return t
}

// fmtRatio prints Redis CPU per occurrence (us, over window u) divided by
// one-shot run o's per job life.
func fmtRatio(u Usage, us float64, o *PrecisionResult) string {
	if !u.Redis || o.RedisCPUPerJobUS <= 0 {
		return "n/a"
	}
	return fmt.Sprintf("%s (x%.2f)", fmtUS(o.RedisCPUPerJobUS), us/o.RedisCPUPerJobUS)
}

// fired is how many occurrences the CPU figures are divided by: those
// fired while CPU was measured, or the phase's when that is not known.
func (p *SchedulePhase) fired() int {
	if p.Fired > 0 {
		return p.Fired
	}
	return p.Occurrences
}

// lifeUS is Redis CPU per occurrence with the schedules' creation shared
// among their occurrences; 0 when Redis's figures are unknown.
func (p *SchedulePhase) lifeUS() float64 {
	return p.CPU.plus(p.CreateCPU).redisUSPerJob(p.fired())
}

// scriptTimeNote explains the script rows.
const scriptTimeNote = "Redis script time = growth of INFO commandstats usec of the script calls (FCALL and the like, the commands they run included) / occurrences or jobs: " +
	"less noisy than INFO CPU, which adds reading and writing sockets, the other commands and Redis's own background work"

// fmtScriptUS prints Redis's script time per job of a window, or n/a.
func fmtScriptUS(u Usage, jobs int) string {
	if !u.Scripts || jobs <= 0 {
		return "n/a"
	}
	return fmtUS(u.scriptUSPerJob(jobs))
}

// fmtScriptCalls prints script calls per job of a window, or n/a.
func fmtScriptCalls(u Usage, jobs int) string {
	if !u.Scripts || jobs <= 0 {
		return "n/a"
	}
	return strconv.FormatFloat(float64(u.ScriptCalls)/float64(jobs), 'f', 2, 64)
}

// fmtRedisUS prints Redis CPU per job of a window, or n/a when Redis was not read.
func fmtRedisUS(u Usage, us float64) string {
	if !u.Redis {
		return "n/a"
	}
	return fmtUS(us)
}

func orNA(ok bool, f func() string) string {
	if !ok {
		return "n/a"
	}
	return f()
}

// fmtDuration prints seconds as a Go duration: 1s, 1m0s, 20s.
func fmtDuration(s float64) string {
	return time.Duration(s * float64(time.Second)).Round(time.Millisecond).String()
}

// occurrencesPerRefill is how many occurrences a schedule fires from its
// put until its first refill, and then about between two refills: kairos
// keeps 16 instants queued after the pending one and refills below 8
// (scheduleQueue and refillBelow in internal/rdb/layout.go). The tool
// cannot import them; the figure only words the note below, so a change
// there makes the note wrong, not the measure.
const occurrencesPerRefill = 16 - 8 + 1

// refillNote says whether a phase whose schedules fire each times in its
// window pays for refills of their queues of instants.
func refillNote(each int) string {
	if each < occurrencesPerRefill {
		return fmt.Sprintf("no refill falls in the window: a schedule refills its queue of instants after %d occurrences, then about every %d, "+
			"and these fire %d times each (BenchmarkOccurrences in internal/rdb measures the refills' share of a schedule that goes on: refill-µs/occurrence)",
			occurrencesPerRefill, occurrencesPerRefill, each)
	}
	return fmt.Sprintf("the window holds refills of the schedules' queues of instants: a schedule refills after %d occurrences, then about every %d", occurrencesPerRefill, occurrencesPerRefill)
}
