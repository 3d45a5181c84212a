package api

import (
	"context"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kairos-sh/kairos"
	"github.com/kairos-sh/kairos/internal/rdb"
)

// TestCreateDedupRace: 50 racing creates of one dedup_key (and no id)
// make one job: one 201, and 49 answers 200 "duplicate" naming it. After
// the window the key creates a new job.
func TestCreateDedupRace(t *testing.T) {
	t.Parallel()
	e := newEnv(t, Config{})
	acme := e.token(t, "acme", false)
	e.putTopic(t, acme, "orders", obj{"callback_url": hook})
	const racers = 50
	res := make([]result, racers)
	var wg sync.WaitGroup
	for i := range racers {
		wg.Go(func() {
			res[i] = e.do(t, "POST", "/v1/topics/orders/jobs", acme, obj{"dedup_key": "charge-8412", "delay": "1h", "payload": obj{"n": i}})
		})
	}
	wg.Wait()
	statuses := map[int]int{}
	ids := map[string]bool{}
	for _, r := range res {
		statuses[r.Status]++
		j := want[jobResponse](t, r, r.Status)
		ids[j.ID] = true
		if (r.Status == http.StatusOK) != (j.Result == "duplicate") {
			t.Errorf("status %d with result %q", r.Status, j.Result)
		}
	}
	if statuses[http.StatusCreated] != 1 || statuses[http.StatusOK] != racers-1 || len(ids) != 1 {
		t.Fatalf("statuses %v, ids %v: want one 201, %d 200s, one id", statuses, ids, racers-1)
	}
	e.clock.Add(kairos.DefaultDedupWindow)
	if j := e.createJob(t, acme, "orders", obj{"dedup_key": "charge-8412", "delay": "1h"}); ids[j.ID] {
		t.Errorf("after the window: the first job's id %s again", j.ID)
	}
}

// TestCreateDedupOutlivesTheJob: a duplicate answers the first job after
// it was delivered; once its record is gone (cancelled here) it answers
// what it still knows: id, topic, tenant and result.
func TestCreateDedupOutlivesTheJob(t *testing.T) {
	t.Parallel()
	e := newEnv(t, Config{})
	acme := e.token(t, "acme", false)
	e.putTopic(t, acme, "orders", obj{"callback_url": hook})
	first := e.createJob(t, acme, "orders", obj{"dedup_key": "a", "dedup_window": "1h"})
	e.deliveredJob(t, "acme", "orders", first.ID)
	e.clock.Add(59 * time.Minute)
	dup := want[jobResponse](t, e.do(t, "POST", "/v1/topics/orders/jobs", acme, obj{"dedup_key": "a", "dedup_window": "1h"}), http.StatusOK)
	if dup.ID != first.ID || dup.Result != "duplicate" || dup.State != kairos.StateDelivered {
		t.Errorf("after delivery: %s %s %s, want a duplicate of the delivered %s", dup.ID, dup.Result, dup.State, first.ID)
	}

	second := e.createJob(t, acme, "orders", obj{"dedup_key": "b", "dedup_window": "7d", "delay": "1h"})
	if res := e.do(t, "DELETE", "/v1/topics/orders/jobs/"+second.ID, acme, nil); res.Status != http.StatusNoContent {
		t.Fatalf("cancel: %d", res.Status)
	}
	dup = want[jobResponse](t, e.do(t, "POST", "/v1/topics/orders/jobs", acme, obj{"dedup_key": "b"}), http.StatusOK)
	if dup.ID != second.ID || dup.Result != "duplicate" || dup.State != kairos.StateCancelled {
		t.Errorf("after a cancel: %s %s %s, want a duplicate of the cancelled %s", dup.ID, dup.Result, dup.State, second.ID)
	}
	// past the retention the cancelled record is gone, once a claim has
	// processed its expiry; the key's window is not
	e.clock.Add(rdb.DefaultRetention + time.Hour)
	for range 5 {
		for sh := range e.store.Shards() {
			if _, err := e.store.ClaimDue(context.Background(), sh, 500, 0, time.Second); err != nil {
				t.Fatal(err)
			}
		}
	}
	acme = e.token(t, "acme", false) // the first expired meanwhile
	wantProblem(t, e.do(t, "GET", "/v1/topics/orders/jobs/"+second.ID, acme, nil), http.StatusNotFound)
	res := e.do(t, "POST", "/v1/topics/orders/jobs", acme, obj{"dedup_key": "b"})
	if got := strings.TrimSpace(string(res.Body)); res.Status != http.StatusOK ||
		got != `{"id":"`+second.ID+`","topic":"orders","tenant":"acme","result":"duplicate"}` {
		t.Errorf("record gone: %d %s", res.Status, got)
	}
}

