package callback

import (
	"context"
	"slices"
	"time"

	"github.com/kairos-sh/kairos"
)

// firstInLine is the wait order given to flow control for a job whose turn
// came and passed (paced, and started too late): ahead of every waiting job.
var firstInLine = time.UnixMilli(1)

// gateFailed marks a job whose flow control call failed: asked again.
const gateFailed kairos.Gate = -1

// gate returns the jobs of cs (due jobs of one topic, just taken from the
// holder) that their topic's flow control lets start now. The others keep
// their place: one told to wait (its turn under the rate limit, or the
// breaker's cool-down) goes back to Redis until then (it keeps its
// attempts and its place in wait order); one that found every permit
// taken waits in the holder, first in its queue, and is asked about again
// after fullRetry (waitFull), or released like any job held too long.
func (fc *flowClient) gate(ctx context.Context, tenant, topic string, cs []kairos.Claimed) []kairos.Job {
	if len(cs) == 0 {
		return nil
	}
	t, err := fc.st.GetTopic(ctx, tenant, topic)
	if err != nil {
		t = kairos.Topic{} // no topic (a job with its own URL): no limits
	}
	var out []kairos.Job
	if err == nil && slices.ContainsFunc(cs, isDelivery) {
		cs, out = fc.gateDeliveries(ctx, t, cs) // each subscription a flow of its own
	}
	return append(out, fc.gateTopic(ctx, t, cs)...)
}

// gateTopic is gate for jobs cs of topic t (a delivery's topic, for
// deliveries: gateDeliveries).
func (fc *flowClient) gateTopic(ctx context.Context, t kairos.Topic, cs []kairos.Claimed) []kairos.Job {
	if len(cs) == 0 {
		return nil
	}
	jobs := make([]kairos.Job, len(cs))
	for i, c := range cs {
		jobs[i] = c.Job
	}
	if !t.Limited() {
		return jobs
	}
	// Some go without asking (Topic.AsksGate): notifications, jobs past
	// their expiry (the consumer ends them: Worker.expire), and jobs paced
	// as they were popped, at their time.
	var unasked []kairos.Job
	paced, now := t.Paced(), fc.st.Now()
	for i := 0; i < len(cs); {
		if !t.AsksGate(cs[i], now) {
			unasked = append(unasked, cs[i].Job)
			cs, jobs = slices.Delete(cs, i, i+1), slices.Delete(jobs, i, i+1)
			continue
		}
		i++
	}
	if len(cs) == 0 {
		return unasked
	}
	// jobs with their own flow key count against that flow: one script
	// call a flow
	rs := make([]kairos.GateResult, len(jobs))
	var flows []string
	byFlow := map[string][]int{}
	flowOf := make([]string, len(jobs)) // each job's flow key ("tenant/flow")
	for i, j := range jobs {
		f := kairos.FlowOf(j, t)
		if _, ok := byFlow[f]; !ok {
			flows = append(flows, f)
		}
		byFlow[f] = append(byFlow[f], i)
		flowOf[i] = flowKey(t.Tenant, f)
	}
	var failed []kairos.Claimed
	wall := time.Now()
	for _, f := range flows {
		idx := byFlow[f]
		if t.TakesPermits() {
			if fc.waitsFull(flowOf[idx[0]], wall) { // its permits were all taken a moment ago: wait without asking
				for _, i := range idx {
					rs[i].Gate = kairos.GateFull
				}
				continue
			}
			if len(idx) > t.Parallelism {
				// no more than the limit can go at once: the rest wait
				// without asking (a backlog would otherwise send every
				// waiting job to the script every fullRetry)
				for _, i := range idx[t.Parallelism:] {
					rs[i].Gate = kairos.GateFull
				}
				idx = idx[:t.Parallelism]
			}
		}
		group, order := make([]kairos.Job, len(idx)), make([]time.Time, len(idx))
		for k, i := range idx {
			// the limits let jobs go in wait order across processes; a job
			// whose paced time passed while this process was slow had its
			// turn already: it asks again first in line
			group[k], order[k] = jobs[i], waitOrder(cs[i])
			if paced && cs[i].Paced {
				order[k] = firstInLine
			}
		}
		grs, err := fc.st.Gate(ctx, t, f, group, order, t.WithDefaults().Timeout+kairos.DefaultReadyLease)
		if err != nil {
			fc.log.Warn("flow control; the jobs wait and are asked about again", "tenant", t.Tenant, "topic", t.Name, "err", err)
			for _, i := range idx {
				rs[i].Gate = gateFailed
				failed = append(failed, cs[i])
			}
			continue
		}
		for k, i := range idx {
			rs[i] = grs[k]
		}
	}
	if len(failed) > 0 {
		fc.hold.again(failed, fc.retry)
	}
	out := unasked
	var wait []kairos.Claimed
	full := map[string][]kairos.Claimed{}
	fc.mu.Lock()
	for i, r := range rs {
		p := attemptKey{jobs[i].JobKey, jobs[i].Attempts}
		switch r.Gate {
		case gateFailed:
		case kairos.GateGo, kairos.GateProbe:
			out = append(out, jobs[i])
			fc.gated[p] = gated{topic: t, job: jobs[i], probe: r.Gate == kairos.GateProbe}
		case kairos.GateWait:
			c := cs[i]
			c.Due = r.At
			wait = append(wait, c)
		default:
			full[flowOf[i]] = append(full[flowOf[i]], cs[i])
		}
	}
	fc.mu.Unlock()
	fc.hold.release(ctx, wait)
	for f, cs := range full {
		fc.waitFull(f, cs)
	}
	return out
}
