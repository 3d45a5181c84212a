package rdb

import (
	"context"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// Wake is a message on the wake channel: shard has a wheel slot to process
// at At (a claim ahead of it takes its jobs), or, with Outcomes, outcomes
// that a claim should apply by At. Topics says instead that a topic was
// registered, changed or deleted; Resubscribed that the subscription was
// (re)established, so that messages published while it was down are lost
// and everything should be looked at again.
type Wake struct {
	Shard        int
	At           time.Time
	Outcomes     bool
	Topics       bool
	Resubscribed bool
	// Ready, when set, names a topic ("tenant/topic") whose ready list
	// got jobs (PushReady), for workers that run without a scanner.
	Ready string
}

// wakeHealthCheck is how long the wake subscription may stay silent before
// go-redis pings Redis to check the connection (its default, 3s, would be
// most of an idle process's Redis commands). A connection that breaks is
// noticed at once by its read; the ping finds only one that hangs.
const wakeHealthCheck = 30 * time.Second

// SubscribeWake delivers wake messages on the returned channel until ctx
// ends. It holds one connection, subscribed to the wake channel; idle, it
// costs Redis one PING every wakeHealthCheck. The first message, and one
// after every reconnection, is a Wake with Resubscribed set.
func (s *Store) SubscribeWake(ctx context.Context) <-chan Wake {
	out := make(chan Wake, 64)
	ps := s.c.Subscribe(ctx, s.k.wake())
	go func() {
		defer close(out)
		defer ps.Close()
		ch := ps.ChannelWithSubscriptions(redis.WithChannelHealthCheckInterval(wakeHealthCheck))
		for {
			var w Wake
			select {
			case <-ctx.Done():
				return
			case m, ok := <-ch:
				if !ok {
					return
				}
				switch m := m.(type) {
				case *redis.Subscription:
					if m.Kind != "subscribe" {
						continue
					}
					w = Wake{Resubscribed: true}
				case *redis.Message:
					if w, ok = parseWake(m.Payload); !ok {
						continue
					}
				default:
					continue
				}
			}
			select {
			case out <- w:
			case <-ctx.Done():
				return
			}
		}
	}()
	return out
}

// parseWake reads a wake message: "<shard> <unix ms>", and " o" after
// them for outcomes (Store.wake writes them), "t" for a topic change, or
// "r <tenant>/<topic>" for jobs pushed onto a ready list.
func parseWake(msg string) (Wake, bool) {
	if msg == topicsChanged {
		return Wake{Topics: true}, true
	}
	if name, ok := strings.CutPrefix(msg, readyPrefix); ok {
		return Wake{Ready: name}, name != ""
	}
	parts := strings.Split(msg, " ")
	if len(parts) < 2 || len(parts) > 3 || (len(parts) == 3 && parts[2] != "o") {
		return Wake{}, false
	}
	shard, err1 := strconv.Atoi(parts[0])
	at, err2 := strconv.ParseInt(parts[1], 10, 64)
	if err1 != nil || err2 != nil {
		return Wake{}, false
	}
	return Wake{Shard: shard, At: fromMS(at), Outcomes: len(parts) == 3}, true
}

// topicsChanged is the wake message of a topic change; readyPrefix starts
// one that names a topic whose ready list got jobs.
const (
	topicsChanged = "t"
	readyPrefix   = "r "
)

// wake tells the scanners, through c (the client or a pipeline), that
// shard has a wheel slot to process at atMS (unix ms), or with outcomes,
// outcomes to apply by then (SubscribeWake reads the message). A lost
// message costs only latency: scanners look at every shard again after a
// reconnection, and never sleep past WakeHorizon.
func (s *Store) wake(ctx context.Context, c redis.Cmdable, shard int, atMS int64, outcomes bool) {
	msg := strconv.Itoa(shard) + " " + strconv.FormatInt(atMS, 10)
	if outcomes {
		msg += " o"
	}
	c.Publish(ctx, s.k.wake(), msg)
}

// topicChanged tells the workers of every process that topics changed, so
// that they read them again now rather than at their next poll.
func (s *Store) topicChanged(ctx context.Context) {
	s.c.Publish(ctx, s.k.wake(), topicsChanged)
}
