package rdb

import (
	"context"
	"errors"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/redis/go-redis/v9"

	"github.com/kairos-sh/kairos"
	"github.com/kairos-sh/kairos/internal/testredis"
)

func TestRecordRoundTrip(t *testing.T) {
	for _, r := range []record{
		{state: 's', created: 1795455229123, runAt: 1795455230123, next: 1795455230123, payload: []byte(`{"n":1}`)},
		{state: 'a', attempts: 3, created: 1, runAt: 2, next: 3, lease: 30000, settings: []byte(`{"u":"https://x|y"}`),
			log: []byte("{\"n\":1}\n{\"n\":2}\n"), payload: []byte("|,|")},
		{state: 'd', finished: 5},
		{state: 'x', attempts: recordMax("n"), created: recordMax("ca"), runAt: recordMax("ra"), next: recordMax("nx"),
			finished: recordMax("fa"), lease: recordMax("lt"), payload: []byte("\x00\xff")},
	} {
		got, err := decodeRecord(r.encode())
		if err != nil {
			t.Fatalf("%q: %v", r.encode(), err)
		}
		if d := cmp.Diff(r, got, cmp.AllowUnexported(record{}), cmpopts.EquateEmpty()); d != "" {
			t.Errorf("round trip (-want +got):\n%s", d)
		}
	}
}

// TestRecordHeaderIsTheLayout: a record's header has the fields layout.go
// names, in that order and of its widths, big-endian, the state first.
func TestRecordHeaderIsTheLayout(t *testing.T) {
	r := record{state: 'a', attempts: 1, created: 2, runAt: 3, next: 4, finished: 5, lease: 6, settings: []byte("s"), log: []byte("l\n")}
	h := r.header()
	if len(h) != recordHeaderLen || recordFields[0].name != "st" || recordFields[0].width != 1 || h[0] != 'a' {
		t.Fatalf("header %q: %d bytes, want %d, the state first: %v", h, len(h), recordHeaderLen, recordFields)
	}
	at := 1
	for i, want := range []byte{1, 2, 3, 4, 5, 6, 1, 2} {
		f := recordFields[i+1]
		field := h[at : at+f.width]
		if field != strings.Repeat("\x00", f.width-1)+string(want) {
			t.Errorf("field %s = %q, want %d in %d bytes", f.name, field, want, f.width)
		}
		at += f.width
	}
	if recordHeader != ">c1I3I6I6I6I6I3I3I3" {
		t.Errorf("recordHeader %q", recordHeader)
	}
}

// TestRecordLuaAndGoAgree: a record of every state written by Go reads the
// same in the scripts and is written back unchanged, and one the scripts
// write (format, newRecord) reads in Go as they meant it; with Redis's
// struct library and with the stand-in the embedded Redis uses.
func TestRecordLuaAndGoAgree(t *testing.T) {
	for _, lib := range []string{"struct", "the stand-in"} {
		t.Run(lib, func(t *testing.T) {
			helpers := helpersSrc
			if lib == "the stand-in" { // as on the embedded Redis
				helpers += "structLib = structStandIn()\n"
			}
			testRecordLuaAndGoAgree(t, helpers)
		})
	}
}

func testRecordLuaAndGoAgree(t *testing.T, helpers string) {
	ctx := context.Background()
	c := testredis.Client(t)
	read := redis.NewScript(helpers + `
local r = parse(ARGV[1])
return {format(r), r.st, r.n, r.ca, r.ra, r.nx, r.fa, r.lt, r.ls, r.ll, bodyOf(r)}`)
	write := redis.NewScript(helpers + `
local n = {}
for i = 2, 9 do
  n[i] = tonumber(ARGV[i])
end
return {format({st = ARGV[1], n = n[2], ca = n[3], ra = n[4], nx = n[5], fa = n[6], lt = n[7], ls = n[8], ll = n[9], body = ARGV[10]}),
  newRecord(ARGV[1], n[3], n[4], n[7], n[8], ARGV[10])}`)
	var states []byte
	for _, code := range stateCodes {
		states = append(states, code)
	}
	slices.Sort(states)
	for i, st := range states {
		r := record{state: st, attempts: int64(i + 1), created: 1795455229123, runAt: 1795455230123 + int64(i), next: 1795455260123,
			finished: 1795455261123 * int64(i%2), lease: 30000, settings: []byte(`{"u":"https://x|y"}`),
			log: []byte("{\"n\":1}\n"), payload: []byte("\x00|,\xff")}
		if i == 0 {
			r.attempts, r.created, r.runAt, r.next, r.finished, r.lease =
				recordMax("n"), recordMax("ca"), recordMax("ra"), recordMax("nx"), recordMax("fa"), recordMax("lt")
		}
		t.Run(string(stateOf(st)), func(t *testing.T) {
			got, err := read.Run(ctx, c, nil, r.encode()).Slice()
			if err != nil {
				t.Fatal(err)
			}
			want := []any{r.encode(), string(st)}
			for _, v := range r.nums() {
				want = append(want, v)
			}
			want = append(want, r.body())
			if d := cmp.Diff(want, got); d != "" {
				t.Errorf("Lua read (-want +got):\n%s", d)
			}
			argv := []any{string(st)}
			for _, v := range r.nums() {
				argv = append(argv, v)
			}
			argv = append(argv, r.body())
			vs, err := write.Run(ctx, c, nil, argv...).StringSlice()
			if err != nil {
				t.Fatal(err)
			}
			if vs[0] != r.encode() {
				t.Errorf("Lua format: %q, Go: %q", vs[0], r.encode())
			}
			fresh, err := decodeRecord(vs[1])
			if err != nil {
				t.Fatalf("Lua newRecord %q: %v", vs[1], err)
			}
			wantFresh := record{state: st, created: r.created, runAt: r.runAt, next: r.runAt, lease: r.lease,
				settings: r.settings, payload: append(append([]byte{}, r.log...), r.payload...)}
			if d := cmp.Diff(wantFresh, fresh, cmp.AllowUnexported(record{}), cmpopts.EquateEmpty()); d != "" {
				t.Errorf("Lua newRecord (-want +got):\n%s", d)
			}
		})
	}
}

