package callback

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/kairos-sh/kairos"
)

// flakyRelease is a holdStore whose Release fails its first fails calls,
// and, like Redis through go-redis, fails at once on a context that ended.
type flakyRelease struct {
	*fakeStore
	fails int // under fakeStore.mu
	tries int
}

func (f *flakyRelease) Release(ctx context.Context, cs []kairos.Claimed) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	f.mu.Lock()
	f.tries++
	fail := f.tries <= f.fails
	f.mu.Unlock()
	if fail {
		return errors.New("redis away")
	}
	return f.fakeStore.Release(ctx, cs)
}

// TestHolderTriesAFailedReleaseAgain: a release that fails (Redis away, a
// reply lost) is tried again, so that the jobs go back to Redis rather than
// waiting there for their leases.
func TestHolderTriesAFailedReleaseAgain(t *testing.T) {
	st := &flakyRelease{fakeStore: newFakeStore(orders), fails: 2}
	h := newHolder(st, holdConfig{})
	ctx := context.Background()
	h.add(ctx, []kairos.Claimed{claimed(orders, "a", st.Now().Add(time.Hour))})
	h.close(ctx)
	if got := ids(st.releasedJobs()); !slices.Equal(got, []string{"a"}) {
		t.Errorf("released %v after two failed releases, want [a]", got)
	}
	if st.tries != 3 {
		t.Errorf("%d releases, want 3", st.tries)
	}
}

// TestHolderReleasesOverdueJobsOfATakeWhoseCallerStopped: the overdue jobs
// a take meets go back to Redis even when the consumer that took them is
// stopping (its context ended).
func TestHolderReleasesOverdueJobsOfATakeWhoseCallerStopped(t *testing.T) {
	st := &flakyRelease{fakeStore: newFakeStore(orders)}
	h := newHolder(st, holdConfig{MaxLate: time.Second})
	h.add(context.Background(), []kairos.Claimed{claimed(orders, "stale", st.Now().Add(-2*time.Second))})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if got := h.take(ctx, "t", "orders", 10); len(got) != 0 {
		t.Fatalf("took %v, want the overdue job released", ids(got))
	}
	if got := ids(st.releasedJobs()); !slices.Equal(got, []string{"stale"}) {
		t.Errorf("released %v, want [stale]", got)
	}
}

// TestHolderTurnIsOneAtATimeOnceARankedQueue: a queue in plain due order
// gives its turn to every caller at once; once a job of priority joins,
// the turn is one caller's until it gives it back.
func TestHolderTurnIsOneAtATimeOnceARankedQueue(t *testing.T) {
	h, st := testHolder(holdConfig{})
	ctx := context.Background()
	h.add(ctx, []kairos.Claimed{claimed(orders, "plain", st.Now())})
	both := make(chan struct{})
	go func() {
		done1 := h.turn("t", "orders")
		done2 := h.turn("t", "orders")
		done1()
		done2()
		close(both)
	}()
	receive(t, "two turns at once of a queue in plain order", both)

	urgent := claimed(orders, "urgent", st.Now())
	urgent.Job.Priority = 1
	h.add(ctx, []kairos.Claimed{urgent})
	h.mu.Lock()
	q := h.topics["t/orders"]
	h.mu.Unlock()
	done := h.turn("t", "orders")
	if q.turn.TryLock() {
		t.Fatal("the ranked queue's turn was free while a caller held it")
	}
	done()
	if !q.turn.TryLock() {
		t.Fatal("the ranked queue's turn still taken after it was given back")
	}
	q.turn.Unlock()
}

// TestHolderNudgesTheNextTakerWhileJobsRemain: a take that leaves ready
// jobs behind nudges the topic's signal, so that another consumer waiting
// for the topic takes them without waiting for a new job.
func TestHolderNudgesTheNextTakerWhileJobsRemain(t *testing.T) {
	h, st := testHolder(holdConfig{})
	ctx := context.Background()
	now := st.Now()
	h.add(ctx, []kairos.Claimed{claimed(orders, "a", now), claimed(orders, "b", now)})
	ready := h.ready("t", "orders")
	select { // the adds' nudge
	case <-ready:
	default:
	}
	h.take(ctx, "t", "orders", 1)
	select {
	case <-ready:
	default:
		t.Fatal("no nudge after a take that left a job ready")
	}
	h.take(ctx, "t", "orders", 1)
	select {
	case <-ready:
		t.Error("a nudge after the take that left nothing")
	default:
	}
}
