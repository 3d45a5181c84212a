package api

import (
	"context"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/kairos-sh/kairos"
)

// TestNotificationsAreMarkedAndFiltered: a failure notification (a job
// kairos made of another job's death, <id>~dead.<n>) reads kind
// notification, the other jobs kind job; listings of a topic's jobs and of
// the dead letters keep one kind with ?kind=, and refuse another word.
func TestNotificationsAreMarkedAndFiltered(t *testing.T) {
	t.Parallel()
	e := newEnv(t, Config{})
	acme := e.token(t, "acme", false)
	e.putTopic(t, acme, "orders", obj{"callback_url": hook})
	e.createJob(t, acme, "orders", obj{"id": "o1", "delay": "0s", "max_attempts": 1})
	// o1 dies, and its failure notification is filed; the notification dies too
	j := e.next(t, "acme", "orders", "o1")
	notice := kairos.Notice{URL: "https://hooks.example.com/failed", Body: []byte(`{"type":"job.dead","job_id":"o1"}`)}
	a := kairos.Attempt{N: 1, At: e.clock.Now(), Duration: time.Millisecond, Status: 500}
	if _, err := e.store.Finish(context.Background(), j.JobKey, a, kairos.OutcomeDead, time.Time{}, notice); err != nil {
		t.Fatal(err)
	}
	id := kairos.NoticeID("o1", 1)
	n := e.next(t, "acme", "orders", id)
	if _, err := e.store.Finish(context.Background(), n.JobKey, kairos.Attempt{N: 1, At: e.clock.Now(), Duration: time.Millisecond, Status: 500}, kairos.OutcomeDead, time.Time{}); err != nil {
		t.Fatal(err)
	}
	if got := e.getJob(t, acme, "orders", id); got.Kind != kairos.KindNotification || got.State != kairos.StateDead {
		t.Errorf("the notification reads kind %q, state %q", got.Kind, got.State)
	}
	if got := e.getJob(t, acme, "orders", "o1"); got.Kind != kairos.KindJob {
		t.Errorf("the job reads kind %q", got.Kind)
	}
	ids := func(path string) []string {
		t.Helper()
		l := want[listResponse](t, e.do(t, "GET", path, acme, nil), http.StatusOK)
		var out []string
		for _, j := range l.Jobs {
			out = append(out, j.ID+":"+string(j.Kind))
		}
		slices.Sort(out)
		return out
	}
	both := []string{"o1:job", id + ":notification"}
	for path, want := range map[string][]string{
		"/v1/dead":                                   both,
		"/v1/dead?kind=job":                          {"o1:job"},
		"/v1/dead?kind=notification":                 {id + ":notification"},
		"/v1/topics/orders/jobs":                     both,
		"/v1/topics/orders/jobs?kind=job":            {"o1:job"},
		"/v1/topics/orders/jobs?kind=notification":   {id + ":notification"},
		"/v1/topics/orders/jobs?state=dead&kind=job": {"o1:job"},
	} {
		if got := ids(path); !slices.Equal(got, want) {
			t.Errorf("GET %s: %v, want %v", path, got, want)
		}
	}
	for _, path := range []string{"/v1/dead?kind=notice", "/v1/topics/orders/jobs?kind=jobs"} {
		wantFields(t, wantProblem(t, e.do(t, "GET", path, acme, nil), http.StatusBadRequest), "kind")
	}
}