// TestCheckRecord: values the header cannot hold are refused before a
// script would cut them.
func TestCheckRecord(t *testing.T) {
	for _, tc := range []struct {
		name           string
		runAt, timeout int64
		settings       int
		ok             bool
	}{
		{"typical", 1795455229123, 30000, 200, true},
		{"widest", recordMax("ra"), recordMax("lt"), int(recordMax("ls")), true},
		{"run_at before 1970", -1, 0, 0, false},
		{"run_at past the field", recordMax("ra") + 1, 0, 0, false},
		{"negative timeout", 0, -1, 0, false},
		{"timeout past the field", 0, recordMax("lt") + 1, 0, false},
		{"settings past the field", 0, 0, int(recordMax("ls")) + 1, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := checkRecord(tc.runAt, tc.timeout, tc.settings)
			if (err == nil) != tc.ok || (err != nil && !errors.Is(err, kairos.ErrInvalid)) {
				t.Fatalf("checkRecord: %v, want ok %v", err, tc.ok)
			}
		})
	}
}

// TestEnqueueRefusesWhatTheRecordCannotHold: a job whose run_at or timeout
// its record's header cannot hold is refused, and nothing is stored.
func TestEnqueueRefusesWhatTheRecordCannotHold(t *testing.T) {
	ctx := context.Background()
	s, clk := newStore(t, Options{})
	for name, j := range map[string]kairos.Job{
		"no run_at":    {JobKey: key("z")},
		"long timeout": {JobKey: key("t"), RunAt: clk.Now(), Timeout: 5 * time.Hour},
	} {
		if _, err := s.Enqueue(ctx, j); !errors.Is(err, kairos.ErrInvalid) {
			t.Errorf("%s: %v, want ErrInvalid", name, err)
		}
	}
	enqueue(t, s, "r", clk.Now())
	if _, err := s.Reschedule(ctx, key("r"), time.Time{}); !errors.Is(err, kairos.ErrInvalid) {
		t.Errorf("reschedule to no run_at: %v, want ErrInvalid", err)
	}
	wantCounts(t, s, map[kairos.State]int64{kairos.StateReady: 1})
}

// FuzzDecodeRecord: no stored value makes the decoder panic, and what it
// accepts encodes back to the same value (every byte of a record is a
// field's or the body's).
func FuzzDecodeRecord(f *testing.F) {
	f.Add(record{state: 's', created: 1795455229123, runAt: 1795455230123, next: 1795455230123, payload: []byte("{}")}.encode())
	f.Add(record{state: 'a', attempts: 3, created: 1, runAt: 2, next: 3, lease: 30000, settings: []byte(`{"u":"x"}`),
		log: []byte("{\"n\":1}\n"), payload: []byte("1")}.encode())
	f.Add(record{state: 'x'}.encode())
	f.Add("q" + record{}.encode()[1:])                               // unknown state
	f.Add(record{state: 's', settings: []byte("ab")}.header() + "a") // settings longer than the body
	f.Add(record{state: 's'}.header()[:recordHeaderLen-1])           // short header
	f.Add("s,,n0yj7xyo,n0yj7xyo,n0yj7xyo,,,,|{}")                    // layout 3
	f.Fuzz(func(t *testing.T, v string) {
		r, err := decodeRecord(v)
		if err != nil {
			return
		}
		if r.encode() != v {
			t.Fatalf("%q decodes, but encodes as %q", v, r.encode())
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

// TestB36MatchesGo: the scripts' b36 writes what strconv.FormatInt(n, 36)
// writes, at every width its two-digits-at-a-time steps take (0 is the
// empty string),
// and Go reads it back; numbers up to 2^53, where doubles stay exact.
func TestB36MatchesGo(t *testing.T) {
	ns := []int64{1, 35, 36, 1295, 1296, 1297, 46655, 46656, 1679615, 1679616, 2176782335, 2176782336,
		2821109907455, 2821109907456, 1795535849834, 1 << 53}
	for i := int64(1); i < 3000; i++ {
		ns = append(ns, i, i*i*i*7919%(1<<53), i*104729*104729%2821109907456)
	}
	script := redis.NewScript(helpersSrc + `
local out = {b36(0)}
for i, s in ipairs(ARGV) do
  out[i + 1] = b36(tonumber(s))
end
return out`)
	argv := make([]any, len(ns))
	for i, n := range ns {
		argv[i] = n
	}
	got, err := script.Run(context.Background(), testredis.Client(t), nil, argv...).StringSlice()
	if err != nil {
		t.Fatal(err)
	}
	if got[0] != "" {
		t.Errorf("b36(0) = %q, want ''", got[0])
	}
	for i, n := range ns {
		if want := strconv.FormatInt(n, 36); got[i+1] != want {
			t.Errorf("b36(%d) = %q, want %q", n, got[i+1], want)
		}
	}
}
