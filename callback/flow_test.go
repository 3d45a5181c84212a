package callback

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/kairos-sh/kairos"
)

// newFlow returns a flow client over a fake store of topic tp, whose
// refused jobs wait in a holder of their own; they are asked about again
// after an hour, so that a test sees them back only when it brings them.
func newFlow(tp kairos.Topic) (*flowClient, *holder, *fakeStore) {
	st := newFakeStore(tp)
	h := newHolder(st, holdConfig{})
	fc := newFlowClient(st, h, nil)
	fc.retry = time.Hour
	return fc, h, st
}

// claimed is job id of tp, in attempt 1, due at due.
func claimed(tp kairos.Topic, id string, due time.Time) kairos.Claimed {
	return kairos.Claimed{Job: kairos.Job{JobKey: kairos.JobKey{Tenant: tp.Tenant, Topic: tp.Name, ID: id}, Attempts: 1, MaxAttempts: 3}, Due: due}
}

// A flow's jobs refused a permit come back together (one timer), and a
// permit another process keeps for a job waiting ahead (flowFreed) brings
// them back at once, unless they were refused within freedQuiet.
func TestFlowFreedWakesWaitingJobs(t *testing.T) {
	tp := kairos.Topic{Tenant: "acme", Name: "lambda", Parallelism: 1}
	fc, h, _ := newFlow(tp)
	f := flowKey("acme", tp.Flow())
	start := time.Now()
	fc.waitFull(f, []kairos.Claimed{claimed(tp, "a", start)})
	fc.waitFull(f, []kairos.Claimed{claimed(tp, "b", start)})
	h.mu.Lock()
	timers := len(h.timers)
	h.mu.Unlock()
	if timers != 1 {
		t.Fatalf("%d timers, want the flow's jobs under one", timers)
	}
	fc.flowFreed(f) // refused just now: not the job the permit is kept for
	if n := h.waiting("acme", "lambda"); n != 0 && time.Since(start) < freedQuiet {
		t.Fatalf("%d ready within freedQuiet, want 0", n)
	}
	fc.mu.Lock()
	fc.full[f].refused = time.Now().Add(-time.Second)
	fc.mu.Unlock()
	fc.flowFreed(f)
	if n := h.waiting("acme", "lambda"); n != 2 {
		t.Fatalf("%d ready after flowFreed, want 2 at once", n)
	}
}

// gateBy answers each job by its id: go, probe, wait (until at), full;
// any other id goes.
func gateBy(at time.Time) func([]kairos.Job) ([]kairos.GateResult, error) {
	return func(jobs []kairos.Job) ([]kairos.GateResult, error) {
		out := make([]kairos.GateResult, len(jobs))
		for i, j := range jobs {
			switch j.ID {
			case "probe":
				out[i].Gate = kairos.GateProbe
			case "wait":
				out[i] = kairos.GateResult{Gate: kairos.GateWait, At: at}
			case "full":
				out[i].Gate = kairos.GateFull
			}
		}
		return out, nil
	}
}

// jobIDs returns the ids of jobs, in order.
func jobIDs(jobs []kairos.Job) []string {
	out := make([]string, len(jobs))
	for i, j := range jobs {
		out[i] = j.ID
	}
	return out
}

