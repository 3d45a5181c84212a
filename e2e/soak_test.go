package e2e

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/kairos-sh/kairos"
	"github.com/kairos-sh/kairos/internal/rdb"
	"github.com/kairos-sh/kairos/internal/testproc"
	"github.com/kairos-sh/kairos/internal/testwait"
)

// TestSoak runs kairos serve under a steady load with 1% of jobs aimed at a
// receiver that always fails. KAIROS_SOAK_DURATION sets the load's length
// (default 30s; `make soak` runs 10m). It reports jobs created, delivered,
// dead, duplicated and lost (must be 0), kairos's RSS and Redis memory
// across the run, and the goroutines before and after.
func TestSoak(t *testing.T) {
	t.Parallel()
	dur := 30 * time.Second
	if v := os.Getenv("KAIROS_SOAK_DURATION"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil {
			t.Fatalf("KAIROS_SOAK_DURATION: %v", err)
		}
		dur = d
	}
	const rate = 100 // jobs per second
	prefix := "soak" + strconv.FormatInt(time.Now().UnixNano()%1e6, 10)
	store := procStore(t, prefix)
	good := newReceiver(t, nil)
	bad := newReceiver(t, func(int, hit) int { return http.StatusServiceUnavailable })
	ctx := context.Background()
	if _, _, err := store.PutTopic(ctx, kairos.Topic{Tenant: "acme", Name: "soak", CallbackURL: good.URL, MaxAttempts: 3,
		BackoffInitial: 50 * time.Millisecond, BackoffMax: 200 * time.Millisecond, Timeout: 2 * time.Second}); err != nil {
		t.Fatal(err)
	}
	// Delivered jobs are kept for a minute rather than a day, so that
	// Redis memory reaches its steady state within the run.
	p := startKairos(t, "soak", prefix, "KAIROS_RETENTION=1m")
	url := p.URL(t)
	p.WaitLog(t, "consuming topic", 10*time.Second)
	// Warm up, so that connection pools are full before the baseline: an
	// idle keep-alive connection holds two goroutines, which is no leak.
	warm := make([]kairos.Job, 200)
	for i := range warm {
		warm[i] = kairos.Job{JobKey: kairos.JobKey{Tenant: "acme", Topic: "soak", ID: "warm" + strconv.Itoa(i)}, RunAt: store.Now()}
		if i%10 == 0 {
			warm[i].CallbackURL = bad.URL
		}
	}
	for _, r := range store.EnqueueBatch(ctx, warm) {
		if r.Err != nil {
			t.Fatal(r.Err)
		}
	}
	good.waitHits(t, 180, 30*time.Second)
	bad.waitHits(t, 60, 30*time.Second)
	waitCounts(t, store, 180, 20)
	waitSettled(t, store)
	warmDelivered := len(good.all())
	g0, rss0, mem0 := metric(t, url, "go_goroutines"), rss(t, p), redisMemory(t, store)

	created, badIDs := 0, map[string]bool{}
	tick := time.NewTicker(time.Second / 10)
	defer tick.Stop()
	end := time.Now().Add(dur)
	var samples []string
	lastSample := time.Now()
	for time.Now().Before(end) {
		<-tick.C
		jobs := make([]kairos.Job, rate/10)
		now := store.Now()
		for i := range jobs {
			id := "j" + strconv.Itoa(created)
			j := kairos.Job{JobKey: kairos.JobKey{Tenant: "acme", Topic: "soak", ID: id},
				RunAt: now.Add(time.Duration(created%2000) * time.Millisecond), Payload: []byte(`{"n":` + strconv.Itoa(created) + `}`)}
			if created%100 == 99 {
				j.CallbackURL = bad.URL
				badIDs[id] = true
			}
			jobs[i] = j
			created++
		}
		for _, r := range store.EnqueueBatch(ctx, jobs) {
			if r.Err != nil {
				t.Fatal(r.Err)
			}
		}
		if time.Since(lastSample) >= dur/6 {
			lastSample = time.Now()
			samples = append(samples, "rss="+strconv.FormatInt(rss(t, p)>>20, 10)+"MiB redis="+strconv.FormatInt(redisMemory(t, store)>>20, 10)+"MiB")
		}
	}
	wantGood := created - len(badIDs)
	good.waitHits(t, warmDelivered+wantGood, 60*time.Second)
	counts := waitCounts(t, store, wantGood+180, len(badIDs)+20) // warm-up included
	var g1 float64
	testwait.UntilNil(t, testwait.Patience, func() error { // the goroutines of finished work end
		if g1 = metric(t, url, "go_goroutines"); g1 > g0+5 {
			return fmt.Errorf("%v goroutines, %v before the load: a leak", g1, g0)
		}
		return nil
	}, "the goroutines back to those before the load")
	rss1, mem1 := rss(t, p), redisMemory(t, store)
	byJob := good.byJob()
	dups, lost := 0, 0
	for i := range created {
		id := "j" + strconv.Itoa(i)
		if badIDs[id] {
			continue
		}
		switch n := len(byJob[id]); {
		case n == 0:
			lost++
		case n > 1:
			dups += n - 1
		}
	}
	t.Logf("soak %v at %d jobs/s: created %d, delivered %d, dead %d, duplicates %d, lost %d (after a warm-up of 200: 180 delivered, 20 dead)",
		dur, rate, created, counts[kairos.StateDelivered]-180, counts[kairos.StateDead]-20, dups, lost)
	t.Logf("kairos RSS %d MiB -> %d MiB; Redis used_memory %d MiB -> %d MiB (delivered jobs kept 1m); goroutines %v -> %v",
		rss0>>20, rss1>>20, mem0>>20, mem1>>20, g0, g1)
	t.Logf("samples during the load: %s", strings.Join(samples, "; "))
	if lost != 0 {
		t.Fatalf("%d jobs lost", lost)
	}
}

// waitCounts waits until the soak topic counts delivered and dead jobs, and
// returns its counts.
func waitCounts(t *testing.T, s *rdb.Store, delivered, dead int) map[kairos.State]int64 {
	t.Helper()
	var c map[kairos.State]int64
	testwait.UntilNil(t, 60*time.Second, func() (err error) {
		if c, err = s.Counts(context.Background(), "acme", "soak"); err == nil &&
			(c[kairos.StateDelivered] != int64(delivered) || c[kairos.StateDead] != int64(dead)) {
			err = fmt.Errorf("counts %v", c)
		}
		return err
	}, fmt.Sprintf("%d jobs delivered and %d dead", delivered, dead))
	return c
}

// metric reads one sample from a kairos /metrics endpoint.
func metric(t *testing.T, url, name string) float64 {
	t.Helper()
	v, ok := readMetric(url, name)
	if !ok {
		t.Fatalf("metric %s not found at %s/metrics", name, url)
	}
	return v
}

// rss reads a child's resident set size from /proc.
func rss(t *testing.T, p *testproc.Proc) int64 {
	t.Helper()
	b, err := os.ReadFile("/proc/" + strconv.Itoa(p.Cmd.Process.Pid) + "/status")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, _ := strconv.ParseInt(strings.Fields(v)[0], 10, 64)
			return kb << 10
		}
	}
	return 0
}

// redisMemory reads used_memory from INFO memory.
func redisMemory(t *testing.T, s *rdb.Store) int64 {
	t.Helper()
	info, err := s.Client().Info(context.Background(), "memory").Result()
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(info, "\n") {
		if v, ok := strings.CutPrefix(line, "used_memory:"); ok {
			n, _ := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
			return n
		}
	}
	return 0
}
