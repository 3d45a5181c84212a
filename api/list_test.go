package api

import (
	"fmt"
	"net/http"
	"net/url"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/kairos-sh/kairos"
)

// TestListJobs pages through a topic newest first and filters by state.
func TestListJobs(t *testing.T) {
	t.Parallel()
	e := newEnv(t, Config{})
	acme := e.token(t, "acme", false)
	e.putTopic(t, acme, "orders", obj{"callback_url": hook})
	e.putTopic(t, acme, "other", obj{"callback_url": hook})

	// Seven jobs created a second apart; every third is due now (ready).
	var newestFirst, ready []string
	for i := range 7 {
		id := fmt.Sprintf("o%d", i)
		delay := "1h"
		if i%3 == 0 {
			delay = "0s"
			ready = append([]string{id}, ready...)
		}
		e.createJob(t, acme, "orders", obj{"id": id, "delay": delay, "payload": obj{"i": i}})
		newestFirst = append([]string{id}, newestFirst...)
		e.clock.Add(time.Second)
	}
	e.createJob(t, acme, "other", obj{"id": "x", "delay": "1h"})

	page := func(query string) listResponse {
		t.Helper()
		return want[listResponse](t, e.do(t, "GET", "/v1/topics/orders/jobs"+query, acme, nil), http.StatusOK)
	}
	ids := func(l listResponse) []string {
		var out []string
		for _, j := range l.Jobs {
			out = append(out, j.ID)
			if j.Payload != nil {
				t.Errorf("listed job %s carries its payload", j.ID)
			}
		}
		return out
	}

	all := page("")
	if d := cmp.Diff(newestFirst, ids(all)); d != "" || all.NextCursor != "" {
		t.Errorf("one page (-want +got):\n%s\nnext_cursor %q", d, all.NextCursor)
	}

	var got []string
	pages := 0
	for cursor := ""; ; pages++ {
		q := "?limit=3"
		if cursor != "" {
			q += "&cursor=" + url.QueryEscape(cursor)
		}
		p := page(q)
		if len(p.Jobs) > 3 {
			t.Fatalf("page of %d jobs with limit 3", len(p.Jobs))
		}
		got = append(got, ids(p)...)
		if p.NextCursor == "" {
			break
		}
		if pages > 5 {
			t.Fatal("paging does not end")
		}
		cursor = p.NextCursor
	}
	if d := cmp.Diff(newestFirst, got); d != "" || pages != 2 {
		t.Errorf("paged by 3 over %d extra pages (-want +got):\n%s", pages, d)
	}

	got = nil
	for cursor := ""; ; {
		q := "?state=ready&limit=1"
		if cursor != "" {
			q += "&cursor=" + url.QueryEscape(cursor)
		}
		p := page(q)
		for _, j := range p.Jobs {
			if j.State != kairos.StateReady {
				t.Errorf("state filter ready listed %s in state %s", j.ID, j.State)
			}
		}
		got = append(got, ids(p)...)
		if p.NextCursor == "" {
			break
		}
		cursor = p.NextCursor
	}
	if d := cmp.Diff(ready, got); d != "" {
		t.Errorf("ready jobs (-want +got):\n%s", d)
	}
	if l := page("?state=dead"); len(l.Jobs) != 0 {
		t.Errorf("dead jobs: %v", ids(l))
	}
	if l := page("?state=delivered&limit=500"); len(l.Jobs) != 0 {
		t.Errorf("delivered jobs: %v", ids(l))
	}
}

// queryRefusal is a listing query the server refuses: its status and the
// fields it names, and whether the spec refuses it too.
type queryRefusal struct {
	name   string
	query  string
	status int
	fields []string
	spec   bool
}

// pagingRefusals are the refusals every paged listing shares.
var pagingRefusals = []queryRefusal{
	{"limit 0", "limit=0", 400, []string{"limit"}, true},
	{"limit 501", "limit=501", 400, []string{"limit"}, true},
	{"limit word", "limit=ten", 400, []string{"limit"}, true},
	{"limit fraction", "limit=2.5", 400, []string{"limit"}, true},
	{"cursor not base64", "cursor=%21%21%21", 400, []string{"cursor"}, true},
	{"cursor not ours", "cursor=aGVsbG8", 400, []string{"cursor"}, false},
	{"tenant param by non-admin", "tenant=other", 403, nil, false},
}

// checkRefusals sends GET path?query for each case: each is refused as it
// says, and nothing changes.
func (e *env) checkRefusals(t *testing.T, path, authz string, cases []queryRefusal) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			before := e.snapshot(t)
			res := e.do(t, "GET", path+"?"+tc.query, authz, nil)
			e.refused(t, res, before, tc.status, tc.fields, tc.spec)
		})
	}
}

// TestListJobsValidation checks every query rule, and that nothing changes.
func TestListJobsValidation(t *testing.T) {
	t.Parallel()
	e := newEnv(t, Config{})
	acme := e.token(t, "acme", false)
	e.putTopic(t, acme, "orders", obj{"callback_url": hook})
	e.createJob(t, acme, "orders", obj{"id": "o1", "delay": "1h"})
	e.checkRefusals(t, "/v1/topics/orders/jobs", acme, append([]queryRefusal{
		{"state unknown", "state=waiting", 400, []string{"state"}, true},
		{"state case", "state=Dead", 400, []string{"state"}, true},
		{"state and limit", "state=x&limit=-1", 400, []string{"limit", "state"}, true},
	}, pagingRefusals...))
	wantProblem(t, e.do(t, "GET", "/v1/topics/nope/jobs", acme, nil), http.StatusNotFound)
	wantProblem(t, e.do(t, "GET", "/v1/topics/no!pe/jobs", acme, nil), http.StatusNotFound)
}
