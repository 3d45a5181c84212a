package api

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/kairos-sh/kairos"
	"github.com/kairos-sh/kairos/internal/rdb"
	"github.com/kairos-sh/kairos/internal/testwait"
)

// waitOperation polls an operation until it is done.
func (e *env) waitOperation(tb testing.TB, authz, id string) operationResponse {
	tb.Helper()
	var op operationResponse
	testwait.UntilNil(tb, 20*time.Second, func() error {
		if op = want[operationResponse](tb, e.do(tb, "GET", "/v1/operations/"+id, authz, nil), http.StatusOK); op.State != "done" {
			return fmt.Errorf("%+v", op)
		}
		return nil
	}, "operation "+id+" done")
	return op
}

// A bulk cancel by label cancels exactly the jobs with the label (and
// state) asked for; a bulk replay by label replays exactly the dead ones;
// another tenant cannot read the operation.
func TestBulkCancelAndReplayByLabel(t *testing.T) {
	t.Parallel()
	e := newEnv(t, Config{})
	acme := e.token(t, "acme", false)
	e.putTopic(t, acme, "orders", obj{"callback_url": hook})
	var batch []obj
	for i := range 1200 {
		l := obj{"customer": "c-" + fmt.Sprint(i%3)}
		batch = append(batch, obj{"id": fmt.Sprintf("j%04d", i), "delay": "1h", "labels": l})
		if len(batch) == 1000 {
			want[batchResponse](t, e.do(t, "POST", "/v1/topics/orders/jobs/batch", acme, obj{"jobs": batch}), http.StatusCreated)
			batch = nil
		}
	}
	want[batchResponse](t, e.do(t, "POST", "/v1/topics/orders/jobs/batch", acme, obj{"jobs": batch}), http.StatusCreated)
	// dead jobs of c-0 and c-1
	for _, id := range []string{"d0", "d1", "d2"} {
		e.createJob(t, acme, "orders", obj{"id": id, "delay": "0s", "max_attempts": 1, "labels": obj{"customer": "c-" + id[1:]}})
		e.deadJob(t, "acme", "orders", id)
	}

	res := want[operationResponse](t, e.do(t, "POST", "/v1/topics/orders/jobs/bulk", acme,
		obj{"action": "cancel", "filter": obj{"labels": obj{"customer": "c-1"}, "state": "scheduled"}}), http.StatusAccepted)
	if res.Operation == "" || res.Operation != res.ID || res.Action != "cancel" {
		t.Fatalf("202 answer %+v", res)
	}
	op := e.waitOperation(t, acme, res.ID)
	if op.Done != 400 || op.Failed != 0 || op.Matched != 400 {
		t.Errorf("cancel: %+v, want 400 matched and done", op)
	}
	counts := map[string]int{}
	for i := range 1200 {
		res := e.do(t, "GET", fmt.Sprintf("/v1/topics/orders/jobs/j%04d", i), acme, nil)
		counts[fmt.Sprintf("c-%d %d", i%3, res.Status)]++
	}
	if counts["c-1 200"] != 400 || counts["c-0 200"] != 400 || counts["c-2 200"] != 400 {
		t.Errorf("after the cancel: %v", counts)
	}
	cancelled := want[listResponse](t, e.do(t, "GET", "/v1/topics/orders/jobs?state=cancelled&label=customer:c-1&limit=500", acme, nil), http.StatusOK)
	if len(cancelled.Jobs) != 400 {
		t.Errorf("after the cancel %d jobs of c-1 listed cancelled, want 400", len(cancelled.Jobs))
	}
	if j := e.getJob(t, acme, "orders", "d1"); j.State != kairos.StateDead {
		t.Errorf("the dead job of c-1 is %s: the state filter said scheduled", j.State)
	}

	// replay: only dead jobs, only c-0
	res = want[operationResponse](t, e.do(t, "POST", "/v1/topics/orders/jobs/bulk", acme,
		obj{"action": "replay", "filter": obj{"labels": obj{"customer": "c-0"}}}), http.StatusAccepted)
	op = e.waitOperation(t, acme, res.ID)
	if op.Done != 1 || op.Failed != 0 || op.Matched != 1 {
		t.Errorf("replay: %+v, want 1 matched and done", op)
	}
	if j := e.getJob(t, acme, "orders", "d0"); j.State != kairos.StateReady {
		t.Errorf("d0 is %s after the replay, want ready", j.State)
	}
	if j := e.getJob(t, acme, "orders", "d2"); j.State != kairos.StateDead {
		t.Errorf("d2 (c-2) is %s, want dead", j.State)
	}

	// a run_at window, no labels: the listing index is walked
	res = want[operationResponse](t, e.do(t, "POST", "/v1/topics/orders/jobs/bulk", acme,
		obj{"action": "cancel", "filter": obj{"run_at_from": ms(t0.Add(time.Hour)), "run_at_to": ms(t0.Add(time.Hour + time.Millisecond))}}), http.StatusAccepted)
	if op = e.waitOperation(t, acme, res.ID); op.Done != 800 {
		t.Errorf("cancel by run_at: %+v, want 800 done", op)
	}

	other := e.token(t, "globex", false)
	wantProblem(t, e.do(t, "GET", "/v1/operations/"+res.ID, other, nil), http.StatusNotFound)
	wantProblem(t, e.do(t, "GET", "/v1/operations/op_nope", acme, nil), http.StatusNotFound)
	admin := e.token(t, "root", true)
	want[operationResponse](t, e.do(t, "GET", "/v1/operations/"+res.ID, admin, nil), http.StatusOK)
}

