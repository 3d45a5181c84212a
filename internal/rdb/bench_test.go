package rdb

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/kairos-sh/kairos"
	"github.com/kairos-sh/kairos/internal/testclock"
	"github.com/kairos-sh/kairos/internal/testredis"
)

// The hot paths of a job's life against the real redis-server of TestMain:
// go test -run '^$' -bench . ./internal/rdb

// benchPayload is the size of the load tool's payload (internal/bench).
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

func benchJob(i int, runAt time.Time) kairos.Job {
	return kairos.Job{JobKey: kairos.JobKey{Tenant: "acme", Topic: "orders", ID: "job-" + strconv.Itoa(i)}, RunAt: runAt, Payload: benchPayload}
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

// BenchmarkEnqueue is one create: the enqueue script, one round trip
// (plus a PUBLISH when the job becomes its shard's earliest).
func BenchmarkEnqueue(b *testing.B) {
	s, clk := newBenchStore(b, Options{})
	ctx := context.Background()
	base := clk.Now().Add(time.Hour)
	i := 0
	b.ReportAllocs()
	for b.Loop() {
		if _, err := s.Enqueue(ctx, benchJob(i, base.Add(time.Duration(i*7919%600_000)*time.Millisecond))); err != nil {
			b.Fatal(err)
		}
		i++
	}
}

// BenchmarkEnqueueBatch is one batch create of 1000 jobs: one pipelined
// round trip of 1000 script calls.
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
			jobs[k] = benchJob(i, base.Add(time.Duration(i*7919%600_000)*time.Millisecond))
			i++
		}
		for _, r := range s.EnqueueBatch(ctx, jobs) {
			if r.Err != nil {
				b.Fatal(r.Err)
			}
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(i), "ns/job")
	b.ReportMetric(float64(i)/b.Elapsed().Seconds(), "jobs/s")
}

// BenchmarkClaimDue is one scanner claim moving 500 due jobs of a shard to
// their ready list: the claim script and the pipelined LPUSHes.
func BenchmarkClaimDue(b *testing.B) {
	const batch = 500
	s, clk := newBenchStore(b, Options{Shards: 1})
	ctx := context.Background()
	jobs := make([]kairos.Job, batch)
	i, moved := 0, 0
	b.ReportAllocs()
	for b.Loop() {
		b.StopTimer()
		due := clk.Now().Add(time.Second)
		for k := range jobs {
			jobs[k] = benchJob(i, due)
			i++
		}
		enqueueAll(b, s, jobs)
		s.c.Unlink(ctx, s.k.ready("acme", "orders"))
		clk.Add(2 * time.Second)
		b.StartTimer()
		c, err := s.ClaimDue(ctx, 0, batch)
		n := c.Moved
		if err != nil {
			b.Fatal(err)
		}
		moved += n
	}
	b.ReportMetric(float64(moved)/float64(b.N), "jobs/op")
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(max(moved, 1)), "ns/job")
}

// BenchmarkStartFinish is a worker's Redis side of one delivery: the start
// script (which returns the whole job) and the finish script of a success.
func BenchmarkStartFinish(b *testing.B) {
	s, clk := newBenchStore(b, Options{})
	ctx := context.Background()
	jobs := make([]kairos.Job, b.N)
	for i := range jobs {
		jobs[i] = benchJob(i, clk.Now()) // due now: ready at once, generation 1
	}
	enqueueAll(b, s, jobs)
	s.c.Unlink(ctx, s.k.ready("acme", "orders"))
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		j, ok, err := s.Start(ctx, Popped{JobKey: jobs[i].JobKey, Gen: "1"}, 10*time.Second)
		if err != nil || !ok {
			b.Fatalf("start: ok=%v err=%v", ok, err)
		}
		a := kairos.Attempt{N: j.Attempts, At: clk.Now(), Duration: time.Millisecond, Status: 204}
		if st, err := s.Finish(ctx, j.JobKey, a, true, false, time.Time{}); err != nil || st != kairos.StateDelivered {
			b.Fatalf("finish: %v %v", st, err)
		}
	}
}
