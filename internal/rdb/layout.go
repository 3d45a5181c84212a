package rdb

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/kairos-sh/kairos"
)

// This file is the data layout, written down once: every key, every stored
// field, every state code, script reply code and limit. The Lua scripts take
// the codes, limits, key suffixes, fields and id marks from the prelude that
// luaPrelude generates from the tables below (TestLuaSpellsNoLayoutLiteral
// fails on a script that spells one itself), so a reader learns the layout
// here and nowhere else.
//
// # Layout version 9
//
// (What each version changed, and how `kairos migrate` moves an older one:
// docs/architecture.md and docs/operations.md, "Upgrading".)
//
// Keys (P is the key prefix, s a shard, h a topic handle):
//
//	P:meta              HASH   layout (LayoutVersion), shards, webhook_id_salt, topic_seq
//	P:topics            HASH   "tenant/topic" -> the topic's settings (JSON)
//	P:paused            SET    paused topics, "tenant/topic" (their shards' park sets say so to the claims)
//	P:handles           HASH   "n:tenant/topic" -> h, and "h:<h>" -> "tenant/topic"
//	P:{s}:jobs          HASH   the shard's job pool: "<h>/<id>" -> the job's record
//	P:{s}:due           ZSET   the shard's timing wheel: slot -> when it is processed
//	P:{s}:w:<slot>      LIST   a wheel slot's entries: "<h>/<id>,<offset>"
//	P:{s}:l             ZSET   the shard's leases: "<h>/<id>" of each started job -> when its lease lapses
//	P:{s}:lq            ZSET   the shard's pop leases: "<h>/<id>,<attempt>,<due>,<claimed at>" of each job pushed and
//	                           not started -> when it is looked at again (claim.lua; start.lua takes it out)
//	P:{s}:st:<token>    STRING the reply of a start call, kept so that a call whose reply was lost can be repeated
//	P:{s}:r:<h>         LIST   a topic's ready list in the shard: "<due>,<claimed at>,<id>|<record>" (claim.lua pushes, workers pop)
//	P:{s}:r:~<store>    LIST   a process's interrupt list: an entry ends its blocking pop of the shard (Store.Interrupt)
//	P:{s}:lock          STRING the shard's scanner mutex (redsync)
//	P:{s}:c:<h>         HASH   a topic's counters in the shard: jobs by state, occurrences (see "Counters")
//	P:{s}:i:<h>         ZSET   a topic's listing index (see lua/index.lua)
//	P:{s}:g:<h>:<sec>   LIST   a listing group: "<id>,<ms into the second>" of jobs created in one second
//	P:{s}:d:<h>         ZSET   a topic's dead letters: id -> when it died
//	P:{s}:dt:<tenant>   ZSET   a tenant's dead letters across topics: "<h>/<id>" -> when it died
//	P:{s}:dall          ZSET   every tenant's dead letters: "<h>/<id>" -> when it died
//	P:{s}:sch           HASH   the shard's schedules: "<h>/<id>" -> the schedule's header and queue
//	P:{s}:sb            HASH   the shard's schedule bodies: "<h>/<id>" -> the schedule's meta, settings and payload
//	P:{s}:si:<h>        ZSET   a topic's schedule ids in the shard, all scored 0 (listed by id)
//	P:{s}:sr            SET    schedules whose queue of instants runs low: "<h>/<id>"
//	P:{s}:hold          SET    the park set: handles of paused topics, whose jobs the shard's claims park
//	P:{s}:held:<h>      LIST   a paused topic's parked wheel entries, "<h>/<id>,<time>", oldest first
//	P:{f:<tenant>/<flow>}:pace  STRING the rate's pace: every time from it on is free (ms; lua/flow.lua)
//	P:{f:<tenant>/<flow>}:taken ZSET  the times handed out, from an interval ago on ("%.3f" -> that time)
//	P:{f:<tenant>/<flow>}:perm  ZSET  "<tenant>/<topic>/<id>#<attempt>" -> when its permit lapses
//	P:{f:<tenant>/<flow>}:brk   HASH  the flow's circuit breaker: st, f, c, u, p, pd (brkState...; lua/breaker.lua)
//	P:{f:<tenant>/<flow>}:wq    ZSET  jobs the flow's limits keep waiting: "<tenant>/<topic>/<id>#<attempt>" -> wait order (ms from 2026-01-01; ties a fraction of a ms apart)
//	P:{f:<tenant>/<flow>}:wql   ZSET  the same jobs -> when they stop counting: expected back + WaitLapse (ms; Store.Gate, Store.Pace)
//	P:{s}:u:<h>:<key>   STRING a dedup key of a topic's creates: "<first id>,<until (ms, base 36)>", PX the
//	                           window; the job it names is in the same shard (Store.DedupID; see "Dedup keys")
//	P:{s}:gone          SET    handles of deleted topics: no job or schedule is written under them (see "Deleting a topic")
//	P:{s}:lb:<h>:<k>=<v> ZSET  a label index: the topic's jobs in the shard labelled k=v, id -> created at (ms)
//	                           (see "Labels"); a job without labels is in none
//	P:{ops}:o:<id>      HASH   a bulk operation (ops.go); P:{ops}:run ZSET the running ones -> when their lease lapses
//	P:{ops}:tr:<tenant> SET    a tenant's running bulk operations; P:{ops}:tq:<tenant> ZSET its queued ones -> created (ms)
//	P:{s}:ht            HASH   topic handle -> its tenant (written when a process first resolves the handle)
//	P:{s}:tp            HASH   tenant -> its pending jobs in the shard (see "Tenant quotas")
//	P:quotas            HASH   tenant -> the quota an admin set for it (JSON)
//	P:revoked           HASH   revoked API tokens: "t:<tenant>" -> unix second (its tokens issued then or before), "j:<jti>" -> 1, "v" -> version
//	P:rate:{tenant}     STRING a tenant's request rate: the GCRA theoretical arrival time (us), expiring
//	P:subs:{<tenant>/<topic>}[:paused|:n|:park:<sub>]  a topic's subscriptions, paused ones, their counts and a
//	                           paused one's parked deliveries (fan-out; subscriptions.go)
//	P:msg:{<tenant>/<topic>/<id>} STRING a published message and its deliveries, expiring (messages.go);
//	                           P:msgu:{<tenant>/<topic>}:<key> its dedup key. A delivery is a job, labelled subscription=<sub>
//
// A topic handle is a short base-36 number given to a tenant's topic name
// when it is first registered and kept for good, so that every per-job
// entry names its topic in one or two bytes.
//
// # The job record
//
// One value in the shard's pool: a fixed-width binary header, then the
// settings (JSON, read by Go only), the attempt log and the payload, each
// as long as the header says:
//
//	<header: recordHeaderLen bytes><settings><log><payload>
//
// The header's fields are recordFields, in order: the state code (one
// byte), then unsigned big-endian integers of the widths recordFields
// gives (unix ms for times). The scripts read and write it with Lua's
// struct library in one call (format recordHeader, handed to them in the
// prelude), which costs a fraction of parsing and writing base-36 text;
// on the embedded Redis, which has no struct, a Lua stand-in does.
// The attempt log is one JSON object a line, oldest first, at most
// LogKeep lines.
//
// # Schedules
//
// A schedule is two values, one in each of its shard's schedule hashes:
//
//	P:{s}:sch  <header: scheduleHeaderLen bytes><queue: instants, queueEntry bytes each>
//	P:{s}:sb   <meta><settings><payload>
//
// The header is binary, as a job record's (scheduleFields, read and written
// with one struct call); the queue holds the instants after cur, ascending.
// Every occurrence the schedule fires rewrites its header and queue (a
// hundred-odd bytes); the body, which can be kilobytes, is written only by
// a put. An occurrence's body is the schedule's settings and payload (the
// end of the schedule's body, in one piece); the claim that fires one files
// the next with the body of the one firing, so the body hash is read only
// by a resume or a refill that files a first occurrence, and by a claim
// whose firing occurrence was replayed (it carries an attempt log).
// Its occurrences are ordinary jobs with ids "<schedule id>@<unix ms>"
// (decimal), in the schedule's shard (keys.shardOf). Exactly one occurrence
// is pending (cur) while the schedule runs: the claim that fires it files
// the next one, the first instant of the queue, in the same script
// (claim.lua), so a crash can neither skip nor double one; a cancel or
// reschedule of the pending one files the next in its script as well
// (skipPending). Go computes the
// instants (cron and time zones are Go's) and keeps the queue topped up: a
// claim that leaves it short adds the schedule to P:{s}:sr, and the scanner
// refills a batch of them in one call (schedrefill.lua). A pattern that has
// no instant after hi (end_at, or a cron that ends) is marked ended, and its
// claims ask for no refill.
//
// A schedule with an overlap rule or a max_runs has an extension between
// its header and its queue (scheduleExtFields, flag 4): the claim that
// fires an occurrence counts it there (so that max_runs holds whatever
// process dies when), looks there for the previous occurrence (overlap),
// and drops an occurrence past max_runs. A put keeps the counts. Jitter
// needs nothing stored beyond the meta: Go adds each instant's delay
// before it queues the instant, so the queue, cur and the occurrences'
// ids hold the times they fire.
//
// # Counters
//
// P:{s}:c:<h> holds a topic's counters in one shard; the scripts that
// change states add to them once a call (countFlush, one HINCRBY a field),
// and Store.TopicCounters sums the shards: nothing scans jobs. Fields:
//
//	<state>            jobs that entered that state from no state (negative: left it for none)
//	<from>><to>        jobs moved from one state to another
//	occ:<from>><to>    the same move of a schedule's occurrence (a job whose id is
//	                   "<schedule id>@<unix ms>", kairos.ScheduleOf): counted by state as
//	                   <from>><to> is, and also as an occurrence event:
//	  occ:scheduled>active, occ:ready>active   fired: claimed for its first attempt
//	                                           (a trigger and a replayed dead one included;
//	                                           one dropped by catch_up "none" is not)
//	  occ:active>scheduled, occ:active>ready   un-fired: a first attempt given back unstarted (Release)
//	  occ:active>delivered                     delivered
//	  occ:active>dead                          dead
//	occ:skipped        instants overlap skip or buffer_one did not fire (claim.lua, gate)
//
// The occurrence counts only grow (fired less the ones given back), from
// the topic's first job until DeleteTopic removes the hash: fired less
// delivered less dead is the occurrences between their first attempt and
// their end. The mark costs no command: an occurrence's move is counted
// in its own field instead of the plain one, so a call adds a field only
// when it moves both plain jobs and occurrences of one topic.
//
// # Dedup keys
//
// A create with a dedup_key (and no id) takes a generated id that lands in
// the shard of its key (Store.DedupID: ids are drawn until one does), so
// that enqueue.lua checks and sets the key and writes the job in one call:
// of racing creates of one key exactly one creates. The key stays for its
// window whatever becomes of the job (delivered, dead, cancelled, past its
// retention); a create within the window answers the job it names, or its
// id alone once the record is gone. The until in its value decides on the
// scripts' clock (tests pin it); PX lets Redis drop the key, and no sweep
// is needed. A debounce needs no stored field: a replace keeps the
// record's created time (ca), which is the first create's time.
//
// # Expiry and priority
//
// A job's expires_at and priority are settings (ex: unix ms, pr: 0-9),
// left out when unset, so a job without them stores nothing more. Go reads
// them: the worker ends a job whose expiry passed, on the Redis clock
// (Store.Now), at the point an attempt would start, and a failed attempt
// whose retry would start after it; outcome.lua then makes it expired
// (code e), kept for the retention period like a delivered job (an entry at
// its record's expiry) and counted as <from>>expired. Replay lifts the
// expiry (replay.lua drops ex). Priority orders the jobs a flow limit
// keeps waiting: the worker's flow client gives flow control each job's
// wait order (kairos.WaitOrder); no script reads pr.
//
// # Cancelled jobs
//
// cancel.lua keeps a cancelled job's record, in state cancelled (code c),
// its attempt log included, with fa the time of the cancel and nx its
// record's expiry, the retention period later: an entry in the wheel at
// that time, which the claim processes as a delivered job's (it deletes
// the record and takes it out of the listing and label indexes), so no
// sweep is needed. The cancel counts <from>>cancelled. A create of its id
// makes a new job over it, as over a delivered one; a schedule that files
// the instant of a cancelled occurrence again (a put or resume before that
// instant) files a new one over it (sched.lua, occur).
//
// # Labels
//
// A job's labels are in its settings ("lb", JSON only Go reads), and each
// pair has a ZSET in the job's shard, P:{s}:lb:<h>:<k>=<v>, scored by the
// job's creation time as the listing is. The scripts that write or delete
// a record keep them: enqueue.lua (a create, a replace, a new job of an id
// used before), cancel.lua, claim.lua (a delivered record past its
// retention, an occurrence dropped by catch-up none), sched.lua (an
// occurrence filed, one taken back); lua/index.lua has the helpers. A
// listing or bulk operation by labels walks the rarest label's ZSET and
// checks the others on each record, so it reads about as many entries as
// that label has jobs. A job without labels has no settings field, no
// entry and no key: it costs what it cost before labels existed.
//
// # Tenant quotas
//
// A tenant's pending jobs (scheduled, ready, active, retrying) are counted
// per shard in P:{s}:tp, by the same call that counts them per topic
// (countFlush adds each topic's change of pending jobs to its tenant, read
// from P:{s}:ht). Store.TenantPending sums the shards: one HGET a shard,
// nothing scanned. The API checks a create against the tenant's quota
// before it stores it. The request rate is GCRA in quota.lua, on Redis's
// clock, one key a tenant. A Redis whose jobs predate these counts gets
// them once, at the first start of a kairos that keeps them (meta field
// tenant_pending; tenantpending.lua counts each shard from the topics'
// counters, exactly, whatever runs beside it).
//
// # Deleting a topic
//
// A topic's jobs and schedules are spread over every shard, and its record
// sits in P:topics, in another slot: no one script can check a topic and
// store a job in it. So a topic is deleted in steps, and every script that
// adds a job or a schedule (enqueue.lua, schedset.lua) first checks, in
// the same call, that the topic's handle is not in its shard's P:{s}:gone:
//
//  1. topicretire.lua, in each shard: if the topic's counters show no
//     pending or dead job and its schedule index is empty, add the handle
//     to P:{s}:gone; else change nothing and say how many remain.
//  2. If some shard refused (a create landed there first), SREM the handle
//     from the shards retired so far: the delete is a 409.
//  3. Remove the topic's record only if it is still the one read at the
//     start (topicdel.lua); if a PUT changed it meanwhile, restore the
//     shards: a 409.
//
// A create therefore either lands before its shard is retired (and the
// delete refuses) or after (and is refused with a 404): no job lands in a
// deleted topic. Registering the topic again (the HSET or HSETNX that adds
// its record) SREMs its handle from every shard; handles are never given
// again, so a topic keeps its handle across a delete and a re-register.
//
// # The timing wheel
//
// A job waits as an entry in one slot of its shard's wheel, at its next
// time (nx): its due time while scheduled or retrying, its lease expiry
// while active, its record's expiry once delivered, expired or cancelled. An entry is live only
// while its time equals the job's nx: a cancelled, rescheduled or finished
// job leaves stale entries behind, which the claim skips. Slots come in
// wheelWidths; a job goes to the widest level whose slot is processed after
// now (one due within the second level's width, 10 s, to the narrowest at
// once), and a wide slot, when processed, is cascaded into narrower ones, so
// a job far ahead costs a few bytes in a list rather than a ZSET entry.
// A slot is named "<level>:<number>" (number = floor(t / width), base 36)
// and scored in P:{s}:due by when it is processed: its start for level 0,
// its start less the next narrower width above that.