// Bad bulk requests are refused, naming the field, and store nothing.
func TestBulkValidation(t *testing.T) {
	t.Parallel()
	e := newEnv(t, Config{})
	acme := e.token(t, "acme", false)
	e.putTopic(t, acme, "orders", obj{"callback_url": hook})
	for name, tc := range map[string]struct {
		body   any
		field  string
		status int
		spec   bool
	}{
		"no filter":         {obj{"action": "cancel"}, "filter", 400, true},
		"empty filter":      {obj{"action": "cancel", "filter": obj{}}, "filter", 400, true},
		"empty labels":      {obj{"action": "cancel", "filter": obj{"labels": obj{}}}, "filter", 400, false},
		"no action":         {obj{"filter": obj{"state": "dead"}}, "action", 400, true},
		"bad action":        {obj{"action": "delete", "filter": obj{"state": "dead"}}, "action", 400, true},
		"bad state":         {obj{"action": "cancel", "filter": obj{"state": "gone"}}, "filter.state", 400, true},
		"bad label":         {obj{"action": "cancel", "filter": obj{"labels": obj{"A": "x"}}}, "filter.labels", 400, false},
		"bad time":          {obj{"action": "cancel", "filter": obj{"run_at_from": "yesterday"}}, "filter.run_at_from", 400, true},
		"empty range":       {obj{"action": "cancel", "filter": obj{"run_at_from": ms(t0), "run_at_to": ms(t0)}}, "filter.run_at_to", 400, false},
		"unknown field":     {obj{"action": "cancel", "filter": obj{"state": "dead", "colour": 1}}, "", 400, true},
		"unknown topic":     {obj{"action": "cancel", "filter": obj{"state": "dead"}}, "", 404, false},
		"filter not object": {obj{"action": "cancel", "filter": "dead"}, "", 400, true},
	} {
		t.Run(name, func(t *testing.T) {
			topic := "orders"
			if name == "unknown topic" {
				topic = "nope"
			}
			before := e.snapshot(t)
			var fields []string
			if tc.field != "" {
				fields = []string{tc.field}
			}
			e.refused(t, e.do(t, "POST", "/v1/topics/"+topic+"/jobs/bulk", acme, tc.body), before, tc.status, fields, tc.spec)
		})
	}
	if !strings.Contains(string(e.do(t, "POST", "/v1/topics/orders/jobs/bulk", acme, obj{"action": "cancel", "filter": obj{}}).Body), "at least one") {
		t.Error("an empty filter's error does not say what is needed")
	}
}

