package rdb

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/kairos-sh/kairos"
)

// PopGroups returns the shards each blocking pop covers (Pop): every
// shard in one pop on a single Redis, so that a worker holds one blocking
// connection whatever the shards and topics; one shard a pop on a Redis
// Cluster, where a pop's keys must share a hash slot.
func (s *Store) PopGroups() [][]int {
	if _, ok := s.c.(*redis.ClusterClient); ok {
		out := make([][]int, s.k.shards)
		for sh := range out {
			out[sh] = []int{sh}
		}
		return out
	}
	all := make([]int, s.k.shards)
	for sh := range all {
		all[sh] = sh
	}
	return [][]int{all}
}

// Pop takes up to n jobs from the ready lists of the topics with handles
// hs in the shards of group (a PopGroups group), blocking up to timeout
// for the first (BLMPOP, on the blocking client; a timeout of 0 does not
// wait, and one under a second blocks a second: the client sends whole
// seconds, so Pop rounds up itself rather than let it truncate quietly);
// the caller starts them (Start). The lists are tried in the order
// given, the shards in turn from one call to the next, so a caller that
// rotates hs shares the pops fairly. One pop also covers this Store's
// interrupt list of the group (Interrupt), so that a pop under way can be
// ended when the topics change. A Redis without BLMPOP (before 7.0, or the
// embedded one) gets BRPOP for the first and RPOP with a count for the
// rest. It returns no jobs and no error when nothing arrived.
func (s *Store) Pop(ctx context.Context, group []int, hs []string, n int, timeout time.Duration) ([]kairos.Claimed, error) {
	if timeout > 0 {
		timeout = (timeout + time.Second - 1).Truncate(time.Second)
	}
	type list struct {
		shard int
		h     string
	}
	keys := make([]string, 0, len(group)*len(hs)+1)
	lists := make([]list, 0, cap(keys))
	if timeout > 0 {
		keys = append(keys, s.k.interrupt(group[0], s.id))
		lists = append(lists, list{})
	}
	turn := int(s.pops.Add(1))
	for i := range group {
		sh := group[(i+turn)%len(group)]
		for _, h := range hs {
			keys = append(keys, s.k.readyList(sh, h))
			lists = append(lists, list{sh, h})
		}
	}
	n = max(n, 1)
	var key string
	var entries []string
	var err error
	switch {
	case s.noBLMPop.Load():
	case timeout <= 0:
		key, entries, err = s.c.LMPop(ctx, "RIGHT", int64(n), keys...).Result()
	default:
		key, entries, err = s.blocking.BLMPop(ctx, timeout, "RIGHT", int64(n), keys...).Result()
	}
	if err != nil && strings.Contains(strings.ToLower(err.Error()), "unknown command") {
		s.noBLMPop.Store(true)
	}
	if s.noBLMPop.Load() {
		key, entries, err = s.popEach(ctx, keys, n, timeout)
	}
	received := time.Now()
	if isNil(err) || key == "" || (timeout > 0 && key == keys[0]) {
		return nil, nil // nothing, or an interrupt
	}
	if err != nil {
		return nil, fmt.Errorf("pop ready jobs of shards %v: %w", group, err)
	}
	i := slices.Index(keys, key)
	if i < 0 {
		return nil, fmt.Errorf("pop ready jobs of shards %v: popped %q, not one of the lists asked", group, key)
	}
	shard, h := lists[i].shard, lists[i].h
	tenant, topic, err := s.topicOf(ctx, h)
	if err != nil {
		return nil, err
	}
	out := make([]kairos.Claimed, 0, len(entries))
	tickets := make([]ticket, len(entries)) // one allocation for the pop's tickets
	var first error
	for i, e := range entries {
		tk := &tickets[i]
		tk.shard, tk.h = shard, h
		c, err := s.readyEntry(kairos.JobKey{Tenant: tenant, Topic: topic}, e, received, tk)
		if err != nil {
			first = cmp.Or(first, err) // left to its pop lease, which pushes it again
			continue
		}
		out = append(out, c)
	}
	return out, first
}