// LayoutVersion is the version of the layout this code reads and writes;
// Init refuses a Redis that holds another.
const LayoutVersion = 9

// Key suffixes: what follows a shard's tag (keys.tag, "P:{s}:") in each of
// its keys, and a flow's tag (keys.flow) in each of its. keys.go builds
// every key from these; the scripts that build keys themselves (rather
// than take them in KEYS) know the ones in luaKeys as KEY.<name>, from the
// prelude. A key that ends in ':' is followed by a handle, tenant or slot.
const (
	keyPool           = "jobs"  // P:{s}:jobs
	keyDue            = "due"   // P:{s}:due
	keyWheelSlot      = "w:"    // P:{s}:w:<slot>
	keyLeases         = "l"     // P:{s}:l
	keyPopLeases      = "lq"    // P:{s}:lq
	keyStartReply     = "st:"   // P:{s}:st:<token>
	keyReady          = "r:"    // P:{s}:r:<h>
	keyInterrupt      = "r:~"   // P:{s}:r:~<store>
	keyLock           = "lock"  // P:{s}:lock
	keyCounters       = "c:"    // P:{s}:c:<h>
	keyIndex          = "i:"    // P:{s}:i:<h>
	keyGroup          = "g:"    // P:{s}:g:<h>:<sec>
	keyDead           = "d:"    // P:{s}:d:<h>
	keyDeadTenant     = "dt:"   // P:{s}:dt:<tenant>
	keyDeadAll        = "dall"  // P:{s}:dall
	keySchedules      = "sch"   // P:{s}:sch
	keyScheduleBodies = "sb"    // P:{s}:sb
	keyScheduleIndex  = "si:"   // P:{s}:si:<h>
	keyRefills        = "sr"    // P:{s}:sr
	keyParkSet        = "hold"  // P:{s}:hold (the park set; the suffix keeps its old name)
	keyParked         = "held:" // P:{s}:held:<h> (a parked list; the suffix keeps its old name)
	keyGone           = "gone"  // P:{s}:gone
	keyTopicTenants   = "ht"    // P:{s}:ht
	keyTenantPending  = "tp"    // P:{s}:tp
	keyLabel          = "lb:"   // P:{s}:lb:<h>:<key>=<value>
	keyFlowPace       = "pace"  // P:{f:<tenant>/<flow>}:pace
	keyFlowTaken      = "taken" // P:{f:<tenant>/<flow>}:taken
	keyFlowPermits    = "perm"  // P:{f:<tenant>/<flow>}:perm
	keyFlowBreaker    = "brk"   // P:{f:<tenant>/<flow>}:brk
	keyFlowWait       = "wq"    // P:{f:<tenant>/<flow>}:wq
	keyFlowWaitLapse  = "wql"   // P:{f:<tenant>/<flow>}:wql
)

