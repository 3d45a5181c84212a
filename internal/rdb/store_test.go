package rdb

import (
	"context"
	"errors"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/kairos-sh/kairos"
	"github.com/kairos-sh/kairos/internal/testclock"
	"github.com/kairos-sh/kairos/internal/testredis"
)

func TestMain(m *testing.M) { os.Exit(testredis.Main(m)) }

func newStore(t *testing.T, opts Options) (*Store, *testclock.Clock) {
	t.Helper()
	clk := testclock.New(time.Date(2026, 11, 21, 10, 30, 0, 0, time.UTC))
	opts.Prefix = testredis.Prefix(t)
	if opts.Now == nil {
		opts.Now = clk.Now
	}
	s := New(testredis.Client(t), opts)
	if err := s.Init(context.Background()); err != nil {
		t.Fatal(err)
	}
	return s, clk
}

func key(id string) kairos.JobKey { return kairos.JobKey{Tenant: "acme", Topic: "orders", ID: id} }

func enqueue(t *testing.T, s *Store, id string, runAt time.Time) kairos.Job {
	t.Helper()
	j, err := s.Enqueue(context.Background(), kairos.Job{JobKey: key(id), RunAt: runAt, Payload: []byte(`{"n":1}`)})
	if err != nil {
		t.Fatal(err)
	}
	return j
}

func wantCounts(t *testing.T, s *Store, want map[kairos.State]int64) {
	t.Helper()
	full := map[kairos.State]int64{}
	for _, st := range kairos.States {
		full[st] = want[st]
	}
	got, err := s.Counts(context.Background(), "acme", "orders")
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(full, got); d != "" {
		t.Errorf("counts (-want +got):\n%s", d)
	}
}

// claimAll claims every shard as a scanner would at the store's time,
// ahead by ahead.
func claimAll(t *testing.T, s *Store, ahead time.Duration) []kairos.Claimed {
	t.Helper()
	var out []kairos.Claimed
	for sh := range s.Shards() {
		c, err := s.ClaimDue(context.Background(), sh, 500, ahead, 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, c.Jobs...)
	}
	return out
}

// claimOne claims every shard and wants exactly one job, id.
func claimOne(t *testing.T, s *Store, id string) kairos.Claimed {
	t.Helper()
	cs := claimAll(t, s, 0)
	if len(cs) != 1 || cs[0].Job.ID != id {
		t.Fatalf("claimed %s, want %s alone", claimedIDs(cs), id)
	}
	return cs[0]
}

func claimedIDs(cs []kairos.Claimed) []string {
	ids := make([]string, len(cs))
	for i, c := range cs {
		ids[i] = c.Job.ID
	}
	return ids
}

// finishJob records an outcome of j's attempt, has it applied, and returns
// the job's state as stored then.
func finishJob(t *testing.T, s *Store, j kairos.Job, at time.Time, status int, ok, dead bool, retryAt time.Time) kairos.State {
	t.Helper()
	ctx := context.Background()
	if _, err := s.Finish(ctx, j.JobKey, kairos.Attempt{N: j.Attempts, At: at, Status: status, Duration: 3 * time.Millisecond}, outcomeOf(ok, dead), retryAt); err != nil {
		t.Fatal(err)
	}
	return getJob(t, s, j.ID).State
}

func getJob(t *testing.T, s *Store, id string) kairos.Job {
	t.Helper()
	j, err := s.GetJob(context.Background(), key(id))
	if err != nil {
		t.Fatal(err)
	}
	return j
}

func TestShardCountRecorded(t *testing.T) {
	s, _ := newStore(t, Options{Shards: 8})
	other := New(s.c, Options{Prefix: s.k.prefix, Shards: 16})
	if err := other.Init(context.Background()); !errors.Is(err, ErrShardMismatch) {
		t.Fatalf("Init with 16 shards over 8: got %v, want ErrShardMismatch", err)
	}
	same := New(s.c, Options{Prefix: s.k.prefix, Shards: 8})
	if err := same.Init(context.Background()); err != nil {
		t.Fatalf("Init with the recorded count: %v", err)
	}
	auto := New(s.c, Options{Prefix: s.k.prefix})
	if err := auto.Init(context.Background()); err != nil || auto.Shards() != 8 {
		t.Fatalf("Init with no count over 8: %d shards, %v; want the recorded 8", auto.Shards(), err)
	}
}

