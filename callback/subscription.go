package callback

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/kairos-sh/kairos"
)

// deliveryStore is what delivering a topic's messages to its
// subscriptions needs of the store (fan-out): a delivery is a job of the
// topic (kairos.DeliveryOf) that fires as its subscription's delivery
// topic (kairos.Subscription.DeliveryTopic), read when it fires.
type deliveryStore interface {
	// Subscription returns one of a topic's subscriptions, cached for
	// about a second, as GetTopic caches topics; kairos.ErrNotFound for
	// one deleted.
	Subscription(ctx context.Context, tenant, topic, name string) (kairos.Subscription, error)
	// ParkDelivery records a delivery given back to be due kairos.ParkFor
	// from now as parked, when its subscription is still paused; false
	// when it is not (RefileDelivery then files it again).
	ParkDelivery(ctx context.Context, tenant, topic, sub, id string, runAt time.Time) (bool, error)
	RefileDelivery(ctx context.Context, key kairos.JobKey, runAt time.Time) error
	// DeliveryEnded counts delivery j that ended (delivered, dead,
	// expired) in its subscription's counts, when j was made for the
	// subscription of that name now (its CreatedAt).
	DeliveryEnded(ctx context.Context, j kairos.Job, sub string, st kairos.State) error
}

// errSubscriptionGone is the error of a delivery whose subscription was
// deleted before it fired: it ends dead without a callback.
var errSubscriptionGone = errors.New("its subscription was deleted: the delivery is not sent (the subscription's delete cancels its pending deliveries; this one fired first)")

// deliveryTopic returns the topic job fires as, and whether it is a
// delivery: for a delivery, its subscription's delivery topic of t, or
// errSubscriptionGone; for any other job, t.
func deliveryTopic(ctx context.Context, st deliveryStore, job kairos.Job, t kairos.Topic) (kairos.Topic, string, error) {
	sub, ok := kairos.DeliveryOf(job)
	if !ok {
		return t, "", nil
	}
	s, err := st.Subscription(ctx, job.Tenant, job.Topic, sub)
	if errors.Is(err, kairos.ErrNotFound) {
		return t, sub, errSubscriptionGone
	}
	if err != nil {
		return t, sub, fmt.Errorf("read subscription %q: %w", sub, err)
	}
	return s.DeliveryTopic(t), sub, nil
}

// isDelivery reports whether c is a delivery to a subscription.
func isDelivery(c kairos.Claimed) bool {
	_, ok := kairos.DeliveryOf(c.Job)
	return ok
}

// gateDeliveries is gate for the deliveries among cs (jobs of topic t):
// each subscription's go through flow control as its own flow, with its
// own limits and breaker (gateTopic with its delivery topic), so that
// one's failures, breaker, rate or parallelism hold no other's back. A
// paused subscription's are parked; those of a subscription gone go on,
// to end dead when they fire. It returns the other jobs of cs, and the
// deliveries that may start now.
func (fc *flowClient) gateDeliveries(ctx context.Context, t kairos.Topic, cs []kairos.Claimed) (rest []kairos.Claimed, out []kairos.Job) {
	bySub := map[string][]kairos.Claimed{}
	var subs []string
	for _, c := range cs {
		sub, ok := kairos.DeliveryOf(c.Job)
		if !ok {
			rest = append(rest, c)
			continue
		}
		if _, seen := bySub[sub]; !seen {
			subs = append(subs, sub)
		}
		bySub[sub] = append(bySub[sub], c)
	}
	for _, name := range subs {
		dcs := bySub[name]
		s, err := fc.st.Subscription(ctx, t.Tenant, t.Name, name)
		switch {
		case errors.Is(err, kairos.ErrNotFound): // ends dead as it fires
			for _, c := range dcs {
				out = append(out, c.Job)
			}
		case err != nil:
			fc.log.Warn("read a subscription; its deliveries are asked about again", "tenant", t.Tenant, "topic", t.Name, "subscription", name, "err", err)
			fc.hold.again(dcs, fc.retry)
		case s.Paused:
			fc.park(ctx, name, dcs)
		default:
			out = append(out, fc.gateTopic(ctx, s.DeliveryTopic(t), dcs)...)
		}
	}
	return rest, out
}

// park gives back due deliveries of paused subscription sub to be due
// kairos.ParkFor from now, and records them as parked, to be filed again
// at resume; one resumed meanwhile is filed again at once.
func (fc *flowClient) park(ctx context.Context, sub string, cs []kairos.Claimed) {
	back := make([]kairos.Claimed, len(cs))
	until := fc.st.Now().Add(kairos.ParkFor)
	for i, c := range cs {
		c.Due, c.FireAt, c.Paced = until, time.Time{}, false
		back[i] = c
	}
	fc.hold.release(ctx, back)
	for _, c := range cs {
		j := c.Job
		parked, err := fc.st.ParkDelivery(ctx, j.Tenant, j.Topic, sub, j.ID, j.RunAt)
		if err == nil && !parked {
			err = fc.st.RefileDelivery(ctx, j.JobKey, j.RunAt)
		}
		if err != nil {
			fc.log.Warn("park a paused subscription's delivery; it fires when its park ends unless resume files it", "job_id", j.ID, "subscription", sub, "err", err)
		}
	}
}

// deliveryHeaders adds a delivery's headers to its callback request.
func deliveryHeaders(h http.Header, j kairos.Job) {
	if sub, ok := kairos.DeliveryOf(j); ok {
		h.Set("Kairos-Subscription", sub)
		h.Set("Kairos-Message-Id", kairos.MessageOf(j.ID, sub))
	}
}

// countEnded tells the store that delivery j of sub ended in state st.
func (w *Worker) countEnded(ctx context.Context, j kairos.Job, sub string, st kairos.State) {
	if sub == "" || (st != kairos.StateDelivered && st != kairos.StateDead && st != kairos.StateExpired) {
		return
	}
	if err := w.st.DeliveryEnded(context.WithoutCancel(ctx), j, sub, st); err != nil {
		w.log.Warn("count a delivery's end in its subscription's counts", "job_id", j.ID, "err", err)
	}
}
