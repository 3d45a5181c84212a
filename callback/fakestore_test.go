package callback

import (
	"context"
	"sync"
	"time"

	"github.com/kairos-sh/kairos"
)

// fakeStore is a Store of one topic and one shard whose ready list is a
// channel: delivery's logic without Redis (internal/rdb and e2e test the
// real one). Flow control lets every job go unless a test sets pace or
// gate; it records what the worker gives back and tells it.
type fakeStore struct {
	topic kairos.Topic
	ready chan kairos.Claimed
	want  int64         // outcomes after which done closes (0: never)
	done  chan struct{} // closed when want outcomes are recorded
	// skew is the store's clock minus this machine's: Now and Local follow
	// it, as a Redis whose clock is off from this machine's
	skew time.Duration

	// pace, if set, answers Pace; nil gives each job its due time.
	pace func(jobs []kairos.Job, dues []time.Time) []kairos.GateResult
	// gate, if set, answers Gate (flow control); nil lets every job go.
	gate func(jobs []kairos.Job) ([]kairos.GateResult, error)
	// breaker, if set, answers BreakerAnswer (the circuit breaker); nil: closed.
	breaker func(delivered bool) kairos.Breaker

	mu       sync.Mutex
	finished []kairos.Outcome
	attempts []kairos.Attempt // of each outcome, in the same order
	released []kairos.Claimed
	paces    int             // Pace calls
	gates    int             // Gate calls
	permits  []kairos.JobKey // ReturnPermit calls: permits given back
	answers  []bool          // BreakerAnswer calls: answers told the breaker (delivered)
}

func newFakeStore(t kairos.Topic) *fakeStore {
	return &fakeStore{topic: t, ready: make(chan kairos.Claimed, 1024), done: make(chan struct{})}
}

// push puts job on the ready list, due at due.
func (f *fakeStore) push(j kairos.Job, due time.Time) { f.ready <- kairos.Claimed{Job: j, Due: due} }

func (f *fakeStore) outcomes() []kairos.Outcome {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]kairos.Outcome(nil), f.finished...)
}

// releasedJobs returns the jobs given back so far.
func (f *fakeStore) releasedJobs() []kairos.Claimed {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]kairos.Claimed(nil), f.released...)
}

// calls returns how many times Pace and Gate were called.
func (f *fakeStore) calls() (paces, gates int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.paces, f.gates
}

func (f *fakeStore) Now() time.Time              { return time.Now().Add(f.skew) }
func (f *fakeStore) Local(t time.Time) time.Time { return t.Add(-f.skew) }
func (f *fakeStore) PopGroups() [][]int          { return [][]int{{0}} }
func (f *fakeStore) Topics(context.Context) ([]kairos.Topic, error) {
	return []kairos.Topic{f.topic}, nil
}
func (f *fakeStore) GetTopic(context.Context, string, string) (kairos.Topic, error) {
	return f.topic, nil
}
func (f *fakeStore) Handles(_ context.Context, ts []kairos.Topic) ([]string, error) {
	return []string{"h"}[:len(ts)], nil
}
func (f *fakeStore) Interrupt(context.Context, []int) error { return nil }
func (f *fakeStore) SigningSecret(context.Context, string, string) (string, error) {
	return testSecret, nil
}

func (f *fakeStore) Pop(ctx context.Context, _ []int, _ []string, n int, timeout time.Duration) ([]kairos.Claimed, error) {
	t := time.NewTimer(timeout)
	defer t.Stop()
	var out []kairos.Claimed
	select {
	case c := <-f.ready:
		out = append(out, c)
	case <-ctx.Done():
		return nil, nil
	case <-t.C:
		return nil, nil
	}
	for len(out) < n {
		select {
		case c := <-f.ready:
			out = append(out, c)
		default:
			return out, nil
		}
	}
	return out, nil
}

func (f *fakeStore) Start(_ context.Context, cs []kairos.Claimed) ([]kairos.Claimed, error) {
	return cs, nil
}

func (f *fakeStore) Release(_ context.Context, cs []kairos.Claimed) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.released = append(f.released, cs...)
	return nil
}

func (f *fakeStore) Pace(_ context.Context, _ kairos.Topic, _ string, jobs []kairos.Job, dues, _ []time.Time, _ time.Duration) ([]kairos.GateResult, error) {
	f.mu.Lock()
	f.paces++
	f.mu.Unlock()
	if f.pace != nil {
		return f.pace(jobs, dues), nil
	}
	out := make([]kairos.GateResult, len(jobs))
	for i := range out {
		out[i].At = dues[i]
	}
	return out, nil
}

func (f *fakeStore) Gate(_ context.Context, _ kairos.Topic, _ string, jobs []kairos.Job, _ []time.Time, _ time.Duration) ([]kairos.GateResult, error) {
	f.mu.Lock()
	f.gates++
	f.mu.Unlock()
	if f.gate != nil {
		return f.gate(jobs)
	}
	return make([]kairos.GateResult, len(jobs)), nil
}

func (f *fakeStore) ReturnPermit(_ context.Context, _ kairos.Topic, j kairos.Job) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.permits = append(f.permits, j.JobKey)
	return nil
}

func (f *fakeStore) BreakerAnswer(_ context.Context, _ kairos.Topic, _ kairos.Job, delivered bool) (kairos.Breaker, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.answers = append(f.answers, delivered)
	if f.breaker != nil {
		return f.breaker(delivered), nil
	}
	return kairos.Breaker{State: "closed"}, nil
}

func (f *fakeStore) Finish(_ context.Context, _ kairos.JobKey, a kairos.Attempt, o kairos.Outcome, _ time.Time, _ ...kairos.Notice) (kairos.State, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.finished = append(f.finished, o)
	f.attempts = append(f.attempts, a)
	if int64(len(f.finished)) == f.want {
		close(f.done)
	}
	return o.State(), nil
}
