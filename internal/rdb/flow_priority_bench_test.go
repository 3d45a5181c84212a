package rdb

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/kairos-sh/kairos"
)

// BenchmarkGatePermitCost reports the scripts' time (INFO commandstats)
// of flow control under a parallelism limit, a Gate call a job: "free",
// a job of priority 0 that finds a permit free and no job waiting (Gate,
// then Done: what every job of such a flow pays); "refused", a job asked
// about while every permit is taken (what a waiting job pays each time
// its process asks again; it now waits in the flow's waiting set):
//
//	go test -run '^$' -bench GatePermitCost -benchtime 20000x -count 5 ./internal/rdb
func BenchmarkGatePermitCost(b *testing.B) {
	for _, kind := range []string{"free", "refused"} {
		b.Run(kind, func(b *testing.B) {
			s, clk := newBenchStore(b, Options{Shards: 1})
			ctx := context.Background()
			tp := kairos.Topic{Tenant: "acme", Name: "bench", Parallelism: 1}
			holder := kairos.Job{JobKey: kairos.JobKey{Tenant: "acme", Topic: "bench", ID: "holder"}, Attempts: 1, RunAt: clk.Now()}
			if kind == "refused" {
				if _, err := s.Gate(ctx, tp, tp.Flow(), []kairos.Job{holder}, waitOrders([]kairos.Job{holder}), time.Hour); err != nil {
					b.Fatal(err)
				}
			}
			var us float64
			i := 0
			for b.Loop() {
				j := kairos.Job{JobKey: kairos.JobKey{Tenant: "acme", Topic: "bench", ID: fmt.Sprintf("j%d", i%100)}, Attempts: 1, RunAt: clk.Now()}
				i++
				u := scriptUS(b, s)
				rs, err := s.Gate(ctx, tp, tp.Flow(), []kairos.Job{j}, waitOrders([]kairos.Job{j}), time.Hour)
				if err != nil {
					b.Fatal(err)
				}
				us += scriptUS(b, s) - u
				if want := map[string]kairos.Gate{"free": kairos.GateGo, "refused": kairos.GateFull}[kind]; rs[0].Gate != want {
					b.Fatalf("%s: gate %d", kind, rs[0].Gate)
				}
				if kind == "free" {
					if err := s.ReturnPermit(ctx, tp, j); err != nil {
						b.Fatal(err)
					}
				}
			}
			b.ReportMetric(us/float64(b.N), "script-µs/gate")
		})
	}
}

// BenchmarkRateHeldBackCost reports the scripts' time (INFO commandstats)
// of flow control a job pays under a rate limit that keeps it waiting: 100
// jobs due together asked about in one Gate call (one goes, the others
// are told their times; in wait order, as a process asks), then each
// asked about again at its time until it
// goes, as it would be when it comes back from Redis; "plain" jobs all of
// priority 0, "mixed" jobs of priorities 0 to 9. It also reports the asks
// a job took, and the first call's share of the script time.
//
//	go test -run '^$' -bench RateHeldBackCost -benchtime 50x -count 5 ./internal/rdb
func BenchmarkRateHeldBackCost(b *testing.B) {
	for _, kind := range []string{"plain", "mixed"} {
		b.Run(kind, func(b *testing.B) {
			s, clk := newBenchStore(b, Options{Shards: 1})
			ctx := context.Background()
			tp := kairos.Topic{Tenant: "acme", Name: "bench", RateLimit: 1000, RatePeriod: time.Second - RateGuard} // 1 ms apart
			var us, first float64
			jobs, asks, batch := 0, 0, 0
			for b.Loop() {
				batch++
				js := make([]kairos.Job, 100)
				for i := range js {
					p := 0
					if kind == "mixed" {
						p = i * 7 % 10
					}
					js[i] = kairos.Job{JobKey: kairos.JobKey{Tenant: "acme", Topic: "bench", ID: fmt.Sprintf("b%d-%d", batch, i)}, Attempts: 1, RunAt: clk.Now(), Priority: p}
				}
				told := map[int]time.Time{}
				ask := func(idx []int) {
					group := make([]kairos.Job, len(idx))
					for k, i := range idx {
						group[k] = js[i]
					}
					u := scriptUS(b, s)
					rs, err := s.Gate(ctx, tp, tp.Flow(), group, waitOrders(group), time.Hour)
					if err != nil {
						b.Fatal(err)
					}
					us += scriptUS(b, s) - u
					asks += len(idx)
					for k, r := range rs {
						switch r.Gate {
						case kairos.GateGo:
							delete(told, idx[k])
						case kairos.GateWait:
							told[idx[k]] = r.At
						default:
							b.Fatalf("gate %d", r.Gate)
						}
					}
				}
				all := make([]int, len(js))
				for i := range all {
					all[i] = i
				}
				order := waitOrders(js)
				slices.SortStableFunc(all, func(x, y int) int { return order[x].Compare(order[y]) }) // as a process asks
				u0 := us
				ask(all)
				first += us - u0
				for len(told) > 0 {
					next, first := time.Time{}, -1
					for i, at := range told {
						if first < 0 || at.Before(next) || at.Equal(next) && i < first {
							next, first = at, i
						}
					}
					if next.After(clk.Now()) {
						clk.Set(next)
					}
					ask([]int{first})
				}
				jobs += len(js)
				clk.Add(time.Second) // the next batch finds the calendar free
			}
			b.ReportMetric(us/float64(jobs), "script-µs/job")
			b.ReportMetric(first/float64(jobs), "first-µs/job")
			b.ReportMetric(float64(asks)/float64(jobs), "asks/job")
		})
	}
}
