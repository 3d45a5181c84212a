package e2e

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/kairos-sh/kairos"
	"github.com/kairos-sh/kairos/callback"
	"github.com/kairos-sh/kairos/internal/rdb"
	"github.com/kairos-sh/kairos/internal/testproc"
	"github.com/kairos-sh/kairos/internal/testredis"
	"github.com/kairos-sh/kairos/internal/testwait"
)

// startKairos runs `kairos serve` (scanner and worker) on the package's
// Redis with fast lock and lease timings, plus the given environment.
func startKairos(t *testing.T, name, prefix string, env ...string) *testproc.Proc {
	t.Helper()
	base := []string{"KAIROS_REDIS_URL=" + testredis.URL(t), "KAIROS_AUTH_SECRET=" + secret, "KAIROS_PREFIX=" + prefix,
		"KAIROS_ADDR=127.0.0.1:0", "KAIROS_ALLOW_PRIVATE_URLS=1", "KAIROS_LOCK_TTL=1s", "KAIROS_LEASE_GRACE=1s",
		// A killed process may take jobs it popped but never started with it;
		// they are handed out again when their ready lease (default 60s) lapses.
		"KAIROS_READY_LEASE=3s",
		"KAIROS_ROLES=scanner,worker", "KAIROS_GRACE=5s"}
	return testproc.Start(t, name, append(base, env...)...)
}

// procStore is a store over the children's Redis and prefix, for setup and checks.
func procStore(t *testing.T, prefix string) *rdb.Store {
	t.Helper()
	return procStoreShards(t, prefix, 0)
}

// procStoreShards is procStore recording n shards (0: the default); the
// processes started on prefix then take that count.
func procStoreShards(t *testing.T, prefix string, n int) *rdb.Store {
	t.Helper()
	s := rdb.New(testredis.Client(t), rdb.Options{Prefix: prefix, NewSecret: callback.NewSecret, Shards: n})
	if err := s.Init(context.Background()); err != nil {
		t.Fatal(err)
	}
	return s
}

func putTopic(t *testing.T, s *rdb.Store, name, url string, timeout time.Duration) {
	t.Helper()
	if _, _, err := s.PutTopic(context.Background(), kairos.Topic{Tenant: "acme", Name: name, CallbackURL: url, Timeout: timeout}); err != nil {
		t.Fatal(err)
	}
}

func TestKilledWorkerJobRedeliveredByAnotherProcess(t *testing.T) {
	t.Parallel()
	prefix := testredis.Prefix(t)
	store := procStore(t, prefix)
	arrived := make(chan struct{}, 1)
	rcv := newReceiver(t, func(n int, h hit) int {
		if n == 1 {
			arrived <- struct{}{}
			time.Sleep(3 * time.Second) // hang: the process delivering this is killed meanwhile
		}
		return 200
	})
	putTopic(t, store, "t", rcv.URL, 2*time.Second)
	a := startKairos(t, "A", prefix)
	a.WaitLog(t, "consuming topic", 10*time.Second)
	if _, err := store.Enqueue(context.Background(), kairos.Job{JobKey: kairos.JobKey{Tenant: "acme", Topic: "t", ID: "k1"}, RunAt: store.Now().Add(300 * time.Millisecond)}); err != nil {
		t.Fatal(err)
	}
	select {
	case <-arrived:
	case <-time.After(15 * time.Second):
		t.Fatal("the job never reached the receiver")
	}
	a.Signal(syscall.SIGKILL) // mid-delivery: the attempt's outcome is never recorded
	start := time.Now()
	startKairos(t, "B", prefix)
	hs := rcv.waitHits(t, 2, 30*time.Second)
	t.Logf("redelivered %v after the kill (lease: 2s timeout + 1s grace; lock TTL 1s)", time.Since(start))
	if hs[0].Header.Get("webhook-id") != hs[1].Header.Get("webhook-id") {
		t.Error("the redelivery has a different webhook-id: receivers could not deduplicate it")
	}
	if got := hs[1].Header.Get("Kairos-Attempt"); got != "2" {
		t.Errorf("redelivery Kairos-Attempt = %s, want 2", got)
	}
	var j kairos.Job
	testwait.UntilNil(t, testwait.Patience, func() (err error) {
		if j, err = store.GetJob(context.Background(), kairos.JobKey{Tenant: "acme", Topic: "t", ID: "k1"}); err == nil && j.State != kairos.StateDelivered {
			err = fmt.Errorf("it is %s", j.State)
		}
		return err
	}, "job k1 delivered")
	if len(j.Log) != 2 || j.Log[0].Error == "" || j.Log[1].Status != 200 {
		t.Fatalf("attempt log %+v: want the lost attempt, then a 200", j.Log)
	}
	t.Logf("lost attempt recorded as: %s", j.Log[0].Error)
	waitSettled(t, store) // any duplicate has come
	if n := len(rcv.all()); n != 2 {
		t.Fatalf("receiver got %d requests, want 2 (the killed one and its redelivery)", n)
	}
}