// ticket is a popped job's kairos.Claimed.Ticket: where Pop took it from
// and what its ready list entry said of its claim, which Start reads back.
type ticket struct {
	shard     int // where it was popped from: its shard and topic handle
	h         string
	lease     int64  // its lease's end (ms), as the claim set it
	entryHead string // "<due>,<claimed at>" as its ready list entry has them
}

// ticketOf returns c's ticket; a zero one for a job Pop did not take,
// which Start then starts nowhere.
func ticketOf(c kairos.Claimed) ticket {
	if tk, ok := c.Ticket.(*ticket); ok && tk != nil {
		return *tk
	}
	return ticket{}
}

// Start starts jobs that Pop took (start.lua): it returns those this call
// started, leaving out a job pushed twice whose other entry started it
// already. Until started, a popped job is under its pop lease, and pushed
// again when it lapses: a worker starts what it popped before it fires it.
func (s *Store) Start(ctx context.Context, cs []kairos.Claimed) ([]kairos.Claimed, error) {
	if len(cs) == 0 {
		return cs, nil
	}
	type list struct {
		shard int
		h     string
	}
	var order []list
	byList := map[list][]kairos.Claimed{}
	for _, c := range cs {
		tk := ticketOf(c)
		l := list{tk.shard, tk.h}
		if _, ok := byList[l]; !ok {
			order = append(order, l)
		}
		byList[l] = append(byList[l], c)
	}
	var out []kairos.Claimed
	for _, l := range order {
		started, err := s.start(ctx, l.shard, l.h, byList[l])
		if err != nil {
			return out, err // the rest are left to their pop leases
		}
		out = append(out, started...)
	}
	return out, nil
}

// start starts the jobs cs of topic h that a pop took (start.lua): it
// returns those this pop started, leaving out a job pushed twice whose
// other entry started it already. A call whose reply is lost is repeated,
// with the same token, until Redis answers (it answers as it answered the
// first), for up to startOutage, or startPatience once ctx is done (the
// worker stops): a call sent into an outage may run when Redis comes back,
// and its jobs, started, would otherwise wait for their leases.
func (s *Store) start(ctx context.Context, shard int, h string, cs []kairos.Claimed) ([]kairos.Claimed, error) {
	if len(cs) == 0 {
		return cs, nil
	}
	var tok [8]byte
	rand.Read(tok[:])
	argv := make([]any, 0, 1+3*len(cs))
	argv = append(argv, startTokenTTL.Milliseconds())
	for _, c := range cs {
		tk := ticketOf(c)
		argv = append(argv, field(h, c.Job.ID)+","+strconv.FormatInt(int64(c.Job.Attempts), 36)+","+tk.entryHead, field(h, c.Job.ID), tk.lease)
	}
	keys := []string{s.k.popLeases(shard), s.k.leases(shard), s.k.tag(shard) + keyStartReply + hex.EncodeToString(tok[:])}
	var res string
	var err error
	began := time.Now()
	for wait := 50 * time.Millisecond; ; wait = min(2*wait, time.Second) {
		res, err = s.run(context.WithoutCancel(ctx), startScript, keys, argv...).Text()
		if err == nil || isRedisError(err) {
			break
		}
		next := time.Since(began) + wait
		if next > startOutage || (ctx.Err() != nil && next > startPatience) {
			break
		}
		time.Sleep(wait)
	}
	if err != nil {
		return nil, fmt.Errorf("start popped jobs of shard %d: %w", shard, err)
	}
	keep := cs[:0]
	for i, c := range cs {
		if i < len(res) && res[i] == '1' {
			keep = append(keep, c)
		}
	}
	return keep, nil
}

// startTokenTTL is how long a start call's reply is kept (repeats come a
// second apart at most); startOutage how long a call whose reply was lost
// is repeated, startPatience while the worker stops.
const (
	startTokenTTL = 30 * time.Second
	startOutage   = 2 * time.Minute
	startPatience = 10 * time.Second
)

