package server

import (
	"cmp"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/kairos-sh/kairos/internal/testwait"
)

// faultLoad is a steady load of creates spread over kairos instances, and
// the receiver of their callbacks: it records every answer the API gave
// and every callback, so that a fault test can tell what was lost, what
// was sent twice and how long the API took to answer.
type faultLoad struct {
	t       *testing.T
	targets []*testInstance
	rcv     *httptest.Server
	http    *http.Client
	// maxDelay bounds each job's delay after its create (default 1s)
	maxDelay time.Duration

	mu       sync.Mutex
	created  map[string]bool        // ids answered 2xx
	statuses map[int]int            // answers by status (0: no answer)
	hits     map[string][]time.Time // callbacks by job id
	due      map[string]time.Time   // Kairos-Scheduled-At by job id
	stalls   []stall                // every API answer's duration
	answers  []answer               // every create, in the order answered
	began    time.Time              // when run started
	seq      atomic.Int64
	wg       sync.WaitGroup
}

// answer is one create: when it was sent, how long it took and its
// status (0: no answer).
type answer struct {
	id     string
	at     time.Time
	dur    time.Duration
	status int
}

type stall struct {
	at  time.Time // when the request was sent
	dur time.Duration
}

// newFaultLoad registers topic "f" on the first target, with its callbacks
// going to a receiver of its own.
func newFaultLoad(t *testing.T, targets ...*testInstance) *faultLoad {
	l := &faultLoad{t: t, targets: targets, http: &http.Client{Timeout: 60 * time.Second},
		created: map[string]bool{}, statuses: map[int]int{}, hits: map[string][]time.Time{}, due: map[string]time.Time{}}
	l.rcv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id := r.Header.Get("Kairos-Job-Id")
		at, _ := time.Parse(time.RFC3339Nano, r.Header.Get("Kairos-Scheduled-At"))
		l.mu.Lock()
		l.hits[id] = append(l.hits[id], time.Now())
		l.due[id] = at
		l.mu.Unlock()
	}))
	t.Cleanup(l.rcv.Close)
	targets[0].call(t, "PUT", "/v1/topics/f", `{"callback_url": "`+l.rcv.URL+`", "timeout": "5s"}`, http.StatusCreated)
	return l
}

// run creates jobs at rate a second for d, each due 0 to maxDelay after
// its create, alternating between the targets; every create is its own
// request, so a slow answer does not slow the load.
func (l *faultLoad) run(rate int, d time.Duration) {
	tick := time.NewTicker(time.Second / time.Duration(rate))
	defer tick.Stop()
	l.mu.Lock()
	l.began = time.Now()
	l.mu.Unlock()
	end := time.Now().Add(d)
	for now := range tick.C {
		if now.After(end) {
			return
		}
		n := l.seq.Add(1)
		l.mu.Lock()
		ti := l.targets[int(n)%len(l.targets)]
		l.mu.Unlock()
		id := "j" + strconv.FormatInt(n, 10)
		l.wg.Go(func() { l.create(ti, id) })
	}
}

// setTarget replaces target i (a restarted process).
func (l *faultLoad) setTarget(i int, ti *testInstance) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.targets[i] = ti
}

