package server

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/kairos-sh/kairos/client"
	"github.com/kairos-sh/kairos/internal/testredis"
	"github.com/kairos-sh/kairos/internal/testwait"
)

// TestReplayContinuesAttemptNumbers: a job of max_attempts 2 that fails
// every time dies after attempts 1 and 2; replayed, its callbacks say
// Kairos-Attempt 3 and 4 (max_attempts counts from the replay) and it dies
// again; its log shows the replay between attempts 2 and 3.
func TestReplayContinuesAttemptNumbers(t *testing.T) {
	var mu sync.Mutex
	var seen []string
	rcv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen = append(seen, r.Header.Get("Kairos-Attempt"))
		mu.Unlock()
		w.WriteHeader(http.StatusInternalServerError)
	}))
	t.Cleanup(rcv.Close)
	ti := startTestInstanceOn(t, map[string]string{"KAIROS_REDIS_URL": testredis.New(t).URL()})
	ti.call(t, "PUT", "/v1/topics/flaky", `{"callback_url": "`+rcv.URL+`"}`, http.StatusCreated)
	ti.call(t, "POST", "/v1/topics/flaky/jobs", `{"id": "j", "delay": "0s", "max_attempts": 2, "backoff": {"initial": "10ms", "max": "10ms"}}`, http.StatusCreated)
	waitDead := func(attempts int) client.Job {
		t.Helper()
		var j client.Job
		testwait.UntilNil(t, 30*time.Second, func() error {
			j = client.Job{}
			if err := json.Unmarshal([]byte(ti.call(t, "GET", "/v1/topics/flaky/jobs/j", "", http.StatusOK)), &j); err != nil {
				t.Fatal(err)
			}
			if j.State != client.StateDead || j.Attempts != attempts {
				return fmt.Errorf("job %s with %d attempts", j.State, j.Attempts)
			}
			return nil
		}, fmt.Sprintf("the job dead after %d attempts", attempts))
		return j
	}
	waitDead(2)
	ti.call(t, "POST", "/v1/topics/flaky/jobs/j/retry", "", http.StatusAccepted)
	j := waitDead(4)
	mu.Lock()
	got := append([]string(nil), seen...)
	mu.Unlock()
	if want := []string{"1", "2", "3", "4"}; len(got) != 4 || got[0] != want[0] || got[1] != want[1] || got[2] != want[2] || got[3] != want[3] {
		t.Fatalf("the receiver saw attempts %v, want %v", got, want)
	}
	var log []string
	for _, a := range j.AttemptLog {
		log = append(log, a.Event+"#"+string(rune('0'+a.N)))
	}
	if want := []string{"#1", "#2", "replay#2", "#3", "#4"}; len(log) != len(want) || log[2] != want[2] || log[3] != want[3] || log[4] != want[4] {
		t.Errorf("attempt log %v, want %v", log, want)
	}
	if j.LastAttempt == nil || j.LastAttempt.N != 4 {
		t.Errorf("last_attempt %+v, want attempt 4", j.LastAttempt)
	}
}
