package api

import (
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kairos-sh/kairos"
)

// Labels are stored and shown; a listing by label answers exactly the
// jobs carrying every label asked for, with the state filter and paging;
// a schedule's occurrences carry its labels.
func TestJobLabels(t *testing.T) {
	t.Parallel()
	e := newEnv(t, Config{})
	acme := e.token(t, "acme", false)
	e.putTopic(t, acme, "orders", obj{"callback_url": hook})

	j := e.createJob(t, acme, "orders", obj{"id": "a", "delay": "1h", "labels": obj{"env": "prod", "customer": "c-1"}})
	if j.Labels["env"] != "prod" || j.Labels["customer"] != "c-1" {
		t.Fatalf("create answered labels %v", j.Labels)
	}
	e.createJob(t, acme, "orders", obj{"id": "b", "delay": "1h", "labels": obj{"env": "prod"}})
	e.createJob(t, acme, "orders", obj{"id": "c", "delay": "0s", "labels": obj{"env": "prod", "customer": "c-1"}})
	e.createJob(t, acme, "orders", obj{"id": "d", "delay": "1h"})
	e.createJob(t, acme, "orders", obj{"id": "e", "delay": "1h", "labels": obj{"env": "dev", "customer": "c-1"}})
	if got := want[jobResponse](t, e.do(t, "GET", "/v1/topics/orders/jobs/a", acme, nil), http.StatusOK); got.Labels["customer"] != "c-1" {
		t.Errorf("get shows labels %v", got.Labels)
	}

	list := func(query string) []string {
		t.Helper()
		var ids []string
		cursor := ""
		for range 20 {
			q := query + "&limit=1"
			if cursor != "" {
				q += "&cursor=" + url.QueryEscape(cursor)
			}
			p := want[listResponse](t, e.do(t, "GET", "/v1/topics/orders/jobs?"+q, acme, nil), http.StatusOK)
			for _, j := range p.Jobs {
				ids = append(ids, j.ID)
			}
			if p.NextCursor == "" {
				slices.Sort(ids)
				return ids
			}
			cursor = p.NextCursor
		}
		t.Fatal("paging does not end")
		return nil
	}
	for q, wantIDs := range map[string][]string{
		"label=env:prod":                                {"a", "b", "c"},
		"label=env:prod&label=customer:c-1":             {"a", "c"},
		"label=customer:c-1&label=env:prod&state=ready": {"c"},
		"label=customer:c-1":                            {"a", "c", "e"},
		"label=env:none":                                nil,
	} {
		if got := list(q); !slices.Equal(got, wantIDs) {
			t.Errorf("%s: %v, want %v", q, got, wantIDs)
		}
	}

	// occurrences inherit their schedule's labels
	sc := want[scheduleResponse](t, e.do(t, "PUT", "/v1/topics/orders/schedules/beat", acme,
		obj{"every": "1h", "labels": obj{"env": "sched"}}), http.StatusCreated)
	if sc.Labels["env"] != "sched" {
		t.Errorf("schedule answered labels %v", sc.Labels)
	}
	e.clock.Add(time.Second)
	occ := want[jobResponse](t, e.do(t, "POST", "/v1/topics/orders/schedules/beat/trigger", acme, nil), http.StatusCreated)
	wantOcc := []string{occ.ID, sc.PendingJob} // the trigger's and the pattern's pending one
	slices.Sort(wantOcc)
	if got := list("label=env:sched"); !slices.Equal(got, wantOcc) {
		t.Errorf("env:sched lists %v, want the occurrences %v", got, wantOcc)
	}
}

// Bad labels and label filters are refused, naming the field, and change
// nothing.
func TestLabelValidation(t *testing.T) {
	t.Parallel()
	e := newEnv(t, Config{})
	acme := e.token(t, "acme", false)
	e.putTopic(t, acme, "orders", obj{"callback_url": hook})
	many := obj{}
	for i := range kairos.MaxLabels + 1 {
		many[string(rune('a'+i))] = "x"
	}
	for name, tc := range map[string]struct {
		labels any
		field  string
	}{
		"upper-case key":  {obj{"Env": "x"}, "labels"},
		"key too long":    {obj{strings.Repeat("k", 33): "x"}, "labels"},
		"empty key":       {obj{"": "x"}, "labels"},
		"value too long":  {obj{"env": strings.Repeat("v", 65)}, "labels.env"},
		"too many":        {many, "labels"},
		"value not text":  {obj{"env": 1}, ""},
		"labels an array": {[]string{"env"}, ""},
	} {
		t.Run(name, func(t *testing.T) {
			before := e.snapshot(t)
			res := e.do(t, "POST", "/v1/topics/orders/jobs", acme, obj{"delay": "1m", "labels": tc.labels})
			var fields []string
			if tc.field != "" {
				fields = []string{tc.field}
			}
			e.refused(t, res, before, 400, fields, false)
		})
	}
	for _, q := range []string{"label=env", "label=Env:x", "label=env:" + strings.Repeat("v", 65), "label=a:1&label=a:2"} {
		p := want[Problem](t, e.do(t, "GET", "/v1/topics/orders/jobs?"+q, acme, nil), http.StatusBadRequest)
		if len(p.Errors) == 0 || p.Errors[0].Field != "label" {
			t.Errorf("%s: errors %+v, want one on label", q, p.Errors)
		}
	}
}

// FuzzLabelQuery: the label filter parser never panics; what it takes
// holds only valid keys and values, and reads back the same when written
// out again.
func FuzzLabelQuery(f *testing.F) {
	for _, s := range []string{"env:prod", "env:", "a.b-c_d:x:y", "env", ":x", "Env:x", "env:\xff", "k:" + strings.Repeat("é", 64)} {
		f.Add(s, "team:a")
	}
	f.Fuzz(func(t *testing.T, a, b string) {
		var fe fieldErrors
		got := parseLabelQuery(&fe, []string{a, b})
		if len(fe) > 0 {
			return
		}
		var again []string
		for k, v := range got {
			if !kairos.ValidLabelKey(k) || len([]rune(v)) > kairos.MaxLabelValue {
				t.Fatalf("took %q:%q", k, v)
			}
			again = append(again, k+":"+v)
		}
		var fe2 fieldErrors
		if back := parseLabelQuery(&fe2, again); len(fe2) > 0 || len(back) != len(got) {
			t.Fatalf("%v read back as %v %v", got, back, fe2)
		}
	})
}
