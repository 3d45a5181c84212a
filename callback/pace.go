package callback

import (
	"context"
	"slices"
	"time"

	"github.com/kairos-sh/kairos"
)

// paceHold is how far past its due time a job's rate-limited time may be
// for the holder to hold it until then; a later one goes back to Redis
// to wait for it. Well under the ready lease, which the job's lease allows
// for past its due time.
const paceHold = 100 * time.Millisecond

// pace gives each popped job of a topic with a rate limit alone
// (Topic.Paced) its time from the flow's rate, one call a flow for the
// whole pop (Store.Pace), instead of one gate call as each comes due: a
// job keeps its due time while the rate allows it, or is held until its
// later time, or given back to Redis until then when that is further than
// paceHold. It returns the jobs to hold. A job whose call failed is held
// as it is, and asks the gate when due.
func (fc *flowClient) pace(ctx context.Context, cs []kairos.Claimed) []kairos.Claimed {
	type group struct {
		topic kairos.Topic
		flow  string
		idx   []int
	}
	var groups []*group
	byFlow := map[string]*group{}
	type topicOf struct {
		t  kairos.Topic
		ok bool // found, and Paced
	}
	topics := map[kairos.JobKey]topicOf{} // one lookup a topic of the pop (the ID left empty)
	now := fc.st.Now()
	for i, c := range cs {
		// a delivery is paced by its subscription's rate, as the gate asks (gateDeliveries)
		if c.Paced || c.Job.FlowExempt(now) || isDelivery(c) {
			continue
		}
		tk := kairos.JobKey{Tenant: c.Job.Tenant, Topic: c.Job.Topic}
		to, seen := topics[tk]
		if !seen {
			t, err := fc.st.GetTopic(ctx, tk.Tenant, tk.Topic)
			to = topicOf{t, err == nil && t.Paced()}
			topics[tk] = to
		}
		if !to.ok {
			continue
		}
		t := to.t
		f := kairos.FlowOf(c.Job, t)
		k := flowKey(t.Tenant, f)
		g := byFlow[k]
		if g == nil {
			g = &group{topic: t, flow: f}
			byFlow[k] = g
			groups = append(groups, g)
		}
		g.idx = append(g.idx, i)
	}
	if len(groups) == 0 {
		return cs
	}
	var wait []kairos.Claimed
	back := make([]bool, len(cs))
	for _, g := range groups {
		// oldest due first: each then mostly takes its own time from the
		// pace on; with jobs of priority among them, in waitOrder, so that
		// those take the earlier times
		cmp := func(a, b int) int { return cs[a].Due.Compare(cs[b].Due) }
		if slices.ContainsFunc(g.idx, func(i int) bool { return cs[i].Job.Priority > 0 }) {
			cmp = func(a, b int) int { return waitOrder(cs[a]).Compare(waitOrder(cs[b])) }
		}
		slices.SortStableFunc(g.idx, cmp)
		jobs, dues, order := make([]kairos.Job, len(g.idx)), make([]time.Time, len(g.idx)), make([]time.Time, len(g.idx))
		for k, i := range g.idx {
			jobs[k], dues[k], order[k] = cs[i].Job, cs[i].Due, waitOrder(cs[i])
		}
		rs, err := fc.st.Pace(ctx, g.topic, g.flow, jobs, dues, order, paceHold)
		if err != nil {
			fc.log.Warn("flow control; the jobs ask again when due", "tenant", g.topic.Tenant, "topic", g.topic.Name, "err", err)
			continue
		}
		for k, i := range g.idx {
			c := &cs[i]
			if shift := rs[k].At.Sub(c.Due); shift > 0 {
				c.Due = rs[k].At
				if !c.FireAt.IsZero() {
					c.FireAt = c.FireAt.Add(shift)
				}
			}
			if rs[k].Gate == kairos.GateWait {
				wait, back[i] = append(wait, *c), true
				continue
			}
			c.Paced = true
		}
	}
	if len(wait) == 0 {
		return cs
	}
	fc.hold.release(ctx, wait)
	keep := cs[:0:0]
	for i, c := range cs {
		if !back[i] {
			keep = append(keep, c)
		}
	}
	return keep
}