// TestPaceGivesEachJobItsTimeAsItIsPopped: the jobs of a topic with a
// rate limit alone get their times in one call a flow: a job whose time
// is later is held until then (Due and FireAt moved), one told to wait is
// given back to Redis until its turn; notifications and jobs paced
// already are left alone.
func TestPaceGivesEachJobItsTimeAsItIsPopped(t *testing.T) {
	tp := kairos.Topic{Tenant: "t", Name: "orders", RateLimit: 10, RatePeriod: time.Second}
	fc, _, st := newFlow(tp)
	now := st.Now()
	turn := now.Add(time.Hour)
	st.pace = func(jobs []kairos.Job, dues []time.Time) []kairos.GateResult {
		out := make([]kairos.GateResult, len(jobs))
		for i, j := range jobs {
			out[i].At = dues[i]
			switch j.ID {
			case "later":
				out[i].At = dues[i].Add(50 * time.Millisecond)
			case "wait":
				out[i] = kairos.GateResult{Gate: kairos.GateWait, At: turn}
			}
		}
		return out
	}
	later := claimed(tp, "later", now)
	later.FireAt = time.Now()
	paced := claimed(tp, "paced", now)
	paced.Paced = true
	own := claimed(tp, "own", now)
	own.Job.FlowKey = "shared"
	cs := []kairos.Claimed{claimed(tp, "now", now), later, claimed(tp, "wait", now), claimed(tp, kairos.NoticeID("x", 1), now), paced, own}
	got := fc.pace(context.Background(), cs)
	if !slices.Equal(ids(got), []string{"now", "later", kairos.NoticeID("x", 1), "paced", "own"}) {
		t.Fatalf("kept %v, want all but wait", ids(got))
	}
	if !got[0].Paced || !got[0].Due.Equal(now) {
		t.Errorf("now: paced %v due %v, want paced at its due time", got[0].Paced, got[0].Due)
	}
	if !got[1].Paced || !got[1].Due.Equal(now.Add(50*time.Millisecond)) || !got[1].FireAt.Equal(later.FireAt.Add(50*time.Millisecond)) {
		t.Errorf("later: paced %v due %v fire %v, want both 50 ms on", got[1].Paced, got[1].Due.Sub(now), got[1].FireAt.Sub(later.FireAt))
	}
	if got[2].Paced {
		t.Error("a notification was paced")
	}
	if released := st.releasedJobs(); len(released) != 1 || released[0].Job.ID != "wait" || !released[0].Due.Equal(turn) {
		t.Errorf("released %v, want wait due at its turn", ids(released))
	}
	if paces, _ := st.calls(); paces != 2 {
		t.Errorf("%d Pace calls, want one a flow (the topic's and the flow key's)", paces)
	}
}

// TestPaceLeavesGatedTopicsAlone: a topic with a parallelism limit (or a
// breaker) is not paced: its jobs ask the gate as they come due.
func TestPaceLeavesGatedTopicsAlone(t *testing.T) {
	tp := kairos.Topic{Tenant: "t", Name: "orders", RateLimit: 10, RatePeriod: time.Second, Parallelism: 2}
	fc, _, st := newFlow(tp)
	got := fc.pace(context.Background(), []kairos.Claimed{claimed(tp, "a", st.Now())})
	if paces, _ := st.calls(); paces != 0 || len(got) != 1 || got[0].Paced {
		t.Errorf("%d Pace calls, %d jobs kept (paced %v); want none, the job as it was", paces, len(got), got[0].Paced)
	}
}

// TestGateAnswers: of due jobs asked about together, those the gate lets
// go (GateGo, GateProbe) are handed out and remembered until they end;
// one told to wait goes back to Redis due at its turn; one refused a
// permit (GateFull) waits in the holder and its flow waits without
// asking until it is asked about again.
func TestGateAnswers(t *testing.T) {
	tp := kairos.Topic{Tenant: "t", Name: "orders", Parallelism: 10, BreakerFailures: 3}
	fc, h, st := newFlow(tp)
	turn := st.Now().Add(time.Hour)
	st.gate = gateBy(turn)
	now := st.Now()
	cs := []kairos.Claimed{claimed(tp, "go", now), claimed(tp, "wait", now), claimed(tp, "full", now), claimed(tp, "probe", now)}
	got := fc.gate(context.Background(), "t", "orders", cs)
	if !slices.Equal(jobIDs(got), []string{"go", "probe"}) {
		t.Errorf("let go %v, want [go probe]", jobIDs(got))
	}
	if released := st.releasedJobs(); len(released) != 1 || released[0].Job.ID != "wait" || !released[0].Due.Equal(turn) {
		t.Errorf("released %v, want wait due at its turn", ids(released))
	}
	fc.mu.Lock()
	gatedN, probe := len(fc.gated), fc.gated[attemptKey{cs[3].Job.JobKey, 1}].probe
	fc.mu.Unlock()
	if gatedN != 2 || !probe {
		t.Errorf("%d attempts remembered (probe %v), want go and probe", gatedN, probe)
	}
	if n := h.waiting("t", "orders"); n != 0 {
		t.Errorf("%d jobs ready, want full waiting to be asked again", n)
	}
	if !fc.waitsFull(flowKey("t", tp.Flow()), time.Now()) {
		t.Error("the flow does not wait after a refusal")
	}
	if n := h.capacity(); n != 5000-1 {
		t.Errorf("capacity %d, want the refused job held", n)
	}
}

