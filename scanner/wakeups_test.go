package scanner

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/kairos-sh/kairos"
	"github.com/kairos-sh/kairos/callback"
	"github.com/kairos-sh/kairos/internal/rdb"
	"github.com/kairos-sh/kairos/internal/testredis"
	"github.com/kairos-sh/kairos/internal/testwait"
)

// Each wake-up source of an idle shard, on its own: the tests keep every
// other source quiet (the scanner hears only the wakes a test forwards to
// it, MaxSleep is long unless it is the source), so that a source that no
// longer wakes the shard leaves its job unclaimed for half an hour and
// fails the test.

// scanFor is how long the tests wait for a claim: generous, for a loaded
// machine; a wake-up that is lost leaves the job for MaxSleep (30 min).
const scanFor = 20 * time.Second

// startScanner runs sc until the test ends or the returned stop is
// called (it waits for Run to return).
func startScanner(t *testing.T, sc *Scanner) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { sc.Run(ctx) })
	var once sync.Once
	stop = func() { once.Do(func() { cancel(); wg.Wait() }) }
	t.Cleanup(stop)
	return stop
}

// waitLooked waits until sc's shard 0 has finished a claim pass and its
// mutex is held (held) or given back.
func waitLooked(t *testing.T, sc *Scanner, held bool) {
	t.Helper()
	sh := sc.shards[0]
	testwait.Until(t, scanFor, func() bool {
		sh.mu.Lock()
		defer sh.mu.Unlock()
		return sh.passes > 0 && sh.held == held
	}, "shard 0's first look")
}

// pushed returns how many of shard 0's jobs are claimed and not finished.
func pushed(t *testing.T, s *rdb.Store) int {
	t.Helper()
	p, err := s.Claim(context.Background(), 0, 0, 0, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	return p.Active
}

// relayShardWakes subscribes to s's wake channel and forwards to the
// returned channel the wakes that name a shard's work, and no others (no
// resubscription, no scanner announcing itself or leaving, each of which
// makes every shard look at once). It returns once subscribed.
func relayShardWakes(t *testing.T, s *rdb.Store) <-chan rdb.Wake {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	in := s.SubscribeWake(ctx)
	if w := testwait.Receive(t, testwait.Patience, in, "the wake subscription"); !w.Resubscribed {
		t.Fatalf("first wake %+v, want the subscription's", w)
	}
	out := make(chan rdb.Wake, 64)
	var wg sync.WaitGroup
	wg.Go(func() {
		for w := range in {
			if w.Resubscribed || w.Topics || w.Scanner != "" || w.Flow != "" {
				continue
			}
			out <- w
		}
	})
	t.Cleanup(func() { cancel(); wg.Wait() })
	return out
}

func enqueue(t *testing.T, s *rdb.Store, id string, at time.Time) {
	t.Helper()
	if _, err := s.Enqueue(context.Background(), kairos.Job{JobKey: kairos.JobKey{Tenant: "acme", Topic: "t", ID: id}, RunAt: at}); err != nil {
		t.Fatal(err)
	}
}

// TestAJobFiledEarlierWakesTheShard: a job filed earlier than a shard's
// next look is claimed at its time, whether the shard is idle (its mutex
// given back, the next look half an hour away) or held (its mutex kept
// for work due within the hold window, here 50 minutes away).
func TestAJobFiledEarlierWakesTheShard(t *testing.T) {
	for _, tc := range []struct {
		name    string
		lockTTL time.Duration
		later   time.Duration // a job filed first, due then (0: none)
		held    bool
	}{
		{name: "idle", lockTTL: 2 * time.Second},
		{name: "held", lockTTL: 2 * time.Hour, later: 50 * time.Minute, held: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, _ := newStore(t)
			if tc.later > 0 {
				enqueue(t, s, "later", s.Now().Add(tc.later))
			}
			sc := New(s, Config{LockTTL: tc.lockTTL, Wakes: relayShardWakes(t, s)})
			startScanner(t, sc)
			waitLooked(t, sc, tc.held)
			enqueue(t, s, "now", s.Now().Add(100*time.Millisecond))
			testwait.Until(t, scanFor, func() bool { return pushed(t, s) == 1 }, "the job filed earlier claimed")
		})
	}
}