// A fresh Redis given no count gets DefaultShards, and a later process
// given none takes them, while one given another count is refused.
func TestShardCountDefault(t *testing.T) {
	s, _ := newStore(t, Options{})
	if s.Shards() != DefaultShards {
		t.Fatalf("fresh Redis: %d shards, want %d", s.Shards(), DefaultShards)
	}
	if v := s.c.HGet(context.Background(), s.k.meta(), "shards").Val(); v != strconv.Itoa(DefaultShards) {
		t.Fatalf("recorded %q shards, want %d", v, DefaultShards)
	}
	again := New(s.c, Options{Prefix: s.k.prefix})
	if err := again.Init(context.Background()); err != nil || again.Shards() != DefaultShards {
		t.Fatalf("second Init: %d shards, %v", again.Shards(), err)
	}
	other := New(s.c, Options{Prefix: s.k.prefix, Shards: 16})
	err := other.Init(context.Background())
	if !errors.Is(err, ErrShardMismatch) || !strings.Contains(err.Error(), "KAIROS_SHARDS=4") {
		t.Fatalf("Init with 16 over the default: %v, want ErrShardMismatch naming KAIROS_SHARDS=4", err)
	}
}

// TestLayoutRecordedAndOthersRefused: a fresh Redis gets the layout
// version; data of layout 1 (which recorded none), of layout 3 (job
// records with a text header) or of an unknown layout is refused with a
// message that says what to do, and nothing is written.
func TestLayoutRecordedAndOthersRefused(t *testing.T) {
	ctx := context.Background()
	s, _ := newStore(t, Options{})
	if v := s.c.HGet(ctx, s.k.meta(), "layout").Val(); v != strconv.Itoa(LayoutVersion) {
		t.Fatalf("layout recorded %q, want %d", v, LayoutVersion)
	}
	for name, meta := range map[string][]any{"layout 1": {"shards", "16"}, "layout 2": {"shards", "16", "layout", "2"},
		"layout 3": {"shards", "16", "layout", "3"}, "layout 4": {"shards", "16", "layout", "4"}, "a later layout": {"shards", "16", "layout", strconv.Itoa(LayoutVersion + 1)}} {
		t.Run(name, func(t *testing.T) {
			prefix := testredis.Prefix(t)
			c := testredis.Client(t)
			c.HSet(ctx, prefix+":meta", meta...)
			if name == "layout 3" {
				c.HSet(ctx, prefix+":{0}:jobs", "1/a", "s,,n0yj7xyo,n0yj7xyo,,,,,|{}")
			}
			before := testredis.Keys(t, c, prefix)
			err := New(c, Options{Prefix: prefix}).Init(ctx)
			if !errors.Is(err, ErrLayout) || !strings.Contains(err.Error(), "KAIROS_PREFIX") {
				t.Fatalf("Init over %s: %v, want ErrLayout saying what to do", name, err)
			}
			if d := cmp.Diff(before, testredis.Keys(t, c, prefix)); d != "" {
				t.Errorf("keys changed (-before +after):\n%s", d)
			}
			t.Log(err)
		})
	}
}

func TestLifecycleDelivered(t *testing.T) {
	ctx := context.Background()
	s, clk := newStore(t, Options{Retention: time.Hour})
	due := clk.Now().Add(250 * time.Millisecond)
	j := enqueue(t, s, "o1", due)
	if j.State != kairos.StateScheduled || j.UID == "" {
		t.Fatalf("enqueue: state %s uid %q", j.State, j.UID)
	}
	wantCounts(t, s, map[kairos.State]int64{kairos.StateScheduled: 1})
	if cs := claimAll(t, s, 0); len(cs) != 0 {
		t.Fatalf("claimed %v before due", claimedIDs(cs))
	}
	clk.Add(250 * time.Millisecond)
	c := claimOne(t, s, "o1")
	got := c.Job
	if got.State != kairos.StateActive || got.Attempts != 1 || string(got.Payload) != `{"n":1}` || got.UID != j.UID ||
		!got.RunAt.Equal(due) || !c.Due.Equal(due) {
		t.Fatalf("claimed job = %+v due %v", got, c.Due)
	}
	wantCounts(t, s, map[kairos.State]int64{kairos.StateActive: 1})
	if st := finishJob(t, s, got, clk.Now(), 200, true, false, time.Time{}); st != kairos.StateDelivered {
		t.Fatalf("finish: %v", st)
	}
	wantCounts(t, s, map[kairos.State]int64{kairos.StateDelivered: 1})
	got = getJob(t, s, "o1")
	if got.State != kairos.StateDelivered || len(got.Log) != 1 || got.Log[0].Status != 200 || got.Log[0].Duration != 3*time.Millisecond {
		t.Fatalf("delivered job = %+v", got)
	}
	// Readable for the retention, then gone with its listing entry, by the
	// claim that processes its expiry entry (its wheel slot, 100 ms wide,
	// is processed whole): no sweep over all jobs.
	clk.Add(time.Hour - time.Second)
	claimAll(t, s, 0)
	getJob(t, s, "o1")
	clk.Add(time.Second)
	claimAll(t, s, 0)
	if _, err := s.GetJob(ctx, key("o1")); !errors.Is(err, kairos.ErrNotFound) {
		t.Fatalf("after the retention: %v, want not found", err)
	}
	if page, err := s.ListJobs(ctx, ListQuery{Tenant: "acme", Topic: "orders", Limit: 10}); err != nil || len(page.Jobs) != 0 {
		t.Fatalf("listing after the retention: %+v %v", page, err)
	}
	for _, k := range testredis.Keys(t, s.c, s.k.prefix) {
		if strings.Contains(k, ":g:") || strings.Contains(k, ":i:") || strings.Contains(k, ":w:") {
			t.Errorf("key %s left after the job expired", k)
		}
	}
	// The id is free again: creating it makes a new job with a new identity.
	if again := enqueue(t, s, "o1", clk.Now().Add(time.Minute)); again.UID == j.UID {
		t.Fatal("a delivered id re-created kept its old webhook id")
	}
}

