package rdb

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/redis/go-redis/v9"
)

// MigrateResult says what Migrate did.
type MigrateResult struct {
	From, To  int // the layout found and the one left (both 0: no kairos data under the prefix)
	Schedules int // schedule records rewritten
}

// migrateFrom is the oldest layout Migrate moves to LayoutVersion.
const migrateFrom = 4

// migrateScript writes the new form of schedules (KEYS[1] the shard's
// schedules, KEYS[2] its bodies; ARGV: field, the record as read, its
// header, its body, for each) whose record is still the one read and
// that have no body yet. Reply: how many it wrote.
var migrateScript = redis.NewScript(`
local n = 0
for i = 1, #ARGV, 4 do
  if redis.call('HGET', KEYS[1], ARGV[i]) == ARGV[i + 1] and redis.call('HEXISTS', KEYS[2], ARGV[i]) == 0 then
    redis.call('HSET', KEYS[1], ARGV[i], ARGV[i + 2])
    redis.call('HSET', KEYS[2], ARGV[i], ARGV[i + 3])
    n = n + 1
  end
end
return n
`)

// Migrate moves the kairos data under prefix from layout 4, 5, 6, 7 or 8
// to LayoutVersion, in place. From 8 it only records the new layout:
// layout 9 adds fan-out (subscriptions, messages, and deliveries: jobs a
// layout 8 worker would send to their topic's own URL), so the version
// tells such a process to stop; from 7 likewise, as layout 8 keeps
// cancelled jobs in a state a layout 7 process would misread; from 6 likewise, as layout 7 added
// states, notifications and schedule fields that a layout 6 process would
// misread. From 4 it splits every schedule record into its
// binary header and its body (layout.go, "Schedules"). From 5 it records
// the attempt outcomes still waiting on the shards' outcome lists (layout
// 6 records them as they come) and deletes layout 5's scanner leases and
// ready lists: the jobs such a list held are active under leases that
// lapse, and are handed out again then. Every kairos of the earlier version
// must be stopped first, API-only ones too. Migrate refuses while a
// scanner's lease is alive. Interrupted, it can run again: a schedule
// already rewritten is left alone, an outcome is applied once, and the
// layout is recorded last.
func Migrate(ctx context.Context, c redis.UniversalClient, prefix string) (MigrateResult, error) {
	k := keys{prefix: prefix}
	got, err := c.HGet(ctx, k.meta(), "layout").Result()
	if isNil(err) {
		return MigrateResult{}, nil // nothing stored: kairos records the layout at its first start
	}
	if err != nil {
		return MigrateResult{}, fmt.Errorf("read data layout: %w", err)
	}
	from, _ := strconv.Atoi(got)
	if from == LayoutVersion {
		return MigrateResult{From: from, To: from}, nil
	}
	if from < migrateFrom || from > LayoutVersion {
		return MigrateResult{}, fmt.Errorf("%w: Redis (prefix %q) holds kairos data in layout %s; this kairos migrates layout %d to %d only. "+
			"Run the kairos version that wrote it until its jobs are done, or start this one with another KAIROS_PREFIX "+
			"(see docs/operations.md#upgrading)", ErrLayout, prefix, got, migrateFrom, LayoutVersion)
	}
	if err := noScanner(ctx, c, k); err != nil {
		return MigrateResult{}, err
	}
	n, err := c.HGet(ctx, k.meta(), "shards").Int()
	if err != nil || n <= 0 {
		return MigrateResult{}, fmt.Errorf("read the shard count of prefix %q: %v", prefix, errText(err, "none recorded"))
	}
	k.shards = n
	res := MigrateResult{From: from, To: LayoutVersion}
	for shard := range n {
		if from > 4 {
			break
		}
		m, err := migrateShard(ctx, c, k, shard)
		res.Schedules += m
		if err != nil {
			return res, fmt.Errorf("migrate shard %d: %w", shard, err)
		}
	}
	if from <= 5 {
		if err := migrateOutcomes(ctx, c, prefix, n); err != nil {
			return res, err
		}
		if _, err := unlinkMatching(ctx, c, globEscape(prefix)+":ready:*"); err != nil {
			return res, fmt.Errorf("delete layout 5's ready lists: %w", err)
		}
		if err := c.Del(ctx, prefix+":{scanners}:lease").Err(); err != nil {
			return res, fmt.Errorf("delete layout 5's scanner leases: %w", err)
		}
	}
	if err := c.HSet(ctx, k.meta(), "layout", LayoutVersion).Err(); err != nil {
		return res, fmt.Errorf("record layout %d: %w", LayoutVersion, err)
	}
	return res, nil
}

