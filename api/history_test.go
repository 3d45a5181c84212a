package api

import (
	"net/http"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// response_bytes is checked at the edge: a value out of range is a 400
// naming the field and the range, and changes nothing; 0 reads back as 0
// (keep none), an absent one as the default.
func TestTopicResponseBytes(t *testing.T) {
	t.Parallel()
	e := newEnv(t, Config{})
	acme := e.token(t, "acme", false)
	for _, n := range []int{-1, 16385, 1 << 20} {
		res := e.do(t, "PUT", "/v1/topics/orders", acme, obj{"callback_url": hook, "response_bytes": n})
		p := wantProblem(t, res, http.StatusBadRequest)
		if d := cmp.Diff([]string{"response_bytes"}, fields(p)); d != "" || !strings.Contains(p.Errors[0].Message, "0 (keep no response body) to 16384") {
			t.Errorf("response_bytes %d: problem %+v", n, p)
		}
	}
	wantProblem(t, e.do(t, "GET", "/v1/topics/orders", acme, nil), http.StatusNotFound)
	for _, tc := range []struct {
		body obj
		want int
	}{
		{obj{"callback_url": hook}, 256},
		{obj{"callback_url": hook, "response_bytes": 0}, 0},
		{obj{"callback_url": hook, "response_bytes": 16384}, 16384},
		{obj{"callback_url": hook, "response_bytes": 1}, 1},
	} {
		e.do(t, "PUT", "/v1/topics/orders", acme, tc.body)
		got := want[topicResponse](t, e.do(t, "GET", "/v1/topics/orders", acme, nil), http.StatusOK)
		if got.ResponseBytes != tc.want {
			t.Errorf("PUT %v: response_bytes reads %d, want %d", tc.body, got.ResponseBytes, tc.want)
		}
	}
}

// success_url, on a topic and a job, is checked like any callback URL
// and shown back.
func TestSuccessURL(t *testing.T) {
	t.Parallel()
	e := newEnv(t, Config{})
	acme := e.token(t, "acme", false)
	p := wantProblem(t, e.do(t, "PUT", "/v1/topics/orders", acme, obj{"callback_url": hook, "success_url": "ftp://x"}), http.StatusBadRequest)
	if d := cmp.Diff([]string{"success_url"}, fields(p)); d != "" {
		t.Errorf("topic problem fields (-want +got):\n%s", d)
	}
	got := want[topicResponse](t, e.do(t, "PUT", "/v1/topics/orders", acme, obj{"callback_url": hook, "success_url": hook + "/ok"}), http.StatusCreated)
	if got.SuccessURL != hook+"/ok" {
		t.Errorf("topic success_url = %q", got.SuccessURL)
	}
	p = wantProblem(t, e.do(t, "POST", "/v1/topics/orders/jobs", acme, obj{"success_url": "not a url"}), http.StatusBadRequest)
	if d := cmp.Diff([]string{"success_url"}, fields(p)); d != "" {
		t.Errorf("job problem fields (-want +got):\n%s", d)
	}
	j := want[jobResponse](t, e.do(t, "POST", "/v1/topics/orders/jobs", acme, obj{"id": "j1", "success_url": hook + "/j1"}), http.StatusCreated)
	j = want[jobResponse](t, e.do(t, "GET", "/v1/topics/orders/jobs/"+j.ID, acme, nil), http.StatusOK)
	if j.SuccessURL != hook+"/j1" {
		t.Errorf("job success_url = %q", j.SuccessURL)
	}
	// ids of the success notifications' form are reserved
	p = wantProblem(t, e.do(t, "POST", "/v1/topics/orders/jobs", acme, obj{"id": "j1~ok.1"}), http.StatusBadRequest)
	if len(p.Errors) != 1 || p.Errors[0].Field != "id" || !strings.Contains(p.Errors[0].Message, "'~ok.'") {
		t.Errorf("reserved id: problem %+v", p)
	}
}
