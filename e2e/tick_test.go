package e2e

import (
	"context"
	"encoding/json"
	"github.com/kairos-sh/kairos/internal/rdb"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/kairos-sh/kairos"
	"github.com/kairos-sh/kairos/internal/testproc"
	"github.com/kairos-sh/kairos/internal/testredis"
)

// startTick runs `kairos tick` with args on the package's Redis under prefix.
func startTick(t *testing.T, name, prefix string, args ...string) *testproc.Proc {
	t.Helper()
	bin, err := testproc.Binary()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, append([]string{"tick"}, args...)...)
	cmd.Env = append(cmd.Environ(), "KAIROS_REDIS_URL="+testredis.URL(t), "KAIROS_PREFIX="+prefix, "KAIROS_ALLOW_PRIVATE_URLS=1",
		"KAIROS_LOCK_TTL=1s", "KAIROS_LEASE_GRACE=1s", "KAIROS_READY_LEASE=3s", "KAIROS_LOG_LEVEL=warn")
	return testproc.StartCmd(t, name, cmd)
}

// tickSummary waits for a tick to end, checks it exited 0 and reads the
// summary it printed.
func tickSummary(t *testing.T, p *testproc.Proc) kairos.TickSummary {
	t.Helper()
	select {
	case <-p.Done():
	case <-time.After(60 * time.Second):
		t.Fatalf("tick %s still running after 60s:\n%s", p.Name, p.Output())
	}
	if code := p.ExitCode(); code != 0 {
		t.Fatalf("tick %s exited %d:\n%s", p.Name, code, p.Output())
	}
	for _, line := range strings.Split(p.Output(), "\n") {
		if strings.HasPrefix(line, `{"delivered"`) {
			var s kairos.TickSummary
			if err := json.Unmarshal([]byte(line), &s); err != nil {
				t.Fatal(err)
			}
			return s
		}
	}
	t.Fatalf("tick %s printed no summary:\n%s", p.Name, p.Output())
	return kairos.TickSummary{}
}

// Jobs due before a tick and during it are delivered by it, once each; a
// job due after it is left, and the summary says when it is due.
func TestTickDeliversWhatIsDueOnce(t *testing.T) {
	t.Parallel()
	prefix := testredis.Prefix(t)
	store := procStore(t, prefix)
	rcv := newReceiver(t, nil)
	putTopic(t, store, "t", rcv.URL, 5*time.Second)
	if _, err := testproc.Binary(); err != nil { // built before the jobs' times are set
		t.Fatal(err)
	}
	now := store.Now()
	var jobs []kairos.Job
	for i := range 20 {
		at := now.Add(-time.Duration(i+1) * time.Second) // due before
		if i >= 10 {
			at = now.Add(time.Second + time.Duration(i-10)*100*time.Millisecond) // due during the tick
		}
		jobs = append(jobs, kairos.Job{JobKey: kairos.JobKey{Tenant: "acme", Topic: "t", ID: "j" + strconv.Itoa(i)}, RunAt: at})
	}
	later := now.Add(time.Hour)
	jobs = append(jobs, kairos.Job{JobKey: kairos.JobKey{Tenant: "acme", Topic: "t", ID: "later"}, RunAt: later})
	for _, r := range store.EnqueueBatch(context.Background(), jobs) {
		if r.Err != nil {
			t.Fatal(r.Err)
		}
	}
	sum := tickSummary(t, startTick(t, "tick", prefix, "--for", "3s"))
	t.Logf("summary: %+v (started %v after the first job's due time)", sum, time.Since(store.Local(now)))
	byJob := rcv.byJob()
	for i := range 20 {
		if n := len(byJob["j"+strconv.Itoa(i)]); n != 1 {
			t.Errorf("job j%d delivered %d times by the tick, want once", i, n)
		}
	}
	if len(byJob["later"]) != 0 {
		t.Error("the job due in an hour was delivered")
	}
	if sum.Delivered != 20 || sum.Failed != 0 || sum.InFlight != 0 || sum.Shards != rdb.DefaultShards {
		t.Errorf("summary %+v: want 20 delivered, none failed or in flight, %d shards", sum, rdb.DefaultShards)
	}
	if sum.NextDue == nil || sum.NextDue.After(later) {
		t.Errorf("next_due %v: want a time no later than the pending job's %v", sum.NextDue, later)
	}
	for i := range 20 {
		j, err := store.GetJob(context.Background(), jobs[i].JobKey)
		if err != nil {
			t.Fatal(err)
		}
		if j.State != kairos.StateDelivered {
			t.Errorf("job %s is %s after the tick, want delivered", j.ID, j.State)
		}
	}
}

