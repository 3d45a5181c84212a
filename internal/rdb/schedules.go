package rdb

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/kairos-sh/kairos"
)

// Pattern computes a schedule's instants.
type Pattern interface {
	// NextN returns up to n instants strictly after t, ascending (fewer
	// when the pattern ends).
	NextN(t time.Time, n int) []time.Time
}

// scheduleMeta is the part of a schedule record only Go reads.
type scheduleMeta struct {
	Cron     string `json:"cron,omitempty"`
	EveryMS  int64  `json:"every_ms,omitempty"`
	Timezone string `json:"tz,omitempty"`
	StartMS  int64  `json:"start,omitempty"`
	EndMS    int64  `json:"end,omitempty"`
	Created  int64  `json:"created"`
	Updated  int64  `json:"updated"`
	// Triggered is the instant of the last occurrence a manual trigger
	// fired (its id's ms), or 0: the header's lf holds the pattern's.
	Triggered int64 `json:"trig,omitempty"`
	JitterMS  int64 `json:"jit,omitempty"`
	// Backfilled is the latest instant the last backfill filed, and
	// BackfilledAt when it ran (ms).
	Backfilled   int64 `json:"bf,omitempty"`
	BackfilledAt int64 `json:"bfat,omitempty"`
}

// scheduleRecord is a schedule as stored (layout.go, "Schedules").
type scheduleRecord struct {
	gen, cur, hi, lastFired int64
	leaseTimeout            int64 // ms, the occurrences' lt
	catchUp                 kairos.CatchUp
	paused, ended           bool
	settings, meta, payload []byte
	queue                   []int64
	ext                     *scheduleExtension // nil when the schedule has none
}

// decodeSchedule reads a schedule's header (with its queue) and body as
// stored (layout.go, "Schedules").
func decodeSchedule(head, body string) (scheduleRecord, error) {
	if len(head) < scheduleHeaderLen {
		return scheduleRecord{}, fmt.Errorf("schedule record: %w", errBadRecord)
	}
	var r scheduleRecord
	nums, code, at := readHeader(head, scheduleFields)
	for cu, c := range catchUpCodes {
		if code == c {
			r.catchUp = cu
		}
	}
	r.gen, r.cur, r.hi, r.lastFired, r.leaseTimeout = nums["gen"], nums["cur"], nums["hi"], nums["lf"], nums["lt"]
	fl, ls, lm := nums["fl"], nums["ls"], nums["lm"]
	if fl&scheduleExtFlag != 0 {
		x, n, err := decodeScheduleExt(head[at:])
		if err != nil {
			return scheduleRecord{}, err
		}
		r.ext, at = &x, at+n
	}
	if r.catchUp == "" || fl > 7 || ls+lm > int64(len(body)) || (len(head)-at)%queueEntry != 0 {
		return scheduleRecord{}, fmt.Errorf("schedule record: %w", errBadRecord)
	}
	r.paused, r.ended = fl&1 == 1, fl&2 == 2
	r.meta, r.settings, r.payload = []byte(body[:lm]), []byte(body[lm:lm+ls]), []byte(body[lm+ls:])
	for q := head[at:]; q != ""; q = q[queueEntry:] {
		r.queue = append(r.queue, beUint(q[:queueEntry]))
	}
	return r, nil
}