// FuzzBulkRequest: the bulk body decoder and its checks never panic; a
// request they take has an action and a filter with a field, reads back
// the same from its canonical form, and is one openapi.yaml accepts.
func FuzzBulkRequest(f *testing.F) {
	for _, b := range []string{
		`{"action":"cancel","filter":{"state":"scheduled"}}`,
		`{"action":"replay","filter":{"labels":{"env":"prod","team":"a"}}}`,
		`{"action":"cancel","filter":{"run_at_from":"2026-11-21T10:00:00Z","run_at_to":"2026-11-21T11:00:00.5+01:00"}}`,
		`{"action":"cancel","filter":{}}`, `{"action":"cancel"}`, `{"filter":{"state":"dead"}}`,
		`{"action":"cancel","filter":{"labels":{"Env":"x"}}}`, `{"action":"cancel","filter":null}`,
		`{"action":"cancel","filter":{"state":"dead","x":1}}`, `[]`, `{"action":1}`,
	} {
		f.Add([]byte(b))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		var req bulkRequest
		if decodeBytes(body, &req) != nil {
			return
		}
		op, err := req.toOperation("acme", "orders")
		if err != nil {
			var ve *ValidationError
			if !errors.As(err, &ve) || len(ve.Errors) == 0 || ve.Errors[0].Field == "" {
				t.Fatalf("refused without a field: %v", err)
			}
			return
		}
		if op.Filter.Empty() || (op.Action != rdb.ActionCancel && op.Action != rdb.ActionReplay) {
			t.Fatalf("took %+v", op)
		}
		fv := operationView(op).Filter
		canon, _ := json.Marshal(obj{"action": op.Action, "filter": fv})
		var req2 bulkRequest
		if err := decodeBytes(canon, &req2); err != nil {
			t.Fatalf("canonical %s: %v", canon, err)
		}
		op2, err := req2.toOperation("acme", "orders")
		if err != nil {
			t.Fatalf("canonical %s: %v", canon, err)
		}
		op2.ID = op.ID
		if d := cmp.Diff(op, op2, cmpopts.EquateEmpty()); d != "" {
			t.Errorf("read back from %s (-first +second):\n%s", canon, d)
		}
		specAccepts(t, "BulkRequest", canon)
	})
}

// TestBulkThirdOperationQueued: a tenant's third operation while two run
// answers 202 with state queued (as openapi.yaml allows) and reads queued.
func TestBulkThirdOperationQueued(t *testing.T) {
	t.Parallel()
	e := newEnvOn(t, Config{}, false) // the runner does not run: the first two stay running
	acme := e.token(t, "acme", false)
	e.putTopic(t, acme, "orders", obj{"callback_url": hook})
	e.createJob(t, acme, "orders", obj{"id": "j", "delay": "1h", "labels": obj{"k": "v"}})
	var states []string
	for range 3 {
		op := want[operationResponse](t, e.do(t, "POST", "/v1/topics/orders/jobs/bulk", acme,
			obj{"action": "cancel", "filter": obj{"labels": obj{"k": "v"}}}), http.StatusAccepted)
		states = append(states, op.State)
		if got := want[operationResponse](t, e.do(t, "GET", "/v1/operations/"+op.ID, acme, nil), http.StatusOK); got.State != op.State {
			t.Errorf("operation %s reads %s, answered %s", op.ID, got.State, op.State)
		}
	}
	if fmt.Sprint(states) != "[running running queued]" {
		t.Errorf("states %v, want running, running, queued", states)
	}
}
