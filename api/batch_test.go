package api

import (
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/kairos-sh/kairos"
)

// itemOutcome is one batch result's status and its error's field names.
type itemOutcome struct {
	Status int
	Fields []string
}

// outcomes returns the outcome of every result of a batch.
func outcomes(r batchResponse) []itemOutcome {
	out := make([]itemOutcome, len(r.Results))
	for i, it := range r.Results {
		out[i].Status = it.Status
		if it.Error != nil {
			out[i].Fields = fields(*it.Error)
		}
	}
	return out
}

func TestBatchMixed(t *testing.T) {
	t.Parallel()
	e := newEnv(t, Config{})
	acme := e.token(t, "acme", false)
	e.putTopic(t, acme, "orders", obj{"callback_url": hook})

	big := json.RawMessage(`"` + strings.Repeat("x", DefaultMaxPayload) + `"`)
	body := obj{"jobs": []any{
		obj{"id": "a", "delay": "1h", "payload": obj{"n": 1}}, // 0 ok
		obj{"id": "b", "delay": "soon"},                       // 1 bad delay
		obj{"id": "c", "run_at": ms(t0), "delay": "1m"},       // 2 both
		"not a job", // 3 not an object
		obj{"id": "d", "delay": "1m", "colour": "red"},                   // 4 unknown field
		obj{"id": "a", "delay": "2h"},                                    // 5 duplicate of 0
		obj{"delay": "0s"},                                               // 6 ok, generated id, ready
		obj{"id": "e", "delay": "1m", "payload": big},                    // 7 payload too large
		obj{"id": "f", "delay": "1m", "headers": obj{"webhook-id": "x"}}, // 8 reserved header
		obj{"id": "a", "delay": "3h"},                                    // 9 duplicate of 0 again
		obj{"id": "g", "run_at": ms(t0.Add(maxFuture * 2))},              // 10 too far ahead
	}}
	res := e.do(t, "POST", "/v1/topics/orders/jobs/batch", acme, body, specLenient())
	got := want[batchResponse](t, res, http.StatusMultiStatus)
	wantOut := []itemOutcome{
		{201, nil},
		{400, []string{"jobs[1].delay"}},
		{400, []string{"jobs[2].run_at"}},
		{400, []string{"jobs[3]"}},
		{400, []string{"jobs[4].colour"}},
		{400, []string{"jobs[5].id"}},
		{201, nil},
		{413, []string{"jobs[7].payload"}},
		{400, []string{"jobs[8].headers.webhook-id"}},
		{400, []string{"jobs[9].id"}},
		{400, []string{"jobs[10].run_at"}},
	}
	if d := cmp.Diff(wantOut, outcomes(got)); d != "" {
		t.Errorf("outcomes (-want +got):\n%s", d)
	}
	if got.Created != 2 || got.Failed != 9 {
		t.Errorf("created %d failed %d, want 2 and 9", got.Created, got.Failed)
	}
	for i, it := range got.Results {
		if it.Index != i {
			t.Errorf("results[%d].index = %d", i, it.Index)
		}
	}
	// A duplicate names the item that holds the id, not another duplicate.
	for _, i := range []int{5, 9} {
		if e := got.Results[i].Error; e == nil || !strings.Contains(e.Errors[0].Message, "jobs[0]") {
			t.Errorf("results[%d].error = %+v, want it to name jobs[0]", i, e)
		}
	}
	if j := got.Results[0].Job; j == nil || j.ID != "a" || j.State != kairos.StateScheduled || j.Payload != nil {
		t.Errorf("results[0].job = %+v", j)
	}
	if j := got.Results[6].Job; j == nil || j.State != kairos.StateReady {
		t.Errorf("results[6].job = %+v", j)
	}
	// The created job is the first "a", not a duplicate.
	if j := e.getJob(t, acme, "orders", "a"); j.RunAt != ms(t0.Add(3600e9)) || string(j.Payload) != `{"n":1}` {
		t.Errorf("job a: %+v", j)
	}
	for _, id := range []string{"b", "c", "d", "e", "f", "g"} {
		wantProblem(t, e.do(t, "GET", "/v1/topics/orders/jobs/"+id, acme, nil), http.StatusNotFound)
	}
	wantCounts(t, e, "acme", map[kairos.State]int64{kairos.StateScheduled: 1, kairos.StateReady: 1})
}

