package callback

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/kairos-sh/kairos"
)

var orders = kairos.Topic{Tenant: "t", Name: "orders"}

// testHolder returns a holder over a fake store of topic orders.
func testHolder(cfg holdConfig) (*holder, *fakeStore) {
	st := newFakeStore(orders)
	return newHolder(st, cfg), st
}

// ids returns the job ids of cs, in order.
func ids(cs []kairos.Claimed) []string {
	out := make([]string, len(cs))
	for i, c := range cs {
		out[i] = c.Job.ID
	}
	return out
}

// TestHolderHandsOutNoJobBeforeItsDueTimeOnTheRedisClock: with the
// store's clock 300 ms behind this machine's, a job due 100 ms from the
// store's now is ready no earlier than that on the store's clock (by this
// machine's clock it was due 200 ms ago); a job already due is ready at
// once.
func TestHolderHandsOutNoJobBeforeItsDueTimeOnTheRedisClock(t *testing.T) {
	h, st := testHolder(holdConfig{})
	st.skew = -300 * time.Millisecond
	ctx := context.Background()
	due := st.Now().Add(100 * time.Millisecond)
	h.add(ctx, []kairos.Claimed{claimed(orders, "later", due), claimed(orders, "now", st.Now().Add(-time.Millisecond))})
	if got := ids(h.take(ctx, "t", "orders", 10)); !slices.Equal(got, []string{"now"}) {
		t.Fatalf("took %v at once, want [now]", got)
	}
	waitFor(t, "the held job to be ready", func() bool { return h.waiting("t", "orders") == 1 })
	got := h.take(ctx, "t", "orders", 10)
	if now := st.Now(); now.Before(due) {
		t.Errorf("the job was ready %v before its due time on the store's clock", due.Sub(now))
	}
	if !slices.Equal(ids(got), []string{"later"}) {
		t.Errorf("took %v, want [later]", ids(got))
	}
	if n := len(st.releasedJobs()); n != 0 {
		t.Errorf("%d jobs released, want none", n)
	}
}

// TestHolderHoldsUntilFireAt: a job whose pop says the Redis clock
// reaches its due time later on this machine's clock (FireAt) than its due
// time converted says is held until FireAt.
func TestHolderHoldsUntilFireAt(t *testing.T) {
	h, st := testHolder(holdConfig{})
	ctx := context.Background()
	c := claimed(orders, "a", st.Now().Add(-time.Millisecond))
	c.FireAt = time.Now().Add(100 * time.Millisecond)
	h.add(ctx, []kairos.Claimed{c})
	if got := h.take(ctx, "t", "orders", 10); len(got) != 0 {
		t.Fatalf("took %v before its FireAt", ids(got))
	}
	receive(t, "the job to be ready at its FireAt", h.ready("t", "orders"))
	if early := c.FireAt.Sub(time.Now()); early > 0 {
		t.Errorf("ready %v before its FireAt", early)
	}
	if got := h.take(ctx, "t", "orders", 10); len(got) != 1 {
		t.Errorf("took %d jobs, want the one", len(got))
	}
}

// TestHolderReleasesOverdueJobs: a job that waited past its due time
// longer than MaxLate is released by the take that meets it, not handed
// out; one within MaxLate is handed out.
func TestHolderReleasesOverdueJobs(t *testing.T) {
	h, st := testHolder(holdConfig{MaxLate: time.Second})
	ctx := context.Background()
	now := st.Now()
	h.add(ctx, []kairos.Claimed{claimed(orders, "stale", now.Add(-2*time.Second)), claimed(orders, "fresh", now.Add(-100*time.Millisecond))})
	if got := ids(h.take(ctx, "t", "orders", 1)); !slices.Equal(got, []string{"fresh"}) {
		t.Errorf("took %v, want [fresh]", got)
	}
	if got := ids(st.releasedJobs()); !slices.Equal(got, []string{"stale"}) {
		t.Errorf("released %v, want [stale]", got)
	}
	if n := h.capacity(); n != 5000 {
		t.Errorf("capacity %d after both left, want 5000", n)
	}
}

