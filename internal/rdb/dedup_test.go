package rdb

import (
	"context"
	"errors"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kairos-sh/kairos"
)

// idSeq makes ids for DedupID in tests: distinct, in no particular shard.
func idSeq() func() string {
	var n atomic.Int64
	return func() string { return "job_" + strconv.FormatInt(n.Add(1), 10) }
}

// dedupJob is a create of "acme/orders" with dedup key k, its id drawn
// for the key's shard.
func dedupJob(s *Store, newID func() string, k string, window time.Duration, runAt time.Time) kairos.Job {
	return kairos.Job{JobKey: kairos.JobKey{Tenant: "acme", Topic: "orders", ID: s.DedupID("acme", "orders", k, newID)},
		RunAt: runAt, Payload: []byte(`{"k":"` + k + `"}`), Create: kairos.CreateOptions{DedupKey: k, DedupWindow: window}}
}

// TestDedupRacingCreatesMakeOneJob: of 50 racing creates of one dedup key
// exactly one creates a job; the 49 others are duplicates naming it. A
// create after the window (on the test clock) creates a new job.
func TestDedupRacingCreatesMakeOneJob(t *testing.T) {
	ctx := context.Background()
	s, clk := newStore(t, Options{Shards: 4})
	newID := idSeq()
	const racers = 50
	res := make([]BatchResult, racers)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range racers {
		wg.Go(func() {
			<-start
			res[i] = s.Upsert(ctx, dedupJob(s, newID, "charge-8412", 10*time.Minute, clk.Now().Add(time.Hour)))
		})
	}
	close(start)
	wg.Wait()
	ids := map[string]int{}
	results := map[CreateResult]int{}
	for i, r := range res {
		if r.Err != nil {
			t.Fatalf("create %d: %v", i, r.Err)
		}
		ids[r.Job.ID]++
		results[r.Result]++
		if r.Result == ResultDuplicate && r.Job.State != kairos.StateScheduled {
			t.Errorf("duplicate %d shows state %q, want the first job's (scheduled)", i, r.Job.State)
		}
	}
	if len(ids) != 1 || results[ResultCreated] != 1 || results[ResultDuplicate] != racers-1 {
		t.Fatalf("ids %v, results %v; want one id, 1 created and %d duplicates", ids, results, racers-1)
	}
	wantCounts(t, s, map[kairos.State]int64{kairos.StateScheduled: 1})

	clk.Add(10*time.Minute - time.Millisecond)
	if r := s.Upsert(ctx, dedupJob(s, newID, "charge-8412", 10*time.Minute, clk.Now().Add(time.Hour))); r.Err != nil || r.Result != ResultDuplicate || ids[r.Job.ID] == 0 {
		t.Fatalf("just within the window: %v %s %s, want a duplicate of the first", r.Err, r.Result, r.Job.ID)
	}
	clk.Add(time.Millisecond)
	r := s.Upsert(ctx, dedupJob(s, newID, "charge-8412", 10*time.Minute, clk.Now().Add(time.Hour)))
	if r.Err != nil || r.Result != ResultCreated || ids[r.Job.ID] != 0 {
		t.Fatalf("after the window: %v %s %s, want a new job", r.Err, r.Result, r.Job.ID)
	}
	wantCounts(t, s, map[kairos.State]int64{kairos.StateScheduled: 2})
}

// TestDedupInOneBatch: two items of one batch with one dedup key are one
// create and a duplicate; another key is its own create.
func TestDedupInOneBatch(t *testing.T) {
	ctx := context.Background()
	s, clk := newStore(t, Options{Shards: 4})
	newID := idSeq()
	at := clk.Now().Add(time.Minute)
	plain := kairos.Job{JobKey: key("p"), RunAt: at} // in a call of its own, without the options' values
	res := s.EnqueueBatch(ctx, []kairos.Job{dedupJob(s, newID, "a", 0, at), plain, dedupJob(s, newID, "b", 0, at), dedupJob(s, newID, "a", 0, at), plain})
	res = append(res[:1], res[2:4]...)
	for i, want := range []CreateResult{ResultCreated, ResultCreated, ResultDuplicate} {
		if res[i].Err != nil || res[i].Result != want {
			t.Errorf("item %d: %v %s, want %s", i, res[i].Err, res[i].Result, want)
		}
	}
	if res[2].Job.ID != res[0].Job.ID || res[2].Job.State != kairos.StateScheduled {
		t.Errorf("duplicate answered %s (%s), want %s", res[2].Job.ID, res[2].Job.State, res[0].Job.ID)
	}
	wantCounts(t, s, map[kairos.State]int64{kairos.StateScheduled: 3})
}