// noScanner refuses while an instance's scanner lease has not expired.
func noScanner(ctx context.Context, c redis.UniversalClient, k keys) error {
	all, err := c.HGetAll(ctx, k.prefix+":{scanners}:lease").Result() // layout 5's scanner leases
	if err != nil {
		return fmt.Errorf("read scanner leases: %w", err)
	}
	t, err := c.Time(ctx).Result()
	if err != nil {
		return fmt.Errorf("read Redis's clock: %w", err)
	}
	for f, v := range all {
		id, ok := strings.CutPrefix(f, "i:")
		until, err := strconv.ParseInt(v, 10, 64)
		if ok && err == nil && until > t.UnixMilli() {
			return fmt.Errorf("a kairos is running against prefix %q (instance %s holds a scanner lease for %d ms more): "+
				"stop every kairos, API-only ones too, before migrating", k.prefix, id, until-t.UnixMilli())
		}
	}
	return nil
}

// migrateShard rewrites the shard's schedules still in layout 4's form.
func migrateShard(ctx context.Context, c redis.UniversalClient, k keys, shard int) (int, error) {
	done := 0
	var cursor uint64
	for {
		kv, next, err := c.HScan(ctx, k.schedules(shard), cursor, "", 200).Result()
		if err != nil {
			return done, err
		}
		if len(kv) > 0 {
			fields := make([]string, 0, len(kv)/2)
			for i := 0; i < len(kv); i += 2 {
				fields = append(fields, kv[i])
			}
			has, err := c.HMGet(ctx, k.scheduleBodies(shard), fields...).Result()
			if err != nil {
				return done, err
			}
			var argv []any
			for i, f := range fields {
				if has[i] != nil {
					continue // rewritten by an earlier run
				}
				r, err := decodeScheduleV4(kv[2*i+1])
				if err != nil {
					return done, fmt.Errorf("schedule %s: %w", f, err)
				}
				head, body := encodeSchedule(r)
				argv = append(argv, f, kv[2*i+1], head, body)
			}
			if len(argv) > 0 {
				n, err := migrateScript.Run(ctx, c, []string{k.schedules(shard), k.scheduleBodies(shard)}, argv...).Int()
				done += n
				if err != nil {
					return done, err
				}
			}
		}
		if cursor = next; cursor == 0 {
			return done, nil
		}
	}
}

// errText is err's text, or none when err is nil.
func errText(err error, none string) string {
	if err == nil {
		return none
	}
	return err.Error()
}

// encodeSchedule returns r's header (with its queue) and body as layout 5
// stores them; the scripts write them so (sched.lua).
func encodeSchedule(r scheduleRecord) (head, body string) {
	var b []byte
	fl := int64(0)
	if r.paused {
		fl |= 1
	}
	if r.ended {
		fl |= 2
	}
	vals := map[string]int64{"gen": r.gen, "cur": r.cur, "hi": r.hi, "lf": r.lastFired, "fl": fl,
		"lt": r.leaseTimeout, "ls": int64(len(r.settings)), "lm": int64(len(r.meta))}
	for _, f := range scheduleFields {
		if f.code {
			b = append(b, catchUpCodes[r.catchUp])
			continue
		}
		b = appendBE(b, vals[f.name], f.width)
	}
	for _, t := range r.queue {
		b = appendBE(b, t, queueEntry)
	}
	return string(b), string(r.meta) + string(r.settings) + string(r.payload)
}

