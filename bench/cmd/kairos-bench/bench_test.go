package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"math"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/redis/go-redis/v9"

	"github.com/kairos-sh/kairos/bench/internal/bench"
	"github.com/kairos-sh/kairos/bench/internal/testenv"
)

// skipShort skips a test that runs kairos processes under -short (make
// test-short); make test runs it.
func skipShort(t *testing.T) {
	t.Helper()
	if testing.Short() {
		t.Skip("runs kairos processes: not in the quick tier")
	}
}

// kairosBin builds cmd/kairos of this repository once and returns its path.
func kairosBin(t *testing.T) string {
	t.Helper()
	bin, err := testenv.Kairos()
	if err != nil {
		t.Fatal(err)
	}
	return bin
}

func fakeEnv(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

// TestBenchEndToEnd runs every scenario at a tiny size against the kairos
// binary of this repository on a real redis-server, and checks the counts the
// tool reports, that every figure is there and adds up, and that it leaves
// no key and no changed setting behind.
func TestBenchEndToEnd(t *testing.T) {
	skipShort(t)
	srv := testenv.NewRedis(t)
	ctx, cancel := context.WithTimeout(context.Background(), 180*time.Second)
	defer cancel()
	c := redis.NewClient(&redis.Options{Addr: srv.Addr})
	defer c.Close()
	slowlogBefore := c.ConfigGet(ctx, "slowlog-*").Val()

	bin := kairosBin(t)
	var out, errOut strings.Builder
	args := []string{"--redis-url", srv.URL(), "--scenario", "all", "--json", "--prefix", "kb-test",
		"--kairos-bin", bin, "--coldstart-starts", "2",
		// enough jobs that their memory outweighs Redis's own noise (client
		// buffers it shrinks, lazy frees): 2,000 x ~230 B
		"--jobs", "2000", "--clients", "4", "--batch-size", "500", "--concurrency", "8",
		"--precision-jobs", "200", "--precision-over", "500ms", "--burst-jobs", "200",
		"--cost-jobs", "200", "--idle-jobs", "500", "--idle-settle", "200ms", "--idle-window", "1s",
		"--scale-jobs", "2000", "--sustained-rates", "100,200", "--sustained-step", "1s", "--sustained-lead", "300ms",
		"--schedules", "50", "--schedules-window", "2s", "--scale-schedules", "100", "--scale-schedules-every", "1s", "--scale-schedules-window", "2s",
		"--sequence-pending", "1000", "--life-tail", "200ms",
		"--fanout-subscriptions", "3", "--fanout-rate", "20", "--fanout-over", "1s", "--fanout-filtered", "50", "--fanout-nomatch", "50", "--fanout-pending", "50",
		"--lead", "1s", "--grace", "3s", "--timeout", "170s"}
	if err := run(ctx, args, fakeEnv(nil), &out, &errOut); err != nil {
		t.Fatalf("bench: %v\nstderr:\n%s", err, errOut.String())
	}
	var rep bench.Report
	if err := json.Unmarshal([]byte(out.String()), &rep); err != nil {
		t.Fatalf("decode report: %v\n%s", err, out.String())
	}
	if len(rep.Errors) > 0 {
		t.Fatalf("errors: %v", rep.Errors)
	}
	// dropping a phase's jobs leaves the scanners' shard mutexes alone
	if strings.Contains(errOut.String(), "giving the shard up") {
		t.Errorf("a scanner lost its shard mutex during the run:\n%s", errOut.String())
	}

	if e := rep.Enqueue; e == nil || e.Single.Created != 2000 || e.Batch.Created != 2000 || e.Batch.Calls != 4 || e.Batch.MemoryPerJob <= 0 {
		t.Errorf("enqueue: %+v", e)
	} else {
		checkRedisCPU(t, "enqueue single", e.Single.CPU, e.Single.RedisCPUPerJobUS, e.Single.Created)
		checkRedisCPU(t, "enqueue batch", e.Batch.CPU, e.Batch.RedisCPUPerJobUS, e.Batch.Created)
	}
	checkDelivery := func(name string, d bench.Delivery, n int) {
		t.Helper()
		want := [...]int64{int64(n), int64(n), 0, 0, 0, 0}
		got := [...]int64{int64(d.Jobs), int64(d.Delivered), int64(d.Missing), int64(d.Duplicated), int64(d.Early), d.Stray}
		if got != want {
			t.Errorf("%s: delivery %+v, want every job once, none early", name, d)
		}
		if d.MinMS < 0 || d.MaxMS < d.P50MS || d.P50MS <= 0 {
			t.Errorf("%s: lateness figures out of order: %+v", name, d)
		}
	}
	checkSequence(t, rep.Sequence, checkDelivery)
	if p := rep.Precision; p == nil {
		t.Error("no precision result")
	} else {
		checkDelivery("precision", p.Delivery, 200)
		checkRedisCPU(t, "precision", p.Life, p.RedisCPUPerJobUS, p.Jobs)
		if p.Life.Seconds < p.CPU.Seconds {
			t.Errorf("precision: the job-life window (%vs) is shorter than the firing window (%vs) it holds", p.Life.Seconds, p.CPU.Seconds)
		}
		if p.Delivery.LastMS < 400 {
			t.Errorf("precision: last arrival %vms after the first due time, want the jobs spread over 500ms", p.Delivery.LastMS)
		}
	}
	if b := rep.Burst; b == nil {
		t.Error("no burst result")
	} else {
		checkDelivery("burst", b.Delivery, 200)
		checkRedisCPU(t, "burst", b.Life, b.RedisCPUPerJobUS, b.Jobs)
		if b.DrainSeconds <= 0 || b.PerSec <= 0 {
			t.Errorf("burst: %+v", b)
		}
	}
	if c := rep.Cost; c == nil {
		t.Error("no cost result")
	} else {
		checkDelivery("cost", c.Delivery, 200)
		// Each job runs at least its own finish script, and its share of the
		// enqueue and claim scripts, each of which runs commands inside.
		if c.ExecutedPerJob < 2 {
			t.Errorf("cost: executed %v per job", c.ExecutedPerJob)
		}
		if c.ProcessCPUPerJobUS <= 0 {
			t.Errorf("cost: process CPU per job %v µs, want the tool's and kairos's", c.ProcessCPUPerJobUS)
		}
		// every combination of 1 and 3 processes, 1 and 100 topics (the
		// figures themselves are printed, not held to a timing here)
		if c.Idle == nil || len(c.Idle.Cells) != 4 || c.Idle.Cells[3].Processes != 3 || c.Idle.Cells[3].Topics != 100 {
			t.Errorf("cost: idle %+v", c.Idle)
		}
		checkRedisCPU(t, "cost", c.Life, c.RedisCPUPerJobUS, c.Jobs)
		if c.ByScript == nil {
			t.Error("cost: no figures by script")
		} else {
			checkDelivery("cost by script", c.ByScript.Delivery, 200)
			checkScriptCosts(t, c.ByScript)
		}
	}
	if s := rep.Sustained; s == nil || len(s.Steps) == 0 {
		t.Errorf("sustained: %+v", s)
	} else {
		checkSustained(t, s, checkDelivery)
	}
	if s := rep.Scale; s == nil || s.Loaded != 2000 || s.Precision == nil {
		t.Errorf("scale: %+v", s)
	} else {
		checkDelivery("scale precision", s.Precision.Delivery, 200)
		if s.Precision.Pending != 2000 || s.MemoryPerJob <= 0 {
			t.Errorf("scale: %+v", s)
		}
		checkRedisCPU(t, "scale", s.CPU, s.RedisCPUPerJobUS, s.Loaded)
		checkRedisCPU(t, "scale precision", s.Precision.Life, s.Precision.RedisCPUPerJobUS, s.Precision.Jobs)
	}

	if c := rep.ColdStart; c == nil || c.Starts != 2 || c.ReadyMS.Median <= 0 || c.FirstCreateCommands <= 0 {
		t.Errorf("coldstart: %+v", c)
	}
	if s := rep.Schedules; s == nil || len(s.Phases) != 2 {
		t.Errorf("schedules: %+v", s)
	} else {
		for _, p := range s.Phases {
			name := "schedules " + p.Name
			checkDelivery(name, p.Delivery, p.Occurrences)
			// each schedule's next instant, past the phase's, may fire before the measure ends
			if p.Created != p.Schedules || p.Occurrences != 2*p.Schedules || p.Fired < p.Occurrences || p.Fired > 3*p.Schedules ||
				p.Fired-p.Occurrences != p.Delivery.Beyond || p.MemoryPerSchedule <= 0 || p.CreatedPerSec <= 0 || p.CreatedLate != 0 {
				t.Errorf("%s: %+v", name, p)
			}
			checkRedisCPU(t, name, p.CPU, p.RedisCPUPerOccurrenceUS, p.Fired)
			if len(p.OneShots) != 2 || p.OneShots[0].BatchSize != 1 || p.OneShots[1].BatchSize <= 1 {
				t.Errorf("%s: one-shot jobs beside it: %+v, want a run created one per POST, then one by batches", name, p.OneShots)
			}
			for _, o := range p.OneShots {
				checkDelivery(fmt.Sprintf("%s one-shot (batches of %d)", name, o.BatchSize), o.Delivery, o.Jobs)
				if want := int(p.PerSec * 2); o.Jobs != want {
					t.Errorf("%s: %d one-shot jobs, want %d, the phase's rate over its 2s", name, o.Jobs, want)
				}
			}
			if _, ok := findCheck(p.Checks, "Redis CPU per occurrence"); !ok {
				t.Errorf("%s: Redis CPU per occurrence not held to the one-shot jobs': %+v", name, p.Checks)
			}
		}
	}
	if f := rep.Fanout; f == nil {
		t.Error("no fanout result")
	} else {
		// 20 messages a second for 1 s, to 3 subscriptions each
		checkDelivery("fanout", f.Delivery, 60)
		checkDelivery("fanout plain jobs", f.Plain, 60)
		if f.PublishP99MS <= 0 || f.MemoryPerSubscription <= 0 || f.MemoryPerDelivery <= 0 || f.MemoryPerPlainJob <= 0 {
			t.Errorf("fanout: figures missing: %+v", f)
		}
		checkRedisCPU(t, "fanout", f.Life, f.RedisCPUPerDeliveryUS, 60)
		// the publish's own commands: its message's record, one SET
		if f.NoMatchOwnCommands < 1 || f.NoMatchOwnCommands > 1.1 {
			t.Errorf("fanout: %.3f commands per publish matching none besides cache reads, want 1: %+v", f.NoMatchOwnCommands, f.NoMatchCommands)
		}
	}
	if keys := testenv.Keys(t, c, "kb-test"); len(keys) > 0 {
		t.Errorf("keys left behind: %v", keys)
	}
	if after := c.ConfigGet(ctx, "slowlog-*").Val(); !maps.Equal(after, slowlogBefore) {
		t.Errorf("slow log settings %v after the bench, want them restored to %v", after, slowlogBefore)
	}
	if n := c.SlowLogLen(ctx).Val(); n > 100 {
		var cmds []string
		for _, e := range c.SlowLogGet(ctx, 5).Val() {
			cmds = append(cmds, fmt.Sprintf("%v %q", e.Duration, e.Args[:min(len(e.Args), 2)]))
		}
		t.Errorf("the bench left %d entries in the slow log; the latest: %s", n, strings.Join(cmds, ", "))
	}
}

// findCheck returns the check of metric among cs.
func findCheck(cs []bench.Check, metric string) (bench.Check, bool) {
	for _, c := range cs {
		if c.Metric == metric {
			return c, true
		}
	}
	return bench.Check{}, false
}

// checkRedisCPU checks that a scenario's Redis CPU per job is there and is
// its window's Redis CPU divided by its jobs.
func checkRedisCPU(t *testing.T, name string, u bench.Usage, perJob float64, jobs int) {
	t.Helper()
	if u.RedisSeconds <= 0 || u.Seconds <= 0 || perJob <= 0 {
		t.Errorf("%s: no Redis CPU per job: %v µs, window %+v", name, perJob, u)
		return
	}
	if want := u.RedisSeconds * 1e6 / float64(jobs); math.Abs(perJob-want) > 1e-6*want {
		t.Errorf("%s: Redis CPU per job %v µs, want %v (%vs over %d jobs)", name, perJob, want, u.RedisSeconds, jobs)
	}
}

// checkSequence checks the sequence's phases at the end-to-end test's
// sizes (200 jobs a run, 1,000 pending, a 200ms tail): each ran, every job
// of each arrived once, and the summary holds each of issue 44's targets.
func checkSequence(t *testing.T, s *bench.SequenceResult, checkDelivery func(string, bench.Delivery, int)) {
	t.Helper()
	if s == nil || s.BurstEmpty == nil || s.BurstFar == nil || s.Pending == nil || s.Precision == nil || s.Burst == nil {
		t.Errorf("sequence: a phase is missing: %+v", s)
		return
	}
	for _, b := range []*bench.BurstResult{s.BurstEmpty, s.BurstFar, s.Burst} {
		checkDelivery("sequence "+b.Phase, b.Delivery, 200)
		checkRedisCPU(t, "sequence "+b.Phase, b.Life, b.RedisCPUPerJobUS, b.Jobs)
	}
	if s.BurstEmpty.Phase != "burst-empty" || s.BurstFar.Phase != "burst-far" || s.Burst.Phase != "burst-pending" {
		t.Errorf("sequence: bursts %q, %q, %q", s.BurstEmpty.Phase, s.BurstFar.Phase, s.Burst.Phase)
	}
	if want := s.BurstFar.DrainSeconds / s.BurstEmpty.DrainSeconds; s.FarRatio <= 0 || math.Abs(s.FarRatio-want) > 1e-9 {
		t.Errorf("sequence: burst-far / burst-empty %v, want %v", s.FarRatio, want)
	}
	if p := s.Pending; p.Loaded != 1000 || p.MemoryPerJob <= 0 || s.RemoveSeconds <= 0 {
		t.Errorf("sequence pending: %+v, removed in %vs", p, s.RemoveSeconds)
	} else {
		checkRedisCPU(t, "sequence pending", p.CPU, p.RedisCPUPerJobUS, p.Loaded)
	}
	p := s.Precision
	checkDelivery("sequence precision", p.Delivery, 200)
	checkRedisCPU(t, "sequence precision", p.Life, p.RedisCPUPerJobUS, p.Jobs)
	// the job lives were counted past the last delivery by the tail
	if p.Pending != 1000 || s.LifeTailSeconds != 0.2 || p.TailSeconds != 0.2 || s.Burst.TailSeconds != 0.2 || s.BurstEmpty.TailSeconds != 0 ||
		p.Life.Seconds < p.CPU.Seconds+0.2 {
		t.Errorf("sequence precision among %d pending, tail %vs (sequence %vs, bursts %vs and %vs), life %vs, firing %vs",
			p.Pending, p.TailSeconds, s.LifeTailSeconds, s.BurstEmpty.TailSeconds, s.Burst.TailSeconds, p.Life.Seconds, p.CPU.Seconds)
	}
	var metrics []string
	for _, c := range s.Checks {
		metrics = append(metrics, c.Metric)
	}
	want := []string{"burst among pending: drain time", "burst behind one far job / on an empty store",
		"precision among pending: lateness p99", "precision among pending: lateness max", "precision among pending: early",
		"precision among pending: Redis CPU per job life", "bytes per pending job", "missing or duplicated, every phase"}
	if d := cmp.Diff(want, metrics); d != "" {
		t.Errorf("sequence summary (-want +got):\n%s", d)
	}
}

// checkScriptCosts checks the cost scenario's figures by script: kairos's
// scripts are named, the slow log saw what commandstats counted, and the
// rows add up.
func checkScriptCosts(t *testing.T, s *bench.ScriptCosts) {
	t.Helper()
	for _, n := range s.Notes {
		t.Errorf("cost by script: note %q", n)
	}
	var sum float64
	seen := map[string]bool{}
	for _, r := range s.Rows {
		sum += r.USecPerJob
		if r.Script {
			seen[r.Name] = true
		}
		if r.CallsPerJob <= 0 || r.USecPerJob < 0 || r.CommandsUSecPerCall > r.USecPerCall {
			t.Errorf("cost by script: row %+v", r)
		}
	}
	// Every job was created by the enqueue script and claimed (its outcome
	// applied) by the claim script: both must have rows of their own.
	if !seen["enqueue"] || !seen["claim"] {
		t.Errorf("cost by script: kairos's scripts seen %v, want enqueue and claim: %+v", seen, s.Rows)
	}
	if math.Abs(sum-s.TotalUSecPerJob) > 1e-6*sum {
		t.Errorf("cost by script: rows sum to %v µs/job, total says %v", sum, s.TotalUSecPerJob)
	}
	// Both are Redis's own timings of the same calls.
	if s.ScriptUSecPerJob < 0.9*s.StatsUSecPerJob || s.ScriptUSecPerJob > 1.1*s.StatsUSecPerJob {
		t.Errorf("cost by script: slow log %v µs/job of scripts, commandstats %v µs/job of evalsha", s.ScriptUSecPerJob, s.StatsUSecPerJob)
	}
	if s.UnloggedUSecPerJob <= 0 || s.Entries == 0 {
		t.Errorf("cost by script: %+v", s)
	}
}

// checkSustained checks each step's figures and that the capacity is the
// highest step that passed.
func checkSustained(t *testing.T, s *bench.SustainedResult, checkDelivery func(string, bench.Delivery, int)) {
	t.Helper()
	capacity := 0
	for _, st := range s.Steps {
		name := fmt.Sprintf("sustained %d/s", st.Rate)
		if st.Jobs != st.Rate {
			t.Errorf("%s: %d jobs in a 1s step", name, st.Jobs)
		}
		checkDelivery(name, st.Delivery, st.Jobs)
		checkRedisCPU(t, name, st.Life, st.RedisCPUPerJobUS, st.Jobs)
		if st.CPU.RedisSeconds <= 0 || st.CPU.Seconds <= 0 || st.CPU.Seconds > st.Life.Seconds || st.CreatedPerSec <= 0 {
			t.Errorf("%s: %+v", name, st)
		}
		d := st.Delivery
		if passed := d.P99MS <= 5 && d.Missing+d.Early+d.Duplicated+st.CreatedLate == 0; st.Passed != passed {
			t.Errorf("%s: passed = %v with p99 %v ms and %d created late", name, st.Passed, d.P99MS, st.CreatedLate)
		}
		if st.Passed {
			capacity = st.Rate
		}
	}
	if s.Capacity != capacity {
		t.Errorf("sustained capacity %d, want %d, the highest step that passed", s.Capacity, capacity)
	}
	if s.Stopped == "" && len(s.Steps) != len(s.Rates) {
		t.Errorf("sustained: ran %d of %d steps without saying why it stopped", len(s.Steps), len(s.Rates))
	}
}

func TestBenchTables(t *testing.T) {
	skipShort(t)
	srv := testenv.NewRedis(t)
	var out strings.Builder
	args := []string{"--redis-url", srv.URL(), "--kairos-bin", kairosBin(t), "--scenario", "precision", "--quiet",
		"--precision-jobs", "50", "--precision-over", "500ms", "--lead", "1s", "--concurrency", "4"}
	if err := run(context.Background(), args, fakeEnv(nil), &out, io.Discard); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"precision: 50 jobs due uniformly over 0.5s", "lateness p99", "<= 5 ms", "missing", "duplicated"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
}

// TestBenchDefaultIsTheSequence runs the tool with no --scenario at tiny
// sizes and reads its tables: every phase of the sequence and the summary
// rows of issue 44's targets, each with a target and a verdict (not the
// timings), and no other scenario.
func TestBenchDefaultIsTheSequence(t *testing.T) {
	skipShort(t)
	srv := testenv.NewRedis(t)
	var out, errOut strings.Builder
	args := []string{"--redis-url", srv.URL(), "--kairos-bin", kairosBin(t), "--quiet", "--concurrency", "8", "--lead", "1s",
		"--burst-jobs", "200", "--sequence-pending", "1000", "--precision-jobs", "200", "--precision-over", "1s", "--life-tail", "1s"}
	if err := run(context.Background(), args, fakeEnv(nil), &out, &errOut); err != nil {
		t.Fatalf("bench: %v\nstderr:\n%s", err, errOut.String())
	}
	text := out.String()
	titles := []string{
		"sequence 1, burst-empty: 200 jobs due at one instant on an empty store\n",
		"sequence 2, burst-far: 200 jobs due at one instant behind one job due an hour ahead in another topic\n",
		"sequence 3, pending: 1,000 jobs due an hour ahead",
		"sequence 4, precision-pending: 200 jobs due uniformly over 1s (200 jobs/s), created by batches of 1,000, with 1,000 other jobs pending\n",
		"sequence 5, burst-pending: 200 jobs due at one instant among 1,000 jobs pending an hour ahead\n",
		"sequence: issue 44's targets",
	}
	at := 0
	for _, title := range titles {
		i := strings.Index(text[at:], title)
		if i < 0 {
			t.Fatalf("no table %q after the previous one:\n%s", title, text)
		}
		at += i
	}
	summary, _, _ := strings.Cut(text[at:], "\n\n")
	for _, row := range []string{"burst of 200 among 1,000 pending, drained", "burst behind one far job / same burst on an empty store",
		"precision, 200 over 1s among 1,000: lateness p99", "precision, 200 over 1s among 1,000: lateness max",
		"precision, 200 over 1s among 1,000: early", "Redis CPU per job life, 1 s tail (precision)", "bytes per pending job",
		"jobs missing or duplicated, every phase"} {
		line := ""
		for l := range strings.Lines(summary) {
			if strings.HasPrefix(strings.TrimSpace(l), row) {
				line = l
			}
		}
		if !strings.Contains(line, "<= ") || !(strings.Contains(line, " met") || strings.Contains(line, "MISSED")) {
			t.Errorf("summary row %q: %q, want a value, a target and a verdict:\n%s", row, line, summary)
		}
	}
	for _, row := range []string{"drain time / burst-empty's", "memory per pending job", "time to remove them"} {
		if !strings.Contains(text, row) {
			t.Errorf("output lacks %q:\n%s", row, text)
		}
	}
	if strings.Contains(text, "enqueue:") || strings.Contains(text, "\ncost:") {
		t.Errorf("the default ran more than the sequence:\n%s", text)
	}
}

// TestSequenceFlags: the sequence counts 60s of tail unless --life-tail
// is given (0 then counts none), and --sequence-pending 0 loads nothing.
func TestSequenceFlags(t *testing.T) {
	tests := []struct {
		args    []string
		pending int
		want    bench.SequenceConfig // before its defaults
	}{
		{nil, 100_000, bench.SequenceConfig{Pending: 100_000}},
		{[]string{"--life-tail", "1s"}, 100_000, bench.SequenceConfig{Pending: 100_000, LifeTail: time.Second}},
		{[]string{"--life-tail", "0"}, 0, bench.SequenceConfig{Pending: -1, LifeTail: -1}},
	}
	for _, tt := range tests {
		var o bench.Options
		fs := flag.NewFlagSet("t", flag.ContinueOnError)
		fs.DurationVar(&o.LifeTail, "life-tail", 0, "")
		if err := fs.Parse(tt.args); err != nil {
			t.Fatal(err)
		}
		if d := cmp.Diff(tt.want, sequenceConfig(fs, o, tt.pending)); d != "" {
			t.Errorf("%q, pending %d (-want +got):\n%s", tt.args, tt.pending, d)
		}
	}
}

func TestBenchFlags(t *testing.T) {
	srv := testenv.NewRedis(t)
	c := redis.NewClient(&redis.Options{Addr: srv.Addr})
	defer c.Close()
	if err := c.Set(context.Background(), "taken:meta", "x", 0).Err(); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		args    []string
		env     map[string]string
		wantErr string
	}{
		{"no target", nil, nil, "give --redis-url"},
		{"url without token", []string{"--url", "http://127.0.0.1:8080"}, nil, "--token"},
		{"url off loopback", []string{"--url", "http://10.0.0.1:8080"}, map[string]string{"KAIROS_TOKEN": "t"}, "loopback only"},
		{"bad scenario", []string{"--redis-url", srv.URL(), "--scenario", "speed"}, nil, `scenario "speed"`},
		// any file passes the binary's check, which comes before the prefix's
		{"prefix in use", []string{"--redis-url", srv.URL(), "--kairos-bin", os.Args[0], "--prefix", "taken"}, nil, "in use"},
		{"no kairos binary", []string{"--redis-url", srv.URL(), "--kairos-bin", "/nonexistent/kairos"}, nil, "--kairos-bin"},
		{"batch too big", []string{"--redis-url", srv.URL(), "--batch-size", "5000"}, nil, "--batch-size"},
		{"bad rates", []string{"--redis-url", srv.URL(), "--sustained-rates", "1000,fast"}, nil, "--sustained-rates"},
		{"schedules under a second apart", []string{"--redis-url", srv.URL(), "--schedules-every", "500ms"}, nil, "--schedules-every"},
		{"scale window under the interval", []string{"--redis-url", srv.URL(), "--scale-schedules-window", "30s"}, nil, "--scale-schedules-window"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := run(context.Background(), tt.args, fakeEnv(tt.env), io.Discard, io.Discard)
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("err = %v, want one containing %q", err, tt.wantErr)
			}
		})
	}
}