// luaKeys are the key suffixes the scripts build keys with, by their
// names in the prelude's KEY table (the dedup key's, dedupMark, is DEDUP).
var luaKeys = []luaName{
	{"wheelSlot", keyWheelSlot},
	{"ready", keyReady},
	{"counters", keyCounters},
	{"index", keyIndex},
	{"group", keyGroup},
	{"dead", keyDead},
	{"deadTenant", keyDeadTenant},
	{"deadAll", keyDeadAll},
	{"schedules", keySchedules},
	{"scheduleBodies", keyScheduleBodies},
	{"parked", keyParked},
	{"topicTenants", keyTopicTenants},
	{"tenantPending", keyTenantPending},
	{"label", keyLabel},
}

// luaName is a Go value by its name in a table of the prelude.
type luaName struct{ name, value string }

// The fields of a flow's circuit breaker (P:{f:...}:brk, lua/breaker.lua;
// BRK to the scripts) and its state codes (BRK_ST).
const (
	brkState    = "st" // a state code: brkClosed (or no field), brkOpen, brkHalfOpen
	brkFails    = "f"  // failed attempts in a row while closed
	brkCool     = "c"  // the current cool-down (ms): the probe's failure doubles it
	brkUntil    = "u"  // open until (ms)
	brkProbe    = "p"  // the probe's attempt ("<tenant>/<topic>/<id>#<attempt>")
	brkProbeEnd = "pd" // when the probe's lease lapses (ms): another may go then

	brkClosed   = "c"
	brkOpen     = "o"
	brkHalfOpen = "h"
)

