package bench

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// seqBurst is a burst result of the phase, drained in drain seconds, as
// burst makes it.
func seqBurst(phase string, drain, limit float64) *BurstResult {
	d := Delivery{Jobs: 20000, Delivered: 20000}
	_, cs := deliveryRows(d)
	return &BurstResult{Phase: phase, Jobs: 20000, DrainSeconds: drain, Delivery: d,
		Checks: append([]Check{atMost("drain time", drain, limit, " s")}, cs...)}
}

func TestSequenceSummaryHoldsEachTargetOfIssue44(t *testing.T) {
	d := Delivery{Jobs: 20000, Delivered: 20000, P99MS: 3, MaxMS: 30}
	_, cs := deliveryRows(d)
	life := Usage{Redis: true, RedisSeconds: 0.5}
	prec := &PrecisionResult{Phase: "precision-pending", Jobs: 20000, OverSeconds: 10, Delivery: d, Life: life, RedisCPUPerJobUS: life.redisUSPerJob(20000),
		Checks: append(append([]Check{atMost("lateness p99", 3, 5, " ms"), atMost("lateness max", 30, 25, " ms")}, cs...), redisCPUCheck(life, 20000, seqCPU)...)}
	r := &SequenceResult{BurstEmpty: seqBurst("burst-empty", 1, 1.5), BurstFar: seqBurst("burst-far", 1.5, 1.5), FarRatio: 1.5,
		Pending:   &PendingLoad{Requested: 100_000, Loaded: 100_000, Memory: 1 << 30, MemoryPerJob: 240},
		Precision: prec, Burst: seqBurst("burst-pending", 0.8, seqDrain), LifeTailSeconds: 60}

	checks, rows := r.summary()
	type verdict struct {
		Metric string
		Met    bool
	}
	var got []verdict
	for _, c := range checks {
		got = append(got, verdict{c.Metric, c.Met})
	}
	want := []verdict{
		{"burst among pending: drain time", true},
		{"burst behind one far job / on an empty store", false}, // 1.5x
		{"precision among pending: lateness p99", true},
		{"precision among pending: lateness max", false}, // 30 ms
		{"precision among pending: early", true},
		{"precision among pending: Redis CPU per job life", true}, // 25 µs
		{"bytes per pending job", true},
		{"missing or duplicated, every phase", true},
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("summary checks (-want +got):\n%s", d)
	}
	if len(rows) != len(want) || rows[0][0] != "burst of 20,000 among 100,000 pending, drained" || rows[5][0] != "Redis CPU per job life, 60 s tail (precision)" {
		t.Errorf("summary rows: %q", rows)
	}

	var titles []string
	for _, tb := range r.Tables() {
		titles = append(titles, tb.Title)
	}
	for i, prefix := range []string{"sequence 1, burst-empty", "sequence 2, burst-far", "sequence 3, pending", "sequence 4, precision-pending",
		"sequence 5, burst-pending", "sequence: issue 44's targets"} {
		if i >= len(titles) || !strings.HasPrefix(titles[i], prefix) {
			t.Errorf("table %d: titles %q, want one starting %q", i, titles, prefix)
		}
	}
}

// TestSequenceWithoutPendingJobs: with --sequence-pending 0 nothing is
// loaded, so there is no memory figure, and precision and the last burst
// are said to run on the store as it is.
func TestSequenceWithoutPendingJobs(t *testing.T) {
	r := &SequenceResult{BurstEmpty: seqBurst("burst-empty", 1, 1.5), BurstFar: seqBurst("burst-far", 1, 1.5), FarRatio: 1, Burst: seqBurst("burst-pending", 0.8, seqDrain)}
	r.Burst.Among = amongPhrase(0)
	checks, _ := r.summary()
	if _, ok := findCheck(checks, "bytes per pending job"); ok {
		t.Errorf("a memory check with no pending jobs: %+v", checks)
	}
	if _, ok := findCheck(checks, "burst among pending: drain time"); !ok {
		t.Errorf("no drain check: %+v", checks)
	}
	if tb := r.Tables(); len(tb) != 4 || !strings.Contains(tb[2].Title, "on the store as it is") {
		t.Errorf("tables: %+v", tb)
	}
}
