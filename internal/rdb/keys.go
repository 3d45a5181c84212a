package rdb

import (
	"hash/fnv"
	"strconv"

	"github.com/kairos-sh/kairos"
)

// keys spells every Redis key kairos uses. Keys that one script touches
// together carry the same hash tag, {N} for shard N, so that the scripts run
// unchanged on Redis Cluster.
type keys struct {
	prefix string
	shards int
}

// shardOf routes a job to its Delay Bucket shard by a hash of its key. A
// schedule's occurrence ("<schedule id>@<ms>") goes to its schedule's
// shard, so that one script fires an occurrence and files the next.
func (k keys) shardOf(jk kairos.JobKey) int {
	if id, ok := kairos.NoticeOf(jk.ID); ok {
		jk.ID = id // with its dead job: the claim that kills it creates it
	}
	if sid, ok := kairos.ScheduleOf(jk.ID); ok {
		jk.ID = sid
	}
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

// paused is the set of paused topics, "tenant/topic" (Store.PauseTopic):
// apart from the topics' settings, so that a PUT of a topic, which
// rewrites them, cannot undo a pause.
func (k keys) paused() string { return k.prefix + ":paused" }

// signingKeys holds a tenant's current and next callback secrets.
func (k keys) signingKeys(tenant string) string { return k.prefix + ":signing:{" + tenant + "}" }

// topicSigningKeys holds the current and next callback secrets of a
// tenant's topic that signs with its own (signing: topic).
func (k keys) topicSigningKeys(tenant, topic string) string {
	return k.prefix + ":signing:{" + tenant + "}:" + topic
}

// wake is the pub/sub channel that tells scanners an earlier job arrived,
// and workers that topics changed.
func (k keys) wake() string { return k.prefix + ":wake" }

// readyList is a topic's ready list in one shard: the jobs its claims
// pushed for the workers to pop (claim.lua names it tag .. KEY.ready .. h).
// A worker's one blocking pop covers every topic of a shard, one hash slot.
func (k keys) readyList(shard int, h string) string { return k.tag(shard) + keyReady + h }

// interrupt is a process's list that ends its blocking pops of a shard
// (Store.Interrupt); "~" is not a handle's character.
func (k keys) interrupt(shard int, id string) string { return k.tag(shard) + keyInterrupt + id }

// leases is a shard's set of active attempts' leases: "<h>/<id>" -> when
// the lease lapses (claim.lua adds, outcome.lua and release.lua remove).
func (k keys) leases(shard int) string { return k.tag(shard) + keyLeases }

// popLeases is a shard's set of pop leases: "<h>/<id>,<attempt>" of each
// job pushed onto a ready list and not started yet -> when its pop lease
// lapses and it is pushed again (claim.lua adds, start.lua removes).
func (k keys) popLeases(shard int) string { return k.tag(shard) + keyPopLeases }

// lock is the name of a shard's scanner mutex (redsync).
func (k keys) lock(shard int) string { return k.tag(shard) + keyLock }

// handles maps tenants' topic names to their handles and back (handle.lua).
func (k keys) handles() string { return k.prefix + ":{handles}" }

// pool is a shard's job pool: "<handle>/<id>" -> the job's record.
func (k keys) pool(shard int) string { return k.tag(shard) + keyPool }

// due is a shard's timing wheel: slot -> when it is processed.
func (k keys) due(shard int) string { return k.tag(shard) + keyDue }

// counters is a topic's hash of job counts by state in one shard. A field
// "from>to" counts jobs moved from one state to another, so that a state
// change costs one HINCRBY; a plain field "state" counts jobs that entered
// (or, negative, left) that state from no state; an occurrence's moves
// have fields of their own (layout.go, "Counters"). Counters.add reads them.
func (k keys) counters(shard int, h string) string { return k.tag(shard) + keyCounters + h }

// index is a topic's listing index in one shard (lua/index.lua).
func (k keys) index(shard int, h string) string { return k.tag(shard) + keyIndex + h }

// groupPrefix starts the keys of a topic's listing groups in one shard; the
// second (unix ms, base 36) ends the key.
func (k keys) groupPrefix(shard int, h string) string { return k.tag(shard) + keyGroup + h + ":" }

// dead is a topic's dead letters in one shard: id -> when it died.
func (k keys) dead(shard int, h string) string { return k.tag(shard) + keyDead + h }

// deadTenant is a tenant's dead letters across its topics in one shard, and
// deadAll every tenant's: ZSETs of pool fields scored by when each job died,
// kept by the scripts that move jobs into and out of the dead state (they
// carry the shard's tag, as the job does); a listing merges the shards.
func (k keys) deadTenant(shard int, tenant string) string {
	return k.tag(shard) + keyDeadTenant + tenant
}

func (k keys) deadAll(shard int) string { return k.tag(shard) + keyDeadAll }

// schedules is a shard's schedules: "<h>/<id>" -> the schedule's header
// and queue of instants.
func (k keys) schedules(shard int) string { return k.tag(shard) + keySchedules }

// scheduleBodies is a shard's schedule bodies: "<h>/<id>" -> the
// schedule's meta, settings and payload (the scripts name it tag .. KEY.scheduleBodies).
func (k keys) scheduleBodies(shard int) string { return k.tag(shard) + keyScheduleBodies }

// scheduleIndex is a topic's schedule ids in one shard (all scored 0, so
// they list in id order).
func (k keys) scheduleIndex(shard int, h string) string { return k.tag(shard) + keyScheduleIndex + h }

// refills is a shard's set of schedules whose queue of instants runs low.
func (k keys) refills(shard int) string { return k.tag(shard) + keyRefills }

// parkSet is a shard's set of paused topics' handles: its claims park their
// jobs instead of starting attempts.
func (k keys) parkSet(shard int) string { return k.tag(shard) + keyParkSet }

// parked is a paused topic's parked wheel entries in one shard, in the
// order the claims met them: "<h>/<id>,<time>" (lua/unpark.lua).
//
// The two keys' suffixes on disk keep their old names, "hold" and "held:"
// (keyParkSet, keyParked): renaming them would change the data layout.
func (k keys) parked(shard int, h string) string { return k.tag(shard) + keyParked + h }

// flow is the key tag of a tenant's flow-control quota (kairos.Topic.Flow):
// its calendar, permits, breaker and waiting jobs share one hash slot
// (flowpace.lua, flowgate.lua; Store.flowKeys).
func (k keys) flow(tenant, flow string) string { return k.prefix + ":{f:" + tenant + "/" + flow + "}:" }

// gone is a shard's set of the handles of deleted topics (layout.go,
// "Deleting a topic").
func (k keys) gone(shard int) string { return k.tag(shard) + keyGone }

// topicTenants is a shard's hash of topic handles to their tenants, and
// tenantPending its hash of tenants to their pending jobs in the shard
// (layout.go, "Tenant quotas").
func (k keys) topicTenants(shard int) string { return k.tag(shard) + keyTopicTenants }

func (k keys) tenantPending(shard int) string { return k.tag(shard) + keyTenantPending }

// quotas is a hash of tenant -> its quota (JSON), for tenants an admin set one for.
func (k keys) quotas() string { return k.prefix + ":quotas" }

// rate is a tenant's request rate state (quota.lua); its own hash tag.
func (k keys) rate(tenant string) string { return k.prefix + ":rate:{" + tenant + "}" }

// revoked is a hash of revoked API tokens: "t:<tenant>" -> tokens of the
// tenant issued at or before this unix second, "j:<jti>" -> 1, and "v"
// -> the list's version (one more a revocation).
func (k keys) revoked() string { return k.prefix + ":revoked" }

// dedupShard is the shard of a topic's dedup key: its job is created there
// (Store.DedupID), so that one script checks the key and writes the job.
func (k keys) dedupShard(tenant, topic, key string) int {
	h := fnv.New32a()
	h.Write([]byte(tenant))
	h.Write([]byte{'/'})
	h.Write([]byte(topic))
	h.Write([]byte{'/', 'u', ':'})
	h.Write([]byte(key))
	return int(h.Sum32() % uint32(k.shards))
}

// dedup is a topic's dedup key in its shard (layout.go, "Dedup keys"); the
// scripts build it as tag .. DEDUP .. h .. ':' .. key.
func (k keys) dedup(shard int, h, key string) string {
	return k.tag(shard) + dedupMark + h + ":" + key
}

// field is a job's field in its shard's pool.
func field(h, id string) string { return h + "/" + id }

// Fan-out keys (subscriptions.go, messages.go). A topic's subscriptions,
// their paused set, counts and parked deliveries share the hash tag
// {<tenant>/<topic>}, so that one script reads a pause and parks a
// delivery; a message has a tag of its own.

// subscriptions is a topic's hash of subscription name -> its settings (JSON).
func (k keys) subscriptions(tenant, topic string) string {
	return k.prefix + ":subs:{" + tenant + "/" + topic + "}"
}

// subscriptionsPaused is the set of a topic's paused subscriptions.
func (k keys) subscriptionsPaused(tenant, topic string) string {
	return k.subscriptions(tenant, topic) + ":paused"
}

// subscriptionCounts is a topic's hash of "<sub>:<count>" -> n
// (SubscriptionCounts).
func (k keys) subscriptionCounts(tenant, topic string) string {
	return k.subscriptions(tenant, topic) + ":n"
}

// parkedDeliveries is a paused subscription's parked deliveries: id -> run_at (ms).
func (k keys) parkedDeliveries(tenant, topic, sub string) string {
	return k.subscriptions(tenant, topic) + ":park:" + sub
}

// subscriptionSigningKeys holds a subscription's own callback secrets
// (signing: subscription): the topic's own key with "/<sub>", so that
// SigningSecret finds them by Topic.OwnSecret.
func (k keys) subscriptionSigningKeys(tenant, topic, sub string) string {
	return k.topicSigningKeys(tenant, topic+"/"+sub)
}

// message is a published message's record (JSON), expiring a retention
// period after its run_at.
func (k keys) message(tenant, topic, id string) string {
	return k.prefix + ":msg:{" + tenant + "/" + topic + "/" + id + "}"
}

// messageDedup is a topic's message dedup key: the first message's id,
// for the dedup window.
func (k keys) messageDedup(tenant, topic, key string) string {
	return k.prefix + ":msgu:{" + tenant + "/" + topic + "}:" + key
}
