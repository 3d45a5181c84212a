package api

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/kairos-sh/kairos"
)

// check fills a job's and a topic's settings alike, but for Content-Type,
// which a job keeps apart, and names its errors after the prefix.
func TestCallbackSettingsCheck(t *testing.T) {
	s := CallbackSettings{Method: new("put"), Headers: map[string]string{"content-type": "text/plain", "x-a": "1"},
		Timeout: new("5s"), MaxAttempts: new(3), Backoff: &backoffRequest{Initial: new("2s")}}
	var fe fieldErrors
	var j kairos.Job
	var tp kairos.Topic
	s.check(&fe, "", jobSettings(&j))
	s.check(&fe, "", topicSettings(&tp))
	if len(fe) != 0 {
		t.Fatalf("errors: %v", fe)
	}
	wantJob := kairos.Job{Method: "PUT", Headers: map[string]string{"X-A": "1"}, ContentType: "text/plain",
		Timeout: 5 * time.Second, MaxAttempts: 3, BackoffInitial: 2 * time.Second}
	if d := cmp.Diff(wantJob, j); d != "" {
		t.Errorf("job (-want +got):\n%s", d)
	}
	wantTopic := kairos.Topic{Method: "PUT", Headers: map[string]string{"X-A": "1", "Content-Type": "text/plain"},
		Timeout: 5 * time.Second, MaxAttempts: 3, BackoffInitial: 2 * time.Second}
	if d := cmp.Diff(wantTopic, tp); d != "" {
		t.Errorf("topic (-want +got):\n%s", d)
	}
	if d := cmp.Diff(jobSettings(&j).view(), topicSettings(&tp).view()); d != "" {
		t.Errorf("a job and a topic of the same settings show them differently (-job +topic):\n%s", d)
	}

	bad := CallbackSettings{Method: new("BREW"), Headers: map[string]string{"Content-Type": "/"},
		Timeout: new("1h"), MaxAttempts: new(0), Backoff: &backoffRequest{Initial: new("1h"), Max: new("1m")}}
	fe = nil
	bad.check(&fe, "jobs[2].", jobSettings(&kairos.Job{}))
	want := []string{"jobs[2].method", "jobs[2].headers.Content-Type", "jobs[2].max_attempts", "jobs[2].timeout", "jobs[2].backoff.max"}
	if d := cmp.Diff(want, fieldNames(fe)); d != "" {
		t.Errorf("field errors (-want +got):\n%s", d)
	}
}
