package e2e

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/kairos-sh/kairos"
	"github.com/kairos-sh/kairos/internal/rdb"
	"github.com/kairos-sh/kairos/internal/testredis"
	"github.com/kairos-sh/kairos/internal/testwait"
)

// TestBulkCancelFigure measures a bulk cancel of 100,000 pending jobs by
// label: its time to done, and the lateness of another topic's jobs
// firing meanwhile (p50, p99, max), against the same topic's lateness
// before the operation. With KAIROS_BULK_FIGURE_OPS=N the jobs carry N
// labels and N operations, one a label, start at once. It is a
// measurement, not a check: run it with KAIROS_BULK_FIGURE=1
// (docs/performance.md).
func TestBulkCancelFigure(t *testing.T) {
	if os.Getenv("KAIROS_BULK_FIGURE") == "" {
		t.Skip("set KAIROS_BULK_FIGURE=1 to measure")
	}
	prefix := testredis.Prefix(t)
	store := procStore(t, prefix)
	rcv := newReceiver(t, nil)
	putTopic(t, store, "t", rcv.URL, 5*time.Second)
	putTopic(t, store, "other", rcv.URL, 5*time.Second)
	p := startKairos(t, "A", prefix, "KAIROS_ROLES=api,scanner,worker")
	url := p.URL(t)
	p.WaitLog(t, "consuming topic", 15*time.Second)

	const n = 100_000
	ops := 1
	if v := os.Getenv("KAIROS_BULK_FIGURE_OPS"); v != "" {
		if _, err := fmt.Sscan(v, &ops); err != nil || ops < 1 {
			t.Fatalf("KAIROS_BULK_FIGURE_OPS=%q: want a count", v)
		}
	}
	t0 := time.Now()
	for i := range ops {
		labelledJobs(t, store, fmt.Sprintf("doomed%d", i), n/ops)
	}
	t.Logf("created %d jobs under %d labels in %v", n/ops*ops, ops, time.Since(t0))

	// the other topic: a job every 10ms for 40s, from 2s on
	const every, span = 10 * time.Millisecond, 40 * time.Second
	first := store.Now().Add(2 * time.Second)
	var others []kairos.Job
	for i := range int(span / every) {
		others = append(others, kairos.Job{JobKey: kairos.JobKey{Tenant: "acme", Topic: "other", ID: fmt.Sprintf("o-%05d", i)},
			RunAt: first.Add(time.Duration(i) * every)})
	}
	for from := 0; from < len(others); from += 1000 {
		for _, r := range store.EnqueueBatch(context.Background(), others[from:min(len(others), from+1000)]) {
			if r.Err != nil {
				t.Fatal(r.Err)
			}
		}
	}
	time.Sleep(time.Until(first.Add(5 * time.Second))) // the point: 5s of a baseline
	started := make([]operationAnswer, ops)
	start := time.Now()
	for i := range started {
		if st := apiCall(t, "POST", url+"/v1/topics/t/jobs/bulk", map[string]any{"action": "cancel",
			"filter": map[string]any{"labels": map[string]string{"batch": fmt.Sprintf("doomed%d", i)}}}, &started[i]); st != http.StatusAccepted {
			t.Fatalf("bulk: %d", st)
		}
	}
	var op operationAnswer
	for _, op = range started {
		testwait.UntilNil(t, 5*time.Minute, func() error {
			if apiCall(t, "GET", url+"/v1/operations/"+op.ID, nil, &op); op.State != rdb.OpDone {
				return fmt.Errorf("%+v", op)
			}
			return nil
		}, "operation "+op.ID+" done")
	}
	took := time.Since(start)
	end := time.Now()
	testwait.UntilNil(t, time.Until(first.Add(span))+30*time.Second, func() error {
		n := 0
		for _, h := range rcv.all() {
			if h.Header.Get("Kairos-Topic") == "other" {
				n++
			}
		}
		if n < len(others) {
			return fmt.Errorf("%d of %d", n, len(others))
		}
		return nil
	}, "the other topic's jobs delivered")

	var during, before []time.Duration
	for _, h := range rcv.all() {
		if h.Header.Get("Kairos-Topic") != "other" {
			continue
		}
		at, err := time.Parse(time.RFC3339Nano, h.Header.Get("Kairos-Scheduled-At"))
		if err != nil {
			t.Fatal(err)
		}
		late := h.At.Sub(at)
		switch {
		case at.After(start) && at.Before(end):
			during = append(during, late)
		case at.Before(start.Add(-500 * time.Millisecond)):
			before = append(before, late)
		}
	}
	t.Logf("bulk cancel of %d jobs by label in %d operations: done in %v (the last: %+v)", n/ops*ops, ops, took.Round(time.Millisecond), op)
	t.Logf("other topic's lateness before the operation: %s", quantiles(before))
	t.Logf("other topic's lateness during the operation: %s", quantiles(during))
}

// quantiles formats the count, p50, p99 and max of ds.
func quantiles(ds []time.Duration) string {
	if len(ds) == 0 {
		return "no samples"
	}
	slices.Sort(ds)
	q := func(f float64) time.Duration {
		return ds[min(len(ds)-1, int(f*float64(len(ds))))].Round(10 * time.Microsecond)
	}
	return fmt.Sprintf("n=%d p50=%v p99=%v max=%v", len(ds), q(0.5), q(0.99), ds[len(ds)-1].Round(10*time.Microsecond))
}