// TestHolderNudgesThePopsWhenRoomFrees: a holder at MaxHeld has no
// capacity, and the take that brings it below says so on roomFreed.
func TestHolderNudgesThePopsWhenRoomFrees(t *testing.T) {
	h, st := testHolder(holdConfig{MaxHeld: 2})
	ctx := context.Background()
	now := st.Now()
	h.add(ctx, []kairos.Claimed{claimed(orders, "a", now), claimed(orders, "b", now)})
	if n := h.capacity(); n != 0 {
		t.Fatalf("capacity %d with MaxHeld held, want 0", n)
	}
	select {
	case <-h.roomFreed():
		t.Fatal("room nudged before any left")
	default:
	}
	h.take(ctx, "t", "orders", 1)
	receive(t, "a nudge on roomFreed", h.roomFreed())
	if n := h.capacity(); n != 1 {
		t.Errorf("capacity %d after one left, want 1", n)
	}
}

// TestHolderRefillSignal: a topic with limit or more due jobs waiting is
// busy, and the refill signal taken before asking closes when a take
// leaves fewer than limit; a topic below its limit is not busy.
func TestHolderRefillSignal(t *testing.T) {
	h, st := testHolder(holdConfig{})
	ctx := context.Background()
	now := st.Now()
	h.add(ctx, []kairos.Claimed{claimed(orders, "a", now), claimed(orders, "b", now), claimed(orders, "c", now)})
	if h.busy("t", "orders", 4) || h.busy("t", "other", 1) {
		t.Fatal("busy below the limit, or with no jobs")
	}
	refill := h.refillSignal()
	if !h.busy("t", "orders", 2) {
		t.Fatal("not busy with 3 jobs waiting for 2 slots")
	}
	closed := func(ch <-chan struct{}) bool {
		select {
		case <-ch:
			return true
		default:
			return false
		}
	}
	h.take(ctx, "t", "orders", 1)
	if closed(refill) {
		t.Fatal("refill closed with 2 jobs still waiting for 2 slots")
	}
	h.take(ctx, "t", "orders", 1)
	if !closed(refill) {
		t.Fatal("refill open with 1 job waiting for 2 slots")
	}
	if closed(h.refillSignal()) {
		t.Error("the next refill signal is closed already")
	}
}

// TestHolderHoldsAgainAheadAndTogether: jobs held again (for flow
// control) come back ahead of their topic's other ready jobs, those that
// join them with them, and readyNow brings them back before their time.
func TestHolderHoldsAgainAheadAndTogether(t *testing.T) {
	h, st := testHolder(holdConfig{})
	ctx := context.Background()
	now := st.Now()
	h.add(ctx, []kairos.Claimed{claimed(orders, "c", now)})
	timer := h.again([]kairos.Claimed{claimed(orders, "a", now)}, time.Hour)
	if !h.join(timer, []kairos.Claimed{claimed(orders, "b", now)}) {
		t.Fatal("join refused while the jobs wait")
	}
	if n := h.capacity(); n != 5000-3 {
		t.Errorf("capacity %d, want the jobs held again counted", n)
	}
	h.readyNow(timer)
	if got := ids(h.take(ctx, "t", "orders", 10)); !slices.Equal(got, []string{"a", "b", "c"}) {
		t.Errorf("took %v, want [a b c]: those held again first, together", got)
	}
	if h.join(timer, []kairos.Claimed{claimed(orders, "d", now)}) {
		t.Error("join accepted after the jobs came back")
	}
	// without readyNow they come back at their time
	h.again([]kairos.Claimed{claimed(orders, "e", now)}, 10*time.Millisecond)
	waitFor(t, "the job held again to come back", func() bool { return h.waiting("t", "orders") == 1 })
}