// readyEntry decodes a ready list entry of topic key (its ID left empty),
// "<due>,<claimed at>,<id>|<record>" (claim.lua), popped at received; tk,
// the job's ticket, gets what the entry says of its claim.
func (s *Store) readyEntry(key kairos.JobKey, e string, received time.Time, tk *ticket) (kairos.Claimed, error) {
	due, rest, ok1 := strings.Cut(e, ",")
	at, rest, ok2 := strings.Cut(rest, ",")
	id, v, ok3 := strings.Cut(rest, "|")
	dueMS, err1 := strconv.ParseInt(due, 36, 64)
	atMS, err2 := strconv.ParseInt(at, 36, 64)
	if !ok1 || !ok2 || !ok3 || err1 != nil || err2 != nil {
		return kairos.Claimed{}, fmt.Errorf("ready entry of %s/%s: %w", key.Tenant, key.Topic, errBadRecord)
	}
	key.ID = id
	r, err := decodeRecord(v)
	if err != nil {
		return kairos.Claimed{}, fmt.Errorf("job %s: %w", key, err)
	}
	j, err := r.job(key, s.webhookID)
	if err != nil {
		return kairos.Claimed{}, err
	}
	tk.lease, tk.entryHead = r.next, due+","+at
	c := kairos.Claimed{Job: j, Due: fromMS(dueMS), Ticket: tk}
	if s.opts.Now == nil {
		c.FireAt = received.Add(time.Duration(dueMS-atMS) * time.Millisecond)
	}
	return c, nil
}

// popEach is Pop's pop without BLMPOP: BRPOP waits for the first entry,
// RPOP takes up to n-1 more of the same list.
func (s *Store) popEach(ctx context.Context, keys []string, n int, timeout time.Duration) (string, []string, error) {
	if timeout <= 0 {
		for _, key := range keys {
			entries, err := s.c.RPopCount(ctx, key, n).Result()
			if isNil(err) {
				continue
			}
			return key, entries, err
		}
		return "", nil, nil
	}
	first, err := s.blocking.BRPop(ctx, timeout, keys...).Result()
	if err != nil {
		return "", nil, err
	}
	key, entries := first[0], first[1:]
	if n > 1 {
		more, err := s.blocking.RPopCount(ctx, key, n-1).Result()
		if err == nil {
			entries = append(entries, more...)
		}
	}
	return key, entries, nil
}

// Interrupt ends this Store's pop under way of group (Pop), so that its
// caller can pop again with other lists: one entry on the group's
// interrupt list of this Store, which the pop takes, expiring in case no
// pop does.
func (s *Store) Interrupt(ctx context.Context, group []int) error {
	shard := group[0]
	key := s.k.interrupt(shard, s.id)
	pipe := s.c.Pipeline()
	pipe.LPush(ctx, key, "1")
	pipe.PExpire(ctx, key, time.Minute)
	if _, err := pipe.Exec(ctx); err != nil {
		return fmt.Errorf("interrupt the pops of shard %d: %w", shard, err)
	}
	return nil
}

// Handles returns the handle of each of topics, "" for one that never had
// a job (it has no ready list). Handles not cached yet are read in one
// call (the whole handle hash), so that a worker that looks at its topics
// costs Redis one command at most, however many have no job.
func (s *Store) Handles(ctx context.Context, topics []kairos.Topic) ([]string, error) {
	out := make([]string, len(topics))
	missing := false
	for i, t := range topics {
		h, ok := s.handles.handle(topicField(t.Tenant, t.Name))
		out[i], missing = h, missing || !ok
	}
	if !missing {
		return out, nil
	}
	all, err := s.c.HGetAll(ctx, s.k.handles()).Result()
	if err != nil {
		return nil, fmt.Errorf("read topic handles: %w", err)
	}
	for f, h := range all {
		if name, ok := strings.CutPrefix(f, handleNameMark); ok {
			s.handles.put(name, h)
		}
	}
	for i, t := range topics {
		out[i], _ = s.handles.handle(topicField(t.Tenant, t.Name))
	}
	return out, nil
}

