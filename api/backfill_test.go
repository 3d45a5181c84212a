package api

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/kairos-sh/kairos"
)

// Backfill fires each past instant of a range once: a second backfill of
// the range fires none, last_run says backfill, and bad ranges are 400s
// naming the field.
func TestScheduleBackfill(t *testing.T) {
	t.Parallel()
	e := newEnv(t, Config{})
	acme := e.token(t, "acme", false)
	e.putTopic(t, acme, "reports", obj{"callback_url": hook})
	path := "/v1/topics/reports/schedules/hourly"
	start := t0.Add(-10 * time.Hour)
	want[scheduleResponse](t, e.do(t, "PUT", path, acme, obj{"every": "1h", "start_at": ms(start)}), http.StatusCreated)
	rng := obj{"from": ms(start), "to": ms(t0.Add(3 * time.Hour))}
	got := want[backfillResponse](t, e.do(t, "POST", path+"/backfill", acme, rng), http.StatusAccepted)
	if got.Instants != 11 { // start ... t0; the pending one (t0+1h) and later ones are the pattern's
		t.Fatalf("backfill fired %d, want 11", got.Instants)
	}
	if again := want[backfillResponse](t, e.do(t, "POST", path+"/backfill", acme, rng), http.StatusAccepted); again.Instants != 0 {
		t.Fatalf("second backfill fired %d, want 0", again.Instants)
	}
	v := want[scheduleResponse](t, e.do(t, "GET", path, acme, nil), http.StatusOK)
	if v.LastRun == nil || v.LastRun.Trigger != triggerBackfill || v.LastRun.JobID != kairos.OccurrenceID("hourly", t0) {
		t.Fatalf("last_run %+v, want the backfill's last instant", v.LastRun)
	}
	j := e.getJob(t, acme, "reports", kairos.OccurrenceID("hourly", start))
	if j.RunAt != ms(start) {
		t.Errorf("backfilled occurrence run_at %s, want its instant %s", j.RunAt, ms(start))
	}

	for _, tc := range []struct {
		name  string
		body  any
		field string
	}{
		{"no from", obj{"to": ms(t0)}, "from"},
		{"to not after from", obj{"from": ms(t0), "to": ms(t0)}, "to"},
		{"not a time", obj{"from": "yesterday", "to": ms(t0)}, "from"},
		{"unknown field", obj{"from": ms(start), "to": ms(t0), "at": 1}, "at"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := e.snapshot(t)
			e.refused(t, e.do(t, "POST", path+"/backfill", acme, tc.body, specLenient()), before, http.StatusBadRequest, []string{tc.field}, false)
		})
	}
	want[scheduleResponse](t, e.do(t, "PUT", "/v1/topics/reports/schedules/fast", acme, obj{"cron": "* * * * * *"}), http.StatusCreated)
	before := e.snapshot(t)
	p := e.refused(t, e.do(t, "POST", "/v1/topics/reports/schedules/fast/backfill", acme,
		obj{"from": ms(t0.Add(-time.Hour)), "to": ms(t0)}), before, http.StatusBadRequest, []string{"to"}, false)
	if !strings.Contains(p.Errors[0].Message, "1000") {
		t.Errorf("too many instants: %q does not say the bound", p.Errors[0].Message)
	}
	wantProblem(t, e.do(t, "POST", "/v1/topics/reports/schedules/nope/backfill", acme, rng), http.StatusNotFound)
}

// FuzzBackfillRequest sends bodies to POST .../schedules/{id}/backfill.
// Nothing panics or answers 5xx; a refusal is a problem naming from, to or
// the body and changes nothing; an accepted one fires at most 1000
// instants, and the same body again fires none. The seeds run in the
// normal suite.
func FuzzBackfillRequest(f *testing.F) {
	for _, s := range []string{
		`{"from":"2026-11-21T00:00:00Z","to":"2026-11-21T10:00:00Z"}`, `{"from":"2026-11-20T00:00:00Z","to":"2026-11-22T00:00:00Z"}`,
		`{"from":"2026-11-21T09:59:59.9995Z","to":"2026-11-21T10:00:00.0001+00:00"}`, `{"from":"0001-01-01T00:00:00Z","to":"2026-11-21T00:00:00Z"}`,
		`{"from":"2026-11-21T00:00:00Z"}`, `{"to":"2026-11-21T00:00:00Z"}`, `{}`, `null`, `[]`, `{"from":1,"to":2}`,
		`{"from":"2026-11-21T10:00:00Z","to":"2026-11-21T00:00:00Z"}`, `{"from":"2026-11-21T00:00:00,5Z","to":"2026-11-22T00:00:00Z"}`,
		`{"from":"9999-12-31T23:59:59Z","to":"9999-12-31T23:59:59.999Z"}`, `{"from":"2026-11-21T00:00:00Z","to":"2026-11-21T10:00:00Z","x":1}`, `{`,
	} {
		f.Add([]byte(s))
	}
	e := newEnv(f, Config{})
	acme := e.token(f, "acme", false)
	e.putTopic(f, acme, "orders", obj{"callback_url": hook})
	e.do(f, "PUT", "/v1/topics/orders/schedules/s", acme, obj{"cron": "*/15 * * * *"})
	path := "/v1/topics/orders/schedules/s/backfill"
	f.Fuzz(func(t *testing.T, body []byte) {
		before := e.snapshot(t)
		res := e.do(t, "POST", path, acme, body, offSpec())
		switch {
		case res.Status >= 500 || res.Status < 200 || (res.Status >= 300 && res.Status < 400):
			t.Fatalf("status %d: %s", res.Status, truncate(res.Body))
		case res.Status >= 400:
			p := wantProblem(t, res, res.Status)
			for _, fe := range p.Errors {
				if fe.Message == "" {
					t.Errorf("field %q without a reason", fe.Field)
				}
			}
			e.unchanged(t, before)
		default:
			got := want[backfillResponse](t, res, http.StatusAccepted)
			if got.Instants < 0 || got.Instants > kairos.MaxBackfill {
				t.Fatalf("fired %d instants", got.Instants)
			}
			if again := want[backfillResponse](t, e.do(t, "POST", path, acme, body, offSpec()), http.StatusAccepted); again.Instants != 0 {
				t.Fatalf("the same backfill again fired %d", again.Instants)
			}
		}
	})
}
