package server

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kairos-sh/kairos/internal/testredis"
	"github.com/kairos-sh/kairos/internal/testwait"
)

// sentinelFailovers are the two ways a master under Sentinel goes away:
// an operator's SENTINEL FAILOVER (the old master, still up, is demoted
// and resynced), and the master process killed (the Sentinels see it down
// after 1 s and promote a replica).
var sentinelFailovers = []struct {
	name string
	fail func(t *testing.T, s *testredis.Sentinels, master *testredis.Server)
}{
	{"SENTINEL FAILOVER", func(t *testing.T, s *testredis.Sentinels, _ *testredis.Server) {
		if err := s.Failover(context.Background()); err != nil {
			t.Fatal(err)
		}
	}},
	{"SIGKILL of the master", func(t *testing.T, _ *testredis.Sentinels, master *testredis.Server) { master.Kill() }},
}

// TestSentinelFailover runs two kairos processes of every role on a master,
// two replicas and three Sentinels (KAIROS_REDIS_SENTINEL_MASTER), with
// KAIROS_WAIT_REPLICAS=1, under 20 creates a second of jobs due within a
// second, and fails the master over mid-run: every job answered 2xx is
// delivered, and every create sent from 5 s after the failover on is
// answered 2xx, without restarting kairos. It prints the stall (the
// longest time without a create answered 2xx), and the jobs lost and
// delivered twice.
//
// Two replicas, not one: with KAIROS_WAIT_REPLICAS=1 a new master needs a
// replica of its own to take writes, and a single replica, once promoted,
// has none until the old master is back as its replica (after SENTINEL
// FAILOVER, Sentinel demotes it some 10 s later; after a crash, never
// until it restarts). The servers run with repl-diskless-sync-delay 0, as
// docs/operations.md advises with KAIROS_WAIT_REPLICAS: by default a new
// master waits 5 s before it syncs the replica re-pointed to it.
//
// A replica that leaves the master makes kairos refuse acknowledgements
// for rdb.ReplicaLeftGrace: that is how the SENTINEL FAILOVER run loses
// nothing while the old master, still writable, has the other replica
// attached (docs/operations.md, "Redis Sentinel"). Duplicates are counted,
// not refused: outcomes written to the old master in that window are lost
// with it, and those jobs go out again.
//
// When Sentinel's own first attempt aborts (its log says -failover-abort)
// it tries again only after twice its failover-timeout, and nothing can
// take writes meanwhile: the 5 s then count from the promotion, and the
// test says so. make sentinel runs it in a loop.
func TestSentinelFailover(t *testing.T) { // not parallel: the 5 s bound is measured on a machine of 2 cores
	for _, f := range sentinelFailovers {
		t.Run(f.name, func(t *testing.T) {
			// A new master syncs its replicas at once (Redis waits 5 s by
			// default for more replicas to share a diskless sync).
			s := testredis.NewSentinels(t, 2, "--repl-diskless-sync-delay", "0")
			ctx := context.Background()
			env := map[string]string{"KAIROS_REDIS_URL": s.URL(), "KAIROS_REDIS_SENTINEL_MASTER": testredis.MasterName, "KAIROS_WAIT_REPLICAS": "1"}
			a, b := startTestInstanceOn(t, env), startTestInstanceOn(t, env)
			l := newFaultLoad(t, a, b)
			done := make(chan struct{})
			go func() { defer close(done); l.run(20, 16*time.Second) }()

			time.Sleep(4 * time.Second) // the point: 4 s of load before the failover
			old, err := s.Master(ctx)
			if err != nil {
				t.Fatal(err)
			}
			readyc := make(chan readyProbe, 1)
			go func() { readyc <- probeReady(t, a, 8*time.Second) }()
			at := time.Now()
			f.fail(t, s, old)
			m, err := s.WaitMaster(ctx, old.Addr, 30*time.Second)
			if err != nil {
				t.Fatal(err)
			}
			promoted := time.Now()
			ready := <-readyc
			<-done
			l.wait(60*time.Second, a.in.Client)
			r := l.figures(at, promoted)
			stall, lastRefused, refused := l.failoverFigures(at)
			t.Logf("%s: %s master %v after it; creates refused %d (%v), the last sent %v after it; stall %v; lost %d, duplicated %d; /readyz during it: %s",
				f.name, m.Addr, promoted.Sub(at).Round(time.Millisecond), refused, r.statuses, lastRefused.Round(time.Millisecond),
				stall.Round(time.Millisecond), r.lost, r.duplicated, ready)
			t.Logf("%s: %s", f.name, r)
			if r.lost > 0 {
				t.Errorf("%d jobs answered 2xx were lost", r.lost)
			}
			events := sentinelEvents(s)
			from := lastRefused
			if aborted := slices.ContainsFunc(events, func(e string) bool { return strings.Contains(e, "-failover-abort") }); aborted {
				from = lastRefused - promoted.Sub(at)
				t.Logf("%s: Sentinel's first attempt aborted; a new master only %v after the failover began, the last create refused %v after that",
					f.name, promoted.Sub(at).Round(time.Millisecond), from.Round(time.Millisecond))
			}
			if sw, ok := lastSwitch(events); ok && sw.After(promoted) {
				// Sentinel switched again (a loaded machine can make it
				// take the new master for down): kairos follows the last
				// switch, and the bound runs from it
				from = lastRefused - sw.Sub(at)
				t.Logf("%s: Sentinel switched the master again %v after the failover began; the last create refused %v after that",
					f.name, sw.Sub(at).Round(time.Millisecond), from.Round(time.Millisecond))
			}
			if from > 5*time.Second {
				t.Errorf("a create sent %v after the failover was refused: want every create answered 2xx from 5 s after it on", lastRefused.Round(time.Millisecond))
			}
			defer func() {
				if t.Failed() {
					l.logLost(at)
					t.Logf("the Sentinels' events, the failover at %s:\n%s", at.Format("15:04:05.000"), strings.Join(events, "\n"))
				}
			}()
			// kairos still takes and delivers jobs on the new master
			a.call(t, "POST", "/v1/topics/f/jobs", `{"id": "after", "payload": 1}`, 201)
			testwait.Until(t, 20*time.Second, func() bool {
				l.mu.Lock()
				defer l.mu.Unlock()
				return len(l.hits["after"]) > 0
			}, "the job created after the failover delivered")
		})
	}
}