// schedule returns the record as a kairos.Schedule of key.
func (r scheduleRecord) schedule(tenant, topic, id string) (kairos.Schedule, error) {
	var m scheduleMeta
	if err := json.Unmarshal(r.meta, &m); err != nil {
		return kairos.Schedule{}, fmt.Errorf("schedule %s: decode meta: %w", id, err)
	}
	sc := kairos.Schedule{Tenant: tenant, Topic: topic, ID: id, Cron: m.Cron, Every: time.Duration(m.EveryMS) * time.Millisecond,
		Timezone: m.Timezone, CatchUp: r.catchUp, Paused: r.paused,
		CreatedAt: fromMS(m.Created), UpdatedAt: fromMS(m.Updated)}
	if m.StartMS != 0 {
		sc.StartAt = fromMS(m.StartMS)
	}
	if m.EndMS != 0 {
		sc.EndAt = fromMS(m.EndMS)
	}
	if r.cur != 0 {
		sc.Pending = fromMS(r.cur)
	}
	if r.lastFired != 0 {
		sc.LastFired = fromMS(r.lastFired)
	}
	if m.Triggered != 0 {
		sc.LastTriggered = fromMS(m.Triggered)
	}
	r.showExt(&sc, m)
	j, err := record{settings: r.settings, payload: r.payload}.job(kairos.JobKey{Tenant: tenant, Topic: topic},
		func(kairos.JobKey, int64) string { return "" })
	if err != nil {
		return kairos.Schedule{}, fmt.Errorf("schedule %s: %w", id, err)
	}
	j.State, j.RunAt, j.CreatedAt, j.DoneAt = "", time.Time{}, time.Time{}, time.Time{}
	sc.Job = j
	return sc, nil
}

// scheduleAt is where a schedule lives.
func (s *Store) scheduleAt(ctx context.Context, tenant, topic, id string, create bool) (shard int, h string, err error) {
	h, err = s.handle(ctx, tenant, topic, create)
	if err != nil {
		return 0, "", err
	}
	return s.k.shardOf(kairos.JobKey{Tenant: tenant, Topic: topic, ID: id}), h, nil
}

func (s *Store) pattern(sc kairos.Schedule) (Pattern, error) {
	return s.opts.Patterns(sc)
}

// PutSchedule creates or replaces a schedule and files its first
// occurrence (the first instant after now), unless it is paused. A
// replaced schedule's pending occurrence is removed unless it is being
// delivered. It reports whether a schedule was replaced.
func (s *Store) PutSchedule(ctx context.Context, sc kairos.Schedule) (bool, error) {
	p, err := s.pattern(sc)
	if err != nil {
		return false, err
	}
	shard, h, err := s.scheduleAt(ctx, sc.Tenant, sc.Topic, sc.ID, true)
	if err != nil {
		return false, err
	}
	set, err := encodeSettings(sc.Job)
	if err != nil {
		return false, err
	}
	if err := checkRecord(0, sc.Job.Timeout.Milliseconds(), len(set)); err != nil {
		return false, fmt.Errorf("put schedule %s: %w", sc.ID, err)
	}
	now := s.Now()
	m := scheduleMeta{Cron: sc.Cron, EveryMS: sc.Every.Milliseconds(), Timezone: sc.Timezone,
		Created: ms(cmp.Or(sc.CreatedAt, now)), Updated: ms(now)}
	if !sc.StartAt.IsZero() {
		m.StartMS = ms(sc.StartAt)
	}
	if !sc.EndAt.IsZero() {
		m.EndMS = ms(sc.EndAt)
	}
	if !sc.LastTriggered.IsZero() {
		m.Triggered = ms(sc.LastTriggered) // a replace keeps it, as it keeps lf
	}
	m.JitterMS = sc.Jitter.Milliseconds()
	if !sc.LastBackfilled.IsZero() {
		m.Backfilled, m.BackfilledAt = ms(sc.LastBackfilled), ms(sc.BackfilledAt)
	}
	meta, err := json.Marshal(m)
	if err != nil {
		return false, fmt.Errorf("encode schedule: %w", err)
	}
	cu := catchUpCodes[cmp.Or(sc.CatchUp, kairos.CatchUpOne)]
	paused := "0"
	if sc.Paused {
		paused = "1"
	}
	argv := []any{s.scriptNow(), s.k.tag(shard), h, sc.ID, "put", WakeHorizon.Milliseconds(), "",
		string(cu), paused, sc.Job.Timeout.Milliseconds(), len(set), len(meta), string(meta) + string(set) + string(sc.Job.Payload),
		extArg(sc)}
	argv = instantsArgs(argv, p, now)
	res, err := s.run(ctx, schedsetScript, s.scheduleKeys(shard, h), argv...).Slice()
	if err != nil {
		return false, fmt.Errorf("put schedule %s: %w", sc.ID, err)
	}
	if toInt(res[0]) == replyTopicGone {
		return false, errTopicGone(sc.Topic)
	}
	s.wakeFor(ctx, s.c, shard, res[1])
	return toInt(res[0]) == replyReplaced, nil
}