// TestHolderKeepsWaitOrderOncePriorityJoins: a queue keeps the order jobs
// arrive in until one of priority joins; then it is kept in wait order
// (due time less priority steps), and a job put in front goes ahead of
// those of its order only.
func TestHolderKeepsWaitOrderOncePriorityJoins(t *testing.T) {
	h, st := testHolder(holdConfig{})
	ctx := context.Background()
	now := st.Now()
	late, early := claimed(orders, "late", now), claimed(orders, "early", now.Add(-time.Second))
	h.add(ctx, []kairos.Claimed{late, early})
	if got := ids(h.take(ctx, "t", "orders", 10)); !slices.Equal(got, []string{"late", "early"}) {
		t.Fatalf("took %v, want arrival order [late early]", got)
	}
	urgent := claimed(orders, "urgent", now)
	urgent.Job.Priority = 1
	h.add(ctx, []kairos.Claimed{late, early, urgent})
	if got := ids(h.take(ctx, "t", "orders", 10)); !slices.Equal(got, []string{"urgent", "early", "late"}) {
		t.Errorf("took %v, want wait order [urgent early late]", got)
	}
}

// TestHolderCloseReleasesEverything: close gives back the jobs ready, due
// later, and held again, and a holder closed releases what it is given.
func TestHolderCloseReleasesEverything(t *testing.T) {
	h, st := testHolder(holdConfig{})
	ctx := context.Background()
	now := st.Now()
	h.add(ctx, []kairos.Claimed{claimed(orders, "ready", now), claimed(orders, "later", now.Add(time.Hour))})
	h.again([]kairos.Claimed{claimed(orders, "again", now)}, time.Hour)
	h.close(ctx)
	got := ids(st.releasedJobs())
	slices.Sort(got)
	if !slices.Equal(got, []string{"again", "later", "ready"}) {
		t.Errorf("released %v at close, want every job held", got)
	}
	h.add(ctx, []kairos.Claimed{claimed(orders, "added", now)})
	if timer := h.again([]kairos.Claimed{claimed(orders, "refused", now)}, time.Hour); timer != nil {
		t.Error("again held jobs after close")
	}
	if n := len(st.releasedJobs()); n != 5 {
		t.Errorf("%d released, want the 2 given after close too", n)
	}
	if n := h.waiting("t", "orders"); n != 0 {
		t.Errorf("%d jobs ready after close", n)
	}
}

// TestHolderJobsDueAtOneInstantShareATimer: a burst's jobs, due at one
// instant, wait on one timer and are ready together, in the order they
// came; a job due at another instant has a timer of its own.
func TestHolderJobsDueAtOneInstantShareATimer(t *testing.T) {
	h, st := testHolder(holdConfig{})
	ctx := context.Background()
	due := st.Now().Add(50 * time.Millisecond)
	var cs []kairos.Claimed
	for _, id := range []string{"a", "b", "c", "d"} {
		cs = append(cs, claimed(orders, id, due))
	}
	cs = append(cs, claimed(orders, "e", due.Add(time.Millisecond)))
	h.add(ctx, cs)
	h.mu.Lock()
	timers := len(h.timers)
	h.mu.Unlock()
	if timers != 2 {
		t.Fatalf("%d timers for 5 jobs due at 2 instants, want 2", timers)
	}
	waitFor(t, "the jobs to be ready", func() bool { return h.waiting("t", "orders") == 5 })
	// the two timers' callbacks run on goroutines of their own: on a
	// loaded machine e's may take the lock first, so only the burst's
	// order is the holder's to keep
	got := ids(h.take(ctx, "t", "orders", 10))
	if burst := slices.DeleteFunc(slices.Clone(got), func(id string) bool { return id == "e" }); !slices.Equal(burst, []string{"a", "b", "c", "d"}) || len(got) != 5 {
		t.Errorf("took %v, want a to d in order, and e", got)
	}
}