var luaBreakerFields = []luaName{{"state", brkState}, {"fails", brkFails}, {"cool", brkCool},
	{"openUntil", brkUntil}, {"probe", brkProbe}, {"probeEnd", brkProbeEnd}}

var luaBreakerCodes = []luaName{{"closed", brkClosed}, {"open", brkOpen}, {"half", brkHalfOpen}}

// The fields of P:handles (handle.lua; HANDLE to the scripts): "n:" before
// a topic's "tenant/topic", "h:" before a handle, and the last handle
// given, which the next adds one to.
const (
	handleNameMark = "n:"
	handleMark     = "h:"
	handleSeq      = "seq"
)

var luaHandleFields = []luaName{{"name", handleNameMark}, {"handle", handleMark}, {"seq", handleSeq}}

// The fields of P:revoked (revoke.lua; REVOKED to the scripts): "t:"
// before a tenant, "j:" before a token id, and the list's version
// (revokedVersion, revoked.go).
const (
	revokedTenantMark = "t:"
	revokedJTIMark    = "j:"
)

var luaRevokedFields = []luaName{{"tenant", revokedTenantMark}, {"version", revokedVersion}}

// groupMark starts a listing index's member that names a listing group
// ("#<sec>", lua/index.lua); the scripts know it as GROUP_MARK.
const groupMark = "#"

