package kairos

import (
	"testing"
	"time"
)

func TestOccurrenceIDs(t *testing.T) {
	at := time.UnixMilli(1795420800250)
	id := OccurrenceID("daily@eu", at)
	if sid, got, ok := ParseOccurrence(id); !ok || sid != "daily@eu" || !got.Equal(at) {
		t.Errorf("ParseOccurrence(%q) = %q %v %v", id, sid, got, ok)
	}
	for _, id := range []string{"daily", "@123", "daily@", "daily@12a", "a@1@x"} {
		if _, ok := ScheduleOf(id); ok {
			t.Errorf("ScheduleOf(%q) says it is an occurrence", id)
		}
		if _, _, ok := ParseOccurrence(id); ok {
			t.Errorf("ParseOccurrence(%q) accepted it", id)
		}
	}
	// Reserved for occurrences, though no instant fits: still not a free id.
	if _, ok := ScheduleOf("x@99999999999999999999"); !ok {
		t.Error("an all-digit suffix past int64 is not reserved")
	}
	if _, _, ok := ParseOccurrence("x@99999999999999999999"); ok {
		t.Error("ParseOccurrence accepted an instant past int64")
	}
}

// TestFlowRule is flow control's rule table (flow.go): for each set of
// limits, which apply and where each is asked.
func TestFlowRule(t *testing.T) {
	type rule struct{ Limited, Rated, Paced, Gated, TakesPermits, HasBreaker bool }
	for _, tc := range []struct {
		name string
		t    Topic
		want rule
	}{
		{"none", Topic{}, rule{}},
		{"rate", Topic{RateLimit: 5, RatePeriod: time.Second}, rule{Limited: true, Rated: true, Paced: true}},
		{"parallelism", Topic{Parallelism: 2}, rule{Limited: true, Gated: true, TakesPermits: true}},
		{"breaker", Topic{BreakerFailures: 3}, rule{Limited: true, Gated: true, HasBreaker: true}},
		{"rate and parallelism", Topic{RateLimit: 5, Parallelism: 2}, rule{Limited: true, Rated: true, Gated: true, TakesPermits: true}},
		{"rate and breaker", Topic{RateLimit: 5, BreakerFailures: 3}, rule{Limited: true, Rated: true, Gated: true, HasBreaker: true}},
		{"parallelism and breaker", Topic{Parallelism: 2, BreakerFailures: 3}, rule{Limited: true, Gated: true, TakesPermits: true, HasBreaker: true}},
		{"all three", Topic{RateLimit: 5, Parallelism: 2, BreakerFailures: 3}, rule{Limited: true, Rated: true, Gated: true, TakesPermits: true, HasBreaker: true}},
		{"paused alone", Topic{Paused: true}, rule{}}, // parked before the claim: flow control never sees its jobs
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := rule{tc.t.Limited(), tc.t.Rated(), tc.t.Paced(), tc.t.Gated(), tc.t.TakesPermits(), tc.t.HasBreaker()}
			if got != tc.want {
				t.Errorf("got %+v, want %+v", got, tc.want)
			}
		})
	}
}

// TestAsksGate checks which claimed jobs ask the gate before they fire.
func TestAsksGate(t *testing.T) {
	now := time.UnixMilli(1795420800000)
	rate, par, none := Topic{RateLimit: 5}, Topic{Parallelism: 1}, Topic{}
	job := Job{JobKey: JobKey{Tenant: "t", Topic: "x", ID: "j"}}
	notice := job
	notice.ID = NoticeID("j", 3)
	expired := job
	expired.ExpiresAt = now.Add(-time.Millisecond)
	for _, tc := range []struct {
		name string
		t    Topic
		c    Claimed
		want bool
	}{
		{"no limits", none, Claimed{Job: job, Due: now}, false},
		{"gated", par, Claimed{Job: job, Due: now}, true},
		{"gated, marked paced", par, Claimed{Job: job, Due: now, Paced: true}, true},
		{"paced on time", rate, Claimed{Job: job, Due: now, Paced: true}, false},
		{"paced, PacedLate late", rate, Claimed{Job: job, Due: now.Add(-PacedLate), Paced: true}, false},
		{"paced, later than PacedLate", rate, Claimed{Job: job, Due: now.Add(-PacedLate - time.Millisecond), Paced: true}, true},
		{"rate, not paced at pop", rate, Claimed{Job: job, Due: now}, true},
		{"a notification", par, Claimed{Job: notice, Due: now}, false},
		{"expired", par, Claimed{Job: expired, Due: now}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.t.AsksGate(tc.c, now); got != tc.want {
				t.Errorf("AsksGate = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestWaitOrder(t *testing.T) {
	due := time.UnixMilli(1795420800000)
	if got := WaitOrder(Job{Priority: 3}, due); !got.Equal(due.Add(-3 * PriorityStep)) {
		t.Errorf("WaitOrder of priority 3 = %v, want 3 steps before %v", got, due)
	}
	if got := WaitOrder(Job{}, due); !got.Equal(due) {
		t.Errorf("WaitOrder of priority 0 = %v, want its due time", got)
	}
}