// TestDeliveredExpiryEarlyInItsSlot: a delivered job's record expiry is
// processed with its wheel slot, whole, even when the claim comes before
// the expiry's own instant in the slot: the record goes (at most a slot
// early), and the claim leaves nothing due behind it. A claim that filed
// the entry again would find it due at once, call after call, until the
// expiry's instant.
func TestDeliveredExpiryEarlyInItsSlot(t *testing.T) {
	ctx := context.Background()
	s, clk := newStore(t, Options{Shards: 1, Retention: time.Hour})
	clk.Add(250 * time.Millisecond) // finished at .250: its expiry is 60 ms into a 100 ms slot
	enqueue(t, s, "e1", clk.Now())
	c := claimOne(t, s, "e1")
	if st := finishJob(t, s, c.Job, clk.Now(), 200, true, false, time.Time{}); st != kairos.StateDelivered {
		t.Fatalf("finish: %v", st)
	}
	claimAll(t, s, 0) // records the outcome
	clk.Add(time.Hour - 40*time.Millisecond)
	got, err := s.ClaimDue(ctx, 0, 100, 0, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Jobs) != 0 {
		t.Fatalf("claimed %v", claimedIDs(got.Jobs))
	}
	if !got.Next.IsZero() && !got.Next.After(got.Now) {
		t.Fatalf("after the claim the wheel's next slot is due at %v, not after the claim's now %v: the expiry was filed again", got.Next, got.Now)
	}
	if _, err := s.GetJob(ctx, key("e1")); !errors.Is(err, kairos.ErrNotFound) {
		t.Fatalf("the expired record, its slot processed: %v, want not found", err)
	}
}

// TestDueNowIsReady: a job created due now is ready until claimed.
func TestDueNowIsReady(t *testing.T) {
	s, clk := newStore(t, Options{})
	if j := enqueue(t, s, "now", clk.Now()); j.State != kairos.StateReady {
		t.Fatalf("state = %s, want ready", j.State)
	}
	wantCounts(t, s, map[kairos.State]int64{kairos.StateReady: 1})
	claimOne(t, s, "now")
	wantCounts(t, s, map[kairos.State]int64{kairos.StateActive: 1})
}

// TestClaimAhead: a claim running ahead takes a job due within the lead,
// and says when it is due; a later one is left.
func TestClaimAhead(t *testing.T) {
	s, clk := newStore(t, Options{})
	enqueue(t, s, "soon", clk.Now().Add(30*time.Millisecond))
	enqueue(t, s, "later", clk.Now().Add(500*time.Millisecond))
	cs := claimAll(t, s, 50*time.Millisecond)
	if len(cs) != 1 || cs[0].Job.ID != "soon" || !cs[0].Due.Equal(clk.Now().Add(30*time.Millisecond)) {
		t.Fatalf("claimed ahead: %+v", cs)
	}
}

// outcomeOf is the outcome of an attempt that delivered (ok), or failed
// for good (dead), or else is retried.
func outcomeOf(ok, dead bool) kairos.Outcome {
	switch {
	case ok:
		return kairos.OutcomeDelivered
	case dead:
		return kairos.OutcomeDead
	}
	return kairos.OutcomeRetrying
}