// LogKeep is how many attempts a job's log keeps, newest last.
const LogKeep = 10

// maxChores is how many wheel entries that start no attempt (stale ones,
// the lease entries of delivered jobs, records past their retention) one
// claim call processes at most: a claim's work stays bounded when many
// such entries fall due together, and the rest are left to the next call
// (the reply's next time says they are due).
const maxChores = 2000

// wheelWidths are the widths of the timing wheel's levels in ms: 100 ms,
// 10 s, about 17 minutes and about 28 hours.
var wheelWidths = []int64{SlotWidth.Milliseconds(), 10_000, 1_000_000, 100_000_000}

// SlotWidth is the width of the timing wheel's narrowest slots: a claim
// takes a whole slot's jobs.
const SlotWidth = 100 * time.Millisecond

// recordFields are the header fields of a job record, in order, with
// their widths in bytes. The widths hold what kairos can store:
//
//   - n, 3 bytes (up to 16,777,215): max_attempts is at most 100 a replay,
//     and a lapsed lease adds one; a job that crashes its worker on every
//     attempt, its lease lapsing every 15 s (the default lease margin),
//     would take 8 years to reach the cap.
//   - times, 6 bytes: unix ms until the year 10889.
//   - lt, 3 bytes (up to 4.6 hours): the API caps a callback timeout at 15
//     minutes.
//   - ls, 3 bytes (up to 16 MiB): settings are a URL (at most 2 KiB), at most
//     50 headers of values up to 4 KiB, trace context and a flow key.
//   - ll, 3 bytes: LogKeep lines, each with a response excerpt that logLine
//     cuts to kairos.MaxResponseBytes (16 KiB; JSON escapes can make it six
//     times that) and an error text it cuts to maxLogText bytes.
//
// The scripts' struct.pack would cut a value that does not fit without a
// word, so Go checks what it hands them (checkRecord).
var recordFields = []headerField{
	{"st", 1, true, "state code (stateCodes)"},
	{"n", 3, false, "attempts started"},
	{"ca", 6, false, "created at (ms)"},
	{"ra", 6, false, "run_at: the time the job was scheduled for (ms)"},
	{"nx", 6, false, "next time: due (scheduled, ready, retrying), lease expiry (active; dead keeps it), record expiry (delivered, expired: filed with the outcome; cancelled: by the cancel)"},
	{"fa", 6, false, "finished at: delivered, dead, expired or cancelled (ms); 0 before"},
	{"lt", 3, false, "lease timeout: the callback timeout in force when the job was created (ms); 0 for the claim's default"},
	{"ls", 3, false, "length of the settings"},
	{"ll", 3, false, "length of the attempt log"},
}