func TestTwoScannerProcessesShareShardsNoDuplicates(t *testing.T) {
	t.Parallel()
	prefix := testredis.Prefix(t)
	store := procStore(t, prefix)
	rcv := newReceiver(t, nil)
	putTopic(t, store, "t", rcv.URL, 5*time.Second)
	a := startKairos(t, "A", prefix)
	b := startKairos(t, "B", prefix)
	a.WaitLog(t, "scanner started", 10*time.Second)
	b.WaitLog(t, "scanner started", 15*time.Second)
	const n = 400
	now := store.Now()
	jobs := make([]kairos.Job, n)
	for i := range jobs {
		jobs[i] = kairos.Job{JobKey: kairos.JobKey{Tenant: "acme", Topic: "t", ID: "j" + strconv.Itoa(i)},
			RunAt: now.Add(500*time.Millisecond + time.Duration(i)*3*time.Second/n)}
	}
	for _, r := range store.EnqueueBatch(context.Background(), jobs) {
		if r.Err != nil {
			t.Fatal(r.Err)
		}
	}
	rcv.waitHits(t, n, 30*time.Second)
	waitSettled(t, store) // any duplicate has come
	byJob := rcv.byJob()
	if len(byJob) != n {
		t.Fatalf("%d distinct jobs delivered, want %d", len(byJob), n)
	}
	for id, hs := range byJob {
		if len(hs) != 1 {
			t.Errorf("job %s delivered %d times", id, len(hs))
		}
	}
	c, err := store.Counts(context.Background(), "acme", "t")
	if err != nil {
		t.Fatal(err)
	}
	if c[kairos.StateDelivered] != n {
		t.Fatalf("delivered counter %d, want %d", c[kairos.StateDelivered], n)
	}
}

func TestSigtermFinishesInFlightAndReleasesLocks(t *testing.T) {
	t.Parallel()
	prefix := testredis.Prefix(t)
	store := procStore(t, prefix)
	arrived := make(chan struct{}, 1)
	rcv := newReceiver(t, func(n int, h hit) int {
		arrived <- struct{}{}
		time.Sleep(time.Second) // still in flight when SIGTERM arrives
		return 200
	})
	putTopic(t, store, "t", rcv.URL, 10*time.Second)
	a := startKairos(t, "A", prefix)
	a.WaitLog(t, "consuming topic", 10*time.Second)
	key := kairos.JobKey{Tenant: "acme", Topic: "t", ID: "inflight"}
	if _, err := store.Enqueue(context.Background(), kairos.Job{JobKey: key, RunAt: store.Now()}); err != nil {
		t.Fatal(err)
	}
	select {
	case <-arrived:
	case <-time.After(15 * time.Second):
		t.Fatal("the job never reached the receiver")
	}
	a.Signal(syscall.SIGTERM)
	if code := a.ExitCode(); code != 0 {
		t.Fatalf("exit code %d after SIGTERM, want 0", code)
	}
	j, err := store.GetJob(context.Background(), key)
	if err != nil {
		t.Fatal(err)
	}
	if j.State != kairos.StateDelivered || j.Attempts != 1 {
		t.Fatalf("after SIGTERM the in-flight job is %s after %d attempts; want delivered after 1", j.State, j.Attempts)
	}
	for _, k := range testredis.Keys(t, store.Client(), prefix) {
		if strings.HasSuffix(k, ":lock") {
			t.Errorf("shard mutex %s left after a clean stop", k)
		}
	}
}