func TestBatchAllValid(t *testing.T) {
	t.Parallel()
	e := newEnv(t, Config{})
	acme := e.token(t, "acme", false)
	// The topic is not registered: jobs with their own URL register it.
	jobs := make([]any, 1000)
	for i := range jobs {
		jobs[i] = obj{"delay": "1h", "callback_url": hook, "payload": i}
	}
	got := want[batchResponse](t, e.do(t, "POST", "/v1/topics/reminders/jobs/batch", acme, obj{"jobs": jobs}), http.StatusCreated)
	if got.Created != 1000 || got.Failed != 0 || len(got.Results) != 1000 {
		t.Fatalf("created %d failed %d results %d", got.Created, got.Failed, len(got.Results))
	}
	seen := map[string]bool{}
	for i, it := range got.Results {
		if it.Status != http.StatusCreated || it.Job == nil || it.Error != nil || seen[it.Job.ID] {
			t.Fatalf("results[%d] = %+v", i, it)
		}
		seen[it.Job.ID] = true
	}
	want[topicResponse](t, e.do(t, "GET", "/v1/topics/reminders", acme, nil), http.StatusOK)
	list := want[listResponse](t, e.do(t, "GET", "/v1/topics/reminders/jobs?limit=500", acme, nil), http.StatusOK)
	if len(list.Jobs) != 500 || list.NextCursor == "" {
		t.Errorf("listed %d jobs, next %q", len(list.Jobs), list.NextCursor)
	}
}

// TestBatchValidation covers the refusals of a whole batch, and a batch
// whose every item fails: nothing is written.
func TestBatchValidation(t *testing.T) {
	t.Parallel()
	e := newEnv(t, Config{MaxPayload: 1})
	acme := e.token(t, "acme", false)
	e.putTopic(t, acme, "orders", obj{"callback_url": hook})
	e.createJob(t, acme, "orders", obj{"id": "o1", "delay": "1h"})

	many := make([]any, 1001)
	for i := range many {
		many[i] = obj{"delay": "1m"}
	}
	tests := []struct {
		name   string
		topic  string
		body   any
		opts   []reqOption
		status int
		fields []string
		spec   bool
	}{
		{"1001 jobs", "orders", obj{"jobs": many}, nil, 400, []string{"jobs"}, true},
		{"no jobs", "orders", obj{"jobs": []any{}}, nil, 400, []string{"jobs"}, true},
		{"jobs missing", "orders", obj{}, nil, 400, []string{"jobs"}, true},
		{"jobs null", "orders", obj{"jobs": nil}, nil, 400, []string{"jobs"}, true},
		{"jobs not an array", "orders", obj{"jobs": obj{}}, nil, 400, []string{"jobs"}, true},
		{"unknown field", "orders", obj{"jobs": []any{obj{"delay": "1m"}}, "atomic": true}, nil, 400, []string{"atomic"}, true},
		{"malformed", "orders", `{"jobs": [`, nil, 400, []string{"body"}, true},
		{"content type", "orders", `{"jobs": []}`, []reqOption{contentType("text/csv")}, 415, nil, true},
		{"body too large", "orders", `{"jobs": ["` + strings.Repeat("x", 1000*(1+4<<10)) + `"]}`, nil, 413, []string{"body"}, false},
		{"topic name", "or!ders", obj{"jobs": []any{obj{"delay": "1m"}}}, nil, 404, nil, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			before := e.snapshot(t)
			res := e.do(t, "POST", "/v1/topics/"+tc.topic+"/jobs/batch", acme, tc.body, tc.opts...)
			e.refused(t, res, before, tc.status, tc.fields, tc.spec)
		})
	}

	t.Run("every item fails", func(t *testing.T) {
		before := e.snapshot(t)
		body := obj{"jobs": []any{obj{"delay": "x"}, obj{"delay": "1m", "payload": "too big"}, obj{"delay": "1m", "max_attempts": 0}}}
		got := wantBatchFailed(t, e.do(t, "POST", "/v1/topics/orders/jobs/batch", acme, body, specLenient()), http.StatusBadRequest)
		wantOut := []itemOutcome{{400, []string{"jobs[0].delay"}}, {413, []string{"jobs[1].payload"}}, {400, []string{"jobs[2].max_attempts"}}}
		if d := cmp.Diff(wantOut, outcomes(got)); d != "" || got.Created != 0 || got.Failed != 3 {
			t.Errorf("created %d failed %d; outcomes (-want +got):\n%s", got.Created, got.Failed, d)
		}
		e.unchanged(t, before)
	})

	t.Run("unregistered topic without URLs", func(t *testing.T) {
		before := e.snapshot(t)
		body := obj{"jobs": []any{obj{"delay": "1m"}, obj{"delay": "1m"}}}
		got := wantBatchFailed(t, e.do(t, "POST", "/v1/topics/invoices/jobs/batch", acme, body), http.StatusBadRequest)
		wantOut := []itemOutcome{{400, []string{"jobs[0].callback_url"}}, {400, []string{"jobs[1].callback_url"}}}
		if d := cmp.Diff(wantOut, outcomes(got)); d != "" {
			t.Errorf("outcomes (-want +got):\n%s", d)
		}
		if msg := got.Results[0].Error.Errors[0].Message; !strings.Contains(msg, "PUT /v1/topics/invoices") {
			t.Errorf("message %q does not say how to register the topic", msg)
		}
		e.unchanged(t, before)
	})
}