// headerField is a field of a binary header: width bytes, a 1-byte code
// (code) or an unsigned big-endian integer.
type headerField struct {
	name    string
	width   int
	code    bool
	meaning string
}

// structFormat is a header of fields as a format of Lua's struct library:
// big-endian, a code a 1-byte string, the others unsigned integers; and
// its length in bytes.
func structFormat(fields []headerField) (string, int) {
	var b strings.Builder
	b.WriteString(">")
	n := 0
	for _, f := range fields {
		if f.code {
			b.WriteString("c1")
		} else {
			fmt.Fprintf(&b, "I%d", f.width)
		}
		n += f.width
	}
	return b.String(), n
}

// recordHeader is the header of a job record as a format of Lua's struct
// library (">c1I3I6I6I6I6I3I3I3"); recordHeaderLen is its length in bytes.
var recordHeader, recordHeaderLen = structFormat(recordFields)

// recordMax is the largest value header field name holds.
func recordMax(name string) int64 {
	for _, f := range recordFields {
		if f.name == name {
			return 1<<(8*f.width) - 1
		}
	}
	panic("rdb: no record field " + name)
}

// scheduleFields are the header fields of a schedule record, in order,
// with their widths in bytes. Times are unix ms in 6 bytes, as a job
// record's; lt, ls and lm as a job record's lt and ls.
var scheduleFields = []headerField{
	{"gen", 4, false, "version: every put, pause and resume adds one; a refill computed for another version is dropped"},
	{"cur", 6, false, "the instant of the pending occurrence (ms); 0 when none (paused, ended, or waiting for a refill)"},
	{"hi", 6, false, "the latest instant ever queued (ms): a refill computes the instants after it"},
	{"lf", 6, false, "the instant of the last occurrence the pattern fired (ms)"},
	{"cu", 1, true, "catch-up: o one, n none, a all"},
	{"fl", 1, false, "flags: 1 when paused, plus 2 when the pattern has no instant after hi (ended: no refill is asked for), plus 4 when the extension (scheduleExtFields) follows the header"},
	{"lt", 3, false, "lease timeout of the occurrences (ms), as a job's lt"},
	{"ls", 3, false, "length of the settings in the body (the occurrences' own, as a job's)"},
	{"lm", 3, false, "length of the meta in the body (JSON, read by Go only: the pattern and its bounds)"},
}

// scheduleHeader is a schedule header as a format of Lua's struct library
// (">I4I6I6I6c1I1I3I3I3"), scheduleHeaderLen its length in bytes, and
// queueEntry the width of each instant queued after it (unix ms).
var scheduleHeader, scheduleHeaderLen = structFormat(scheduleFields)

const queueEntry = 6

// scheduleExtFields are the fields of a schedule's extension: a part
// between its header and its queue that only a schedule with an overlap
// rule other than allow, or a max_runs, has (flag 4 of fl says so), so that
// a schedule using neither is stored, read and written as before.
var scheduleExtFields = []headerField{
	{"ov", 1, true, "overlap: a allow, s skip, b buffer_one"},
	{"mr", 4, false, "max_runs; 0 for none"},
	{"rn", 4, false, "occurrences fired (counted by the claim that fires each: pattern, trigger and backfill; a replay is not counted)"},
	{"lo", 6, false, "the instant (id ms) of the last occurrence fired, whatever fired it: the previous occurrence overlap looks at"},
	{"bw", 6, false, "buffer_one: the instant of the occurrence waiting for the previous one to end; 0 when none waits"},
	{"sk", 4, false, "instants skipped because the previous occurrence was still active or retrying"},
}

// scheduleExt is the extension as a format of Lua's struct library, and
// its length in bytes.
var scheduleExt, scheduleExtLen = structFormat(scheduleExtFields)