// readMetric reads one sample from a kairos /metrics endpoint, named with
// its labels as the exposition writes them (`kairos_gone_total{topic="acme/t"}`);
// ok is false when the endpoint or the sample cannot be read.
func readMetric(url, name string) (v float64, ok bool) {
	resp, err := http.Get(url + "/metrics")
	if err != nil {
		return 0, false
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	for _, line := range strings.Split(string(b), "\n") {
		if rest, found := strings.CutPrefix(line, name+" "); found {
			v, err := strconv.ParseFloat(strings.TrimSpace(rest), 64)
			return v, err == nil
		}
	}
	return 0, false
}

// locksHeld reads kairos_scanner_locks_held from the child's /metrics; -1
// when it cannot be read.
func locksHeld(url string) int {
	v, ok := readMetric(url, "kairos_scanner_locks_held")
	if !ok {
		return -1
	}
	return int(v)
}

// TestKillBusiestOfThreeUnderLoad: three scanning processes under load
// share the 16 shards' mutexes about evenly; SIGKILL of the busiest, and
// the two left hold every shard within about a mutex expiry, losing no job.
func TestKillBusiestOfThreeUnderLoad(t *testing.T) {
	t.Parallel()
	prefix := testredis.Prefix(t)
	store := procStoreShards(t, prefix, 16) // the processes, given no count, take the recorded 16
	rcv := newReceiver(t, nil)
	putTopic(t, store, "t", rcv.URL, 2*time.Second)
	procs := []*testproc.Proc{startKairos(t, "A", prefix), startKairos(t, "B", prefix), startKairos(t, "C", prefix)}
	urls := make([]string, len(procs))
	for i, p := range procs {
		urls[i] = p.URL(t)
		p.WaitLog(t, "scanner started", 15*time.Second)
	}
	// Jobs every 10 ms for 8 s: every shard has work due all along, so its
	// mutex is held all along.
	const n = 800
	now := store.Now()
	jobs := make([]kairos.Job, n)
	for i := range jobs {
		jobs[i] = kairos.Job{JobKey: kairos.JobKey{Tenant: "acme", Topic: "t", ID: "s" + strconv.Itoa(i)},
			RunAt: now.Add(time.Second + time.Duration(i)*8*time.Second/n)}
	}
	for _, r := range store.EnqueueBatch(context.Background(), jobs) {
		if r.Err != nil {
			t.Fatal(r.Err)
		}
	}
	// A fair split: 16 shards over 3 processes is 6+5+5.
	held := make([]int, 3)
	testwait.UntilNil(t, testwait.Patience, func() error {
		sum, low := 0, 16
		for i, u := range urls {
			held[i] = locksHeld(u)
			sum += held[i]
			low = min(low, held[i])
		}
		if sum != 16 || low < 5 {
			return fmt.Errorf("held %v", held)
		}
		return nil
	}, "the 16 shards split fairly under load")
	t.Logf("shards held under load: %v", held)
	busiest := 0
	for i, u := range urls {
		if locksHeld(u) > locksHeld(urls[busiest]) {
			busiest = i
		}
	}
	killed := locksHeld(urls[busiest])
	procs[busiest].Signal(syscall.SIGKILL)
	killedAt := time.Now()
	testwait.UntilNil(t, testwait.Patience, func() error {
		sum := 0
		for i, u := range urls {
			if i != busiest {
				sum += locksHeld(u)
			}
		}
		if sum != 16 {
			return fmt.Errorf("they hold %d", sum)
		}
		return nil
	}, "the survivors holding all 16 shards")
	takeover := time.Since(killedAt)
	t.Logf("killed %s holding %d shards' mutexes; survivors held all 16 after %v (mutex expiry 1s)", procs[busiest].Name, killed, takeover)
	rcv.waitHits(t, n, 40*time.Second)
	waitSettled(t, store) // any duplicate has come
	byJob := rcv.byJob()
	dups, lost := 0, 0
	for i := range n {
		hs := byJob["s"+strconv.Itoa(i)]
		if len(hs) == 0 {
			lost++
		}
		dups += max(len(hs)-1, 0)
	}
	t.Logf("created %d, delivered %d, duplicates %d, lost %d", n, len(byJob), dups, lost)
	if lost != 0 {
		t.Fatalf("%d jobs lost", lost)
	}
}

// TestKillOfProcessHoldingPoppedJobs: a process that popped jobs from the
// ready lists (some in flight at a receiver that hangs, the rest held for
// a callback slot) is killed; another process delivers every one of them.
// Only those in flight at the kill may arrive twice.
func TestKillOfProcessHoldingPoppedJobs(t *testing.T) {
	t.Parallel()
	prefix := testredis.Prefix(t)
	store := procStore(t, prefix)
	var killed atomic.Bool
	inFlight := make(chan struct{}, 100)
	rcv := newReceiver(t, func(n int, h hit) int {
		if !killed.Load() {
			inFlight <- struct{}{}
			time.Sleep(4 * time.Second) // its process is killed meanwhile
		}
		return 200
	})
	if _, _, err := store.PutTopic(context.Background(), kairos.Topic{Tenant: "acme", Name: "t", CallbackURL: rcv.URL, Timeout: 2 * time.Second, Concurrency: 4}); err != nil {
		t.Fatal(err)
	}
	a := startKairos(t, "A", prefix)
	a.WaitLog(t, "scanner started", 15*time.Second)
	const n = 20
	due := store.Now().Add(500 * time.Millisecond)
	jobs := make([]kairos.Job, n)
	for i := range jobs {
		jobs[i] = kairos.Job{JobKey: kairos.JobKey{Tenant: "acme", Topic: "t", ID: "p" + strconv.Itoa(i)}, RunAt: due}
	}
	for _, r := range store.EnqueueBatch(context.Background(), jobs) {
		if r.Err != nil {
			t.Fatal(r.Err)
		}
	}
	for range 4 { // every callback slot of A busy: the next jobs it popped wait in it
		select {
		case <-inFlight:
		case <-time.After(15 * time.Second):
			t.Fatal("A did not start 4 callbacks")
		}
	}
	testwait.UntilNil(t, testwait.Patience, func() error {
		c, err := store.Counts(context.Background(), "acme", "t")
		if err == nil && c[kairos.StateActive] <= 4 {
			err = fmt.Errorf("%d active", c[kairos.StateActive])
		}
		return err
	}, "A holding popped jobs beside the 4 in flight")
	held, _ := readMetric(a.URL(t), "kairos_callbacks_in_flight")
	killed.Store(true)
	a.Signal(syscall.SIGKILL)
	killedAt := time.Now()
	startKairos(t, "B", prefix)
	rcv.waitHits(t, n+4, 60*time.Second) // the 4 that hung arrive again
	t.Logf("every job delivered %v after A was killed with %v callbacks in flight", time.Since(killedAt).Round(time.Millisecond), held)
	waitSettled(t, store) // any duplicate has come
	for i := range n {
		id := "p" + strconv.Itoa(i)
		hs := rcv.byJob()[id]
		if len(hs) == 0 {
			t.Errorf("job %s never delivered", id)
		}
		if len(hs) > 2 {
			t.Errorf("job %s delivered %d times", id, len(hs))
		}
	}
	if total := len(rcv.all()); total > n+4 {
		t.Errorf("%d callbacks, want %d: only the 4 in flight at the kill may arrive twice", total, n+4)
	}
}