// TestBatchReplaced: an item whose job replaced one of its id that had not
// fired has status 200 and result "replaced", and is counted apart; a
// batch that only replaced answers 200.
func TestBatchReplaced(t *testing.T) {
	t.Parallel()
	e := newEnv(t, Config{})
	acme := e.token(t, "acme", false)
	e.putTopic(t, acme, "orders", obj{"callback_url": hook})
	e.createJob(t, acme, "orders", obj{"id": "a", "delay": "1h"})

	results := func(r batchResponse) (out []string) {
		for _, it := range r.Results {
			res := ""
			if it.Job != nil {
				res = it.Job.Result
			}
			out = append(out, strconv.Itoa(it.Status)+" "+res)
		}
		return out
	}
	body := obj{"jobs": []any{obj{"id": "a", "delay": "2h"}, obj{"id": "b", "delay": "2h"}}}
	got := want[batchResponse](t, e.do(t, "POST", "/v1/topics/orders/jobs/batch", acme, body), http.StatusCreated)
	if d := cmp.Diff([]string{"200 replaced", "201 created"}, results(got)); d != "" || got.Created != 1 || got.Replaced != 1 || got.Failed != 0 {
		t.Errorf("created %d replaced %d failed %d; results (-want +got):\n%s", got.Created, got.Replaced, got.Failed, d)
	}
	got = want[batchResponse](t, e.do(t, "POST", "/v1/topics/orders/jobs/batch", acme, body), http.StatusOK)
	if d := cmp.Diff([]string{"200 replaced", "200 replaced"}, results(got)); d != "" || got.Created != 0 || got.Replaced != 2 || got.Failed != 0 {
		t.Errorf("sent again: created %d replaced %d failed %d; results (-want +got):\n%s", got.Created, got.Replaced, got.Failed, d)
	}
	body = obj{"jobs": []any{obj{"id": "a", "delay": "3h"}, obj{"id": "c", "delay": "soon"}}}
	got = want[batchResponse](t, e.do(t, "POST", "/v1/topics/orders/jobs/batch", acme, body, specLenient()), http.StatusMultiStatus)
	if d := cmp.Diff([]string{"200 replaced", "400 "}, results(got)); d != "" || got.Replaced != 1 || got.Failed != 1 {
		t.Errorf("with a failure: replaced %d failed %d; results (-want +got):\n%s", got.Replaced, got.Failed, d)
	}
	wantCounts(t, e, "acme", map[kairos.State]int64{kairos.StateScheduled: 2})
}

// wantBatchFailed checks the answer to a batch whose every item failed: a
// problem+json of type batch-failed and the given status that carries the
// results. It returns the results.
func wantBatchFailed(tb testing.TB, res result, status int) batchResponse {
	tb.Helper()
	p := wantProblem(tb, res, status)
	if p.Type != problemBase+"batch-failed" || !strings.Contains(p.Detail, "none of the") {
		tb.Errorf("problem %+v, want type batch-failed saying none was stored", p)
	}
	got := want[batchResponse](tb, res, status)
	if got.Failed != len(got.Results) || got.Created+got.Replaced != 0 {
		tb.Errorf("counts: created %d replaced %d failed %d of %d", got.Created, got.Replaced, got.Failed, len(got.Results))
	}
	return got
}

// TestBatchAllFailedStatus: the status of a batch whose every item failed
// is the items' when they share one, else 400 for client faults.
func TestBatchAllFailedStatus(t *testing.T) {
	t.Parallel()
	e := newEnv(t, Config{})
	acme := e.token(t, "acme", false)
	e.putTopic(t, acme, "orders", obj{"callback_url": hook})
	before := e.snapshot(t)
	got := wantBatchFailed(t, e.do(t, "POST", "/v1/topics/orders/jobs/batch", acme, obj{"jobs": []any{obj{"delay": "x"}, obj{"run_at": "soon"}}}), http.StatusBadRequest)
	if got.Results[1].Error == nil || got.Results[1].Error.Errors[0].Field != "jobs[1].run_at" {
		t.Errorf("results[1] %+v", got.Results[1])
	}
	e.unchanged(t, before)
}