// ReadyLens returns the ready list length of each topic, in one round trip.
func (s *Store) ReadyLens(ctx context.Context, topics []kairos.Topic) ([]int64, error) {
	shards := s.k.shards
	hs := make([]string, len(topics))
	for i, t := range topics {
		hs[i], _ = s.handles.handle(topicField(t.Tenant, t.Name)) // "": no job yet, an empty list
	}
	lens, err := s.ints(ctx, len(topics)*shards, func(pipe redis.Pipeliner, i int) *redis.IntCmd {
		return pipe.LLen(ctx, s.k.readyList(i%shards, hs[i/shards]))
	})
	if err != nil {
		return nil, fmt.Errorf("ready list lengths: %w", err)
	}
	out := make([]int64, len(topics))
	for i, n := range lens {
		if hs[i/shards] != "" {
			out[i/shards] += n
		}
	}
	return out, nil
}

// ints runs n integer commands in one pipeline and returns their values.
func (s *Store) ints(ctx context.Context, n int, cmd func(pipe redis.Pipeliner, i int) *redis.IntCmd) ([]int64, error) {
	pipe := s.c.Pipeline()
	cmds := make([]*redis.IntCmd, n)
	for i := range n {
		cmds[i] = cmd(pipe, i)
	}
	if _, err := pipe.Exec(ctx); err != nil {
		return nil, err
	}
	out := make([]int64, n)
	for i, c := range cmds {
		out[i] = c.Val()
	}
	return out, nil
}

// Finish records attempt a of a job as outcome o: delivered, retrying at
// retryAt, dead, or expired (with a.Event kairos.AttemptExpired: before
// attempt a started, which is then taken back). It returns the state the outcome moved the job to, or
// "" when the attempt was stale (its lease lapsed and the job was handed
// out again, or it was released): then it changed nothing. Outcomes
// recorded at the same moment by many callbacks share one round trip: one
// that finds no write under way is written at once, and those that arrive
// meanwhile go together in the next (batcher), one script call a shard;
// one that finds none waits outcomeLinger for company.
//
// A notice given with a dead or expired outcome becomes the job's failure
// notification (kairos.NoticeID), one given with a delivered outcome its
// success notification (kairos.SuccessNoticeID), created in the same
// script: it exists exactly when the job died, expired or was delivered.
func (s *Store) Finish(ctx context.Context, key kairos.JobKey, a kairos.Attempt, o kairos.Outcome, retryAt time.Time, notice ...kairos.Notice) (kairos.State, error) {
	logged := a
	if o == kairos.OutcomeExpired && a.Event == kairos.AttemptExpired {
		logged.N = a.N - 1 // the attempt handed out never started: the line names the attempts made
	}
	line, err := logLine(logged)
	if err != nil {
		return "", err
	}
	at, err := s.locate(ctx, key)
	if err != nil {
		return "", err
	}
	var code int
	var retry string
	switch o {
	case kairos.OutcomeDelivered:
		code = outcomeDelivered
	case kairos.OutcomeRetrying:
		code, retry = outcomeRetrying, strconv.FormatInt(ms(retryAt), 36)
	case kairos.OutcomeDead:
		code = outcomeDead
	case kairos.OutcomeExpired:
		code = outcomeExpired
		if a.Event == kairos.AttemptExpired {
			code = outcomeExpiredUnstarted
		}
	default:
		return "", fmt.Errorf("finish %s attempt %d: unknown outcome %d", key, a.N, o)
	}
	entry := field(at.h, key.ID) + "," + strconv.FormatInt(int64(a.N), 36) + "," + strconv.Itoa(code) + "," +
		retry + "," + key.Tenant + "|" + line // logLine ends the line
	if len(notice) > 0 && notice[0].URL != "" && o != kairos.OutcomeRetrying {
		set, err := encodeSettings(kairos.Job{CallbackURL: notice[0].URL, ContentType: "application/json"})
		if err != nil {
			return "", err
		}
		entry += noticeKind(o) + strconv.Itoa(len(set)) + "|" + string(set) + string(notice[0].Body)
	}
	f := &pendingOutcome{ctx: ctx, shard: at.shard, entry: entry, done: make(chan struct{})}
	s.outcomes.do(f)
	if err := await(ctx, f.done); err != nil {
		return "", fmt.Errorf("finish %s attempt %d: %w", key, a.N, err)
	}
	if f.err != nil {
		return "", fmt.Errorf("finish %s attempt %d: %w", key, a.N, f.err)
	}
	if !f.applied {
		return "", nil
	}
	return o.State(), nil
}

