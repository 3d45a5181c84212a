package rdb

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/kairos-sh/kairos"
)

// BenchmarkPriorityCost reports what a priority adds to a job that flow
// control keeps waiting, against the same job of priority 0: the bytes of its
// record, and the scripts' time (INFO commandstats) for a life in which it
// is kept waiting once: created, claimed, given back to Redis (Release, as a
// worker does with a job whose flow has no permit for it in time),
// claimed again and delivered. Batches of 100 jobs due together; the two
// kinds run alternately in one Redis:
//
//	go test -run '^$' -bench PriorityCost -benchtime 200x -count 5 ./internal/rdb
func BenchmarkPriorityCost(b *testing.B) {
	for _, prio := range []int{0, 5} {
		b.Run(fmt.Sprintf("priority=%d", prio), func(b *testing.B) {
			const batch = 100
			s, clk := newBenchStore(b, Options{Shards: 1})
			ctx := context.Background()
			claim := func(want int) []kairos.Claimed {
				c, err := s.ClaimDue(ctx, 0, 500, 0, 30*time.Second)
				if err != nil {
					b.Fatal(err)
				}
				if len(c.Jobs) != want {
					b.Fatalf("claimed %d jobs, want %d", len(c.Jobs), want)
				}
				return c.Jobs
			}
			jobs := make([]kairos.Job, batch)
			i := 0
			var us, bytes float64
			for b.Loop() {
				due := clk.Now().Add(time.Second)
				for k := range jobs {
					jobs[k] = benchJob(i, due)
					jobs[k].Priority = prio
					i++
				}
				u := scriptUS(b, s)
				enqueueAll(b, s, jobs)
				clk.Add(time.Second)
				cs := claim(batch)
				n, err := s.c.HStrLen(ctx, s.k.pool(0), field(ticketOf(cs[0]).h, cs[0].Job.ID)).Result()
				if err != nil {
					b.Fatal(err)
				}
				bytes += float64(n)
				if err := s.Release(ctx, cs); err != nil {
					b.Fatal(err)
				}
				cs = claim(batch)
				deliverAll(b, s, cs, clk.Now())
				us += scriptUS(b, s) - u
			}
			b.ReportMetric(us/float64(b.N)/batch, "script-µs/job")
			b.ReportMetric(bytes/float64(b.N), "record-B")
		})
	}
}