// failoverFigures reads the creates of a run with a failover at at: the
// stall (the longest time between two creates answered 2xx, by when they
// were sent, or from the last one to the last create sent), how long after at the last create refused was sent (or 0),
// and how many were refused.
func (l *faultLoad) failoverFigures(at time.Time) (stall, lastRefused time.Duration, refused int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	as := slices.Clone(l.answers)
	slices.SortFunc(as, func(x, y answer) int { return x.at.Compare(y.at) })
	var prevOK, last time.Time
	for _, a := range as {
		last = a.at
		if a.status >= 200 && a.status < 300 {
			if !prevOK.IsZero() {
				stall = max(stall, a.at.Sub(prevOK))
			}
			prevOK = a.at
			continue
		}
		refused++
		if a.at.Add(a.dur).Before(at) {
			l.t.Errorf("a create answered %v before the failover was refused (%d)", at.Sub(a.at.Add(a.dur)), a.status)
		}
		lastRefused = max(lastRefused, a.at.Sub(at))
	}
	if !prevOK.IsZero() && last.After(prevOK) {
		stall = max(stall, last.Sub(prevOK)) // refused to the end
	}
	return stall, lastRefused, refused
}

// logLost logs each job answered 2xx and never delivered, with when its
// create was sent and answered, from at.
func (l *faultLoad) logLost(at time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, a := range l.answers {
		if l.created[a.id] && len(l.hits[a.id]) == 0 {
			l.t.Logf("lost %s: sent %v after the failover, answered %v after it", a.id, a.at.Sub(at).Round(time.Millisecond), a.at.Add(a.dur).Sub(at).Round(time.Millisecond))
		}
	}
}

// lastSwitch is when the Sentinels last logged a +switch-master among
// events (their log lines: "<addr> <pid>:X 28 Nov 2026 00:29:01.810 # +switch-master …",
// local time).
func lastSwitch(events []string) (time.Time, bool) {
	var last time.Time
	for _, e := range events {
		if !strings.Contains(e, "+switch-master") {
			continue
		}
		f := strings.Fields(e)
		if len(f) < 7 {
			continue
		}
		at, err := time.ParseInLocation("2 Jan 2006 15:04:05.000", strings.Join(f[2:6], " "), time.Local)
		if err == nil && at.After(last) {
			last = at
		}
	}
	return last, !last.IsZero()
}

// sentinelEvents are the failover events (the lines of +, - and # kind
// that are about the master or a failover) the Sentinels logged.
func sentinelEvents(s *testredis.Sentinels) []string {
	var out []string
	for _, sn := range s.Sentinels {
		logs, _ := filepath.Glob(filepath.Join(sn.Dir, "*.log"))
		for _, f := range logs {
			b, _ := os.ReadFile(f)
			for _, line := range strings.Split(string(b), "\n") {
				for _, ev := range []string{"failover", "promoted", "switch-master", "odown", "sdown master", "elected", "convert-to-slave", "reconf", "no-good"} {
					if strings.Contains(line, ev) {
						out = append(out, sn.Addr+" "+strings.TrimSpace(line))
						break
					}
				}
			}
		}
	}
	return out
}
