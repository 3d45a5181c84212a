package rdb

import (
	"context"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/kairos-sh/kairos"
)

// labelled creates job id of acme/orders due at runAt with labels.
func labelled(t *testing.T, s *Store, id string, runAt time.Time, labels map[string]string) {
	t.Helper()
	if _, err := s.Enqueue(context.Background(), kairos.Job{JobKey: key(id), RunAt: runAt, Payload: []byte(`{"n":1}`), Labels: labels}); err != nil {
		t.Fatal(err)
	}
}

// listLabels pages through the topic's jobs with labels and state, limit
// a page, and returns the ids, sorted.
func listLabels(t *testing.T, s *Store, state kairos.State, limit int, labels map[string]string) []string {
	t.Helper()
	var ids []string
	cur := ""
	for range 200 {
		p, err := s.ListJobs(context.Background(), ListQuery{Tenant: "acme", Topic: "orders", State: state, Cursor: cur, Limit: limit, Labels: labels})
		if err != nil {
			t.Fatal(err)
		}
		if len(p.Jobs) > limit {
			t.Fatalf("page of %d, limit %d", len(p.Jobs), limit)
		}
		for _, j := range p.Jobs {
			if !hasLabels(j, labels) || (state != "" && j.State != state) {
				t.Errorf("listed %s %s %v for %s %v", j.ID, j.State, j.Labels, state, labels)
			}
			ids = append(ids, j.ID)
		}
		if p.Next == "" {
			sorted := slices.Clone(ids)
			slices.Sort(sorted)
			if len(slices.Compact(slices.Clone(sorted))) != len(ids) {
				t.Errorf("a job listed twice: %v", ids)
			}
			return sorted
		}
		cur = p.Next
	}
	t.Fatal("listing never ended")
	return nil
}

// labelEntries counts the label index entries of acme/orders for
// key=value across the shards.
func labelEntries(t *testing.T, s *Store, k, v string) int64 {
	t.Helper()
	h, err := s.handle(context.Background(), "acme", "orders", false)
	if err != nil {
		t.Fatal(err)
	}
	var n int64
	for sh := range s.k.shards {
		n += s.c.ZCard(context.Background(), s.k.label(sh, h, k, v)).Val()
	}
	return n
}

// A label filter lists exactly the jobs that carry every label asked
// for, in pages, whatever the state; the index follows cancels,
// replacements and the end of a delivered job's retention.
func TestLabelFilterExact(t *testing.T) {
	s, clk := newStore(t, Options{Shards: 4, Retention: time.Minute})
	later := clk.Now().Add(time.Hour)
	want := map[string][]string{}
	for i := range 40 {
		id := "j" + strconv.Itoa(100+i)
		l := map[string]string{"env": "prod"}
		if i%3 == 0 {
			l["env"] = "dev"
		}
		if i%2 == 0 {
			l["team"] = "a"
		}
		if i%5 == 0 {
			l = nil
		}
		labelled(t, s, id, later, l)
		for k, v := range l {
			want[k+"="+v] = append(want[k+"="+v], id)
		}
		if l["env"] == "prod" && l["team"] == "a" {
			want["both"] = append(want["both"], id)
		}
		if i%7 == 0 {
			clk.Add(1500 * time.Millisecond) // spread over creation seconds
		}
	}
	for _, limit := range []int{1, 3, 500} {
		if d := cmp.Diff(want["env=prod"], listLabels(t, s, "", limit, map[string]string{"env": "prod"})); d != "" {
			t.Errorf("env=prod, limit %d (-want +got):\n%s", limit, d)
		}
		if d := cmp.Diff(want["both"], listLabels(t, s, "", limit, map[string]string{"env": "prod", "team": "a"})); d != "" {
			t.Errorf("env=prod and team=a, limit %d (-want +got):\n%s", limit, d)
		}
	}
	if got := listLabels(t, s, "", 10, map[string]string{"env": "nope"}); len(got) != 0 {
		t.Errorf("env=nope listed %v", got)
	}
	if got := listLabels(t, s, kairos.StateDelivered, 10, map[string]string{"env": "prod"}); len(got) != 0 {
		t.Errorf("delivered env=prod listed %v", got)
	}

	// a cancelled job stays in the index, as cancelled, until its record
	// expires (below); a replace with other labels moves it
	cancelled, moved := want["both"][0], want["both"][1]
	if err := s.Cancel(context.Background(), key(cancelled)); err != nil {
		t.Fatal(err)
	}
	labelled(t, s, moved, later, map[string]string{"env": "staging"})
	rest := slices.DeleteFunc(slices.Clone(want["both"]), func(id string) bool { return id == moved })
	if d := cmp.Diff(rest, listLabels(t, s, "", 2, map[string]string{"env": "prod", "team": "a"})); d != "" {
		t.Errorf("after cancel and replace (-want +got):\n%s", d)
	}
	if got := listLabels(t, s, kairos.StateCancelled, 2, map[string]string{"env": "prod", "team": "a"}); !slices.Equal(got, []string{cancelled}) {
		t.Errorf("cancelled env=prod and team=a: %v, want [%s]", got, cancelled)
	}
	if got := listLabels(t, s, kairos.StateScheduled, 2, map[string]string{"env": "staging"}); !slices.Equal(got, []string{moved}) {
		t.Errorf("env=staging: %v, want [%s]", got, moved)
	}
	if n, w := labelEntries(t, s, "team", "a"), int64(len(want["team=a"])-1); n != w {
		t.Errorf("team=a index holds %d entries, want %d", n, w)
	}

	// a delivered job leaves the index when its record expires
	labelled(t, s, "now", clk.Now(), map[string]string{"env": "once"})
	for _, c := range claimAll(t, s, 0) {
		if st := finishJob(t, s, c.Job, clk.Now(), 200, true, false, time.Time{}); st != kairos.StateDelivered {
			t.Fatalf("%s: %s", c.Job.ID, st)
		}
	}
	if got := listLabels(t, s, kairos.StateDelivered, 5, map[string]string{"env": "once"}); !slices.Equal(got, []string{"now"}) {
		t.Errorf("delivered env=once: %v", got)
	}
	clk.Add(2 * time.Minute)
	claimAll(t, s, 0)
	if _, err := s.GetJob(context.Background(), key("now")); err == nil {
		t.Fatal("the delivered job outlived its retention")
	}
	if n := labelEntries(t, s, "env", "once"); n != 0 {
		t.Errorf("env=once index holds %d entries after the record expired", n)
	}
}

// A job without labels stores what it stored before labels existed: no
// settings, and no label key anywhere.
func TestUnlabelledJobsCostNothing(t *testing.T) {
	s, clk := newStore(t, Options{Shards: 2})
	enqueue(t, s, "plain", clk.Now().Add(time.Hour))
	set, err := encodeSettings(kairos.Job{})
	if err != nil || set != nil {
		t.Fatalf("settings of a plain job: %q %v", set, err)
	}
	keys, err := s.c.Keys(context.Background(), s.k.prefix+"*lb:*").Result()
	if err != nil || len(keys) != 0 {
		t.Fatalf("label keys %v %v", keys, err)
	}
}
