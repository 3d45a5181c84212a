package api

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/kairos-sh/kairos"
)

// max_runs: the answer counts runs, and once they reach it the schedule
// is completed, shows no next runs and refuses a trigger.
func TestScheduleMaxRunsAnswer(t *testing.T) {
	t.Parallel()
	e := newEnv(t, Config{})
	acme := e.token(t, "acme", false)
	e.putTopic(t, acme, "reports", obj{"callback_url": hook})
	path := "/v1/topics/reports/schedules/twice"
	v := want[scheduleResponse](t, e.do(t, "PUT", path, acme, obj{"every": "1m", "max_runs": 2, "overlap": "skip", "jitter": "10s"}), http.StatusCreated)
	if v.State != scheduleActive || v.MaxRuns != 2 || v.Runs == nil || *v.Runs != 0 || v.Overlap != kairos.OverlapSkip || v.Jitter != "10s" {
		t.Fatalf("created: %+v", v)
	}
	for i := range 2 {
		e.clock.Set(parseShown(t, v.NextRuns[0]))
		e.deliveredJob(t, "acme", "reports", v.PendingJob)
		v = want[scheduleResponse](t, e.do(t, "GET", path, acme, nil), http.StatusOK)
		if *v.Runs != i+1 {
			t.Fatalf("after run %d: runs %d", i+1, *v.Runs)
		}
	}
	if v.State != scheduleCompleted || len(v.NextRuns) != 0 || v.PendingJob != "" {
		t.Fatalf("after max_runs: %+v", v)
	}
	wantProblem(t, e.do(t, "POST", path+"/trigger", acme, nil), http.StatusConflict)
	wantProblem(t, e.do(t, "POST", path+"/backfill", acme, obj{"from": ms(t0.Add(-time.Hour)), "to": ms(t0)}), http.StatusConflict)
}

// Jitter delays each instant by less than the jitter, the same for an
// instant every time it is computed.
func TestScheduleJitterShown(t *testing.T) {
	t.Parallel()
	e := newEnv(t, Config{})
	acme := e.token(t, "acme", false)
	e.putTopic(t, acme, "reports", obj{"callback_url": hook})
	path := "/v1/topics/reports/schedules/j"
	v := want[scheduleResponse](t, e.do(t, "PUT", path, acme, obj{"every": "1h", "jitter": "20m"}), http.StatusCreated)
	shifted := 0
	for _, r := range v.NextRuns {
		// the instants are t0 + k hours (t0 itself included: its delay
		// puts it after now)
		at := parseShown(t, r)
		instant := at.Truncate(time.Hour)
		d := at.Sub(instant)
		if d < 0 || d >= 20*time.Minute {
			t.Fatalf("next run %s is %s after its instant %s, want [0, 20m)", r, d, ms(instant))
		}
		if d > 0 {
			shifted++
		}
	}
	if shifted == 0 {
		t.Fatalf("no next run is jittered: %v", v.NextRuns)
	}
	again := want[scheduleResponse](t, e.do(t, "GET", path, acme, nil), http.StatusOK)
	if strings.Join(again.NextRuns, ",") != strings.Join(v.NextRuns, ",") {
		t.Fatalf("next runs changed between reads: %v then %v", v.NextRuns, again.NextRuns)
	}
}