// noticeKind tells outcome.lua which notification a notice is: "d" for a
// death (kairos.NoticeMark), "s" for a delivery (kairos.SuccessMark).
func noticeKind(o kairos.Outcome) string {
	if o == kairos.OutcomeDelivered {
		return "s"
	}
	return "d"
}

// pendingOutcome is one outcome waiting to be written (Finish queues it).
type pendingOutcome struct {
	ctx   context.Context
	shard int
	entry string

	applied bool
	err     error
	done    chan struct{}
}

// outcomeBatch is the most outcomes one script call records.
const outcomeBatch = 500

// outcomeLinger is how long an outcome that finds no write under way waits
// for others to share its script call: each call costs Redis a fixed
// overhead, so outcomes of attempts ending together are cheaper together
// (docs/performance.md). Short next to the promise that a job reads its
// new state within 100 ms of the receiver's answer.
const outcomeLinger = 30 * time.Millisecond

// writeOutcomes records a batch of outcomes, one script call a shard (and
// outcomeBatch outcomes), in one pipeline on the batch's context
// (batchContext), and wakes the scanners of shards whose wheel got an
// earlier slot (a retry due soon, a failure notification).
func (s *Store) writeOutcomes(batch []*pendingOutcome) {
	ctx, cancel := batchContext(batch[0].ctx)
	defer cancel()
	var calls [][]*pendingOutcome
	open := map[int]int{}
	for _, f := range batch {
		i, ok := open[f.shard]
		if !ok || len(calls[i]) >= outcomeBatch {
			i = len(calls)
			open[f.shard] = i
			calls = append(calls, nil)
		}
		calls[i] = append(calls[i], f)
	}
	now, retention, horizon := s.scriptNow(), s.opts.Retention.Milliseconds(), WakeHorizon.Milliseconds()
	cmds := s.evalAll(ctx, outcomeScript, len(calls), func(i int) ([]string, []any) {
		sh := calls[i][0].shard
		argv := make([]any, 0, 4+len(calls[i]))
		argv = append(argv, now, s.k.tag(sh), retention, horizon)
		for _, f := range calls[i] {
			argv = append(argv, f.entry)
		}
		return []string{s.k.pool(sh), s.k.due(sh), s.k.leases(sh)}, argv
	})
	wake := s.c.Pipeline()
	for i, c := range cmds {
		res, err := c.Slice()
		var applied []any
		if err == nil && len(res) == 2 {
			applied, _ = res[0].([]any)
			s.wakeFor(ctx, wake, calls[i][0].shard, res[1])
		}
		for k, f := range calls[i] {
			f.err = err
			f.applied = k < len(applied) && toInt(applied[k]) == 1
			close(f.done)
		}
	}
	if wake.Len() > 0 {
		wake.Exec(ctx)
	}
}

// evalAll runs script n times in one pipeline, with the keys and arguments
// of call i from args. Calls a node answered NOSCRIPT (a restarted or
// promoted node lost its script cache) are run again once the script is
// loaded.
func (s *Store) evalAll(ctx context.Context, script *script, n int, args func(i int) ([]string, []any)) []*redis.Cmd {
	run := func(pipe redis.Pipeliner, i int) *redis.Cmd {
		keys, argv := args(i)
		return s.call(ctx, pipe, script, keys, argv...)
	}
	cmds := make([]*redis.Cmd, n)
	pipe := s.c.Pipeline()
	for i := range n {
		cmds[i] = run(pipe, i)
	}
	pipe.Exec(ctx)
	var retry []int
	for i, c := range cmds {
		if lostScript(c.Err()) {
			retry = append(retry, i)
		}
	}
	if len(retry) > 0 {
		s.loadScripts(ctx)
		pipe := s.c.Pipeline()
		for _, i := range retry {
			cmds[i] = run(pipe, i)
		}
		pipe.Exec(ctx)
	}
	return cmds
}

// isRedisError reports whether err is an error reply of Redis's (the call
// ran and failed), not a network error or a timeout (its reply, if any,
// was lost).
func isRedisError(err error) bool {
	var re redis.Error
	return errors.As(err, &re)
}
