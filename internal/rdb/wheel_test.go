package rdb

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"testing"
	"time"
)

// TestDueSoonCountsTheWheel: jobs due over the next hour, spread over every
// level of the wheel, are each counted once in the slot of their due time.
func TestDueSoonCountsTheWheel(t *testing.T) {
	s, clk := newStore(t, Options{})
	want := make([]int64, 12)
	for i := range 30 {
		d := time.Duration(60+i*i*4) * time.Second
		enqueue(t, s, fmt.Sprintf("r%02d", i), clk.Now().Add(d))
		want[d/(5*time.Minute)]++
	}
	got, err := s.DueSoon(context.Background(), 12, 5*time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("due soon %v, want %v", got, want)
	}
}

// TestSoonGoesToTheNarrowestLevel: a job due within the second level's
// width (10 s) is filed in a 100 ms slot at once, sparing it a cascade; one
// due later in a wider slot; and each is claimed at its time, not before.
func TestSoonGoesToTheNarrowestLevel(t *testing.T) {
	s, clk := newStore(t, Options{Shards: 1})
	ctx := context.Background()
	clk.Add(5 * time.Second)
	now := clk.Now() // 10:30:05: 9.5 s ahead falls in the next 10 s slot
	enqueue(t, s, "soon", now.Add(9500*time.Millisecond))
	enqueue(t, s, "later", now.Add(25*time.Second))
	slots, err := s.c.ZRange(ctx, s.k.due(0), 0, -1).Result()
	if err != nil {
		t.Fatal(err)
	}
	soon := "0:" + strconv.FormatInt(now.Add(9500*time.Millisecond).UnixMilli()/100, 36)
	later := "1:" + strconv.FormatInt(now.Add(25*time.Second).UnixMilli()/10_000, 36)
	if !slices.Equal(slots, []string{soon, later}) {
		t.Fatalf("wheel slots %v, want %v (9.5 s ahead: 100 ms slot; 25 s ahead: 10 s slot)", slots, []string{soon, later})
	}
	clk.Add(9499 * time.Millisecond)
	if cs := claimAll(t, s, 0); len(cs) != 0 {
		t.Fatalf("claimed %s 1 ms before its time", claimedIDs(cs))
	}
	clk.Add(time.Millisecond)
	claimOne(t, s, "soon")
	clk.Add(15499 * time.Millisecond)
	if cs := claimAll(t, s, 0); len(cs) != 0 {
		t.Fatalf("claimed %s 1 ms before its time", claimedIDs(cs))
	}
	clk.Add(time.Millisecond)
	claimOne(t, s, "later")
}