// instantsArgs appends whether more instants follow, then the next
// scheduleQueue+1 instants after now.
func instantsArgs(argv []any, p Pattern, now time.Time) []any {
	next := p.NextN(now, scheduleQueue+1)
	if len(next) == scheduleQueue+1 {
		argv[6] = "1" // more can follow
	} else {
		argv[6] = "0"
	}
	for _, t := range next {
		argv = append(argv, ms(t))
	}
	return argv
}

func (s *Store) scheduleKeys(shard int, h string) []string {
	return []string{s.k.pool(shard), s.k.due(shard), s.k.schedules(shard), s.k.refills(shard), s.k.scheduleIndex(shard, h), s.k.gone(shard)}
}

// PauseSchedule pauses (pause) or resumes a schedule. Pausing removes the
// pending occurrence (unless it is being delivered); resuming files the
// first instant after now: occurrences that fell while it was paused do
// not fire. Either is a no-op when the schedule is already so.
func (s *Store) PauseSchedule(ctx context.Context, tenant, topic, id string, pause bool) error {
	shard, h, err := s.scheduleAt(ctx, tenant, topic, id, false)
	if err != nil {
		return scheduleNotFound(id, err)
	}
	mode := "resume"
	argv := []any{s.scriptNow(), s.k.tag(shard), h, id, mode, WakeHorizon.Milliseconds(), "0"}
	if pause {
		argv[4] = "pause"
	} else {
		sc, err := s.GetSchedule(ctx, tenant, topic, id)
		if err != nil {
			return err
		}
		p, err := s.pattern(sc)
		if err != nil {
			return err
		}
		argv = instantsArgs(argv, p, s.Now())
	}
	res, err := s.run(ctx, schedsetScript, s.scheduleKeys(shard, h), argv...).Slice()
	if err != nil {
		return fmt.Errorf("%s schedule %s: %w", argv[4], id, err)
	}
	if toInt(res[0]) == replyTopicGone {
		return errTopicGone(topic)
	}
	if toInt(res[0]) == replyNotFound {
		return fmt.Errorf("schedule %q: %w", id, kairos.ErrNotFound)
	}
	s.wakeFor(ctx, s.c, shard, res[1])
	return nil
}

func scheduleNotFound(id string, err error) error {
	if errors.Is(err, kairos.ErrNotFound) {
		return fmt.Errorf("schedule %q: %w", id, kairos.ErrNotFound)
	}
	return err
}

// GetSchedule returns a schedule or kairos.ErrNotFound.
func (s *Store) GetSchedule(ctx context.Context, tenant, topic, id string) (kairos.Schedule, error) {
	shard, h, err := s.scheduleAt(ctx, tenant, topic, id, false)
	if err != nil {
		return kairos.Schedule{}, scheduleNotFound(id, err)
	}
	pipe := s.c.TxPipeline()
	head, body := s.getSchedule(ctx, pipe, shard, field(h, id))
	if _, err := pipe.Exec(ctx); err != nil && !isNil(err) {
		return kairos.Schedule{}, fmt.Errorf("get schedule %s: %w", id, err)
	}
	if isNil(head.Err()) {
		return kairos.Schedule{}, fmt.Errorf("schedule %q: %w", id, kairos.ErrNotFound)
	}
	return readSchedule(head.Val(), body.Val(), tenant, topic, id)
}

// getSchedule queues on pipe the reads of schedule f's header and body:
// in one transaction, a put between them cannot pair one with another's.
func (s *Store) getSchedule(ctx context.Context, pipe redis.Pipeliner, shard int, f string) (head, body *redis.StringCmd) {
	return pipe.HGet(ctx, s.k.schedules(shard), f), pipe.HGet(ctx, s.k.scheduleBodies(shard), f)
}

