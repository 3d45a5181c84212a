package rdb

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// Wake is a message on the wake channel: shard has work to do at At (a
// claim ahead of it takes its jobs). Topics says instead that a topic was
// registered, changed or deleted; Scanner names a scanning process that
// says it is alive (Store.Alive); Resubscribed that the subscription was
// (re)established, so that messages published while it was down are lost
// and everything should be looked at again.
type Wake struct {
	Shard        int
	At           time.Time
	Topics       bool
	Scanner      string
	ScannerHeld  int  // how many shards Scanner holds (Store.Alive)
	ScannerGone  bool // Scanner stopped (Store.Gone)
	Resubscribed bool
	// Flow ("<tenant>/<flow>") has a parallelism permit free, kept for a
	// job waiting for it (Store.Gate): the process that holds the job
	// should ask again now.
	Flow string
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

// parseWake reads a wake message: "<shard> <unix ms>" (Store.wake writes
// them), "t" for a topic change, or "s <id>" for a scanner alive.
func parseWake(msg string) (Wake, bool) {
	if msg == topicsChanged {
		return Wake{Topics: true}, true
	}
	if rest, ok := strings.CutPrefix(msg, scannerPrefix); ok {
		id, held, _ := strings.Cut(rest, " ")
		n, _ := strconv.Atoi(held)
		return Wake{Scanner: id, ScannerHeld: n}, id != ""
	}
	if f, ok := strings.CutPrefix(msg, flowFreedPrefix); ok {
		return Wake{Flow: f}, f != ""
	}
	if id, ok := strings.CutPrefix(msg, goneScannerPrefix); ok {
		return Wake{Scanner: id, ScannerGone: true}, id != ""
	}
	shardStr, atStr, ok := strings.Cut(msg, " ")
	shard, err1 := strconv.Atoi(shardStr)
	at, err2 := strconv.ParseInt(atStr, 10, 64)
	if !ok || err1 != nil || err2 != nil {
		return Wake{}, false
	}
	return Wake{Shard: shard, At: fromMS(at)}, true
}

// topicsChanged is the wake message of a topic change; scannerPrefix
// starts one that names a scanner alive, goneScannerPrefix one that names
// a scanner that stopped.
const (
	topicsChanged     = "t"
	scannerPrefix     = "s "
	goneScannerPrefix = "x "
	flowFreedPrefix   = "f " // flowgate.lua publishes it (freedMessage), with "<tenant>/<flow>"
)

// Alive tells every scanner that scanner id is alive and holds held
// shards (Wake.Scanner), so that live scanners share the shards about
// evenly.
func (s *Store) Alive(ctx context.Context, id string, held int) error {
	return s.c.Publish(ctx, s.k.wake(), scannerPrefix+id+" "+strconv.Itoa(held)).Err()
}

// Gone tells every scanner that scanner id stopped: its share of the
// shards is theirs at once.
func (s *Store) Gone(ctx context.Context, id string) error {
	return s.c.Publish(ctx, s.k.wake(), goneScannerPrefix+id).Err()
}

// Wake tells every scanner that shard has work at t (a scanner that gives
// a shard's mutex back says when its next work is).
func (s *Store) Wake(ctx context.Context, shard int, t time.Time) error {
	return s.c.Publish(ctx, s.k.wake(), strconv.Itoa(shard)+" "+strconv.FormatInt(ms(t), 10)).Err()
}

// LockLeft returns how long shard's scanner mutex has left before it
// expires (0 when nobody holds it).
func (s *Store) LockLeft(ctx context.Context, shard int) (time.Duration, error) {
	d, err := s.c.PTTL(ctx, s.k.lock(shard)).Result()
	if err != nil {
		return 0, fmt.Errorf("read the mutex of shard %d: %w", shard, err)
	}
	return max(d, 0), nil
}

// wake tells the scanners, through c (the client or a pipeline), that
// shard has a wheel slot to process at atMS (unix ms) (SubscribeWake reads
// the message). A lost
// message costs only latency: scanners look at every shard again after a
// reconnection, and never sleep past WakeHorizon.
func (s *Store) wake(ctx context.Context, c redis.Cmdable, shard int, atMS int64) {
	c.Publish(ctx, s.k.wake(), strconv.Itoa(shard)+" "+strconv.FormatInt(atMS, 10))
}

// topicChanged tells the workers of every process that topics changed, so
// that they read them again now rather than at their next poll.
func (s *Store) topicChanged(ctx context.Context) {
	s.c.Publish(ctx, s.k.wake(), topicsChanged)
}
