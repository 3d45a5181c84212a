package bench

import (
	"bytes"
	"net/http"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestPayloadRoundTrip(t *testing.T) {
	for _, tt := range []struct {
		run string
		seq int
		due int64
	}{
		{"prec-ab12cd", 0, 1763721000250},
		{"prec-ab12cd", 19999, 1763721000250},
		{"a-much-longer-run-name-than-usual", 1234567890, 1763721000250},
	} {
		p := appendPayload(nil, tt.run, tt.seq, tt.due)
		if len(p) < 60 && bytes.Contains(p, []byte("pad")) {
			t.Errorf("%s: %d bytes, want 60", p, len(p))
		}
		run, seq, due, ok := parsePayload(p)
		if !ok || string(run) != tt.run || seq != tt.seq || due != tt.due {
			t.Errorf("parsePayload(%s) = %q, %d, %d, %v", p, run, seq, due, ok)
		}
	}
	if p := appendPayload(nil, "prec-ab12cd", 42, 1763721000250); len(p) != 60 {
		t.Errorf("payload %s is %d bytes, want 60", p, len(p))
	}
	for _, bad := range []string{"", "{}", `{"run":"x","seq":1}`, `{"run":"x","seq":"a","due":1}`, `not json`} {
		if _, _, _, ok := parsePayload([]byte(bad)); ok {
			t.Errorf("parsePayload(%s) accepted", bad)
		}
	}
}

func TestReceiverCounts(t *testing.T) {
	r, err := StartReceiver()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	due := time.Now().Add(-time.Second).UnixMilli()
	run := r.Expect("t-1", 4)
	post := func(run string, seq int, due int64) {
		t.Helper()
		resp, err := http.Post(r.URL, "application/json", bytes.NewReader(appendPayload(nil, run, seq, due)))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusNoContent {
			t.Fatalf("status %d", resp.StatusCode)
		}
	}
	post("t-1", 0, due)
	post("t-1", 1, due)
	post("t-1", 1, due)                                   // duplicate
	post("t-1", 2, time.Now().Add(time.Hour).UnixMilli()) // early
	post("t-0", 3, due)                                   // another run
	post("t-1", 9, due)                                   // out of range
	d := run.Delivery(0, r.Stray())
	want := Delivery{Jobs: 4, Delivered: 3, Missing: 1, Duplicated: 1, Early: 1, Stray: 2}
	got := d
	got.MinMS, got.P50MS, got.P90MS, got.P99MS, got.MaxMS, got.FirstMS, got.LastMS, got.Slices = 0, 0, 0, 0, 0, 0, 0, nil
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("delivery (-want +got):\n%s", diff)
	}
	if d.MinMS >= 0 || d.MaxMS < 1000 {
		t.Errorf("lateness min %v, max %v: want one early job and the others a second late", d.MinMS, d.MaxMS)
	}
	if run.Arrived() != 3 || run.hits.Load() != 4 {
		t.Errorf("arrived %d, hits %d", run.Arrived(), run.hits.Load())
	}
}