// readSchedule reads the stored header and body of a tenant's schedule.
func readSchedule(head, body, tenant, topic, id string) (kairos.Schedule, error) {
	r, err := decodeSchedule(head, body)
	if err != nil {
		return kairos.Schedule{}, fmt.Errorf("schedule %s: %w", id, err)
	}
	return r.schedule(tenant, topic, id)
}

// DeleteSchedule removes a schedule and its pending occurrence, unless that
// is being delivered (it then finishes, and files no next one).
func (s *Store) DeleteSchedule(ctx context.Context, tenant, topic, id string) error {
	shard, h, err := s.scheduleAt(ctx, tenant, topic, id, false)
	if err != nil {
		return scheduleNotFound(id, err)
	}
	n, err := s.run(ctx, scheddelScript, []string{s.k.pool(shard), s.k.schedules(shard), s.k.refills(shard), s.k.scheduleIndex(shard, h)},
		s.k.tag(shard), h, id).Int64()
	if err != nil {
		return fmt.Errorf("delete schedule %s: %w", id, err)
	}
	if n == replyNotFound {
		return fmt.Errorf("schedule %q: %w", id, kairos.ErrNotFound)
	}
	return nil
}

// ListSchedules returns up to limit of a topic's schedules in id order,
// after the id cursor ("" for the first page), and the cursor of the next
// page ("" when this is the last).
func (s *Store) ListSchedules(ctx context.Context, tenant, topic, cursor string, limit int) ([]kairos.Schedule, string, error) {
	h, err := s.handle(ctx, tenant, topic, false)
	if errors.Is(err, kairos.ErrNotFound) {
		return nil, "", nil
	}
	if err != nil {
		return nil, "", err
	}
	lo := "-"
	if cursor != "" {
		lo = "(" + cursor
	}
	pipe := s.c.Pipeline()
	cmds := make([]*redis.StringSliceCmd, s.k.shards)
	for sh := range s.k.shards {
		cmds[sh] = pipe.ZRangeByLex(ctx, s.k.scheduleIndex(sh, h), &redis.ZRangeBy{Min: lo, Max: "+", Count: int64(limit + 1)})
	}
	if _, err := pipe.Exec(ctx); err != nil && !isNil(err) {
		return nil, "", fmt.Errorf("list schedules: %w", err)
	}
	type found struct {
		id    string
		shard int
	}
	var ids []found
	for sh, c := range cmds {
		for _, id := range c.Val() {
			ids = append(ids, found{id, sh})
		}
	}
	slices.SortFunc(ids, func(a, b found) int { return strings.Compare(a.id, b.id) })
	next := ""
	if len(ids) > limit {
		ids = ids[:limit]
		next = ids[limit-1].id
	}
	pipe = s.c.TxPipeline() // the page's records in one round trip
	heads, bodies := make([]*redis.StringCmd, len(ids)), make([]*redis.StringCmd, len(ids))
	for i, f := range ids {
		heads[i], bodies[i] = s.getSchedule(ctx, pipe, f.shard, field(h, f.id))
	}
	if _, err := pipe.Exec(ctx); err != nil && !isNil(err) {
		return nil, "", fmt.Errorf("list schedules: %w", err)
	}
	out := make([]kairos.Schedule, 0, len(ids))
	for i, f := range ids {
		v, err := heads[i].Result()
		if isNil(err) {
			continue // deleted meanwhile
		}
		sc, err := readSchedule(v, bodies[i].Val(), tenant, topic, f.id)
		if err != nil {
			return nil, "", err
		}
		out = append(out, sc)
	}
	return out, next, nil
}