// TestAWakeFromAnotherProcessWakesTheShard: a wake another process
// publishes (Store.Wake) brings an idle shard's look forward to its time,
// ahead of it: the job, filed while the scanner heard nothing, is claimed
// then.
func TestAWakeFromAnotherProcessWakesTheShard(t *testing.T) {
	s, prefix := newStore(t)
	wakes := make(chan rdb.Wake, 64)
	sc := New(s, Config{LockTTL: 2 * time.Second, Wakes: wakes})
	startScanner(t, sc)
	waitLooked(t, sc, false)
	due := s.Now().Add(200 * time.Millisecond)
	enqueue(t, s, "a", due) // its own wake goes unheard: nothing relays it yet
	relayed := relayShardWakes(t, s)
	var wg sync.WaitGroup
	ctx, cancel := context.WithCancel(context.Background())
	wg.Go(func() {
		for {
			select {
			case w := <-relayed:
				wakes <- w
			case <-ctx.Done():
				return
			}
		}
	})
	t.Cleanup(func() { cancel(); wg.Wait() })
	other := rdb.New(testredis.Client(t), rdb.Options{Prefix: prefix, Shards: 1, NewSecret: callback.NewSecret})
	if err := other.Wake(context.Background(), 0, due); err != nil {
		t.Fatal(err)
	}
	testwait.Until(t, scanFor, func() bool { return pushed(t, s) == 1 }, "the job claimed after another process's wake")
}

// TestTheHorizonTimerLooksAgain: a shard that hears no wake is looked at
// again after MaxSleep, whether it kept its mutex (MaxSleep within the hold
// window) or gave it back: a job whose wake was lost is claimed then.
func TestTheHorizonTimerLooksAgain(t *testing.T) {
	for _, tc := range []struct {
		name    string
		lockTTL time.Duration
		held    bool
	}{
		{name: "held", lockTTL: 10 * time.Second, held: true},
		{name: "given back", lockTTL: 600 * time.Millisecond},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, _ := newStore(t)
			sc := New(s, Config{LockTTL: tc.lockTTL, MaxSleep: 500 * time.Millisecond, Wakes: make(chan rdb.Wake)})
			startScanner(t, sc)
			waitLooked(t, sc, tc.held)
			enqueue(t, s, "a", s.Now())
			testwait.Until(t, scanFor, func() bool { return pushed(t, s) == 1 }, "the job claimed at the shard's next look")
		})
	}
}

// TestAShardGivenBackTellsTheOthersItsNextWork: a scanner that gives an
// idle shard's mutex back says when the shard's next work is; another
// scanner, idle with its next look half an hour away and deaf to the job's
// own wake, claims the job at its time once the first is gone.
func TestAShardGivenBackTellsTheOthersItsNextWork(t *testing.T) {
	s, _ := newStore(t)
	wakes := make(chan rdb.Wake, 64)
	b := New(s, Config{ID: "b", LockTTL: 2 * time.Second, Wakes: wakes})
	startScanner(t, b)
	waitLooked(t, b, false)
	enqueue(t, s, "a", s.Now().Add(4*time.Second)) // beyond a's hold window: a gives the shard back
	relayed := relayShardWakes(t, s)
	a := New(s, Config{ID: "a", LockTTL: 2 * time.Second, Wakes: make(chan rdb.Wake)})
	stopA := startScanner(t, a)
	waitLooked(t, a, false)
	stopA()
	if n := pushed(t, s); n != 0 {
		t.Fatalf("%d jobs claimed by the scanner that gave the shard back; the machine is too slow for this test", n)
	}
	w := testwait.Receive(t, testwait.Patience, relayed, "the wake of the shard given back")
	wakes <- w
	testwait.Until(t, scanFor, func() bool { return pushed(t, s) == 1 }, "the job claimed by the other scanner at its time")
}
