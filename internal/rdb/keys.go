package rdb

import (
	"hash/fnv"
	"strconv"
	"strings"

	"github.com/kairos-sh/kairos"
)

// keys spells every Redis key kairos uses. Keys that one script touches
// together carry the same hash tag, {N} for shard N, so that the scripts run
// unchanged on Redis Cluster.
type keys struct {
	prefix string
	shards int
}

// shardOf routes a job to its Delay Bucket shard by a hash of its key.
func (k keys) shardOf(jk kairos.JobKey) int {
	h := fnv.New32a()
	h.Write([]byte(jk.Tenant))
	h.Write([]byte{'/'})
	h.Write([]byte(jk.Topic))
	h.Write([]byte{'/'})
	h.Write([]byte(jk.ID))
	return int(h.Sum32() % uint32(k.shards))
}

func (k keys) tag(shard int) string { return k.prefix + ":{" + strconv.Itoa(shard) + "}:" }

// meta holds deployment-wide settings such as the shard count.
func (k keys) meta() string { return k.prefix + ":meta" }

// topics is a hash of "tenant/topic" to the topic's JSON settings.
func (k keys) topics() string { return k.prefix + ":topics" }

// signingKeys holds a tenant's current and next callback secrets.
func (k keys) signingKeys(tenant string) string { return k.prefix + ":signing:{" + tenant + "}" }

// scanners is a ZSET of live scanner instances scored by their last
// heartbeat; scannersHeld maps each to the number of shards it holds. Both
// carry one hash tag, as the heartbeat updates them in one transaction.
func (k keys) scanners() string { return k.prefix + ":{scanners}:live" }

func (k keys) scannersHeld() string { return k.prefix + ":{scanners}:held" }

// wake is the pub/sub channel that tells scanners an earlier job arrived.
func (k keys) wake() string { return k.prefix + ":wake" }

// lock names the redsync mutex of a shard.
func (k keys) lock(shard int) string { return k.prefix + ":lock:" + strconv.Itoa(shard) }

// ready is a topic's ready list; its own hash tag keeps one topic in one slot.
func (k keys) ready(tenant, topic string) string {
	return k.prefix + ":ready:{" + tenant + "/" + topic + "}"
}

func (k keys) bucket(shard int) string { return k.tag(shard) + "bucket" }

// expiring is a shard's ZSET of delivered jobs ("tenant/topic/id") scored
// by when their record expires, so that their listing index entries go
// with them without any sweep over all jobs.
func (k keys) expiring(shard int) string { return k.tag(shard) + "expiring" }

func (k keys) indexPrefix(shard int) string { return k.tag(shard) + "idx:" }

func (k keys) jobPrefix(shard int) string { return k.tag(shard) + "job:" }

func (k keys) job(shard int, jk kairos.JobKey) string { return k.jobPrefix(shard) + jk.String() }

func (k keys) counterPrefix(shard int) string { return k.tag(shard) + "count:" }

// counters is a topic's hash of job counts by state in one shard. A field
// "from>to" counts jobs moved from one state to another, so that a state
// change costs one HINCRBY; a plain field "state" counts jobs that entered
// (or, negative, left) that state from no state. countState adds a field up.
func (k keys) counters(shard int, tenant, topic string) string {
	return k.counterPrefix(shard) + tenant + "/" + topic
}

func (k keys) index(shard int, tenant, topic string) string {
	return k.indexPrefix(shard) + tenant + "/" + topic
}

// groupsPrefix starts the keys of index groups (see lua/index.lua): jobs
// created together, listed under one index member. groupPrefix is a
// topic's; the group's creation time (unix ms) ends the key.
func (k keys) groupsPrefix(shard int) string { return k.tag(shard) + "idg:" }

func (k keys) groupPrefix(shard int, tenant, topic string) string {
	return k.groupsPrefix(shard) + tenant + "/" + topic + ":"
}

// dead is a topic's dead letters in a shard: a ZSET of ids scored by when
// each job died (ms).
func (k keys) dead(shard int, tenant, topic string) string {
	return k.tag(shard) + "dead:" + tenant + "/" + topic
}

// deadTenant is a tenant's dead letters across its topics in a shard, and
// deadAll every tenant's: ZSETs of "tenant/topic/id" (the bucket member)
// scored by when each job died (ms), for listing dead jobs across topics
// without a scan. They carry the shard's tag, as the job does, so the
// scripts that move a job into and out of the dead state keep them in the
// same call as the topic's own (dead); a listing merges the shards.
func (k keys) deadTenant(shard int, tenant string) string { return k.tag(shard) + "deadt:" + tenant }

func (k keys) deadAll(shard int) string { return k.tag(shard) + "deadall" }

// jobKeys are the keys a job's scripts touch, all in the job's shard slot.
type jobKeys struct {
	shard    int
	member   string
	bucket   string
	job      string
	index    string
	groups   string // the topic's index group key prefix
	counters string
	dead     string
	deadTen  string // the tenant's dead letters across topics
	deadAll  string // every tenant's
	expiring string
}

func (k keys) forJob(jk kairos.JobKey) jobKeys {
	s := k.shardOf(jk)
	return jobKeys{
		shard:    s,
		member:   jk.String(),
		bucket:   k.bucket(s),
		job:      k.job(s, jk),
		index:    k.index(s, jk.Tenant, jk.Topic),
		groups:   k.groupPrefix(s, jk.Tenant, jk.Topic),
		counters: k.counters(s, jk.Tenant, jk.Topic),
		dead:     k.dead(s, jk.Tenant, jk.Topic),
		deadTen:  k.deadTenant(s, jk.Tenant),
		deadAll:  k.deadAll(s),
		expiring: k.expiring(s),
	}
}

// countState adds counter field f, holding n, to counts by state.
func countState(counts map[kairos.State]int64, f string, n int64) {
	from, to, moved := strings.Cut(f, ">")
	if !moved {
		counts[kairos.State(f)] += n
		return
	}
	counts[kairos.State(from)] -= n
	counts[kairos.State(to)] += n
}