// TriggerSchedule fires one occurrence now, outside the pattern: a job
// like the schedule's occurrences, due now, with the id of an occurrence at
// this instant, or a millisecond on when this instant is one of the
// pattern's. The schedule's pending occurrence is not affected.
func (s *Store) TriggerSchedule(ctx context.Context, tenant, topic, id string) (kairos.Job, error) {
	sc, err := s.GetSchedule(ctx, tenant, topic, id)
	if err != nil {
		return kairos.Job{}, err
	}
	if sc.Completed {
		return kairos.Job{}, fmt.Errorf("%w: schedule %q fired its max_runs: it is completed and fires no more", kairos.ErrConflict, id)
	}
	j := sc.Job
	now := s.Now().Truncate(time.Millisecond)
	// Not the id of an occurrence of the pattern: this process's clock may
	// run ahead of Redis's and name one not filed yet, which would then
	// find this job under its id and not fire.
	// (A pattern that no longer parses, as after a time zone left the
	// system's database, files no instants either: the pending one is
	// then the only one to step off.)
	p, err := s.pattern(sc)
	if err != nil {
		p = nil
	}
	for range 1000 { // a pattern fires at most once a millisecond
		onPattern := false
		if p != nil {
			next := p.NextN(now.Add(-time.Millisecond), 1)
			onPattern = len(next) > 0 && next[0].Equal(now)
		}
		if !onPattern && !sc.Pending.Equal(now) {
			break
		}
		now = now.Add(time.Millisecond)
	}
	j.JobKey = kairos.JobKey{Tenant: tenant, Topic: topic, ID: kairos.OccurrenceID(id, now)}
	j.RunAt = now
	r := s.EnqueueBatch(ctx, []kairos.Job{j})[0]
	if r.Err != nil {
		return r.Job, r.Err
	}
	if err := s.markTriggered(ctx, tenant, topic, id, now); err != nil {
		// the occurrence is filed and fires; only last_run misses it
		return r.Job, fmt.Errorf("schedule %s: record the trigger for last_run: %w", id, err)
	}
	return r.Job, nil
}

// markTriggered records at as the instant of schedule id's last manual
// trigger, in its meta, unless a later one is recorded; a put, pause or
// resume between its read and its write makes it read again.
func (s *Store) markTriggered(ctx context.Context, tenant, topic, id string, at time.Time) error {
	shard, h, err := s.scheduleAt(ctx, tenant, topic, id, false)
	if err != nil {
		return scheduleNotFound(id, err)
	}
	f := field(h, id)
	for range 5 {
		pipe := s.c.TxPipeline()
		head, body := s.getSchedule(ctx, pipe, shard, f)
		if _, err := pipe.Exec(ctx); err != nil {
			if isNil(err) {
				return nil // deleted meanwhile: nothing to show it on
			}
			return err
		}
		r, err := decodeSchedule(head.Val(), body.Val())
		if err != nil {
			return err
		}
		var m scheduleMeta
		if err := json.Unmarshal(r.meta, &m); err != nil {
			return fmt.Errorf("decode meta: %w", err)
		}
		if m.Triggered >= ms(at) {
			return nil
		}
		m.Triggered = ms(at)
		meta, err := json.Marshal(m)
		if err != nil {
			return err
		}
		switch n, err := s.run(ctx, schedmarkScript, []string{s.k.schedules(shard), s.k.scheduleBodies(shard)}, f, r.gen, string(meta)).Int(); {
		case err != nil:
			return err
		case n != replyReplaced: // written, or deleted meanwhile
			return nil
		}
	}
	return fmt.Errorf("%w: schedule %q changed five times while its trigger was recorded", kairos.ErrConflict, id)
}

