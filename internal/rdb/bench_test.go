package rdb

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/kairos-sh/kairos"
	"github.com/kairos-sh/kairos/internal/testclock"
	"github.com/kairos-sh/kairos/internal/testredis"
)

// The hot paths of a job's life against the real redis-server of TestMain:
// go test -run '^$' -bench . ./internal/rdb

// benchPayload is the size of the load tool's payload (bench/internal/bench).
var benchPayload = []byte(`{"run":"prec-ab12cd","seq":12345,"due":1763721000250,"pad":""}`)

func newBenchStore(b *testing.B, opts Options) (*Store, *testclock.Clock) {
	b.Helper()
	clk := testclock.New(time.Date(2026, 11, 21, 10, 30, 0, 0, time.UTC))
	opts.Prefix = testredis.Prefix(b)
	opts.Now = clk.Now
	c := testredis.Client(b)
	s := New(c, opts)
	if err := s.Init(context.Background()); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		ctx := context.Background()
		keys := testredis.Keys(b, c, opts.Prefix)
		for len(keys) > 0 {
			n := min(len(keys), 1000)
			c.Unlink(ctx, keys[:n]...)
			keys = keys[n:]
		}
	})
	return s, clk
}

// benchJob is shaped like the load tool's jobs: tenant "bench", a topic
// "bench-<12 hex>", an id "enqueue-<6 hex>-<n>".
func benchJob(i int, runAt time.Time) kairos.Job {
	return kairos.Job{JobKey: kairos.JobKey{Tenant: "bench", Topic: "bench-0123456789ab", ID: "enqueue-a1b2c3-" + strconv.Itoa(i)},
		RunAt: runAt, Payload: benchPayload}
}

func enqueueAll(b testing.TB, s *Store, jobs []kairos.Job) {
	b.Helper()
	for len(jobs) > 0 {
		n := min(len(jobs), 1000)
		for _, r := range s.EnqueueBatch(context.Background(), jobs[:n]) {
			if r.Err != nil {
				b.Fatal(r.Err)
			}
		}
		jobs = jobs[n:]
	}
}