func (l *faultLoad) create(ti *testInstance, id string) {
	body := fmt.Sprintf(`{"id": %q, "delay": "%dms", "payload": 1}`, id, rand.IntN(int(cmp.Or(l.maxDelay, time.Second).Milliseconds())))
	req, _ := http.NewRequest("POST", ti.url+"/v1/topics/f/jobs", strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+ti.token)
	req.Header.Set("Content-Type", "application/json")
	start := time.Now()
	resp, err := l.http.Do(req)
	dur := time.Since(start)
	status := 0
	if err == nil {
		status = resp.StatusCode
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if status >= 500 && !strings.Contains(resp.Header.Get("Content-Type"), "application/problem+json") {
			l.t.Errorf("create %s: %d with %s, want problem+json: %s", id, status, resp.Header.Get("Content-Type"), b)
		}
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.statuses[status]++
	l.answers = append(l.answers, answer{id: id, at: start, dur: dur, status: status})
	if status != 0 { // not a process killed meanwhile
		l.stalls = append(l.stalls, stall{at: start, dur: dur})
	}
	if status >= 200 && status < 300 {
		l.created[id] = true
	}
}

// wait waits for the creates under way, then until every job answered 2xx
// was delivered, and until the Redis of rc is settled (waitSettled): every
// duplicate there could be has come. within is the deadline of each wait.
func (l *faultLoad) wait(within time.Duration, rc redis.UniversalClient) {
	l.t.Helper()
	l.wg.Wait()
	testwait.UntilNil(l.t, within, func() error {
		l.mu.Lock()
		defer l.mu.Unlock()
		missing := 0
		for id := range l.created {
			if len(l.hits[id]) == 0 {
				missing++
			}
		}
		if missing > 0 {
			return fmt.Errorf("%d missing", missing)
		}
		return nil
	}, "every job answered 2xx delivered")
	waitSettled(l.t, rc, within)
}

// report holds the figures of a fault run.
type report struct {
	created, delivered, lost, duplicated, inFlightDups int
	statuses                                           map[int]int
	longest                                            time.Duration // longest API answer
	slow                                               []string      // answers over 2 s: when sent (since the load began) and how long
	lateAfter                                          []time.Duration
}

// figures counts the run: faultStart and faultEnd bound the fault.
// A duplicate is excused when its job's first callback came before the
// fault ended (it was in flight when the fault began or while it lasted,
// and its outcome could not be recorded); lateAfter is how late each job
// due before the fault ended fired after it ended.
func (l *faultLoad) figures(faultStart, faultEnd time.Time) report {
	l.mu.Lock()
	defer l.mu.Unlock()
	r := report{statuses: l.statuses}
	for id := range l.created {
		hs := l.hits[id]
		if len(hs) == 0 {
			r.lost++
			continue
		}
		r.created++
	}
	r.created += r.lost
	for id, hs := range l.hits {
		r.delivered++
		if len(hs) > 1 {
			r.duplicated++
			// in flight when the fault began: delivered before it ended, or
			// claimed before it began (claims run up to a wheel slot, 100
			// ms, plus the shard's phase, under 100 ms, ahead of due)
			if hs[0].Before(faultEnd) || l.due[id].Before(faultStart.Add(claimedAhead)) {
				r.inFlightDups++
			}
		}
		if due := l.due[id]; due.Before(faultEnd) && hs[0].After(faultEnd) {
			r.lateAfter = append(r.lateAfter, hs[0].Sub(faultEnd))
		}
	}
	for _, s := range l.stalls {
		r.longest = max(r.longest, s.dur)
		if s.dur > 2*time.Second {
			r.slow = append(r.slow, fmt.Sprintf("%v: %v", s.at.Sub(l.began).Round(100*time.Millisecond), s.dur.Round(time.Millisecond)))
		}
	}
	slices.Sort(r.lateAfter)
	return r
}

func (r report) String() string {
	late := "none"
	if n := len(r.lateAfter); n > 0 {
		late = fmt.Sprintf("%d jobs, p50 %v, max %v", n, r.lateAfter[n/2].Round(time.Millisecond), r.lateAfter[n-1].Round(time.Millisecond))
	}
	return fmt.Sprintf("created (2xx) %d, delivered %d, lost %d, duplicated %d (%d in flight during the fault), answers by status %v, "+
		"longest API answer %v (over 2 s, sent at: %v); jobs due during the fault fired after it by: %s",
		r.created, r.delivered, r.lost, r.duplicated, r.inFlightDups, r.statuses, r.longest.Round(time.Millisecond), r.slow, late)
}

// claimedAhead bounds how far ahead of its due time a job may have been
// claimed: a wheel slot (100 ms) plus the shard's phase (under 100 ms).
const claimedAhead = 250 * time.Millisecond