// TestGateLetsSomeGoWithoutAsking: notifications, expired jobs and jobs
// paced at their time go without a gate call; a paced job later than
// kairos.PacedLate asks for a new time.
func TestGateLetsSomeGoWithoutAsking(t *testing.T) {
	tp := kairos.Topic{Tenant: "t", Name: "orders", RateLimit: 10, RatePeriod: time.Second}
	fc, _, st := newFlow(tp)
	now := st.Now()
	expired := claimed(tp, "expired", now)
	expired.Job.ExpiresAt = now.Add(-time.Second)
	paced := claimed(tp, "paced", now)
	paced.Paced = true
	got := fc.gate(context.Background(), "t", "orders", []kairos.Claimed{claimed(tp, kairos.NoticeID("x", 1), now), expired, paced})
	if _, gates := st.calls(); len(got) != 3 || gates != 0 {
		t.Errorf("let %d go with %d gate calls, want 3 with none", len(got), gates)
	}
	late := claimed(tp, "late", now.Add(-time.Second))
	late.Paced = true
	got = fc.gate(context.Background(), "t", "orders", []kairos.Claimed{late})
	if _, gates := st.calls(); len(got) != 1 || gates != 1 {
		t.Errorf("let %d go with %d gate calls, want the late job asked about", len(got), gates)
	}
}

// TestFullFlowWaitsAndWakesWhenAPermitIsGivenBack: once a flow's permits
// are all taken, its jobs wait without asking and join the jobs waiting
// already; the end of an attempt that held a permit brings them all back
// at once, ahead of the topic's other ready jobs. No more jobs than the
// limit are asked about at once.
func TestFullFlowWaitsAndWakesWhenAPermitIsGivenBack(t *testing.T) {
	tp := kairos.Topic{Tenant: "t", Name: "orders", Parallelism: 1}
	fc, h, st := newFlow(tp)
	var asked []int
	st.gate = func(jobs []kairos.Job) ([]kairos.GateResult, error) {
		asked = append(asked, len(jobs))
		out := make([]kairos.GateResult, len(jobs))
		for i, j := range jobs {
			if j.ID != "a" {
				out[i].Gate = kairos.GateFull
			}
		}
		return out, nil
	}
	ctx := context.Background()
	now := st.Now()
	if got := fc.gate(ctx, "t", "orders", []kairos.Claimed{claimed(tp, "a", now), claimed(tp, "b", now)}); !slices.Equal(jobIDs(got), []string{"a"}) {
		t.Fatalf("let go %v, want [a]", jobIDs(got))
	}
	if got := fc.gate(ctx, "t", "orders", []kairos.Claimed{claimed(tp, "c", now)}); len(got) != 0 {
		t.Fatalf("let go %v, want none", jobIDs(got))
	}
	if !slices.Equal(asked, []int{1}) {
		t.Errorf("gate calls of %v jobs, want one of 1: b beyond the limit and c, after a refusal, wait without asking", asked)
	}
	h.mu.Lock()
	timers := len(h.timers)
	h.mu.Unlock()
	if timers != 1 {
		t.Errorf("%d timers, want the flow's waiting jobs under one", timers)
	}
	h.add(ctx, []kairos.Claimed{claimed(tp, "d", now)})
	o, _ := fc.end(ctx, kairos.JobKey{Tenant: "t", Topic: "orders", ID: "a"}, kairos.Attempt{N: 1}, kairos.OutcomeDelivered, time.Time{})
	if o != kairos.OutcomeDelivered {
		t.Errorf("end changed the outcome to %v", o)
	}
	if got := ids(h.take(ctx, "t", "orders", 10)); !slices.Equal(got, []string{"b", "c", "d"}) {
		t.Errorf("ready after the permit came back: %v, want [b c d]", got)
	}
	if fc.waitsFull(flowKey("t", tp.Flow()), time.Now()) {
		t.Error("the flow still waits after a permit came back")
	}
}

// TestFullFlowAsksAgainAfterItsRetry: jobs refused a permit come back to
// be asked about again after the retry, with no permit given back.
func TestFullFlowAsksAgainAfterItsRetry(t *testing.T) {
	tp := kairos.Topic{Tenant: "t", Name: "orders", Parallelism: 1}
	fc, h, st := newFlow(tp)
	fc.retry = 10 * time.Millisecond
	st.gate = gateBy(time.Time{})
	fc.gate(context.Background(), "t", "orders", []kairos.Claimed{claimed(tp, "full", st.Now())})
	waitFor(t, "the refused job back after its retry", func() bool { return h.waiting("t", "orders") == 1 })
}