// decodeScheduleV4 reads a schedule record of layout 4:
// "gen,cur,hi,lf,cu,fl,lt,ls,lm,q|<settings><meta><payload>", numbers in
// base 36 (empty for 0), q the queued instants, ';'-separated.
func decodeScheduleV4(v string) (scheduleRecord, error) {
	head, body, ok := strings.Cut(v, "|")
	f := strings.Split(head, ",")
	if !ok || len(f) != 10 {
		return scheduleRecord{}, errors.New("not a layout 4 schedule record")
	}
	nums := make([]int64, 9)
	for i := range 9 {
		if i == 4 || i == 5 || f[i] == "" {
			continue
		}
		n, err := strconv.ParseInt(f[i], 36, 64)
		if err != nil {
			return scheduleRecord{}, fmt.Errorf("layout 4 schedule record, field %d: %w", i+1, errBadRecord)
		}
		nums[i] = n
	}
	r := scheduleRecord{gen: nums[0], cur: nums[1], hi: nums[2], lastFired: nums[3], leaseTimeout: nums[6]}
	for cu, c := range catchUpCodes {
		if f[4] == string(c) {
			r.catchUp = cu
		}
	}
	switch f[5] {
	case "0", "1", "2", "3":
		r.paused, r.ended = f[5] == "1" || f[5] == "3", f[5] >= "2"
	default:
		return scheduleRecord{}, fmt.Errorf("layout 4 schedule record, flags: %w", errBadRecord)
	}
	ls, lm := nums[7], nums[8]
	if r.catchUp == "" || ls < 0 || lm < 0 || ls+lm > int64(len(body)) {
		return scheduleRecord{}, fmt.Errorf("layout 4 schedule record: %w", errBadRecord)
	}
	r.settings, r.meta, r.payload = []byte(body[:ls]), []byte(body[ls:ls+lm]), []byte(body[ls+lm:])
	for q := range strings.SplitSeq(f[9], ";") {
		if q == "" {
			continue
		}
		n, err := strconv.ParseInt(q, 36, 64)
		if err != nil {
			return scheduleRecord{}, fmt.Errorf("layout 4 schedule record, queue: %w", errBadRecord)
		}
		r.queue = append(r.queue, n)
	}
	return r, nil
}

// migrateOutcomes records the outcomes left on layout 5's outcome lists
// (P:{s}:o) with the outcome script, a batch at a time: popped, then
// recorded (an outcome recorded twice changes its job once).
func migrateOutcomes(ctx context.Context, c redis.UniversalClient, prefix string, shards int) error {
	s := New(c, Options{Prefix: prefix, Shards: shards})
	s.k.shards = shards
	for sh := range shards {
		list := s.k.tag(sh) + "o"
		for {
			es, err := c.LRange(ctx, list, 0, outcomeBatch-1).Result()
			if err != nil {
				return fmt.Errorf("read the outcomes of shard %d: %w", sh, err)
			}
			if len(es) == 0 {
				break
			}
			argv := []any{"", s.k.tag(sh), s.opts.Retention.Milliseconds(), WakeHorizon.Milliseconds()}
			for _, e := range es {
				argv = append(argv, e)
			}
			if err := outcomeScript.eval.Run(ctx, c, []string{s.k.pool(sh), s.k.due(sh), s.k.leases(sh)}, argv...).Err(); err != nil {
				return fmt.Errorf("record the outcomes of shard %d: %w", sh, err)
			}
			if err := c.LTrim(ctx, list, int64(len(es)), -1).Err(); err != nil {
				return fmt.Errorf("trim the outcomes of shard %d: %w", sh, err)
			}
		}
	}
	return nil
}