// TestDedupOutlivesTheJob: a duplicate within the window answers the first
// job once it was delivered, and its id alone once its record is gone.
func TestDedupOutlivesTheJob(t *testing.T) {
	ctx := context.Background()
	s, clk := newStore(t, Options{Shards: 2})
	newID := idSeq()
	first := s.Upsert(ctx, dedupJob(s, newID, "k", time.Hour, clk.Now()))
	if first.Err != nil || first.Result != ResultCreated {
		t.Fatalf("first create: %+v", first)
	}
	c := claimKey(t, s, first.Job.JobKey)
	if _, err := s.Finish(ctx, c.JobKey, kairos.Attempt{N: c.Attempts, At: clk.Now(), Status: 204}, kairos.OutcomeDelivered, time.Time{}); err != nil {
		t.Fatal(err)
	}
	r := s.Upsert(ctx, dedupJob(s, newID, "k", time.Hour, clk.Now()))
	if r.Err != nil || r.Result != ResultDuplicate || r.Job.ID != first.Job.ID || r.Job.State != kairos.StateDelivered {
		t.Fatalf("after delivery: %v %s %s %s, want a duplicate of the delivered %s", r.Err, r.Result, r.Job.ID, r.Job.State, first.Job.ID)
	}
	// the record gone (as past its retention): the id is what is known
	at, err := s.locate(ctx, first.Job.JobKey)
	if err != nil {
		t.Fatal(err)
	}
	s.c.HDel(ctx, s.k.pool(at.shard), at.field)
	r = s.Upsert(ctx, dedupJob(s, newID, "k", time.Hour, clk.Now()))
	if r.Err != nil || r.Result != ResultDuplicate || r.Job.JobKey != first.Job.JobKey || r.Job.State != "" {
		t.Fatalf("record gone: %v %s %+v, want a duplicate of key %v alone", r.Err, r.Result, r.Job, first.Job.JobKey)
	}
	// the key expires in Redis with its window (PX) as well
	if ttl := s.c.PTTL(ctx, s.k.dedup(at.shard, at.h, "k")).Val(); ttl <= 0 || ttl > time.Hour {
		t.Errorf("dedup key's TTL %v, want up to the window (1h)", ttl)
	}
}

// TestDedupNeedsItsShard: a dedup create whose id is not from DedupID is
// refused rather than checked in the wrong shard.
func TestDedupNeedsItsShard(t *testing.T) {
	s, clk := newStore(t, Options{Shards: 16})
	for i := range 100 {
		j := kairos.Job{JobKey: key("x" + strconv.Itoa(i)), RunAt: clk.Now(), Create: kairos.CreateOptions{DedupKey: "k"}}
		if s.k.shardOf(j.JobKey) != s.k.dedupShard("acme", "orders", "k") {
			if r := s.Upsert(context.Background(), j); r.Err == nil {
				t.Fatalf("created %v in another shard than its dedup key's", j.JobKey)
			}
			return
		}
	}
	t.Fatal("no id of another shard in 100")
}

// TestOnConflictKeep: keep leaves a job of the id that has not fired as it
// is (also while it is being delivered); a fired one is created anew.
func TestOnConflictKeep(t *testing.T) {
	ctx := context.Background()
	s, clk := newStore(t, Options{Shards: 1})
	first := enqueue(t, s, "a", clk.Now().Add(time.Hour))
	keep := kairos.Job{JobKey: key("a"), RunAt: clk.Now().Add(2 * time.Hour), Payload: []byte(`{"n":2}`), Create: kairos.CreateOptions{OnConflict: kairos.ConflictKeep}}
	r := s.Upsert(ctx, keep)
	if r.Err != nil || r.Result != ResultKept || !r.Job.RunAt.Equal(first.RunAt) || string(r.Job.Payload) != `{"n":1}` {
		t.Fatalf("keep: %v %s run_at %s payload %s; want kept, the first's", r.Err, r.Result, r.Job.RunAt, r.Job.Payload)
	}
	if got := getJob(t, s, "a"); !got.RunAt.Equal(first.RunAt) || string(got.Payload) != `{"n":1}` || got.UID != first.UID {
		t.Errorf("stored after keep: run_at %s payload %s", got.RunAt, got.Payload)
	}
	// active: kept as well, nothing changes
	enqueue(t, s, "b", clk.Now())
	c := claimKey(t, s, key("b"))
	keep.ID = "b"
	if r := s.Upsert(ctx, keep); r.Err != nil || r.Result != ResultKept || r.Job.State != kairos.StateActive {
		t.Fatalf("keep while active: %v %s %s", r.Err, r.Result, r.Job.State)
	}
	// delivered: fired, so the id makes a new job
	finishJob(t, s, c, clk.Now(), 204, true, false, time.Time{})
	if r := s.Upsert(ctx, keep); r.Err != nil || r.Result != ResultCreated {
		t.Fatalf("keep over a delivered job: %v %s, want created", r.Err, r.Result)
	}
	wantCounts(t, s, map[kairos.State]int64{kairos.StateScheduled: 2, kairos.StateDelivered: 1})
}

