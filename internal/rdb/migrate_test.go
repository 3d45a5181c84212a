package rdb

import (
	"context"
	"errors"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/kairos-sh/kairos"
)

// encodeScheduleV4 writes r as layout 4 stored it: the test's way of
// leaving data as the earlier kairos did.
func encodeScheduleV4(r scheduleRecord) string {
	b36 := func(n int64) string {
		if n == 0 {
			return ""
		}
		return strconv.FormatInt(n, 36)
	}
	fl := 0
	if r.paused {
		fl |= 1
	}
	if r.ended {
		fl |= 2
	}
	q := make([]string, len(r.queue))
	for i, t := range r.queue {
		q[i] = b36(t)
	}
	head := []string{b36(r.gen), b36(r.cur), b36(r.hi), b36(r.lastFired), string(catchUpCodes[r.catchUp]), strconv.Itoa(fl),
		b36(r.leaseTimeout), b36(int64(len(r.settings))), b36(int64(len(r.meta))), strings.Join(q, ";")}
	return strings.Join(head, ",") + "|" + string(r.settings) + string(r.meta) + string(r.payload)
}

// Schedules left in layout 4 by the earlier kairos are refused, migrated
// in place by Migrate (not while a scanner runs), read back as they were,
// and go on firing.
func TestMigrateLayout4(t *testing.T) {
	ctx := context.Background()
	s, now, advance := newScheduleStore(t)
	start := now().Add(time.Second)
	plain := everySecond("plain", start, "")
	all := everySecond("all", start, kairos.CatchUpAll)
	all.Job.Headers = map[string]string{"X-Tenant": "acme"}
	all.Job.Timeout = 7 * time.Second
	paused := everySecond("paused", start, kairos.CatchUpNone)
	paused.Paused = true
	short := everySecond("short", start, "")
	short.EndAt = start.Add(2 * time.Second)
	scheds := []kairos.Schedule{plain, all, paused, short}
	for _, sc := range scheds {
		if _, err := s.PutSchedule(ctx, sc); err != nil {
			t.Fatal(err)
		}
	}
	advance(time.Second)
	if ids := fireDue(t, s); len(ids) != 3 {
		t.Fatalf("fired %v before the migration, want the first occurrence of the three running schedules", ids)
	}
	want := map[string]kairos.Schedule{}
	for _, sc := range scheds {
		got, err := s.GetSchedule(ctx, "acme", "orders", sc.ID)
		if err != nil {
			t.Fatal(err)
		}
		want[sc.ID] = got
	}

	// The data as layout 4 left it: one record a schedule, no bodies.
	for sh := range s.Shards() {
		heads, err := s.c.HGetAll(ctx, s.k.schedules(sh)).Result()
		if err != nil {
			t.Fatal(err)
		}
		for f, head := range heads {
			r, err := decodeSchedule(head, s.c.HGet(ctx, s.k.scheduleBodies(sh), f).Val())
			if err != nil {
				t.Fatal(err)
			}
			s.c.HSet(ctx, s.k.schedules(sh), f, encodeScheduleV4(r))
		}
		s.c.Del(ctx, s.k.scheduleBodies(sh))
	}
	s.c.HSet(ctx, s.k.meta(), "layout", 4)
	if err := New(s.c, s.opts).Init(ctx); !errors.Is(err, ErrLayout) {
		t.Fatalf("Init on layout 4 data: %v, want ErrLayout", err)
	}

	// A kairos still running (its scanner lease alive) stops the migration.
	s.c.HSet(ctx, s.k.prefix+":{scanners}:lease", "i:old-kairos", time.Now().Add(time.Minute).UnixMilli())
	if _, err := Migrate(ctx, s.c, s.k.prefix); err == nil || !strings.Contains(err.Error(), "old-kairos") {
		t.Fatalf("Migrate beside a live scanner: %v, want a refusal naming it", err)
	}
	if v := s.c.HGet(ctx, s.k.meta(), "layout").Val(); v != "4" {
		t.Fatalf("layout %s after a refused migration, want 4", v)
	}
	s.c.HDel(ctx, s.k.prefix+":{scanners}:lease", "i:old-kairos")

	res, err := Migrate(ctx, s.c, s.k.prefix)
	if err != nil || res != (MigrateResult{From: 4, To: LayoutVersion, Schedules: len(scheds)}) {
		t.Fatalf("Migrate: %+v, %v; want %d schedules from 4 to %d", res, err, len(scheds), LayoutVersion)
	}
	if res, err := Migrate(ctx, s.c, s.k.prefix); err != nil || res != (MigrateResult{From: LayoutVersion, To: LayoutVersion}) {
		t.Fatalf("Migrate again: %+v, %v; want nothing to do", res, err)
	}
	s2 := New(s.c, s.opts)
	if err := s2.Init(ctx); err != nil {
		t.Fatal(err)
	}
	for _, sc := range scheds {
		got, err := s2.GetSchedule(ctx, "acme", "orders", sc.ID)
		if err != nil || !reflect.DeepEqual(got, want[sc.ID]) {
			t.Fatalf("%s after the migration:\n got %+v (%v)\nwant %+v", sc.ID, got, err, want[sc.ID])
		}
	}
	// They go on: the next occurrence of each running schedule fires, and
	// the one after it is filed.
	advance(time.Second)
	ids := fireDue(t, s2)
	slices.Sort(ids)
	at := kairos.OccurrenceID("", start.Add(time.Second))
	if wantIDs := []string{"all" + at, "plain" + at, "short" + at}; !slices.Equal(ids, wantIDs) {
		t.Fatalf("fired %v after the migration, want %v", ids, wantIDs)
	}
	if got, err := s2.GetSchedule(ctx, "acme", "orders", "plain"); err != nil || !got.Pending.Equal(start.Add(2*time.Second)) {
		t.Fatalf("plain's pending occurrence after firing: %v (%v), want %v", got.Pending, err, start.Add(2*time.Second))
	}
}