// overlapCodes are the overlap rules as one stored byte.
var overlapCodes = map[kairos.Overlap]byte{kairos.OverlapAllow: 'a', kairos.OverlapSkip: 's', kairos.OverlapBufferOne: 'b'}

// bufferPoll is how often an occurrence that buffer_one holds back looks
// again whether the previous one has ended (its claim re-files it this far
// ahead): the delay between that end and its firing is at most about this.
const bufferPoll = time.Second

// replyCompleted answers a backfill of a schedule that fired its max_runs.
const replyCompleted = 37

// occurrenceMark starts the counter fields of occurrences' moves (see
// "Counters"); the scripts know it as OCC.
const occurrenceMark = "occ:"

// occurrenceSkipped is the counter field, after occurrenceMark, of the
// instants overlap did not fire.
const occurrenceSkipped = "skipped"

// catchUpCodes are the catch-up settings as one stored byte.
var catchUpCodes = map[kairos.CatchUp]byte{kairos.CatchUpOne: 'o', kairos.CatchUpNone: 'n', kairos.CatchUpAll: 'a'}

// scheduleQueue is how many instants a schedule keeps queued after its
// pending one; refillBelow is the length under which a claim asks for more.
const (
	scheduleQueue = 16
	refillBelow   = 8
)

// stateCodes are the states as one stored byte.
var stateCodes = map[kairos.State]byte{
	kairos.StateScheduled: 's',
	kairos.StateReady:     'r',
	kairos.StateActive:    'a',
	kairos.StateRetrying:  't',
	kairos.StateDelivered: 'd',
	kairos.StateDead:      'x',
	kairos.StateExpired:   'e',
	kairos.StateCancelled: 'c',
}

// stateOf returns the state of a stored code, or "" for an unknown one.
func stateOf(c byte) kairos.State {
	for st, code := range stateCodes {
		if code == c {
			return st
		}
	}
	return ""
}

// Script reply codes. The scripts answer these; the Go wrappers turn them
// into sentinels.
const (
	replyNotFound  = 0  // no such job
	replyOK        = 1  // done: created, cancelled, rescheduled, replayed, released
	replyReplaced  = 2  // an existing job that had not fired was replaced
	replyActive    = -1 // the job is being delivered right now
	replyDelivered = -2 // the job was delivered
	replyDead      = -3 // the job is dead
	replyNotDead   = -4 // replay of a job that is not dead
	replyTopicGone = -5 // the topic was deleted (its handle is in P:{s}:gone)
	replyCancelled = -6 // the job was cancelled
	replyKept      = 3  // on_conflict keep: an existing job that had not fired was left as it was
	replyDebounced = 4  // on_conflict debounce: replaced, its time bounded by max_delay
	replyDuplicate = 5  // a create within its dedup key's window: nothing written
)

// dedupMark starts a dedup key after the shard's tag (keys.dedup); the
// scripts know it as DEDUP.
const dedupMark = "u:"

// Attempt outcomes, as Finish sends them to outcome.lua.
const (
	outcomeDelivered = 1
	outcomeRetrying  = 2
	outcomeDead      = 3
	// outcomeExpired: the job's expiry comes before its next attempt
	// (the attempt made is logged); outcomeExpiredUnstarted: it passed
	// before the attempt it was handed out for started, which is taken
	// back (its attempt count goes down by one, as a release's does).
	outcomeExpired          = 4
	outcomeExpiredUnstarted = 5
)

// readyLook bounds how many entries of a ready list, from its oldest end,
// a claim looks through for the entry of a job whose pop lease lapsed: a
// job left waiting that long is pushed again (start lets one of its
// entries start it).
const readyLook = 10000

