package rdb

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/kairos-sh/kairos"
)

// BenchmarkGatePermitCost reports the scripts' time (INFO commandstats)
// of flow control under a parallelism limit, a Gate call a job: "free",
// a job of priority 0 that finds a permit free and no job waiting (Gate,
// then Done: what every job of such a flow pays); "refused", a job asked
// about while every permit is taken (what a held-back job pays each time
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
				if _, err := s.Gate(ctx, tp, tp.Flow(), []kairos.Job{holder}, heldOrders([]kairos.Job{holder}), time.Hour); err != nil {
					b.Fatal(err)
				}
			}
			var us float64
			i := 0
			for b.Loop() {
				j := kairos.Job{JobKey: kairos.JobKey{Tenant: "acme", Topic: "bench", ID: fmt.Sprintf("j%d", i%100)}, Attempts: 1, RunAt: clk.Now()}
				i++
				u := scriptUS(b, s)
				rs, err := s.Gate(ctx, tp, tp.Flow(), []kairos.Job{j}, heldOrders([]kairos.Job{j}), time.Hour)
				if err != nil {
					b.Fatal(err)
				}
				us += scriptUS(b, s) - u
				if want := map[string]Gate{"free": GateGo, "refused": GateFull}[kind]; rs[0].Gate != want {
					b.Fatalf("%s: gate %d", kind, rs[0].Gate)
				}
				if kind == "free" {
					if err := s.Done(ctx, tp, j); err != nil {
						b.Fatal(err)
					}
				}
			}
			b.ReportMetric(us/float64(b.N), "script-µs/gate")
		})
	}
}
