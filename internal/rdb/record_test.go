package rdb

import (
	"context"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/kairos-sh/kairos"
)

func TestRecordRoundTrip(t *testing.T) {
	for _, r := range []record{
		{state: 's', created: 1795455229123, runAt: 1795455230123, next: 1795455230123, payload: []byte(`{"n":1}`)},
		{state: 'a', attempts: 3, created: 1, runAt: 2, next: 3, lease: 30000, settings: []byte(`{"u":"https://x|y"}`),
			log: []byte("{\"n\":1}\n{\"n\":2}\n"), payload: []byte("|,|")},
		{state: 'd', finished: 5},
	} {
		got, err := decodeRecord(r.encode())
		if err != nil {
			t.Fatalf("%q: %v", r.encode(), err)
		}
		if d := cmp.Diff(r.encode(), got.encode()); d != "" {
			t.Errorf("round trip (-want +got):\n%s", d)
		}
	}
}

// TestRecordHeaderIsTheLayout: a record's header has the fields layout.go
// names, in that order, the state first.
func TestRecordHeaderIsTheLayout(t *testing.T) {
	r := record{state: 'a', attempts: 1, created: 2, runAt: 3, next: 4, finished: 5, lease: 6, settings: []byte("s"), log: []byte("l\n")}
	h := strings.TrimSuffix(r.header(), "|")
	fields := strings.Split(h, ",")
	if len(fields) != len(recordFields) || recordFields[0].name != "st" || fields[0] != "a" {
		t.Fatalf("header %q has %d fields; layout.go names %d: %v", h, len(fields), len(recordFields), recordFields)
	}
	for i, want := range []string{"a", "1", "2", "3", "4", "5", "6", "1", "2"} {
		if fields[i] != want {
			t.Errorf("field %d (%s) = %q, want %q", i, recordFields[i].name, fields[i], want)
		}
	}
}

// FuzzDecodeRecord: no stored value makes the decoder panic, and what it
// accepts encodes back to the same value.
func FuzzDecodeRecord(f *testing.F) {
	f.Add("s,,n0yj7xyo,n0yj7xyo,n0yj7xyo,,,,|{}")
	f.Add("a,3,1,2,3,,ku,9,8|{\"u\":\"x\"}{\"n\":1}\n1")
	f.Add("x,,,,,,,,|")
	f.Add("q,,,,,,,,|")
	f.Add("s,,,,,,,zz,|ab")
	f.Fuzz(func(t *testing.T, v string) {
		r, err := decodeRecord(v)
		if err != nil {
			return
		}
		again, err := decodeRecord(r.encode())
		if err != nil || again.encode() != r.encode() {
			t.Fatalf("%q decodes, but its encoding %q does not round-trip: %v", v, r.encode(), err)
		}
	})
}

func TestWebhookIDs(t *testing.T) {
	s, clk := newStore(t, Options{})
	j := enqueue(t, s, "w", clk.Now())
	if !regexp.MustCompile(`^msg_[a-z2-7]{24}$`).MatchString(j.UID) {
		t.Fatalf("webhook id %q", j.UID)
	}
	replaced := enqueue(t, s, "w", clk.Now())
	claimed := claimOne(t, s, "w")
	if replaced.UID != j.UID || claimed.Job.UID != j.UID {
		t.Fatalf("webhook ids: created %s, replaced %s, claimed %s; want one", j.UID, replaced.UID, claimed.Job.UID)
	}
	finishJob(t, s, claimed.Job, clk.Now(), 200, true, false, time.Time{})
	// Created again in the same ms as the delivered one: a new identity, a
	// ms later, listed once.
	again := enqueue(t, s, "w", clk.Now().Add(time.Hour))
	if again.UID == j.UID || !again.CreatedAt.Equal(j.CreatedAt.Add(time.Millisecond)) {
		t.Fatalf("created again: uid %s (first %s), created %v (first %v)", again.UID, j.UID, again.CreatedAt, j.CreatedAt)
	}
	got, err := s.GetJob(context.Background(), key("w"))
	if err != nil || got.UID != again.UID || !got.CreatedAt.Equal(again.CreatedAt) {
		t.Fatalf("read back: %+v, %v", got, err)
	}
	if ids := flat(listAll(t, s, "", 10)); len(ids) != 1 {
		t.Fatalf("listed %v, want w once", ids)
	}
	// Another deployment's salt gives the same key and time another id.
	other, _ := newStore(t, Options{})
	if id := other.webhookID(key("w"), j.CreatedAt.UnixMilli()); id == j.UID || id == "" {
		t.Fatalf("another deployment's webhook id %q, first %q", id, j.UID)
	}
}

// TestJobSettingsRoundTrip: a job's own settings come back as stored.
func TestJobSettingsRoundTrip(t *testing.T) {
	ctx := context.Background()
	s, clk := newStore(t, Options{})
	in := kairos.Job{JobKey: key("full"), RunAt: clk.Now().Add(time.Hour), Payload: []byte(`{"a":[1,2,3]}`),
		CallbackURL: "https://example.com/a|b,c", Method: "PUT", ContentType: "text/plain", Headers: map[string]string{"X-A": "1"},
		Timeout: 7 * time.Second, MaxAttempts: 4, BackoffInitial: 2 * time.Second, BackoffMax: time.Minute}
	if _, err := s.Enqueue(ctx, in); err != nil {
		t.Fatal(err)
	}
	got := getJob(t, s, "full")
	got.UID, got.CreatedAt, got.NextRunAt, got.State = "", time.Time{}, time.Time{}, ""
	if d := cmp.Diff(in, got); d != "" {
		t.Errorf("job (-want +got):\n%s", d)
	}
}