// TestOnConflictDebounceBoundedByMaxDelay: each debounce moves the job to
// its new time and takes its payload, but never past its first create's
// time plus max_delay (on the test clock).
func TestOnConflictDebounceBoundedByMaxDelay(t *testing.T) {
	ctx := context.Background()
	s, clk := newStore(t, Options{Shards: 1})
	t0 := clk.Now()
	debounce := func(n int) BatchResult {
		t.Helper()
		r := s.Upsert(ctx, kairos.Job{JobKey: key("d"), RunAt: clk.Now().Add(time.Minute), Payload: []byte(`{"n":` + strconv.Itoa(n) + `}`),
			Create: kairos.CreateOptions{OnConflict: kairos.ConflictDebounce, MaxDelay: 5 * time.Minute}})
		if r.Err != nil {
			t.Fatal(r.Err)
		}
		return r
	}
	if r := debounce(1); r.Result != ResultCreated {
		t.Fatalf("first: %s", r.Result)
	}
	for i, want := range []struct {
		after time.Duration
		runAt time.Duration // from t0
	}{{50 * time.Second, 110 * time.Second}, {2 * time.Minute, 3*time.Minute + 50*time.Second}, {90 * time.Second, 5 * time.Minute}, {20 * time.Second, 5 * time.Minute}} {
		clk.Add(want.after)
		r := debounce(i + 2)
		if r.Result != ResultDebounced || !r.Job.RunAt.Equal(t0.Add(want.runAt)) || !r.Job.CreatedAt.Equal(t0) {
			t.Fatalf("debounce %d at t0+%v: %s run_at %v created %v; want debounced, run_at t0+%v, created t0", i+2, clk.Now().Sub(t0), r.Result, r.Job.RunAt.Sub(t0), r.Job.CreatedAt.Sub(t0), want.runAt)
		}
		got := getJob(t, s, "d")
		if !got.RunAt.Equal(t0.Add(want.runAt)) || string(got.Payload) != `{"n":`+strconv.Itoa(i+2)+`}` {
			t.Fatalf("stored after debounce %d: run_at t0+%v payload %s", i+2, got.RunAt.Sub(t0), got.Payload)
		}
	}
	// at t0 + max_delay it is due, and the claim takes it
	clk.Set(t0.Add(5 * time.Minute))
	if c := claimKey(t, s, key("d")); string(c.Payload) != `{"n":5}` {
		t.Errorf("fired with payload %s, want the last one's", c.Payload)
	}
	wantCounts(t, s, map[kairos.State]int64{kairos.StateActive: 1})
}

// TestDedupRetryAfterNotReplicated: a create whose replicas did not
// confirm it (503 in the API) is retried with its dedup key: the retry
// finds the job the master stored, and says again that replicas have not
// confirmed it, rather than creating a second one.
func TestDedupRetryAfterNotReplicated(t *testing.T) {
	ctx := context.Background()
	s, clk := newStore(t, Options{Shards: 2, WaitReplicas: 1, WaitTimeout: 10 * time.Millisecond})
	newID := idSeq()
	first := s.Upsert(ctx, dedupJob(s, newID, "k", 0, clk.Now().Add(time.Hour)))
	if !errors.Is(first.Err, ErrNotReplicated) || first.Result != ResultCreated {
		t.Fatalf("first: %v %s, want created and ErrNotReplicated (no replica here)", first.Err, first.Result)
	}
	retry := s.Upsert(ctx, dedupJob(s, newID, "k", 0, clk.Now().Add(time.Hour)))
	if !errors.Is(retry.Err, ErrNotReplicated) || retry.Result != ResultDuplicate || retry.Job.ID != first.Job.ID {
		t.Fatalf("retry: %v %s %s, want a duplicate of %s, not yet replicated", retry.Err, retry.Result, retry.Job.ID, first.Job.ID)
	}
	wantCounts(t, s, map[kairos.State]int64{kairos.StateScheduled: 1})
}
