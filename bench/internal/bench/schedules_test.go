package bench

import (
	"bytes"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestOccurrenceSlots(t *testing.T) {
	spread := occurrences{run: "s-1", n: 4, each: 3, t0MS: 1_000_000, everyMS: 1000}
	aligned := spread
	aligned.aligned = true
	id := func(i int, ms int64) string { return "s-1-" + strconv.Itoa(i) + "@" + strconv.FormatInt(ms, 10) }
	type got struct {
		Seq int
		Due int64
		OK  bool
	}
	tests := []struct {
		name  string
		o     occurrences
		i     int
		jobID string
		want  got
	}{
		{"first of the first", spread, 0, id(0, 1_000_000), got{0, 1_000_000, true}},
		{"spread: schedule 2 starts half an interval on", spread, 2, id(2, 1_000_500), got{6, 1_000_500, true}},
		{"spread: its last", spread, 2, id(2, 1_002_500), got{8, 1_002_500, true}},
		{"spread: schedule 3's last", spread, 3, id(3, 1_002_750), got{11, 1_002_750, true}},
		{"aligned: schedule 2 starts at t0", aligned, 2, id(2, 1_001_000), got{7, 1_001_000, true}},
		{"the instant after the phase's", spread, 0, id(0, 1_003_000), got{Beyond, 1_003_000, true}},
		{"spread: schedule 3's, after the phase's", spread, 3, id(3, 1_003_750), got{Beyond, 1_003_750, true}},
		{"past end_at", spread, 0, id(0, 1_004_000), got{}},
		{"before the start", spread, 2, id(2, 1_000_000), got{}},
		{"off the pattern", spread, 0, id(0, 1_000_001), got{}},
		{"another schedule's id", spread, 1, id(0, 1_000_000), got{}},
		{"another run", spread, 0, "s-2-0@1000000", got{}},
		{"no such schedule", spread, 4, id(4, 1_001_000), got{}},
		{"not an occurrence", spread, 0, "s-1-0", got{}},
		{"bad instant", spread, 0, "s-1-0@soon", got{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			seq, due, ok := tt.o.slot(tt.i, tt.jobID)
			if !ok {
				seq, due = 0, 0
			}
			if d := cmp.Diff(tt.want, got{seq, due, ok}); d != "" {
				t.Errorf("slot(%d, %q) (-want +got):\n%s", tt.i, tt.jobID, d)
			}
		})
	}
	if l := spread.lastMS(); l != 1_002_750 {
		t.Errorf("spread lastMS = %d, want schedule 3's third instant, 1,002,750", l)
	}
	if l := aligned.lastMS(); l != 1_002_000 {
		t.Errorf("aligned lastMS = %d, want 1,002,000", l)
	}
	if e := spread.endMS(3); e != 1_003_750 {
		t.Errorf("spread endMS(3) = %d, want the instant after schedule 3's last, 1,003,750", e)
	}
}

// TestReceiverOccurrences: an occurrence is placed by its job id, not its
// payload's due time; a second delivery of one instant is a duplicate, the
// instant after the run's is counted apart, and an instant the run does not
// expect is stray.
func TestReceiverOccurrences(t *testing.T) {
	r, err := StartReceiver()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	past := time.Now().Add(-500 * time.Millisecond).UnixMilli() // its second instant is half a second ahead
	o := occurrences{run: "sched-x", n: 2, each: 2, t0MS: past, everyMS: 1000, aligned: true}
	run := r.ExpectOccurrences("sched-x", 4, o.slot)
	post := func(i int, ms int64) {
		t.Helper()
		req, _ := http.NewRequest("POST", r.URL, bytes.NewReader(appendPayload(nil, "sched-x", i, 0)))
		req.Header.Set("Kairos-Job-Id", "sched-x-"+strconv.Itoa(i)+"@"+strconv.FormatInt(ms, 10))
		req.Header.Set("Kairos-Schedule-Id", "sched-x-"+strconv.Itoa(i))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	post(0, past)
	post(0, past) // duplicate
	post(1, past)
	post(1, past+1000) // early
	post(1, past+500)  // off the pattern
	post(0, past+2000) // the instant after the run's: beyond
	post(0, past+3000) // past end_at
	d := run.Delivery(0, r.Stray())
	want := Delivery{Jobs: 4, Delivered: 3, Missing: 1, Duplicated: 1, Early: 1, Stray: 2, Beyond: 1}
	got := d
	got.MinMS, got.P50MS, got.P90MS, got.P99MS, got.MaxMS, got.FirstMS, got.LastMS, got.Slices = 0, 0, 0, 0, 0, 0, 0, nil
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("delivery (-want +got):\n%s", diff)
	}
}

func TestSchedulePhaseChecksAndTable(t *testing.T) {
	redis := func(seconds, wall float64) Usage {
		return Usage{Redis: true, RedisSeconds: seconds, RedisPct: 100 * seconds / wall, Seconds: wall}
	}
	p := &SchedulePhase{Name: "precision", Schedules: 10000, EverySeconds: 1, Each: 20, Occurrences: 200_000, WindowSeconds: 20, PerSec: 10000,
		Created: 10000, CreateSeconds: 2.5, CreatedPerSec: 4000, MemoryPerSchedule: 700, CreateCPU: redis(1, 2.5), RedisCPUPerScheduleUS: 100,
		AheadSeconds: 1.5, Delivery: Delivery{Jobs: 200_000, Delivered: 200_000, P99MS: 3, MaxMS: 30, LastMS: 20_000},
		DeliveredPerSec: 10000, CPU: redis(4, 20), RedisCPUPerOccurrenceUS: 20,
		OneShots: []*PrecisionResult{
			{Jobs: 200_000, OverSeconds: 20, BatchSize: 1, Delivery: Delivery{Jobs: 200_000, Delivered: 200_000, P99MS: 2, LastMS: 20_000},
				CPU: redis(3, 20), Life: redis(5, 25), RedisCPUPerJobUS: 25},
			{Jobs: 200_000, OverSeconds: 20, BatchSize: 1000, Delivery: Delivery{Jobs: 200_000, Delivered: 200_000, P99MS: 2, LastMS: 20_000},
				CPU: redis(2.8, 20), Life: redis(3.2, 22), RedisCPUPerJobUS: 16}}}
	p.check()
	verdicts := map[string]bool{}
	for _, c := range p.Checks {
		verdicts[c.Metric] = c.Met
	}
	if d := cmp.Diff(map[string]bool{"lateness p99": true, "lateness max": false, "early": true, "missing": true, "duplicated": true, metricOccurrenceCPU: true}, verdicts); d != "" {
		t.Errorf("checks (-want +got):\n%s", d)
	}
	// (1 s of creates + 4 s of firing) over 200,000 occurrences
	if got := p.lifeUS(); got != 25 {
		t.Errorf("Redis CPU per occurrence with its creation = %v µs, want 25", got)
	}
	// script time: 3 s of scripts in 600,000 calls while firing, 0.6 s
	// in 10,000 at creation; one-shot 2.4 s in 400,000 over the life
	p.CPU.Scripts, p.CPU.ScriptSeconds, p.CPU.ScriptCalls = true, 3, 600_000
	p.CreateCPU.Scripts, p.CreateCPU.ScriptSeconds, p.CreateCPU.ScriptCalls = true, 0.6, 10_000
	p.OneShots[0].Life.Scripts, p.OneShots[0].Life.ScriptSeconds, p.OneShots[0].Life.ScriptCalls = true, 2.4, 400_000
	var out strings.Builder
	for _, tb := range (&SchedulesResult{Phases: []*SchedulePhase{p}}).Tables() {
		tb.Write(&out)
	}
	for _, s := range []string{"10,000 schedules every 1s, 20 occurrences each over 20s (200,000 occurrences, 10,000/s)", "4,000 schedules/s", "700 B",
		"20.0 µs", "15.0 µs", "25.0 µs", "<= 25 µs", "200,000 / 200,000", "one-shot jobs created one per POST (200,000 over 20s)",
		"one-shot jobs created by batches of 1,000 (200,000 over 20s)", "MISSED: 20% over"} {
		if !strings.Contains(out.String(), s) {
			t.Errorf("table lacks %q:\n%s", s, out.String())
		}
	}
	for name, want := range map[string][]string{
		"Redis script time per occurrence / job, while firing":      {"15.0 µs", "n/a", "n/a"},
		"Redis script time per occurrence / job, with its creation": {"18.0 µs", "12.0 µs", "n/a"},
		"script calls per occurrence / job, while firing":           {"3.00", "n/a", "n/a"},
		// held to the job created one per POST; the batch's ratio beside it
		"Redis CPU per occurrence while firing / per one-shot job with its creation": {"20.0 µs", "25.0 µs (x0.80)", "16.0 µs (x1.25)", "<= 25 µs", "met"},
	} {
		var line string
		for l := range strings.Lines(out.String()) {
			if strings.Contains(l, name) {
				line = strings.Join(strings.Fields(l), " ")
			}
		}
		if rest := name + " " + strings.Join(want, " "); !strings.HasSuffix(line, rest) {
			t.Errorf("row %q, want it to end %q", line, rest)
		}
	}

	// Held only to jobs created one per POST.
	p.OneShots = p.OneShots[1:]
	p.check()
	if _, ok := findCheck(p.Checks, metricOccurrenceCPU); ok {
		t.Error("Redis CPU per occurrence checked with only batch-created one-shot jobs to hold it to")
	}
	// Without one-shot jobs there is no comparison, and no column for it.
	p.OneShots = nil
	p.check()
	if _, ok := findCheck(p.Checks, metricOccurrenceCPU); ok {
		t.Error("Redis CPU per occurrence checked with no one-shot jobs to hold it to")
	}
	tb := p.table()
	if len(tb.Head) != 4 || strings.Contains(strings.Join(tb.Head, " "), "one-shot") {
		t.Errorf("head %q, want metric, schedules, target, verdict", tb.Head)
	}
}

// A phase says whether its window pays for refills: the scale phase's
// schedules fire too few times for one, the precision phase's enough.
func TestRefillNote(t *testing.T) {
	if n := refillNote(2); !strings.HasPrefix(n, "no refill falls in the window") {
		t.Errorf("2 occurrences a schedule: %q", n)
	}
	if n := refillNote(20); !strings.HasPrefix(n, "the window holds refills") {
		t.Errorf("20 occurrences a schedule: %q", n)
	}
}
