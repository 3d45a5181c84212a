package callback

import (
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/kairos-sh/kairos"
)

// queue is one topic's held jobs whose due time has come, ready for the
// topic's consumer, oldest due first; with jobs of priority among them,
// in waitOrder.
type queue struct {
	ready  []kairos.Claimed
	low    int           // when ready drops below it, the holder's refill is closed (0: no mark; holder.busy)
	signal chan struct{} // a nudge when ready grows
	ranked bool          // kept in waitOrder (put)
	turn   sync.Mutex    // locked across a take and its gate while ranked (holder.turn)
}

func newQueue() *queue { return &queue{signal: make(chan struct{}, 1)} }

// put puts c in the queue: behind the jobs of its waitOrder, or ahead of
// them (front). A queue keeps the order jobs are put in until a job of
// priority joins it; from then on it is kept in waitOrder (its topic's
// jobs of priority 0 too: they are ordered against the others even when
// they come back from flow control in groups of their own).
func (q *queue) put(c kairos.Claimed, front bool) {
	if !q.ranked && c.Job.Priority == 0 {
		if front {
			q.ready = slices.Insert(q.ready, 0, c)
		} else {
			q.ready = append(q.ready, c)
		}
		return
	}
	if !q.ranked {
		q.ranked = true
		slices.SortStableFunc(q.ready, func(a, b kairos.Claimed) int { return waitOrder(a).Compare(waitOrder(b)) })
	}
	k := waitOrder(c)
	i := sort.Search(len(q.ready), func(i int) bool {
		o := waitOrder(q.ready[i])
		return o.After(k) || (front && o.Equal(k))
	})
	q.ready = slices.Insert(q.ready, i, c)
}

// nudge tells the topic's consumer waiting for a job that there is one.
func (q *queue) nudge() {
	select {
	case q.signal <- struct{}{}:
	default:
	}
}

// waitOrder is when c queues while its flow's limits make jobs wait
// (kairos.WaitOrder): its due time, or its run_at when earlier (a job
// claimed after its time was due since its run_at, and Due only says when
// it was claimed), less its priority's steps. The flow client gives it to
// flow control as the job's order; the queue keeps it for jobs of priority.
func waitOrder(c kairos.Claimed) time.Time {
	due := c.Due
	if !c.Job.RunAt.IsZero() && c.Job.RunAt.Before(due) {
		due = c.Job.RunAt
	}
	return kairos.WaitOrder(c.Job, due)
}
