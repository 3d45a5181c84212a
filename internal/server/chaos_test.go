package server

import (
	"math/rand/v2"
	"os"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/kairos-sh/kairos/auth"
	"github.com/kairos-sh/kairos/internal/testproc"
	"github.com/kairos-sh/kairos/internal/testredis"
)

// TestChaos runs, for KAIROS_CHAOS_DURATION (`make chaos`: 10 minutes), a
// random schedule of the network faults of TestNetworkFaults, Redis
// freezes and SIGKILLs of kairos processes (each started again a moment
// later), under a steady load of creates and deliveries across three
// `kairos serve` processes that reach redis-server through a toxiproxy
// proxy. It prints created, delivered, lost (which must be 0),
// duplicated, and the longest API stall. Without the variable it is
// skipped: the fault tests cover each fault on its own.
func TestChaos(t *testing.T) {
	v := os.Getenv("KAIROS_CHAOS_DURATION")
	if v == "" {
		t.Skip("KAIROS_CHAOS_DURATION is not set (make chaos sets it)")
	}
	dur, err := time.ParseDuration(v)
	if err != nil {
		t.Fatalf("KAIROS_CHAOS_DURATION: %v", err)
	}
	srv := testredis.New(t)
	proxy := startProxy(t, srv.Addr)
	const secret = "chaos-test-secret-0123456789"
	authn := auth.New([]byte(secret), nil)
	token, err := authn.Mint("acme", false, 24*time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	start := func() (*testproc.Proc, *testInstance) {
		n++
		p := testproc.Start(t, "kairos"+strconv.Itoa(n), "KAIROS_REDIS_URL=redis://"+proxy.Listen, "KAIROS_AUTH_SECRET="+secret,
			"KAIROS_ADDR=127.0.0.1:0", "KAIROS_ALLOW_PRIVATE_URLS=1", "KAIROS_LOCK_TTL=2s", "KAIROS_READY_LEASE=3s",
			"KAIROS_LEASE_GRACE=1s", "KAIROS_GRACE=2s")
		return p, &testInstance{url: p.URL(t), token: token}
	}
	procs := make([]*testproc.Proc, 3)
	targets := make([]*testInstance, 3)
	for i := range procs {
		procs[i], targets[i] = start()
	}
	l := newFaultLoad(t, targets...)
	done := make(chan struct{})
	go func() { defer close(done); l.run(40, dur) }()

	kills, faults := 0, map[string]int{}
	end := time.Now().Add(dur)
	for time.Now().Add(30 * time.Second).Before(end) {
		time.Sleep(time.Duration(5+rand.IntN(6)) * time.Second) // calm between faults
		began := time.Now()
		switch k := rand.IntN(len(netFaults) + 2); {
		case k < len(netFaults):
			f := netFaults[k]
			f.length = time.Duration(5+rand.IntN(16)) * time.Second
			f.inject(t, proxy, targets[0])
			faults[f.name]++
			t.Logf("%v: %s for %v", began.Sub(l.began).Round(time.Second), f.name, time.Since(began).Round(time.Second))
		case k == len(netFaults):
			if err := srv.Freeze(); err != nil {
				t.Fatal(err)
			}
			time.Sleep(time.Duration(3+rand.IntN(8)) * time.Second) // the point: the freeze's length
			if err := srv.Thaw(); err != nil {
				t.Fatal(err)
			}
			faults["freeze"]++
			t.Logf("%v: redis-server frozen for %v", began.Sub(l.began).Round(time.Second), time.Since(began).Round(time.Second))
		default:
			i := rand.IntN(len(procs))
			procs[i].Signal(syscall.SIGKILL)
			time.Sleep(time.Duration(1+rand.IntN(3)) * time.Second) // the point: down a while before the restart
			var ti *testInstance
			procs[i], ti = start()
			l.setTarget(i, ti)
			targets[i] = ti
			kills++
			t.Logf("%v: SIGKILLed kairos process %d, started again %v later", began.Sub(l.began).Round(time.Second), i, time.Since(began).Round(time.Second))
		}
	}
	<-done
	rc := redis.NewClient(srv.Options())
	defer rc.Close()
	l.wait(3*time.Minute, rc)
	r := l.figures(end, end) // no fault window: every duplicate is counted
	t.Logf("chaos for %v: faults %v, SIGKILLs %d", dur, faults, kills)
	t.Logf("created %d, delivered %d, lost %d, duplicated %d, longest API stall %v, answers by status %v; answers over 2 s (sent at): %v",
		r.created, r.delivered, r.lost, r.duplicated, r.longest.Round(time.Millisecond), r.statuses, r.slow)
	if r.lost > 0 {
		t.Errorf("%d jobs answered 2xx were lost", r.lost)
	}
}
