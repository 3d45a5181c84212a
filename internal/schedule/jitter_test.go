package schedule

import (
	"testing"
	"time"
)

// Jitter delays each instant by [0, jitter), the same whenever it is
// computed and by another Pattern of the same schedule, and keeps the
// instants in order; another schedule id draws other delays.
func TestJitterDeterministicWithinBounds(t *testing.T) {
	anchor := time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC)
	base, err := Parse("", "1m", "", anchor, time.Time{}, time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	const jitter = 20 * time.Second
	p := base.WithJitter("sched-a", jitter)
	q, _ := Parse("", "1m", "", anchor, time.Time{}, time.Time{})
	q = q.WithJitter("sched-a", jitter)
	other := base.WithJitter("sched-b", jitter)
	runs := p.NextN(anchor, 500)
	if len(runs) != 500 {
		t.Fatalf("%d runs", len(runs))
	}
	differs, nonZero := 0, 0
	for i, r := range runs {
		instant := anchor.Add(time.Duration(i) * time.Minute) // the anchor's own instant fires after it
		d := r.Sub(instant)
		if d < 0 || d >= jitter || d != d.Truncate(time.Millisecond) {
			t.Fatalf("run %d at %s: delay %s, want whole ms in [0, %s)", i, r, d, jitter)
		}
		if d != p.Delay(instant) || d != q.Delay(instant) {
			t.Fatalf("run %d: delay %s, Delay says %s and %s", i, d, p.Delay(instant), q.Delay(instant))
		}
		if i > 0 && !r.After(runs[i-1]) {
			t.Fatalf("runs out of order at %d: %s after %s", i, r, runs[i-1])
		}
		if other.Delay(instant) != d {
			differs++
		}
		if d > 0 {
			nonZero++
		}
		// computed again from just before it, it is the same time
		if again, ok := p.Next(r.Add(-time.Millisecond)); !ok || !again.Equal(r) {
			t.Fatalf("Next just before run %d gives %s, want %s", i, again, r)
		}
	}
	if differs < 400 || nonZero < 400 {
		t.Fatalf("delays look constant: %d differ from another schedule's, %d are not 0", differs, nonZero)
	}
	// Between gives the same fire times for the same instants
	got, ok := p.Between(anchor.Add(time.Minute), anchor.Add(11*time.Minute), 1000)
	if !ok || len(got) != 10 {
		t.Fatalf("Between: %d instants, ok %v", len(got), ok)
	}
	for i := range got {
		if !got[i].Equal(runs[i+1]) {
			t.Fatalf("Between %d: %s, NextN %s", i, got[i], runs[i+1])
		}
	}
	if _, ok := p.Between(anchor, anchor.Add(2000*time.Minute), 1000); ok {
		t.Fatal("Between of 2000 instants with most 1000 says ok")
	}
}

// A jitter longer than the gaps may reorder instants: Next still gives
// every fire time once, in time order.
func TestJitterLongerThanGapKeepsEveryInstant(t *testing.T) {
	anchor := time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC)
	base, _ := Parse("", "1s", "", anchor, time.Time{}, time.Time{})
	p := base.WithJitter("wide", 5*time.Second)
	want := map[time.Time]bool{}
	for i := 1; i <= 200; i++ {
		in := anchor.Add(time.Duration(i) * time.Second)
		want[in.Add(p.Delay(in))] = true
	}
	runs := p.NextN(anchor.Add(5*time.Second), 190)
	for i, r := range runs {
		if i > 0 && !r.After(runs[i-1]) {
			t.Fatalf("out of order at %d", i)
		}
	}
	for _, r := range runs[:150] {
		if !want[r] {
			t.Fatalf("fire time %s of no instant", r)
		}
	}
}
