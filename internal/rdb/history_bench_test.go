package rdb

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/kairos-sh/kairos"
)

// BenchmarkOutcomeResponse is what keeping a receiver's answer costs a
// delivered job: batches of 100 bench-shaped jobs are created, claimed
// and delivered, the receiver answering an empty body with no header
// ("empty", what every delivery cost before answers were kept) or 256
// bytes of JSON with its Content-Type ("256B", the default response_bytes
// filled). It reports the outcome script's Redis time per job (INFO
// commandstats FCALL usec), Redis's memory growth per delivered job
// across the outcome calls (INFO used_memory), and the delivered record's
// length (HSTRLEN). Compare the two in alternated runs:
//
//	go test -run '^$' -bench OutcomeResponse -benchtime 300x -count 5 ./internal/rdb
func BenchmarkOutcomeResponse(b *testing.B) {
	body := `{"id":"inv_0123456789","status":"accepted","lines":[` + strings.Repeat(`{"sku":"A-1","n":1},`, 10)
	body = body + strings.Repeat("x", 256-len(body)-2) + `]}`
	for _, tc := range []struct {
		name     string
		response string
		headers  map[string]string
	}{
		{"empty", "", nil},
		{"256B", body, map[string]string{"Content-Type": "application/json"}},
	} {
		if len(tc.response) != 0 && len(tc.response) != kairos.DefaultResponseBytes {
			b.Fatalf("response of %d bytes", len(tc.response))
		}
		b.Run(tc.name, func(b *testing.B) {
			const batch = 100
			s, clk := newBenchStore(b, Options{Shards: 1})
			ctx := context.Background()
			jobs := make([]kairos.Job, batch)
			var us, mem, rec float64
			i := 0
			for b.Loop() {
				due := clk.Now().Add(time.Second)
				for k := range jobs {
					jobs[k] = benchJob(i, due)
					i++
				}
				enqueueAll(b, s, jobs)
				clk.Add(time.Second)
				c, err := s.ClaimDue(ctx, 0, 500, 0, 30*time.Second)
				if err != nil || len(c.Jobs) != batch {
					b.Fatalf("claimed %d jobs, %v", len(c.Jobs), err)
				}
				m0, us0 := usedMemory(b, s), scriptUS(b, s)
				finishAll(b, s, c.Jobs, kairos.Attempt{At: clk.Now(), Duration: time.Millisecond, Status: 200,
					Response: tc.response, ResponseHeaders: tc.headers})
				us += scriptUS(b, s) - us0
				mem += float64(usedMemory(b, s) - m0)
				at, err := s.locate(ctx, c.Jobs[0].Job.JobKey)
				if err != nil {
					b.Fatal(err)
				}
				n, err := s.c.HStrLen(ctx, s.k.pool(at.shard), field(at.h, c.Jobs[0].Job.ID)).Result()
				if err != nil {
					b.Fatal(err)
				}
				rec += float64(n)
			}
			n := float64(b.N)
			b.ReportMetric(us/n/batch, "outcome-µs/job")
			b.ReportMetric(mem/n/batch, "mem-B/job")
			b.ReportMetric(rec/n, "record-B")
		})
	}
}

// finishAll records attempt a (its N each job's) as a delivery of each
// claimed job at once, as workers do.
func finishAll(b *testing.B, s *Store, cs []kairos.Claimed, a kairos.Attempt) {
	b.Helper()
	errs := make(chan error, len(cs))
	for _, cl := range cs {
		go func() {
			a := a
			a.N = cl.Job.Attempts
			_, err := s.Finish(context.Background(), cl.Job.JobKey, a, kairos.OutcomeDelivered, time.Time{})
			errs <- err
		}()
	}
	for range cs {
		if err := <-errs; err != nil {
			b.Fatal(err)
		}
	}
}

// usedMemory is Redis's INFO used_memory.
func usedMemory(b *testing.B, s *Store) int64 {
	b.Helper()
	for l := range strings.SplitSeq(s.c.Info(context.Background(), "memory").Val(), "\r\n") {
		if v, ok := strings.CutPrefix(l, "used_memory:"); ok {
			n, _ := strconv.ParseInt(v, 10, 64)
			return n
		}
	}
	b.Fatal("no used_memory in INFO")
	return 0
}