// A tick with nothing to do exits at once, long before its time is up,
// with a summary.
func TestTickOnEmptyRedisExitsAtOnce(t *testing.T) {
	t.Parallel()
	prefix := testredis.Prefix(t)
	procStore(t, prefix)
	began := time.Now()
	sum := tickSummary(t, startTick(t, "tick", prefix, "--for", "10m"))
	t.Logf("an empty tick ran %v (its own figure: %.3fs): %+v", time.Since(began), sum.Seconds, sum)
	if sum.Delivered != 0 || sum.NextDue != nil || sum.Shards != rdb.DefaultShards {
		t.Errorf("summary %+v: want nothing delivered, no next due time, %d shards scanned", sum, rdb.DefaultShards)
	}
}

// Two ticks at once share the shards through their leases: every job is
// delivered once, by one of them.
func TestConcurrentTicksDeliverEachJobOnce(t *testing.T) {
	t.Parallel()
	prefix := testredis.Prefix(t)
	store := procStore(t, prefix)
	rcv := newReceiver(t, nil)
	putTopic(t, store, "t", rcv.URL, 5*time.Second)
	const n = 200
	if _, err := testproc.Binary(); err != nil {
		t.Fatal(err)
	}
	now := store.Now()
	jobs := make([]kairos.Job, n)
	for i := range jobs {
		jobs[i] = kairos.Job{JobKey: kairos.JobKey{Tenant: "acme", Topic: "t", ID: "c" + strconv.Itoa(i)},
			RunAt: now.Add(time.Duration(i-n/2) * 2 * time.Second / n)} // half due, half due within a second
	}
	for _, r := range store.EnqueueBatch(context.Background(), jobs) {
		if r.Err != nil {
			t.Fatal(r.Err)
		}
	}
	a, b := startTick(t, "A", prefix, "--for", "4s"), startTick(t, "B", prefix, "--for", "4s")
	sa, sb := tickSummary(t, a), tickSummary(t, b)
	t.Logf("A: %+v; B: %+v", sa, sb)
	byJob := rcv.byJob()
	for i := range n {
		if k := len(byJob["c"+strconv.Itoa(i)]); k != 1 {
			t.Errorf("job c%d delivered %d times, want once", i, k)
		}
	}
	if sa.Delivered+sb.Delivered != n {
		t.Errorf("the ticks delivered %d + %d, want %d in all", sa.Delivered, sb.Delivered, n)
	}
}

// TestTickEndsWhenItsWorkIsDone: a tick given a minute ends soon after its
// last delivery, not when the delivered job's lease would have lapsed: a
// delivered job leaves nothing for a claim to do.
func TestTickEndsWhenItsWorkIsDone(t *testing.T) {
	t.Parallel()
	prefix := testredis.Prefix(t)
	store := procStore(t, prefix)
	rcv := newReceiver(t, nil)
	putTopic(t, store, "t", rcv.URL, 30*time.Second) // a long lease: due + 30s + 4s
	if _, err := testproc.Binary(); err != nil {
		t.Fatal(err)
	}
	if _, err := store.Enqueue(context.Background(), kairos.Job{JobKey: kairos.JobKey{Tenant: "acme", Topic: "t", ID: "one"},
		RunAt: store.Now().Add(time.Second)}); err != nil {
		t.Fatal(err)
	}
	p := startTick(t, "tick", prefix, "--for", "55s")
	sum := tickSummary(t, p)
	hs := rcv.waitHits(t, 1, 10*time.Second)
	after := time.Since(hs[0].At)
	t.Logf("the tick printed its summary %v after the delivery (its own figure: %.2fs in all)", after.Round(time.Millisecond), sum.Seconds)
	if sum.Delivered != 1 {
		t.Errorf("summary %+v: want the job delivered", sum)
	}
	if sum.Seconds > 30 {
		t.Errorf("the tick ran %.1fs for one job due after 1s: it waited for something a delivered job left behind", sum.Seconds)
	}
}
