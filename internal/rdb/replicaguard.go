package rdb

import (
	"bufio"
	"fmt"
	"strings"
	"sync"
	"time"
)

// ReplicaLeftGrace is how long after a replica leaves its master a create
// confirmed by WAIT (Options.WaitReplicas) is not acknowledged while that
// replica is still away.
//
// Why: a failover under Redis Sentinel promotes a replica by telling it
// REPLICAOF NO ONE, and only once it has seen the promotion (its INFO
// poll, a second or more later) does it re-point the master's other
// replicas; the old master, still up, is demoted later still. In between
// the old master takes writes and its remaining replicas confirm them to
// WAIT, and all of them are thrown away when those replicas resync from
// the new master: acknowledged creates lost. The master's only sign of
// it is a replica leaving. So while a replica seen attached within the
// grace is away, the write may have gone to the losing side, and kairos
// answers it as not replicated (503; a retry with the same id or dedup
// key is safe). By the end of the grace Sentinel has re-pointed the other
// replicas, so WAIT fails on the old master by itself; a replica that
// merely died costs creates that long, and its return ends it at once.
const ReplicaLeftGrace = 10 * time.Second

// replicaWatch remembers which replicas each master had attached, by the
// master's replication id (a promoted replica starts a new one, so the
// new master's replicas are followed afresh).
type replicaWatch struct {
	mu   sync.Mutex
	seen map[string]map[string]time.Time // replication id -> replica address -> last seen online
}

// check records the replicas that INFO replication (info, read right
// after WAIT on the master that took the writes) shows online, and
// returns an error naming a replica seen online within ReplicaLeftGrace
// before now that is not online any more. A node that is not a master
// answers nil: its writes failed already.
func (w *replicaWatch) check(info string, now time.Time) error {
	role, replid, online := parseReplication(info)
	if role != "master" || replid == "" {
		return nil
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.seen == nil {
		w.seen = map[string]map[string]time.Time{}
	}
	seen := w.seen[replid]
	if seen == nil {
		if len(w.seen) >= 8 { // masters of long ago (a cluster has one each)
			for id, m := range w.seen {
				if last(m).Before(now.Add(-ReplicaLeftGrace)) {
					delete(w.seen, id)
				}
			}
		}
		seen = map[string]time.Time{}
		w.seen[replid] = seen
	}
	for _, addr := range online {
		seen[addr] = now
	}
	var gone []string
	for addr, at := range seen {
		switch {
		case !at.Before(now):
		case now.Sub(at) > ReplicaLeftGrace:
			delete(seen, addr) // long gone: the master's fewer replicas are the norm now
		default:
			gone = append(gone, fmt.Sprintf("%s (%v ago)", addr, now.Sub(at).Round(time.Millisecond)))
		}
	}
	if len(gone) == 0 {
		return nil
	}
	return fmt.Errorf("%w: replica %s left the master, maybe promoted by a failover: a write now may be lost with the replicas still attached",
		ErrNotReplicated, strings.Join(gone, ", "))
}

// last is the latest time in m.
func last(m map[string]time.Time) time.Time {
	var t time.Time
	for _, at := range m {
		if at.After(t) {
			t = at
		}
	}
	return t
}

// parseReplication reads INFO replication: the node's role, its
// replication id, and the addresses of its replicas that are online.
func parseReplication(info string) (role, replid string, online []string) {
	sc := bufio.NewScanner(strings.NewReader(info))
	for sc.Scan() {
		k, v, ok := strings.Cut(strings.TrimSpace(sc.Text()), ":")
		if !ok {
			continue
		}
		switch {
		case k == "role":
			role = v
		case k == "master_replid":
			replid = v
		case strings.HasPrefix(k, "slave") && strings.Contains(v, "state=online"):
			var ip, port string
			for _, f := range strings.Split(v, ",") {
				fk, fv, _ := strings.Cut(f, "=")
				switch fk {
				case "ip":
					ip = fv
				case "port":
					port = fv
				}
			}
			if ip != "" && port != "" {
				online = append(online, ip+":"+port)
			}
		}
	}
	return role, replid, online
}
