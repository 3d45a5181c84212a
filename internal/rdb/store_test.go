package rdb

import (
	"context"
	"errors"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/redis/go-redis/v9"

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

func counts(t *testing.T, s *Store) map[kairos.State]int64 {
	t.Helper()
	c, err := s.Counts(context.Background(), "acme", "orders")
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func wantCounts(t *testing.T, s *Store, want map[kairos.State]int64) {
	t.Helper()
	full := map[kairos.State]int64{}
	for _, st := range kairos.States {
		full[st] = want[st]
	}
	if d := cmp.Diff(full, counts(t, s)); d != "" {
		t.Errorf("counts (-want +got):\n%s", d)
	}
}

// claimAll claims every shard as a scanner would at now.
func claimAll(t *testing.T, s *Store, now time.Time) int {
	t.Helper()
	o := s.opts
	o.Now = func() time.Time { return now }
	at := New(s.c, o)
	n := 0
	for sh := range s.Shards() {
		c, err := at.ClaimDue(context.Background(), sh, 500)
		if err != nil {
			t.Fatal(err)
		}
		n += c.Moved
	}
	return n
}

func pop(t *testing.T, s *Store) Popped {
	t.Helper()
	p, err := s.Pop(context.Background(), "acme", "orders", time.Second)
	if err != nil {
		t.Fatalf("pop: %v", err)
	}
	return p
}

func TestShardCountRecorded(t *testing.T) {
	s, _ := newStore(t, Options{Shards: 8})
	other := New(s.c, Options{Prefix: s.k.prefix, Shards: 16})
	err := other.Init(context.Background())
	if !errors.Is(err, ErrShardMismatch) {
		t.Fatalf("Init with 16 shards over 8: got %v, want ErrShardMismatch", err)
	}
	t.Log(err)
	same := New(s.c, Options{Prefix: s.k.prefix, Shards: 8})
	if err := same.Init(context.Background()); err != nil {
		t.Fatalf("Init with the recorded count: %v", err)
	}
}

func TestLifecycleDelivered(t *testing.T) {
	ctx := context.Background()
	s, clk := newStore(t, Options{})
	due := clk.Now().Add(250 * time.Millisecond)
	j := enqueue(t, s, "o1", due)
	if j.State != kairos.StateScheduled || j.UID == "" {
		t.Fatalf("enqueue: state %s uid %q", j.State, j.UID)
	}
	wantCounts(t, s, map[kairos.State]int64{kairos.StateScheduled: 1})
	if n := claimAll(t, s, clk.Now()); n != 0 {
		t.Fatalf("claimed %d before due", n)
	}
	clk.Add(250 * time.Millisecond)
	if n := claimAll(t, s, clk.Now()); n != 1 {
		t.Fatalf("claimed %d at due, want 1", n)
	}
	wantCounts(t, s, map[kairos.State]int64{kairos.StateReady: 1})
	p := pop(t, s)
	got, ok, err := s.Start(ctx, p, 5*time.Second)
	if err != nil || !ok {
		t.Fatalf("start: ok=%v err=%v", ok, err)
	}
	if got.Attempts != 1 || string(got.Payload) != `{"n":1}` || got.UID != j.UID || !got.RunAt.Equal(due) {
		t.Fatalf("started job = %+v", got)
	}
	wantCounts(t, s, map[kairos.State]int64{kairos.StateActive: 1})
	out, err := s.Finish(ctx, key("o1"), kairos.Attempt{N: 1, At: clk.Now(), Status: 200, Duration: 3 * time.Millisecond}, true, false, time.Time{})
	if err != nil || out != kairos.StateDelivered {
		t.Fatalf("finish: %v %v", out, err)
	}
	wantCounts(t, s, map[kairos.State]int64{kairos.StateDelivered: 1})
	got, err = s.GetJob(ctx, key("o1"))
	if err != nil {
		t.Fatal(err)
	}
	if got.State != kairos.StateDelivered || len(got.Log) != 1 || got.Log[0].Status != 200 || got.Log[0].Duration != 3*time.Millisecond {
		t.Fatalf("delivered job = %+v", got)
	}
	ttl := s.c.TTL(ctx, s.k.forJob(key("o1")).job).Val()
	if ttl <= 23*time.Hour || ttl > 24*time.Hour {
		t.Fatalf("delivered job TTL = %v, want the 24h retention", ttl)
	}
	if n := s.c.ZCard(ctx, s.k.forJob(key("o1")).bucket).Val(); n != 0 {
		t.Fatalf("bucket still holds %d members after ack", n)
	}
	// The id is free again: creating it makes a new job with a new identity.
	again := enqueue(t, s, "o1", clk.Now().Add(time.Minute))
	if again.UID == j.UID {
		t.Fatal("a delivered id re-created kept its old webhook id")
	}
}

func TestImmediateGoesStraightToReadyList(t *testing.T) {
	s, clk := newStore(t, Options{})
	j := enqueue(t, s, "now", clk.Now())
	if j.State != kairos.StateReady {
		t.Fatalf("state = %s, want ready", j.State)
	}
	p := pop(t, s)
	if p.ID != "now" || p.Gen != "1" {
		t.Fatalf("popped %+v", p)
	}
}

func TestPoppedButNeverStartedHandedOutAgain(t *testing.T) {
	ctx := context.Background()
	s, clk := newStore(t, Options{ReadyLease: 3 * time.Second})
	enqueue(t, s, "orphan", clk.Now().Add(time.Second))
	clk.Add(time.Second)
	if n := claimAll(t, s, clk.Now()); n != 1 {
		t.Fatalf("claimed %d, want 1", n)
	}
	pop(t, s) // its worker is killed before it starts the attempt
	clk.Add(3*time.Second - time.Millisecond)
	if n := claimAll(t, s, clk.Now()); n != 0 {
		t.Fatalf("claimed %d within the ready lease, want 0", n)
	}
	clk.Add(time.Millisecond)
	if n := claimAll(t, s, clk.Now()); n != 1 {
		t.Fatalf("claimed %d after the ready lease, want 1", n)
	}
	j, ok, err := s.Start(ctx, pop(t, s), time.Second)
	if err != nil || !ok || j.Attempts != 1 || len(j.Log) != 0 {
		t.Fatalf("start after the lease: attempts=%d log=%+v ok=%v err=%v; want attempt 1, no log", j.Attempts, j.Log, ok, err)
	}
}

// A worker told to stop while its pop waits may still get the entries Redis
// hands it; it starts them (for the grace period to fire) rather than drop
// them for the ready lease to recover a minute later.
func TestNextStartsWhatItPopsWhileStopping(t *testing.T) {
	// The pops go through a client of their own name, to see when one waits.
	opt, err := redis.ParseURL(testredis.URL(t))
	if err != nil {
		t.Fatal(err)
	}
	opt.ClientName = "pop-" + testredis.Prefix(t)
	popper := redis.NewClient(opt)
	t.Cleanup(func() { popper.Close() })
	s, clk := newStore(t, Options{Blocking: popper})
	ctx, stop := context.WithCancel(context.Background())
	type result struct {
		jobs []kairos.Job
		err  error
	}
	done := make(chan result, 1)
	go func() {
		jobs, err := s.Next(ctx, "acme", "orders", 5, 5*time.Second, time.Second)
		done <- result{jobs, err}
	}()
	// The pop is waiting when the stop comes; the job arrives after it.
	deadline := time.Now().Add(10 * time.Second)
	for !blocked(t, s, opt.ClientName) {
		if time.Now().After(deadline) {
			t.Fatal("the pop never blocked")
		}
		time.Sleep(5 * time.Millisecond)
	}
	stop()
	enqueue(t, s, "late", clk.Now())
	r := <-done
	switch {
	case len(r.jobs) == 1:
		if r.jobs[0].ID != "late" || r.jobs[0].Attempts != 1 || r.jobs[0].State != kairos.StateActive {
			t.Fatalf("started %+v", r.jobs[0])
		}
	case r.err != nil && !blocked(t, s, opt.ClientName):
		// The pop gave up on the stop: the job must still be on its list.
		if n, err := s.ReadyLen(context.Background(), "acme", "orders"); err != nil || n != 1 {
			t.Fatalf("pop ended with %v and left %d entries (%v), want the job still listed", r.err, n, err)
		}
	default:
		t.Fatalf("next = %d jobs, %v", len(r.jobs), r.err)
	}
}

// blocked reports whether a client of that name waits in a blocking command.
func blocked(t *testing.T, s *Store, name string) bool {
	t.Helper()
	list, err := s.c.ClientList(context.Background()).Result()
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(list, "\n") {
		if !strings.Contains(line, " name="+name+" ") {
			continue
		}
		for _, f := range strings.Fields(line) {
			if v, ok := strings.CutPrefix(f, "flags="); ok && strings.Contains(v, "b") {
				return true
			}
		}
	}
	return false
}

func TestStaleFinishIgnored(t *testing.T) {
	ctx := context.Background()
	s, clk := newStore(t, Options{LeaseGrace: time.Second})
	enqueue(t, s, "slow", clk.Now())
	first, ok, err := s.Start(ctx, pop(t, s), time.Second)
	if err != nil || !ok {
		t.Fatal(ok, err)
	}
	// The worker goes silent; after its lease the job is handed out again.
	clk.Add(2*time.Second + time.Millisecond)
	if n := claimAll(t, s, clk.Now()); n != 1 {
		t.Fatalf("re-claimed %d after the lease, want 1", n)
	}
	second, ok, err := s.Start(ctx, pop(t, s), time.Second)
	if err != nil || !ok || second.Attempts != 2 {
		t.Fatalf("second start: attempts=%d ok=%v err=%v", second.Attempts, ok, err)
	}
	if len(second.Log) != 1 || second.Log[0].N != 1 {
		t.Fatalf("lost attempt not logged: %+v", second.Log)
	}
	// The first worker comes back and reports failure: it must not clobber attempt 2.
	out, err := s.Finish(ctx, key("slow"), kairos.Attempt{N: first.Attempts, At: clk.Now(), Error: "late"}, false, true, time.Time{})
	if err != nil || out != "" {
		t.Fatalf("stale finish = %v, %v; want empty (stale)", out, err)
	}
	out, err = s.Finish(ctx, key("slow"), kairos.Attempt{N: 2, At: clk.Now(), Status: 204}, true, false, time.Time{})
	if err != nil || out != kairos.StateDelivered {
		t.Fatalf("finish = %v, %v", out, err)
	}
	wantCounts(t, s, map[kairos.State]int64{kairos.StateDelivered: 1})
}

func TestRetryThenDeadThenReplay(t *testing.T) {
	ctx := context.Background()
	s, clk := newStore(t, Options{})
	enqueue(t, s, "r", clk.Now())
	j, _, _ := s.Start(ctx, pop(t, s), time.Second)
	retryAt := clk.Now().Add(5 * time.Second)
	out, err := s.Finish(ctx, key("r"), kairos.Attempt{N: j.Attempts, At: clk.Now(), Status: 500}, false, false, retryAt)
	if err != nil || out != kairos.StateRetrying {
		t.Fatal(out, err)
	}
	wantCounts(t, s, map[kairos.State]int64{kairos.StateRetrying: 1})
	if n := claimAll(t, s, clk.Now().Add(4*time.Second)); n != 0 {
		t.Fatalf("claimed %d before the backoff ended", n)
	}
	clk.Add(5 * time.Second)
	if n := claimAll(t, s, clk.Now()); n != 1 {
		t.Fatalf("claimed %d after the backoff", n)
	}
	j, _, _ = s.Start(ctx, pop(t, s), time.Second)
	out, err = s.Finish(ctx, key("r"), kairos.Attempt{N: j.Attempts, At: clk.Now(), Status: 500, Response: "boom"}, false, true, time.Time{})
	if err != nil || out != kairos.StateDead {
		t.Fatal(out, err)
	}
	wantCounts(t, s, map[kairos.State]int64{kairos.StateDead: 1})
	dead, _ := s.GetJob(ctx, key("r"))
	if dead.State != kairos.StateDead || len(dead.Log) != 2 || dead.Log[1].Response != "boom" {
		t.Fatalf("dead job = %+v", dead)
	}
	if _, err := s.Reschedule(ctx, key("r"), clk.Now()); !errors.Is(err, kairos.ErrConflict) {
		t.Fatalf("reschedule dead: %v, want conflict", err)
	}
	re, err := s.Replay(ctx, key("r"))
	if err != nil || re.State != kairos.StateReady || re.Attempts != 0 {
		t.Fatalf("replay: %+v %v", re, err)
	}
	wantCounts(t, s, map[kairos.State]int64{kairos.StateReady: 1})
	j, ok, _ := s.Start(ctx, pop(t, s), time.Second)
	if !ok || j.Attempts != 1 {
		t.Fatalf("replayed start: ok=%v attempts=%d", ok, j.Attempts)
	}
	if _, err := s.Replay(ctx, key("r")); !errors.Is(err, kairos.ErrConflict) {
		t.Fatalf("replay of a live job: %v, want conflict", err)
	}
}

func TestCancelAndRescheduleDropStaleEntries(t *testing.T) {
	ctx := context.Background()
	s, clk := newStore(t, Options{})
	enqueue(t, s, "c", clk.Now())
	if err := s.Cancel(ctx, key("c")); err != nil {
		t.Fatal(err)
	}
	if _, ok, err := s.Start(ctx, pop(t, s), time.Second); ok || err != nil {
		t.Fatalf("a cancelled job started: ok=%v err=%v", ok, err)
	}
	if _, err := s.GetJob(ctx, key("c")); !errors.Is(err, kairos.ErrNotFound) {
		t.Fatalf("get cancelled: %v", err)
	}
	if err := s.Cancel(ctx, key("c")); !errors.Is(err, kairos.ErrNotFound) {
		t.Fatalf("cancel twice: %v", err)
	}
	// Rescheduling a job that already sits on the ready list makes that entry stale.
	enqueue(t, s, "m", clk.Now())
	later := clk.Now().Add(time.Hour)
	j, err := s.Reschedule(ctx, key("m"), later)
	if err != nil || j.State != kairos.StateScheduled || !j.NextRunAt.Equal(later) {
		t.Fatalf("reschedule: %+v %v", j, err)
	}
	if _, ok, _ := s.Start(ctx, pop(t, s), time.Second); ok {
		t.Fatal("the stale ready entry of a rescheduled job started")
	}
	wantCounts(t, s, map[kairos.State]int64{kairos.StateScheduled: 1})
	if n := claimAll(t, s, later.Add(-time.Millisecond)); n != 0 {
		t.Fatalf("claimed %d before the new time", n)
	}
	if n := claimAll(t, s, later); n != 1 {
		t.Fatalf("claimed %d at the new time", n)
	}
}

func TestUpsertReplacesUnfiredJob(t *testing.T) {
	ctx := context.Background()
	s, clk := newStore(t, Options{})
	first := enqueue(t, s, "u", clk.Now().Add(time.Minute))
	second, err := s.Enqueue(ctx, kairos.Job{JobKey: key("u"), RunAt: clk.Now().Add(2 * time.Minute), Payload: []byte(`"v2"`)})
	if err != nil {
		t.Fatal(err)
	}
	if second.UID != first.UID {
		t.Fatal("replacing an unfired job changed its webhook id")
	}
	wantCounts(t, s, map[kairos.State]int64{kairos.StateScheduled: 1})
	if n := claimAll(t, s, clk.Now().Add(time.Minute)); n != 0 {
		t.Fatalf("claimed %d at the old time", n)
	}
	clk.Add(2 * time.Minute)
	if n := claimAll(t, s, clk.Now()); n != 1 {
		t.Fatalf("claimed %d at the new time", n)
	}
	j, ok, _ := s.Start(ctx, pop(t, s), time.Second)
	if !ok || string(j.Payload) != `"v2"` {
		t.Fatalf("started %q ok=%v", j.Payload, ok)
	}
	if _, err := s.Enqueue(ctx, kairos.Job{JobKey: key("u"), RunAt: clk.Now()}); !errors.Is(err, kairos.ErrConflict) {
		t.Fatalf("upsert while active: %v, want conflict", err)
	}
}

// A batch of new jobs skips the read of each job; a job that already
// exists, or whose id comes twice in one call, must still be read, or its
// identity and the counters would go wrong.
func TestBatchOfNewJobsReadsRepeatsAndOldOnes(t *testing.T) {
	ctx := context.Background()
	s, clk := newStore(t, Options{Shards: 1}) // one shard: one script call
	at := clk.Now().Add(time.Minute)
	job := func(id, payload string) kairos.Job {
		return kairos.Job{JobKey: key(id), RunAt: at, Payload: []byte(payload)}
	}
	res := s.EnqueueBatch(ctx, []kairos.Job{job("a", `1`), job("b", `1`), job("a", `2`)})
	for i, r := range res {
		if r.Err != nil {
			t.Fatalf("item %d: %v", i, r.Err)
		}
	}
	if !regexp.MustCompile(`^msg_[a-z2-7]{24}$`).MatchString(res[0].Job.UID) {
		t.Errorf("webhook id %q is not msg_ and 24 lower-case base32 characters", res[0].Job.UID)
	}
	if res[2].Job.UID != res[0].Job.UID {
		t.Errorf("the repeat of a got webhook id %s, the first %s", res[2].Job.UID, res[0].Job.UID)
	}
	wantCounts(t, s, map[kairos.State]int64{kairos.StateScheduled: 2})
	a, err := s.GetJob(ctx, key("a"))
	if err != nil || string(a.Payload) != `2` {
		t.Fatalf("a = %q, %v; want the second payload", a.Payload, err)
	}

	old := res[1].Job
	res = s.EnqueueBatch(ctx, []kairos.Job{job("c", `1`), job("b", `3`)})
	for i, r := range res {
		if r.Err != nil {
			t.Fatalf("item %d: %v", i, r.Err)
		}
	}
	if res[1].Job.UID != old.UID || !res[1].Job.CreatedAt.Equal(old.CreatedAt) {
		t.Errorf("replacing b in a batch changed its identity: %+v, was %+v", res[1].Job, old)
	}
	wantCounts(t, s, map[kairos.State]int64{kairos.StateScheduled: 3})
}

func TestClaimBatchesAndReportsNext(t *testing.T) {
	ctx := context.Background()
	s, clk := newStore(t, Options{Shards: 1})
	for i := range 1200 {
		enqueue(t, s, "b"+time.Duration(i).String(), clk.Now().Add(time.Duration(i)*time.Millisecond+time.Millisecond))
	}
	clk.Add(2 * time.Second)
	far := clk.Now().Add(time.Hour)
	enqueue(t, s, "far", far)
	total := 0
	for {
		c, err := s.ClaimDue(ctx, 0, 500)
		if err != nil {
			t.Fatal(err)
		}
		n, next := c.Moved, c.Next
		if n > 500 {
			t.Fatalf("claimed %d in one batch, limit 500", n)
		}
		total += n
		if n < 500 {
			// The earliest member left is a claimed job's lease.
			if want := clk.Now().Add(DefaultReadyLease); !next.Equal(want) {
				t.Fatalf("next = %v, want the lease end %v", next, want)
			}
			break
		}
	}
	if total != 1200 {
		t.Fatalf("claimed %d, want 1200", total)
	}
	if l, _ := s.ReadyLen(ctx, "acme", "orders"); l != 1200 {
		t.Fatalf("ready list holds %d, want 1200", l)
	}
}

// TestDeliveredJobsLeaveTheListingIndex: once a delivered job's record
// expires, the scanner's next claim drops its listing entry, so the index
// does not grow with every job ever delivered; an id created again keeps its entry.
func TestDeliveredJobsLeaveTheListingIndex(t *testing.T) {
	ctx := context.Background()
	s, clk := newStore(t, Options{Shards: 1, Retention: time.Second})
	for _, id := range []string{"gone", "again"} {
		enqueue(t, s, id, clk.Now())
		deliverAll(t, s, clk.Now(), 1)
	}
	idx := s.k.index(0, "acme", "orders")
	if n := s.c.ZCard(ctx, idx).Val(); n != 2 {
		t.Fatalf("index holds %d entries after two deliveries, want 2", n)
	}
	// The records expire (Redis's own TTL, 1s); "again" is created anew meanwhile.
	deadline := time.Now().Add(10 * time.Second)
	for s.c.Exists(ctx, s.k.job(0, key("gone"))).Val() == 1 {
		if time.Now().After(deadline) {
			t.Fatal("the delivered record never expired")
		}
		time.Sleep(50 * time.Millisecond)
	}
	for s.c.Exists(ctx, s.k.job(0, key("again"))).Val() == 1 {
		time.Sleep(50 * time.Millisecond)
	}
	enqueue(t, s, "again", clk.Now().Add(time.Hour))
	claimAll(t, s, clk.Now().Add(7*time.Second)) // past the expiry plus its 5s margin
	got := s.c.ZRange(ctx, idx, 0, -1).Val()
	if len(got) != 1 || got[0] != "again" {
		t.Fatalf("index = %v, want only the re-created job", got)
	}
	if n := s.c.ZCard(ctx, s.k.expiring(0)).Val(); n != 0 {
		t.Fatalf("expiring set still holds %d entries", n)
	}
}

// Long values are stored in pieces, so that a job's hash stays a compact
// listpack, and read back whole; a value too long for pieces is kept whole.
func TestLongValuesStayCompact(t *testing.T) {
	s, clk := newStore(t, Options{})
	ctx := context.Background()
	long := func(n int) string {
		b := make([]byte, n)
		for i := range b {
			b[i] = 'a' + byte(i%26)
		}
		return string(b)
	}
	for _, c := range []struct {
		name     string
		payload  int
		url      int
		listpack bool
	}{
		{"short", 40, 0, true},
		{"payload 192 bytes, url 150", 192, 150, true},
		{"payload at the piece limit", 64 * maxPieces, 0, true},
		{"payload past it", 64*maxPieces + 1, 0, false},
		{"url past its pieces", 40, 300, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			want := kairos.Job{
				JobKey:  key(c.name),
				RunAt:   clk.Now().Add(time.Hour),
				Payload: []byte(`"` + long(c.payload-2) + `"`),
				Headers: map[string]string{"X-Trace": long(90)},
			}
			if c.url > 0 {
				want.CallbackURL = "https://example.com/" + long(c.url-20)
			}
			if _, err := s.Enqueue(ctx, want); err != nil {
				t.Fatal(err)
			}
			got, err := s.GetJob(ctx, want.JobKey)
			if err != nil {
				t.Fatal(err)
			}
			if string(got.Payload) != string(want.Payload) || got.CallbackURL != want.CallbackURL ||
				got.Headers["X-Trace"] != want.Headers["X-Trace"] {
				t.Fatalf("read back differs: payload %d bytes (want %d), url %q, header %d bytes",
					len(got.Payload), len(want.Payload), got.CallbackURL, len(got.Headers["X-Trace"]))
			}
			page, err := s.ListJobs(ctx, ListQuery{Tenant: "acme", Topic: "orders", Limit: 100})
			if err != nil {
				t.Fatal(err)
			}
			for _, j := range page.Jobs {
				if j.ID == want.ID && j.CallbackURL != want.CallbackURL {
					t.Fatalf("listed url %q, want %q", j.CallbackURL, want.CallbackURL)
				}
			}
			enc, err := s.c.ObjectEncoding(ctx, s.k.forJob(want.JobKey).job).Result()
			if err != nil {
				t.Fatal(err)
			}
			if (enc == "listpack") != c.listpack {
				t.Fatalf("encoding %s, want listpack=%v", enc, c.listpack)
			}
		})
	}
}

// TestSweepKeepsUp: claims sweep expired listing entries at most once a
// second, but a sweep that found a full batch lets the next claim sweep
// again at once, so any backlog drains.
func TestSweepKeepsUp(t *testing.T) {
	ctx := context.Background()
	s, clk := newStore(t, Options{Shards: 1})
	const n = 2*sweepBatch + 500
	idx := s.k.index(0, "acme", "orders")
	pipe := s.c.Pipeline()
	for i := range n {
		id := "gone-" + strconv.Itoa(i)
		pipe.ZAdd(ctx, idx, redis.Z{Score: float64(i), Member: id})
		pipe.ZAdd(ctx, s.k.expiring(0), redis.Z{Score: float64(ms(clk.Now().Add(-time.Minute))), Member: "acme/orders/" + id})
	}
	if _, err := pipe.Exec(ctx); err != nil {
		t.Fatal(err)
	}
	for claim := 1; claim <= 3; claim++ {
		if _, err := s.ClaimDue(ctx, 0, 500); err != nil {
			t.Fatal(err)
		}
		want := max(n-claim*sweepBatch, 0)
		if left := s.c.ZCard(ctx, idx).Val(); left != int64(want) {
			t.Fatalf("after claim %d: %d listing entries left, want %d", claim, left, want)
		}
	}
	if left := s.c.ZCard(ctx, s.k.expiring(0)).Val(); left != 0 {
		t.Fatalf("expiring set holds %d entries after the backlog drained", left)
	}
	// Drained: the next claim within the second does not look again.
	if _, err := s.ClaimDue(ctx, 0, 500); err != nil {
		t.Fatal(err)
	}
	if s.sweepLimit(0) != 0 {
		t.Fatal("a sweep was allowed again within a second of the last")
	}
}

// TestScriptCacheLost: a Redis that lost its script cache (restarted, or a
// replica promoted) answers NOSCRIPT to pipelined script calls; creates,
// starts and outcomes load the script and run again.
func TestScriptCacheLost(t *testing.T) {
	ctx := context.Background()
	srv := testredis.New(t)
	c := redis.NewClient(&redis.Options{Addr: srv.Addr})
	t.Cleanup(func() { c.Close() })
	clk := testclock.New(time.Date(2026, 11, 21, 10, 30, 0, 0, time.UTC))
	s := New(c, Options{Prefix: "k", Now: clk.Now, Blocking: c})
	if err := s.Init(ctx); err != nil {
		t.Fatal(err)
	}
	flush := func() {
		t.Helper()
		if err := c.ScriptFlush(ctx).Err(); err != nil {
			t.Fatal(err)
		}
	}
	flush()
	for _, r := range s.EnqueueBatch(ctx, []kairos.Job{
		{JobKey: key("a"), RunAt: clk.Now(), Payload: []byte(`1`)},
		{JobKey: key("b"), RunAt: clk.Now(), Payload: []byte(`2`)},
	}) {
		if r.Err != nil {
			t.Fatalf("batch create after SCRIPT FLUSH: %v", r.Err)
		}
	}
	flush()
	jobs, err := s.Next(ctx, "acme", "orders", 2, time.Second, time.Second)
	if err != nil || len(jobs) != 2 {
		t.Fatalf("start after SCRIPT FLUSH: %d jobs, err %v", len(jobs), err)
	}
	flush()
	for _, j := range jobs {
		st, err := s.Finish(ctx, j.JobKey, kairos.Attempt{N: j.Attempts, At: clk.Now(), Status: 204}, true, false, time.Time{})
		if err != nil || st != kairos.StateDelivered {
			t.Fatalf("finish %s after SCRIPT FLUSH: state %q, err %v", j.ID, st, err)
		}
	}
}

// TestAttemptLogStaysCompact: a delivered job's log of one attempt keeps
// its hash a listpack, a log longer than 64 bytes is kept in pieces, and a
// log that shrinks (the oldest of 10 attempts dropped) leaves no stale piece.
func TestAttemptLogStaysCompact(t *testing.T) {
	ctx := context.Background()
	s, clk := newStore(t, Options{Shards: 1})
	jobKey := func(id string) string { return s.k.forJob(key(id)).job }
	encoding := func(id string) string {
		t.Helper()
		enc, err := s.c.ObjectEncoding(ctx, jobKey(id)).Result()
		if err != nil {
			t.Fatal(err)
		}
		return enc
	}
	attempt := func(id string, ok bool, response string) {
		t.Helper()
		j, started, err := s.Start(ctx, pop(t, s), time.Second)
		if err != nil || !started || j.ID != id {
			t.Fatalf("start %s: %v %v %s", id, started, err, j.ID)
		}
		a := kairos.Attempt{N: j.Attempts, At: clk.Now(), Duration: 12345 * time.Microsecond, Status: 500, Response: response}
		if ok {
			a.Status = 204
		}
		if _, err := s.Finish(ctx, j.JobKey, a, ok, false, clk.Now()); err != nil {
			t.Fatal(err)
		}
	}

	enqueue(t, s, "one", clk.Now())
	attempt("one", true, `{"received":true}`)
	if enc := encoding("one"); enc != "listpack" {
		t.Fatalf("delivered job's hash is a %s", enc)
	}
	j, err := s.GetJob(ctx, key("one"))
	if err != nil || len(j.Log) != 1 || j.Log[0].Response != `{"received":true}` || !j.Log[0].At.Equal(clk.Now()) || j.Log[0].Status != 204 {
		t.Fatalf("log read back: %+v, %v", j.Log, err)
	}

	// Eleven failed attempts: the first answers 200 bytes, so the log takes
	// more pieces until the eleventh pushes that attempt out (the log stays
	// under the 16 pieces it may take).
	enqueue(t, s, "many", clk.Now())
	for n := 1; n <= 11; n++ {
		response := "short"
		if n == 1 {
			response = strings.Repeat("x", 200)
		}
		attempt("many", false, response)
		claimAll(t, s, clk.Now())
	}
	j, err = s.GetJob(ctx, key("many"))
	if err != nil {
		t.Fatalf("log after it shrank: %v", err)
	}
	if len(j.Log) != 10 || j.Log[0].N != 2 || j.Log[9].N != 11 || j.Log[0].Response != "short" {
		t.Fatalf("log holds attempts %d..%d (%d), want 2..11", j.Log[0].N, j.Log[len(j.Log)-1].N, len(j.Log))
	}
	if enc := encoding("many"); enc != "listpack" {
		t.Fatalf("hash of a job with 10 short attempts is a %s", enc)
	}
	page, err := s.ListJobs(ctx, ListQuery{Tenant: "acme", Topic: "orders", Limit: 10})
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range page.Jobs {
		if l.ID == "many" && len(l.Log) != 10 {
			t.Fatalf("listed log has %d attempts", len(l.Log))
		}
	}
}

// A job's webhook id is derived, not stored: the same on every attempt,
// kept when the job is replaced before it fires, new when its id is
// created again (even within the same ms), and another in a deployment of
// another salt. Hashes written with a stored uid keep it.
func TestWebhookIDs(t *testing.T) {
	ctx := context.Background()
	s, clk := newStore(t, Options{})
	j := enqueue(t, s, "w", clk.Now())
	if !regexp.MustCompile(`^msg_[a-z2-7]{24}$`).MatchString(j.UID) {
		t.Fatalf("webhook id %q", j.UID)
	}
	if s.c.HExists(ctx, s.k.forJob(key("w")).job, "uid").Val() {
		t.Fatal("a new job's hash stores its webhook id")
	}
	replaced := enqueue(t, s, "w", clk.Now())
	started := startOne(t, s)
	if replaced.UID != j.UID || started.UID != j.UID {
		t.Fatalf("webhook ids: created %s, replaced %s, started %s; want one", j.UID, replaced.UID, started.UID)
	}
	if _, err := s.Finish(ctx, key("w"), kairos.Attempt{N: 1, At: clk.Now(), Status: 200}, true, false, time.Time{}); err != nil {
		t.Fatal(err)
	}
	// Created again in the same ms as the delivered one: a new identity, a
	// ms later, listed once.
	again := enqueue(t, s, "w", clk.Now().Add(time.Hour))
	if again.UID == j.UID || !again.CreatedAt.Equal(j.CreatedAt.Add(time.Millisecond)) {
		t.Fatalf("created again: uid %s (first %s), created %v (first %v)", again.UID, j.UID, again.CreatedAt, j.CreatedAt)
	}
	got, err := s.GetJob(ctx, key("w"))
	if err != nil || got.UID != again.UID || !got.CreatedAt.Equal(again.CreatedAt) {
		t.Fatalf("read back: %+v, %v", got, err)
	}
	if pages := listAll(t, s, 10); len(pages) != 1 || len(pages[0]) != 1 {
		t.Fatalf("listed %v, want w once", pages)
	}
	// Another deployment's salt gives the same key and time another id.
	other, _ := newStore(t, Options{})
	if id := other.webhookID(key("w"), j.CreatedAt.UnixMilli()); id == j.UID || id == "" {
		t.Fatalf("another deployment's webhook id %q, first %q", id, j.UID)
	}
	// A hash written with a stored uid (by an earlier version) keeps it,
	// through a replace and a start.
	old := enqueue(t, s, "old", clk.Now())
	s.c.HSet(ctx, s.k.forJob(key("old")).job, "uid", "msg_storedbyanearlierversion")
	if r := enqueue(t, s, "old", clk.Now()); r.UID != "msg_storedbyanearlierversion" {
		t.Fatalf("replaced: uid %s", r.UID)
	}
	if started := startOne(t, s); started.ID != "old" || started.UID != "msg_storedbyanearlierversion" || old.UID == started.UID {
		t.Fatalf("started %s uid %s", started.ID, started.UID)
	}
}

// startOne starts the one live job on the topic's ready list, dropping the
// stale entries before it.
func startOne(t *testing.T, s *Store) kairos.Job {
	t.Helper()
	jobs, err := s.Next(context.Background(), "acme", "orders", 10, time.Second, time.Second)
	if err != nil || len(jobs) != 1 {
		t.Fatalf("started %d jobs, %v; want 1", len(jobs), err)
	}
	return jobs[0]
}