// TestCreateOnConflict: keep leaves a job that has not fired as it is;
// debounce moves it, never past its first create + max_delay.
func TestCreateOnConflict(t *testing.T) {
	t.Parallel()
	e := newEnv(t, Config{})
	acme := e.token(t, "acme", false)
	e.putTopic(t, acme, "orders", obj{"callback_url": hook})
	t0 := e.clock.Now()
	first := e.createJob(t, acme, "orders", obj{"id": "o1", "delay": "1h", "payload": obj{"v": 1}})
	kept := want[jobResponse](t, e.do(t, "POST", "/v1/topics/orders/jobs", acme, obj{"id": "o1", "delay": "2h", "payload": obj{"v": 2}, "on_conflict": "keep"}), http.StatusOK)
	if kept.Result != "kept" || kept.RunAt != first.RunAt || string(kept.Payload) != `{"v":1}` {
		t.Errorf("keep: %s run_at %s payload %s, want kept and the first's", kept.Result, kept.RunAt, kept.Payload)
	}
	e.clock.Add(10 * time.Minute)
	deb := want[jobResponse](t, e.do(t, "POST", "/v1/topics/orders/jobs", acme, obj{"id": "o1", "delay": "10m", "payload": obj{"v": 3}, "on_conflict": "debounce", "max_delay": "15m"}), http.StatusOK)
	if deb.Result != "debounced" || deb.RunAt != ms(t0.Add(15*time.Minute)) || deb.CreatedAt != first.CreatedAt {
		t.Errorf("debounce: %s run_at %s created %s, want debounced at t0+15m", deb.Result, deb.RunAt, deb.CreatedAt)
	}
	if got := e.getJob(t, acme, "orders", "o1"); got.RunAt != ms(t0.Add(15*time.Minute)) || string(got.Payload) != `{"v":3}` {
		t.Errorf("stored: run_at %s payload %s", got.RunAt, got.Payload)
	}
}

// TestCreateOptionsRefused: each contradictory or out-of-range option is
// a 400 naming its field.
func TestCreateOptionsRefused(t *testing.T) {
	t.Parallel()
	e := newEnv(t, Config{})
	acme := e.token(t, "acme", false)
	e.putTopic(t, acme, "orders", obj{"callback_url": hook})
	for _, tt := range []struct {
		name  string
		body  obj
		field string
	}{
		{"window without key", obj{"dedup_window": "1h"}, "dedup_window"},
		{"window over 7d", obj{"dedup_key": "k", "dedup_window": "8d"}, "dedup_window"},
		{"window under 1s", obj{"dedup_key": "k", "dedup_window": "10ms"}, "dedup_window"},
		{"empty key", obj{"dedup_key": ""}, "dedup_key"},
		{"long key", obj{"dedup_key": strings.Repeat("k", 201)}, "dedup_key"},
		{"key with a control character", obj{"dedup_key": "a\nb"}, "dedup_key"},
		{"key with an id", obj{"dedup_key": "k", "id": "o1"}, "dedup_key"},
		{"key with on_conflict", obj{"dedup_key": "k", "on_conflict": "keep"}, "on_conflict"},
		{"unknown on_conflict", obj{"id": "o1", "on_conflict": "skip"}, "on_conflict"},
		{"debounce without max_delay", obj{"id": "o1", "on_conflict": "debounce"}, "max_delay"},
		{"max_delay without debounce", obj{"id": "o1", "max_delay": "1m"}, "max_delay"},
		{"max_delay with keep", obj{"id": "o1", "on_conflict": "keep", "max_delay": "1m"}, "max_delay"},
		{"max_delay over 30d", obj{"id": "o1", "on_conflict": "debounce", "max_delay": "31d"}, "max_delay"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			p := wantProblem(t, e.do(t, "POST", "/v1/topics/orders/jobs", acme, tt.body), http.StatusBadRequest)
			wantFields(t, p, tt.field)
			if len(p.Errors) == 1 && p.Errors[0].Message == "" {
				t.Errorf("no message: %+v", p)
			}
		})
	}
}

// TestBatchDedupAndConflict: batch items take the same options; two items
// with one dedup key are a create and its duplicate.
func TestBatchDedupAndConflict(t *testing.T) {
	t.Parallel()
	e := newEnv(t, Config{})
	acme := e.token(t, "acme", false)
	e.putTopic(t, acme, "orders", obj{"callback_url": hook})
	e.createJob(t, acme, "orders", obj{"id": "o1", "delay": "1h"})
	got := want[batchResponse](t, e.do(t, "POST", "/v1/topics/orders/jobs/batch", acme, obj{"jobs": []obj{
		{"dedup_key": "a"}, {"dedup_key": "a"}, {"id": "o1", "on_conflict": "keep", "delay": "2h"},
		{"id": "o1x", "on_conflict": "debounce", "max_delay": "1m"}, {"dedup_window": "1h"},
	}}), http.StatusMultiStatus)
	var results []string
	for _, it := range got.Results {
		r := ""
		if it.Job != nil {
			r = it.Job.Result
		}
		results = append(results, r)
	}
	if strings.Join(results, ",") != "created,duplicate,kept,created," || got.Created != 2 || got.Replaced != 2 || got.Kept != 1 || got.Duplicate != 1 || got.Failed != 1 {
		t.Errorf("results %v, counts %+v", results, got)
	}
	if got.Results[1].Job.ID != got.Results[0].Job.ID {
		t.Errorf("duplicate names %s, want %s", got.Results[1].Job.ID, got.Results[0].Job.ID)
	}
	wantFields(t, *got.Results[4].Error, "jobs[4].dedup_window")
}