// BenchmarkEnqueueBatch is one batch create of 1000 jobs due over the next
// hour: one pipelined round trip of script calls.
func BenchmarkEnqueueBatch(b *testing.B) {
	const size = 1000
	s, clk := newBenchStore(b, Options{})
	ctx := context.Background()
	base := clk.Now().Add(time.Hour)
	jobs := make([]kairos.Job, size)
	i := 0
	b.ReportAllocs()
	for b.Loop() {
		for k := range jobs {
			jobs[k] = benchJob(i, base.Add(time.Duration(i*7919%3_600_000)*time.Millisecond))
			i++
		}
		for _, r := range s.EnqueueBatch(ctx, jobs) {
			if r.Err != nil {
				b.Fatal(r.Err)
			}
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(i), "ns/job")
}

// BenchmarkClaimFinish is the Redis side of a due job's delivery: its share
// of a claim of 500 (which starts the attempt) and its finish.
func BenchmarkClaimFinish(b *testing.B) {
	const batch = 500
	s, clk := newBenchStore(b, Options{Shards: 1})
	ctx := context.Background()
	jobs := make([]kairos.Job, batch)
	i, done := 0, 0
	b.ReportAllocs()
	for b.Loop() {
		b.StopTimer()
		due := clk.Now().Add(time.Second)
		for k := range jobs {
			jobs[k] = benchJob(i, due)
			i++
		}
		enqueueAll(b, s, jobs)
		clk.Add(time.Second)
		b.StartTimer()
		c, err := s.ClaimDue(ctx, 0, batch, 0, 30*time.Second)
		if err != nil {
			b.Fatal(err)
		}
		for _, st := range deliverAll(b, s, c.Jobs, clk.Now()) {
			if st != kairos.StateDelivered {
				b.Fatal(fmt.Errorf("finish: state %s", st))
			}
		}
		done += len(c.Jobs)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(max(done, 1)), "ns/job")
}

// BenchmarkPendingMemory loads b.N bench-shaped jobs due over the next day
// and reports Redis's memory per pending job (INFO used_memory growth):
//
//	go test -run '^$' -bench PendingMemory -benchtime 1000000x ./internal/rdb
func BenchmarkPendingMemory(b *testing.B) {
	s, clk := newBenchStore(b, Options{})
	used := func() int64 { return usedMemory(b, s) }
	enqueueAll(b, s, []kairos.Job{benchJob(-1, clk.Now().Add(time.Hour))}) // the topic's keys exist before the baseline
	before := used()
	b.ResetTimer()
	jobs := make([]kairos.Job, 0, 1000)
	for i := range b.N {
		jobs = append(jobs, benchJob(i, clk.Now().Add(time.Hour+time.Duration(i*7919%86_400_000)*time.Millisecond)))
		if len(jobs) == cap(jobs) || i == b.N-1 {
			enqueueAll(b, s, jobs)
			jobs = jobs[:0]
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(used()-before)/float64(b.N), "B/job")
	if b.N >= 100_000 {
		fmt.Printf("pending memory: %d jobs, %.1f B/job\n", b.N, float64(used()-before)/float64(b.N))
	}
}

// BenchmarkCancelKept: what keeping a cancelled job for the retention
// period costs (layout 8): the Redis memory a cancelled job holds until
// its record expires, against a pending one's (the record stays, its
// wheel entry moves to the expiry), and Redis's CPU per cancel.
func BenchmarkCancelKept(b *testing.B) {
	s, clk := newBenchStore(b, Options{})
	ctx := context.Background()
	enqueueAll(b, s, []kairos.Job{benchJob(-1, clk.Now().Add(time.Hour))}) // the topic's keys exist before the baseline
	before := usedMemory(b, s)
	jobs := make([]kairos.Job, b.N)
	for i := range jobs {
		jobs[i] = benchJob(i, clk.Now().Add(time.Hour+time.Duration(i*7919%86_400_000)*time.Millisecond))
	}
	enqueueAll(b, s, jobs)
	pending := usedMemory(b, s)
	cpu := redisCPU(b, s)
	b.ResetTimer()
	for _, j := range jobs {
		if err := s.Cancel(ctx, j.JobKey); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	b.ReportMetric((redisCPU(b, s)-cpu)/float64(b.N), "redis-µs/cancel")
	b.ReportMetric(float64(pending-before)/float64(b.N), "B/pending")
	b.ReportMetric(float64(usedMemory(b, s)-before)/float64(b.N), "B/cancelled")
}

// redisCPU is Redis's used_cpu_user + used_cpu_sys (µs).
func redisCPU(b *testing.B, s *Store) float64 {
	b.Helper()
	info, err := s.c.Info(context.Background(), "cpu").Result()
	if err != nil {
		b.Fatal(err)
	}
	var total float64
	for line := range strings.SplitSeq(info, "\n") {
		k, v, ok := strings.Cut(strings.TrimSpace(line), ":")
		if ok && (k == "used_cpu_user" || k == "used_cpu_sys") {
			f, err := strconv.ParseFloat(v, 64)
			if err != nil {
				b.Fatal(err)
			}
			total += f * 1e6
		}
	}
	return total
}

// scriptUS is the time Redis spent running the scripts (INFO
// commandstats: FCALL usec, µs), without the network and event loop
// work that INFO cpu also counts.
func scriptUS(b *testing.B, s *Store) float64 {
	return commandUS(b, s, "fcall")
}

// commandUS is the time Redis spent running commands cmds (INFO
// commandstats usec, µs; an FCALL's includes the commands its script ran).
func commandUS(b *testing.B, s *Store, cmds ...string) float64 {
	b.Helper()
	info, err := s.c.Info(context.Background(), "commandstats").Result()
	if err != nil {
		b.Fatal(err)
	}
	var total float64
	for line := range strings.SplitSeq(info, "\n") {
		name, rest, ok := strings.Cut(strings.TrimPrefix(strings.TrimSpace(line), "cmdstat_"), ":")
		if !ok || !slices.Contains(cmds, name) {
			continue
		}
		for kv := range strings.SplitSeq(rest, ",") {
			if v, ok := strings.CutPrefix(kv, "usec="); ok {
				f, err := strconv.ParseFloat(v, 64)
				if err != nil {
					b.Fatal(err)
				}
				total += f
			}
		}
	}
	return total
}

// deliverAll records a delivered outcome (204) of each claimed job at
// once, as workers do (the store sends them in shared round trips), and
// returns the states Finish reported.
func deliverAll(b *testing.B, s *Store, cs []kairos.Claimed, at time.Time) []kairos.State {
	b.Helper()
	type done struct {
		st  kairos.State
		err error
	}
	dones := make(chan done, len(cs))
	for _, cl := range cs {
		go func() {
			a := kairos.Attempt{N: cl.Job.Attempts, At: at, Duration: time.Millisecond, Status: 204}
			st, err := s.Finish(context.Background(), cl.Job.JobKey, a, kairos.OutcomeDelivered, time.Time{})
			dones <- done{st, err}
		}()
	}
	sts := make([]kairos.State, len(cs))
	for i := range cs {
		d := <-dones
		if d.err != nil {
			b.Fatal(d.err)
		}
		sts[i] = d.st
	}
	return sts
}

// claimAndFinish claims shard 0's jobs due by now and finishes each as
// delivered, then refills the schedules the claim asked for; it returns
// how many jobs it claimed, and Redis's time in the refill's commands
// (µs: its SRANDMEMBER, the MULTI block of HMGETs, the script).
func claimAndFinish(b *testing.B, s *Store, now time.Time) (int, float64) {
	b.Helper()
	ctx := context.Background()
	c, err := s.ClaimDue(ctx, 0, 500, 0, 30*time.Second)
	if err != nil {
		b.Fatal(err)
	}
	deliverAll(b, s, c.Jobs, now)
	refill := 0.0
	if c.Refills > 0 {
		us0 := commandUS(b, s, refillCommands...)
		if err := s.RefillSchedules(ctx, 0, 100); err != nil {
			b.Fatal(err)
		}
		refill = commandUS(b, s, refillCommands...) - us0
	}
	return len(c.Jobs), refill
}

// refillCommands are the commands Store.RefillSchedules sends.
var refillCommands = []string{"srandmember", "multi", "hmget", "exec", "fcall"}

// BenchmarkOccurrences is the Redis side of schedules firing: 1,000
// schedules every second, their instants spread over the second, claimed
// every 100 ms (about 100 a claim, each filing its schedule's next one),
// finished, and refilled. It reports Redis CPU per occurrence beside
// BenchmarkOneShotAtRate's per job, and Redis's time in refills per
// occurrence (a schedule refills every scheduleQueue-refillBelow+1 or so):
//
//	go test -run '^$' -bench 'Occurrences|OneShotAtRate' -benchtime 200x ./internal/rdb
func BenchmarkOccurrences(b *testing.B) {
	const n = 1000
	s, clk := newBenchStore(b, Options{Shards: 1, Patterns: func(sc kairos.Schedule) (Pattern, error) {
		return everyPattern{anchor: sc.StartAt, d: sc.Every, end: sc.EndAt}, nil
	}})
	ctx := context.Background()
	start := clk.Now().Add(time.Second)
	for i := range n {
		sc := kairos.Schedule{Tenant: "bench", Topic: "bench-0123456789ab", ID: "sched-a1b2c3-" + strconv.Itoa(i), Every: time.Second,
			StartAt: start.Add(time.Duration(i) * time.Second / n), Job: kairos.Job{Payload: benchPayload}}
		if _, err := s.PutSchedule(ctx, sc); err != nil {
			b.Fatal(err)
		}
	}
	clk.Add(time.Second)
	fired, refill := 0, 0.0
	cpu0, us0 := redisCPU(b, s), scriptUS(b, s)
	for b.Loop() {
		clk.Add(100 * time.Millisecond)
		n, us := claimAndFinish(b, s, clk.Now())
		fired, refill = fired+n, refill+us
	}
	b.ReportMetric((redisCPU(b, s)-cpu0)/float64(max(fired, 1)), "redis-µs/occurrence")
	b.ReportMetric((scriptUS(b, s)-us0)/float64(max(fired, 1)), "script-µs/occurrence")
	b.ReportMetric(float64(fired)/float64(b.N), "occurrences/claim")
	b.ReportMetric(refill/float64(max(fired, 1)), "refill-µs/occurrence")
}

// BenchmarkOneShotAtRate is BenchmarkOccurrences with one-shot jobs: the
// jobs due in each 100 ms are created in batches of 10 (as the API's
// batcher groups single creates), then claimed and finished.
func BenchmarkOneShotAtRate(b *testing.B) {
	const perClaim = 100
	s, clk := newBenchStore(b, Options{Shards: 1})
	jobs := make([]kairos.Job, 10)
	i, fired := 0, 0
	var cpu, us float64
	for b.Loop() {
		b.StopTimer() // as BenchmarkOccurrences, created a while before due
		due := clk.Now().Add(time.Second)
		b.StartTimer()
		cpu0, us0 := redisCPU(b, s), scriptUS(b, s)
		for range perClaim / len(jobs) {
			for k := range jobs {
				jobs[k] = benchJob(i, due.Add(time.Duration(k)*time.Millisecond))
				i++
			}
			enqueueAll(b, s, jobs)
		}
		clk.Add(time.Second + 100*time.Millisecond)
		n, _ := claimAndFinish(b, s, clk.Now())
		fired += n
		cpu += redisCPU(b, s) - cpu0
		us += scriptUS(b, s) - us0
	}
	// the outcomes of the last claim are recorded by the next one
	b.ReportMetric(cpu/float64(max(fired, 1)), "redis-µs/job")
	b.ReportMetric(us/float64(max(fired, 1)), "script-µs/job")
	b.ReportMetric(float64(fired)/float64(b.N), "jobs/claim")
}

// BenchmarkJobLifeParts times the scripts of a job's life one part at a
// time, per job, as INFO commandstats counts them (FCALL usec): a batch
// create of 100 jobs due at one instant, the claim that starts their
// attempts and pushes them onto the ready list, the outcome calls that
// record their delivery, and a claim that finds nothing (per call). Each
// part's calls hold
// only that part's work, so a change to one shows in its own figure:
//
//	go test -run '^$' -bench JobLifeParts -benchtime 200x ./internal/rdb
func BenchmarkJobLifeParts(b *testing.B) {
	const batch = 100
	s, clk := newBenchStore(b, Options{Shards: 1})
	ctx := context.Background()
	jobs := make([]kairos.Job, batch)
	i := 0
	var create, start, outcome, empty float64
	claim := func(want int) *Claim {
		c, err := s.ClaimDue(ctx, 0, 500, 0, 30*time.Second)
		if err != nil {
			b.Fatal(err)
		}
		if len(c.Jobs) != want {
			b.Fatalf("claimed %d jobs, want %d", len(c.Jobs), want)
		}
		return &c
	}
	for b.Loop() {
		due := clk.Now().Add(time.Second)
		for k := range jobs {
			jobs[k] = benchJob(i, due)
			i++
		}
		us := scriptUS(b, s)
		enqueueAll(b, s, jobs)
		create += scriptUS(b, s) - us
		clk.Add(time.Second)
		us = scriptUS(b, s)
		c := claim(batch)
		start += scriptUS(b, s) - us
		us = scriptUS(b, s)
		deliverAll(b, s, c.Jobs, clk.Now())
		outcome += scriptUS(b, s) - us
		us = scriptUS(b, s)
		claim(0)
		empty += scriptUS(b, s) - us
	}
	n := float64(b.N)
	b.ReportMetric(create/n/batch, "create-µs/job")
	b.ReportMetric(start/n/batch, "start-µs/job")
	b.ReportMetric(outcome/n/batch, "outcome-µs/job")
	b.ReportMetric(empty/n, "empty-claim-µs")
}

// commandCalls is how many commands Redis ran (INFO commandstats calls;
// the commands a script runs count, as does its FCALL or EVALSHA), less
// the INFO calls that read it.
func commandCalls(b *testing.B, s *Store) float64 {
	b.Helper()
	info, err := s.c.Info(context.Background(), "commandstats").Result()
	if err != nil {
		b.Fatal(err)
	}
	var total float64
	for line := range strings.SplitSeq(info, "\n") {
		name, rest, ok := strings.Cut(strings.TrimPrefix(strings.TrimSpace(line), "cmdstat_"), ":")
		if !ok || name == "info" {
			continue
		}
		for kv := range strings.SplitSeq(rest, ",") {
			if v, ok := strings.CutPrefix(kv, "calls="); ok {
				f, err := strconv.ParseFloat(v, 64)
				if err != nil {
					b.Fatal(err)
				}
				total += f
			}
		}
	}
	return total
}

// BenchmarkCreateCommands is single creates one after another (a script
// call of one job each) of jobs due in an hour, with no create options:
// the Redis commands and script time each costs.
//
//	go test -run '^$' -bench 'CreateCommands|CreateDedup' -benchtime 2000x ./internal/rdb
func BenchmarkCreateCommands(b *testing.B) {
	s, clk := newBenchStore(b, Options{Shards: 1})
	ctx := context.Background()
	at := clk.Now().Add(time.Hour)
	i := 0
	s.Upsert(ctx, benchJob(-1, at)) // the topic's handle, once
	calls, us := commandCalls(b, s), scriptUS(b, s)
	for b.Loop() {
		if r := s.Upsert(ctx, benchJob(i, at)); r.Err != nil {
			b.Fatal(r.Err)
		}
		i++
	}
	b.ReportMetric((commandCalls(b, s)-calls)/float64(i), "redis-cmds/create")
	b.ReportMetric((scriptUS(b, s)-us)/float64(i), "script-µs/create")
}

// BenchmarkCreateDedup is BenchmarkCreateCommands with a dedup key a
// create (its id from DedupID), each key new; it also reports the bytes
// one dedup key holds in Redis for its window (MEMORY USAGE).
func BenchmarkCreateDedup(b *testing.B) {
	s, clk := newBenchStore(b, Options{Shards: 1})
	ctx := context.Background()
	at := clk.Now().Add(time.Hour)
	newID := func() string { return "job_" + strconv.FormatInt(time.Now().UnixNano(), 36) }
	job := func(i int) kairos.Job {
		j := benchJob(i, at)
		j.Create = kairos.CreateOptions{DedupKey: "order-" + strconv.Itoa(100000+i) + "/charge", DedupWindow: kairos.DefaultDedupWindow}
		j.ID = s.DedupID(j.Tenant, j.Topic, j.Create.DedupKey, newID)
		return j
	}
	i := 0
	s.Upsert(ctx, job(-1))
	calls, us := commandCalls(b, s), scriptUS(b, s)
	for b.Loop() {
		if r := s.Upsert(ctx, job(i)); r.Err != nil || r.Result != ResultCreated {
			b.Fatal(r.Err, r.Result)
		}
		i++
	}
	b.ReportMetric((commandCalls(b, s)-calls)/float64(i), "redis-cmds/create")
	b.ReportMetric((scriptUS(b, s)-us)/float64(i), "script-µs/create")
	h, err := s.handle(ctx, "bench", "bench-0123456789ab", false)
	if err != nil {
		b.Fatal(err)
	}
	n, err := s.c.MemoryUsage(ctx, s.k.dedup(0, h, "order-100000/charge"), 0).Result()
	if err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(n), "B/dedup-key")
}