// luaPrelude is put in front of every script: the codes and limits above.
var luaPrelude = func() string {
	var b strings.Builder
	b.WriteString("-- generated from layout.go\n")
	codes := make([]string, 0, len(stateCodes))
	for st, c := range stateCodes {
		codes = append(codes, fmt.Sprintf("%s = '%c'", st, c))
	}
	sort.Strings(codes)
	fmt.Fprintf(&b, "local ST = {%s}\n", strings.Join(codes, ", "))
	names := make([]string, 0, len(stateCodes))
	for st, c := range stateCodes {
		names = append(names, fmt.Sprintf("%c = '%s'", c, st))
	}
	sort.Strings(names)
	fmt.Fprintf(&b, "local NAME = {%s} -- a state's name by its code (counter fields use names)\n", strings.Join(names, ", "))
	fmt.Fprintf(&b, "local R = {not_found = %d, ok = %d, replaced = %d, active = %d, delivered = %d, dead = %d, not_dead = %d, topic_gone = %d, kept = %d, debounced = %d, duplicate = %d, cancelled = %d}\n",
		replyNotFound, replyOK, replyReplaced, replyActive, replyDelivered, replyDead, replyNotDead, replyTopicGone, replyKept, replyDebounced, replyDuplicate, replyCancelled)
	fmt.Fprintf(&b, "local DEDUP = '%s' -- starts a dedup key after the shard's tag\n", dedupMark)
	fmt.Fprintf(&b, "local OUT = {delivered = %d, retrying = %d, dead = %d, expired = %d, expired_unstarted = %d}\n",
		outcomeDelivered, outcomeRetrying, outcomeDead, outcomeExpired, outcomeExpiredUnstarted)
	fmt.Fprintf(&b, "local OCC = '%s' -- starts the counter fields of occurrences' moves\n", occurrenceMark)
	fmt.Fprintf(&b, "local OCC_SKIPPED = OCC .. '%s' -- the counter field of instants overlap did not fire\n", occurrenceSkipped)
	fmt.Fprintf(&b, "local NOTICE_MARK = '%s' -- joins a dead job's id and its attempt in its failure notification's id\n", kairos.NoticeMark)
	fmt.Fprintf(&b, "local SUCCESS_MARK = '%s' -- joins a delivered job's id and its attempt in its success notification's id\n", kairos.SuccessMark)
	fmt.Fprintf(&b, "local REC, REC_LEN = '%s', %d -- a job record's header (recordFields), for struct.pack and struct.unpack\n",
		recordHeader, recordHeaderLen)
	fmt.Fprintf(&b, "local LOG_KEEP, CHORES_MAX = %d, %d\n", LogKeep, maxChores)
	fmt.Fprintf(&b, "local READY_LOOK = %d -- how far from its oldest end a ready list is searched for an entry (claim.lua)\n", readyLook)
	fmt.Fprintf(&b, "local RATE_LATE = %d -- ms a job may start after its time from the rate limit (PacedLate)\n", kairos.PacedLate.Milliseconds())
	fmt.Fprintf(&b, "local SCH, SCH_LEN, SCH_Q = '%s', %d, %d -- a schedule header (scheduleFields) and a queued instant's width\n",
		scheduleHeader, scheduleHeaderLen, queueEntry)
	fmt.Fprintf(&b, "local MISFIRE_GRACE, CATCHUP_MAX, REFILL_BELOW = %d, %d, %d\n",
		kairos.MisfireGrace.Milliseconds(), kairos.MaxCatchUp, refillBelow)
	fmt.Fprintf(&b, "local SCHX, SCHX_LEN, SCH_EXT = '%s', %d, 4 -- a schedule's extension (scheduleExtFields) and its flag in fl\n",
		scheduleExt, scheduleExtLen)
	fmt.Fprintf(&b, "local BUFFER_POLL, R_COMPLETED = %d, %d\n", bufferPoll.Milliseconds(), replyCompleted)
	ws := make([]string, len(wheelWidths))
	for i, w := range wheelWidths {
		ws[i] = strconv.FormatInt(w, 10)
	}
	fmt.Fprintf(&b, "local WHEEL = {%s}\n", strings.Join(ws, ", "))
	luaTable(&b, "KEY", luaKeys, "key suffixes after a shard's tag")
	luaTable(&b, "BRK", luaBreakerFields, "a circuit breaker's fields")
	luaTable(&b, "BRK_ST", luaBreakerCodes, "a circuit breaker's state codes")
	luaTable(&b, "HANDLE", luaHandleFields, "fields of the handles hash")
	luaTable(&b, "REVOKED", luaRevokedFields, "fields of the revoked tokens' hash")
	cu := make([]luaName, 0, len(catchUpCodes))
	for c, code := range catchUpCodes {
		cu = append(cu, luaName{string(c), string(code)})
	}
	sort.Slice(cu, func(i, j int) bool { return cu[i].name < cu[j].name })
	luaTable(&b, "CU", cu, "catch-up codes")
	fmt.Fprintf(&b, "local OCC_MARK, OCC_MARK_BYTE = '%s', %d -- joins a schedule's id and an instant in its occurrence's id\n",
		kairos.OccurrenceMark, kairos.OccurrenceMark[0])
	fmt.Fprintf(&b, "local GROUP_MARK = '%s' -- starts a listing index's member that names a group\n", groupMark)
	return b.String()
}()

// luaTable writes a table of the prelude: local name = {k = 'v', ...}.
func luaTable(b *strings.Builder, name string, t []luaName, meaning string) {
	kv := make([]string, len(t))
	for i, e := range t {
		kv[i] = fmt.Sprintf("%s = '%s'", e.name, e.value)
	}
	fmt.Fprintf(b, "local %s = {%s} -- %s\n", name, strings.Join(kv, ", "), meaning)
}