// A layout other than 4 is not migrated, and nothing stored is touched.
func TestMigrateRefusesOtherLayouts(t *testing.T) {
	ctx := context.Background()
	s, _ := newStore(t, Options{})
	s.c.HSet(ctx, s.k.meta(), "layout", 3)
	if _, err := Migrate(ctx, s.c, s.k.prefix); !errors.Is(err, ErrLayout) || !strings.Contains(err.Error(), "layout 3") {
		t.Fatalf("Migrate on layout 3: %v, want ErrLayout naming it", err)
	}
	if v := s.c.HGet(ctx, s.k.meta(), "layout").Val(); v != "3" {
		t.Fatalf("layout %s after a refused migration, want 3", v)
	}
	if res, err := Migrate(ctx, s.c, s.k.prefix+"-empty"); err != nil || res != (MigrateResult{}) {
		t.Fatalf("Migrate on an empty prefix: %+v, %v; want nothing done", res, err)
	}
}

// Layout 5 kept outcomes on a list a shard for its next claim to apply;
// Migrate records them, drops layout 5's lease hash and ready lists, and
// records the current layout.
func TestMigrateLayout5(t *testing.T) {
	s, clk := newStore(t, Options{})
	ctx := context.Background()
	j := enqueue(t, s, "a", clk.Now())
	c := claimOne(t, s, "a")
	sh := s.k.shardOf(j.JobKey)
	h, err := s.handle(ctx, "acme", "orders", false)
	if err != nil {
		t.Fatal(err)
	}
	line, err := logLine(kairos.Attempt{N: c.Job.Attempts, At: clk.Now(), Status: 204})
	if err != nil {
		t.Fatal(err)
	}
	// the outcome as layout 5's Finish appended it
	entry := field(h, "a") + "," + strconv.FormatInt(int64(c.Job.Attempts), 36) + ",1,," + "acme|" + line
	s.c.RPush(ctx, s.k.tag(sh)+"o", entry)
	s.c.HSet(ctx, s.k.prefix+":{scanners}:lease", "s:0", "old")
	s.c.RPush(ctx, s.k.prefix+":ready:{acme/orders}", "a|1|0")
	s.c.HSet(ctx, s.k.meta(), "layout", 5)
	res, err := Migrate(ctx, s.c, s.k.prefix)
	if err != nil || res.From != 5 || res.To != LayoutVersion {
		t.Fatalf("Migrate: %+v, %v", res, err)
	}
	if got := getJob(t, s, "a"); got.State != kairos.StateDelivered {
		t.Errorf("state %s after the migration, want the outcome on the list applied", got.State)
	}
	for _, k := range []string{s.k.tag(sh) + "o", s.k.prefix + ":{scanners}:lease", s.k.prefix + ":ready:{acme/orders}"} {
		if n := s.c.Exists(ctx, k).Val(); n != 0 {
			t.Errorf("%s left after the migration", k)
		}
	}
	if v := s.c.HGet(ctx, s.k.meta(), "layout").Val(); v != strconv.Itoa(LayoutVersion) {
		t.Errorf("layout %s after the migration, want %d", v, LayoutVersion)
	}
}

// From layouts 6, 7 and 8 Migrate records the new layout and touches no
// job: a store refuses their data until then.
func TestMigrateLayouts6To8(t *testing.T) {
	for _, from := range []int{6, 7, 8} {
		t.Run(strconv.Itoa(from), func(t *testing.T) {
			s, clk := newStore(t, Options{})
			ctx := context.Background()
			enqueue(t, s, "a", clk.Now().Add(time.Hour))
			s.c.HSet(ctx, s.k.meta(), "layout", from)
			if err := s.initLayout(ctx); !errors.Is(err, ErrLayout) {
				t.Fatalf("a store on layout %d data: %v, want ErrLayout", from, err)
			}
			res, err := Migrate(ctx, s.c, s.k.prefix)
			if err != nil || res != (MigrateResult{From: from, To: LayoutVersion}) {
				t.Fatalf("Migrate: %+v, %v", res, err)
			}
			if err := s.initLayout(ctx); err != nil {
				t.Fatalf("a store after the migration: %v", err)
			}
			if got := getJob(t, s, "a"); got.State != kairos.StateScheduled {
				t.Errorf("job a is %s after the migration", got.State)
			}
		})
	}
}