// RefillSchedules tops up the instants of the shard's schedules that a
// claim found short (Claim.Refills), at most most of them, in one script
// call. A schedule with no pending occurrence (its queue ran out, as after
// all kairos were down longer than its queue lasts) gets one: the first
// instant after now, and before it, with catch-up "all", each instant
// missed.
func (s *Store) RefillSchedules(ctx context.Context, shard, most int) error {
	fields, err := s.c.SRandMemberN(ctx, s.k.refills(shard), int64(most)).Result()
	if err != nil {
		return fmt.Errorf("refill schedules of shard %d: %w", shard, err)
	}
	if len(fields) == 0 {
		return nil
	}
	pipe := s.c.TxPipeline()
	heads := pipe.HMGet(ctx, s.k.schedules(shard), fields...)
	bodies := pipe.HMGet(ctx, s.k.scheduleBodies(shard), fields...)
	if _, err := pipe.Exec(ctx); err != nil {
		return fmt.Errorf("refill schedules of shard %d: %w", shard, err)
	}
	now := s.Now()
	argv := []any{s.scriptNow(), s.k.tag(shard), WakeHorizon.Milliseconds()}
	var first error
	for i, f := range fields {
		head, _ := heads.Val()[i].(string)
		body, _ := bodies.Val()[i].(string)
		a, err := s.refillArgs(ctx, f, head, body, now)
		if err != nil {
			// left in the set: the next refill tries it again
			first = cmp.Or(first, err)
			continue
		}
		argv = append(argv, a...)
	}
	if len(argv) == 3 {
		return first
	}
	res, err := s.run(ctx, schedrefillScript, []string{s.k.pool(shard), s.k.due(shard), s.k.schedules(shard), s.k.refills(shard)}, argv...).Slice()
	if err != nil {
		return fmt.Errorf("refill schedules of shard %d: %w", shard, err)
	}
	s.wakeFor(ctx, s.c, shard, res[1])
	return first
}

// refillArgs are schedrefill.lua's arguments for the schedule of field f
// (its header and body as stored; head "" when it is gone).
func (s *Store) refillArgs(ctx context.Context, f, head, body string, now time.Time) ([]any, error) {
	h, id, _ := strings.Cut(f, "/")
	if head == "" { // deleted: the script drops it from the set
		return []any{h, id, -1, -1, 0, 0, ""}, nil
	}
	r, err := decodeSchedule(head, body)
	if err != nil {
		return nil, fmt.Errorf("schedule %s: %w", f, err)
	}
	if r.paused || r.ended || r.ext.completed() {
		return []any{h, id, r.gen, r.hi, 0, 0, ""}, nil // nothing to add: it leaves the set
	}
	tenant, topic, err := s.topicOf(ctx, h)
	if err != nil {
		return nil, err
	}
	sc, err := r.schedule(tenant, topic, id)
	if err != nil {
		return nil, err
	}
	p, err := s.pattern(sc)
	if err != nil {
		return nil, fmt.Errorf("schedule %s: %w", f, err)
	}
	after := fromMS(r.hi)
	var missed []time.Time
	if r.hi < ms(now) {
		if r.cur == 0 && r.catchUp == kairos.CatchUpAll {
			// the claim that ran out of instants fired the pending one
			// and those after it up to hi: they count against the bound
			budget := kairos.MaxCatchUp - 1
			for _, t := range p.NextN(fromMS(r.lastFired), kairos.MaxCatchUp) {
				if ms(t) <= r.hi {
					budget--
				}
			}
			for _, t := range p.NextN(after, max(budget, 0)) {
				if t.After(now) {
					break
				}
				missed = append(missed, t)
			}
		}
		after = now
	}
	want := max(scheduleQueue-len(r.queue), 1)
	if r.cur == 0 {
		want++
	}
	next := p.NextN(after, want)
	more := 0
	if len(next) == want {
		more = 1
	}
	a := make([]any, 0, 7+len(missed))
	a = append(a, h, id, r.gen, r.hi, more, len(missed))
	for _, t := range missed {
		a = append(a, ms(t))
	}
	// the next instants as the queue stores them: one argument, appended
	// to the queue as it is (an argument an instant cost the script about
	// a microsecond each)
	q := make([]byte, 0, len(next)*queueEntry)
	for _, t := range next {
		q = appendBE(q, ms(t), queueEntry)
	}
	return append(a, string(q)), nil
}

// readHeader reads the fields of a binary header from the start of b (at
// least as long as fields say): the numbers by name, the one code byte,
// and how many bytes the header took.
func readHeader(b string, fields []headerField) (nums map[string]int64, code byte, at int) {
	nums = make(map[string]int64, len(fields))
	for _, f := range fields {
		if f.code {
			code = b[at]
			at++
			continue
		}
		nums[f.name] = beUint(b[at : at+f.width])
		at += f.width
	}
	return nums, code, at
}
