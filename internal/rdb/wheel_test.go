package rdb

import (
	"context"
	"fmt"
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