// TestBenchExternal measures a kairos the test starts apart, through --url:
// the bench then cleans up by cancelling through the API, and deleting its
// topic at the end succeeds only if no job of it is left pending.
func TestBenchExternal(t *testing.T) {
	skipShort(t)
	srv := testenv.NewRedis(t)
	ctx := context.Background()
	k, err := startKairos(ctx, kairosBin(t), srv.URL(), "kb-ext", 4, "warn", io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	defer k.stop()
	var out, errOut strings.Builder
	args := []string{"--url", k.target.URL, "--redis-url", srv.URL(), "--scenario", "enqueue,precision", "--json",
		"--jobs", "1000", "--clients", "4", "--batch-size", "250", "--concurrency", "4",
		"--precision-jobs", "100", "--precision-over", "300ms", "--lead", "1s"}
	if err := run(ctx, args, fakeEnv(map[string]string{"KAIROS_TOKEN": k.target.Token}), &out, &errOut); err != nil {
		t.Fatalf("bench: %v\nstderr:\n%s", err, errOut.String())
	}
	var rep bench.Report
	if err := json.Unmarshal([]byte(out.String()), &rep); err != nil {
		t.Fatal(err)
	}
	if e := rep.Enqueue; e == nil || e.Single.Created != 1000 || e.Batch.Created != 1000 || e.Batch.MemoryPerJob <= 0 {
		t.Errorf("enqueue: %+v", e)
	}
	if p := rep.Precision; p == nil || p.Delivery.Delivered != 100 || p.Delivery.Missing+p.Delivery.Duplicated+p.Delivery.Early != 0 {
		t.Errorf("precision: %+v", p)
	}
}

// TestBenchHelp: -h and --help print the usage on stdout and are not
// failures (main exits 0 on flag.ErrHelp); an unknown flag is one, with
// the usage on stderr.
func TestBenchHelp(t *testing.T) {
	for _, h := range []string{"-h", "--help"} {
		var out, errOut strings.Builder
		if err := run(context.Background(), []string{h}, fakeEnv(nil), &out, &errOut); !errors.Is(err, flag.ErrHelp) {
			t.Errorf("kairos-bench %s: %v, want flag.ErrHelp", h, err)
		}
		if !strings.Contains(out.String(), "--scenario") || errOut.Len() != 0 {
			t.Errorf("kairos-bench %s: stdout %q, stderr %q; want the usage on stdout", h, out.String(), errOut.String())
		}
	}
	var errOut strings.Builder
	if err := run(context.Background(), []string{"--no-such-flag"}, fakeEnv(nil), io.Discard, &errOut); err == nil || errors.Is(err, flag.ErrHelp) || errOut.Len() == 0 {
		t.Errorf("kairos-bench --no-such-flag: err %v, stderr %q; want an error and the usage on stderr", err, errOut.String())
	}
}