// TestGateFailureAsksAgain: jobs whose gate call failed are neither let go
// nor given back: they wait in the holder and are asked about again.
func TestGateFailureAsksAgain(t *testing.T) {
	tp := kairos.Topic{Tenant: "t", Name: "orders", Parallelism: 1}
	fc, h, st := newFlow(tp)
	fc.retry = 10 * time.Millisecond
	st.gate = func([]kairos.Job) ([]kairos.GateResult, error) { return nil, errors.New("redis away") }
	if got := fc.gate(context.Background(), "t", "orders", []kairos.Claimed{claimed(tp, "a", st.Now())}); len(got) != 0 {
		t.Fatalf("let go %v with the gate failing", jobIDs(got))
	}
	waitFor(t, "the job back after its retry", func() bool { return h.waiting("t", "orders") == 1 })
	if n := len(st.releasedJobs()); n != 0 {
		t.Errorf("%d jobs released, want none", n)
	}
}

// TestEndGivesBackPermitsAndTellsTheBreaker: the end of an attempt the
// gate let go gives its permit back and tells the breaker its answer,
// once; a probe that failed for good is retried instead (unless the
// receiver answered 410); an attempt that never started tells the breaker
// nothing.
func TestEndGivesBackPermitsAndTellsTheBreaker(t *testing.T) {
	tp := kairos.Topic{Tenant: "t", Name: "orders", Parallelism: 5, BreakerFailures: 3}
	fc, _, st := newFlow(tp)
	st.gate = gateBy(time.Time{})
	ctx := context.Background()
	end := func(id string, a kairos.Attempt, o kairos.Outcome) kairos.Outcome {
		t.Helper()
		if got := fc.gate(ctx, "t", "orders", []kairos.Claimed{claimed(tp, id, st.Now())}); len(got) != 1 {
			t.Fatalf("gate let %d of %s go, want it", len(got), id)
		}
		a.N = 1
		o, retryAt := fc.end(ctx, kairos.JobKey{Tenant: "t", Topic: "orders", ID: id}, a, o, time.Time{})
		if o == kairos.OutcomeRetrying && retryAt.IsZero() {
			t.Errorf("%s retried with no retry time", id)
		}
		return o
	}
	if o := end("go", kairos.Attempt{Status: 200}, kairos.OutcomeDelivered); o != kairos.OutcomeDelivered {
		t.Errorf("delivered came out %v", o)
	}
	fc.end(ctx, kairos.JobKey{Tenant: "t", Topic: "orders", ID: "go"}, kairos.Attempt{N: 1}, kairos.OutcomeDelivered, time.Time{}) // ended already
	if o := end("probe", kairos.Attempt{Status: 500}, kairos.OutcomeDead); o != kairos.OutcomeRetrying {
		t.Errorf("a failed probe's last attempt came out %v, want retrying", o)
	}
	st.gate = func(jobs []kairos.Job) ([]kairos.GateResult, error) {
		return []kairos.GateResult{{Gate: kairos.GateProbe}}, nil
	}
	if o := end("gone", kairos.Attempt{Status: http.StatusGone}, kairos.OutcomeDead); o != kairos.OutcomeDead {
		t.Errorf("a probe answered 410 came out %v, want dead", o)
	}
	st.gate = gateBy(time.Time{})
	end("expired", kairos.Attempt{Event: kairos.AttemptExpired}, kairos.OutcomeExpired)
	st.mu.Lock()
	defer st.mu.Unlock()
	if got := jobKeysIDs(st.permits); !slices.Equal(got, []string{"go", "probe", "gone", "expired"}) {
		t.Errorf("permits given back for %v, want each attempt's once", got)
	}
	if !slices.Equal(st.answers, []bool{true, false, false}) {
		t.Errorf("breaker told %v, want delivered, failed, failed (none for the expiry)", st.answers)
	}
}

// jobKeysIDs returns the ids of keys, in order.
func jobKeysIDs(keys []kairos.JobKey) []string {
	out := make([]string, len(keys))
	for i, k := range keys {
		out[i] = k.ID
	}
	return out
}
