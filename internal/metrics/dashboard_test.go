package metrics

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/redis/go-redis/v9"

	"github.com/kairos-sh/kairos"
	"github.com/kairos-sh/kairos/callback"
	"github.com/kairos-sh/kairos/internal/rdb"
	"github.com/kairos-sh/kairos/internal/testredis"
)

// dashboardFile is the Grafana dashboard that operators import.
const dashboardFile = "../../deploy/grafana/kairos.json"

// exported gathers every metric family a kairos process exports, by name,
// from the registry New builds: each collector is made to report (a
// counter vector reports nothing until a child exists), and every metric
// the registry describes must then be among them, so a metric added to
// New without a line in exercise fails here rather than going unchecked.
func exported(t *testing.T) map[string]dto.MetricType {
	t.Helper()
	ctx := context.Background()
	client := testredis.Client(t)
	store := rdb.New(client, rdb.Options{Prefix: testredis.Prefix(t), Shards: 2, NewSecret: callback.NewSecret})
	if err := store.Init(ctx); err != nil {
		t.Fatal(err)
	}
	m := New()
	m.Watch(Gauges{Store: store, LocksHeld: func() int { return 1 }, InFlight: func() int64 { return 1 },
		Pools: map[string]func() *redis.PoolStats{"main": client.PoolStats}})
	client.AddHook(m.Hook())
	exercise(ctx, m, client)

	families, err := m.reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]dto.MetricType{}
	for _, f := range families {
		out[f.GetName()] = f.GetType()
	}
	descs := make(chan *prometheus.Desc)
	go func() { m.reg.Describe(descs); close(descs) }()
	fqName := regexp.MustCompile(`fqName: "([^"]+)"`)
	described := 0
	for d := range descs {
		name := fqName.FindStringSubmatch(d.String())
		if name == nil {
			t.Fatalf("cannot read a metric's name from %s", d)
		}
		described++
		if _, ok := out[name[1]]; !ok && strings.HasPrefix(name[1], "kairos_") {
			t.Errorf("%s is registered but exercise made it report nothing: add it there", name[1])
		}
	}
	if described == 0 {
		t.Fatal("the registry describes no metric")
	}
	return out
}

// exercise makes each of m's collectors report at least one series.
func exercise(ctx context.Context, m *Metrics, client redis.UniversalClient) {
	m.Created("acme", "orders")
	job := kairos.Job{JobKey: kairos.JobKey{Tenant: "acme", Topic: "orders", ID: "a"}}
	occ := kairos.Job{JobKey: kairos.JobKey{Tenant: "acme", Topic: "ticks", ID: "nightly@1767225600000"}}
	m.Attempt(callback.Event{Job: occ, Attempt: kairos.Attempt{N: 1, Duration: time.Millisecond}, State: kairos.StateDelivered})
	m.Attempt(callback.Event{Job: job, Attempt: kairos.Attempt{N: 1}, State: kairos.StateRetrying})
	m.Attempt(callback.Event{Job: occ, Attempt: kairos.Attempt{N: 2, Status: http.StatusGone}, State: kairos.StateDead})
	m.Attempt(callback.Event{Job: job, Attempt: kairos.Attempt{N: 2}, State: kairos.StateExpired})
	m.Skipped("acme", "ticks", 1)
	m.Breaker("acme", "orders", kairos.Breaker{State: "open", Changed: true})
	client.Do(ctx, "NOSUCHCOMMAND") // a Redis error
}

// dashboard is the part of a Grafana dashboard the tests read.
type dashboard struct {
	Panels     []panel `json:"panels"`
	Templating struct {
		List []struct {
			Name       string          `json:"name"`
			Type       string          `json:"type"`
			Query      json.RawMessage `json:"query"` // a string, or {"query": "..."}
			Datasource *datasource     `json:"datasource"`
		} `json:"list"`
	} `json:"templating"`
}

type panel struct {
	ID         int         `json:"id"`
	Type       string      `json:"type"`
	Title      string      `json:"title"`
	Datasource *datasource `json:"datasource"`
	Targets    []struct {
		Expr       string      `json:"expr"`
		Datasource *datasource `json:"datasource"`
	} `json:"targets"`
	Panels []panel `json:"panels"` // a collapsed row's
}

type datasource struct {
	Type string `json:"type"`
	UID  string `json:"uid"`
}

func readDashboard(t *testing.T) dashboard {
	t.Helper()
	b, err := os.ReadFile(dashboardFile)
	if err != nil {
		t.Fatal(err)
	}
	var d dashboard
	if err := json.Unmarshal(b, &d); err != nil {
		t.Fatalf("%s: %v", dashboardFile, err)
	}
	return d
}

// queries returns every PromQL query of d, panels' and variables', each
// with where it is.
func (d dashboard) queries() map[string]string {
	out := map[string]string{}
	var walk func([]panel)
	walk = func(ps []panel) {
		for _, p := range ps {
			for i, tg := range p.Targets {
				out[p.Title+" #"+string(rune('A'+i))] = tg.Expr
			}
			walk(p.Panels)
		}
	}
	walk(d.Panels)
	for _, v := range d.Templating.List {
		if v.Type != "query" {
			continue
		}
		var q struct {
			Query string `json:"query"`
		}
		if json.Unmarshal(v.Query, &q) != nil {
			json.Unmarshal(v.Query, &q.Query)
		}
		out["variable $"+v.Name] = q.Query
	}
	return out
}

// metricName matches the names of kairos's own metrics and of the Go and
// process collectors it registers, wherever they stand in a query.
var metricName = regexp.MustCompile(`\b(?:kairos|go|process)_[a-zA-Z0-9_:]*`)

// resolve returns the family a metric name of a query reads: itself, or
// for a histogram's (or summary's) series, the family of its _bucket,
// _sum or _count.
func resolve(name string, families map[string]dto.MetricType) (string, bool) {
	if typ, ok := families[name]; ok {
		return name, typ != dto.MetricType_HISTOGRAM // a histogram's own name names no series
	}
	for _, suffix := range []string{"_bucket", "_sum", "_count"} {
		base, ok := strings.CutSuffix(name, suffix)
		if !ok {
			continue
		}
		switch families[base] {
		case dto.MetricType_HISTOGRAM:
			return base, true
		case dto.MetricType_SUMMARY:
			return base, suffix != "_bucket"
		}
	}
	return "", false
}

// TestDashboardQueriesExportedMetrics: every metric name in the dashboard's
// queries (panels and variables) is a series kairos exports, as gathered
// from its registry; every kairos metric appears on the dashboard; and the
// panels the operator needs first are there.
func TestDashboardQueriesExportedMetrics(t *testing.T) {
	families := exported(t)
	used := map[string]bool{}
	queries := readDashboard(t).queries()
	if len(queries) == 0 {
		t.Fatal("the dashboard has no queries")
	}
	for where, q := range queries {
		names := metricName.FindAllString(q, -1)
		if len(names) == 0 && !strings.HasPrefix(where, "variable") {
			t.Errorf("%s: %q names no kairos metric", where, q)
		}
		for _, n := range names {
			family, ok := resolve(n, families)
			if !ok {
				t.Errorf("%s: %s is not a series kairos exports (query %q)", where, n, q)
				continue
			}
			used[family] = true
		}
	}
	for name := range families {
		if strings.HasPrefix(name, "kairos_") && !used[name] {
			t.Errorf("kairos exports %s, which no panel of %s shows", name, dashboardFile)
		}
	}
	// Issue 50's list: deliveries, lateness, retries, dead letters,
	// breaker states, Redis errors, in-flight callbacks.
	for _, name := range []string{"kairos_jobs_delivered_total", "kairos_lateness_seconds", "kairos_attempts_failed_total",
		"kairos_jobs_dead_total", "kairos_breaker_transitions_total", "kairos_redis_errors_total", "kairos_callbacks_in_flight"} {
		if !used[name] {
			t.Errorf("no panel shows %s", name)
		}
	}
}

// TestDashboardDatasourceIsAVariable: the dashboard imports into any
// Grafana: its Prometheus is the variable $datasource, which every panel
// and query uses, and panel ids are unique.
func TestDashboardDatasourceIsAVariable(t *testing.T) {
	d := readDashboard(t)
	var dsVar bool
	for _, v := range d.Templating.List {
		if v.Name == "datasource" && v.Type == "datasource" && string(v.Query) == `"prometheus"` {
			dsVar = true
		}
		if v.Type == "query" && (v.Datasource == nil || v.Datasource.UID != "${datasource}") {
			t.Errorf("variable $%s does not query ${datasource}", v.Name)
		}
	}
	if !dsVar {
		t.Error(`no variable "datasource" of type datasource with query "prometheus"`)
	}
	var ids []int
	var walk func([]panel)
	walk = func(ps []panel) {
		for _, p := range ps {
			ids = append(ids, p.ID)
			walk(p.Panels)
			if p.Type == "row" {
				continue
			}
			if p.Datasource == nil || p.Datasource.UID != "${datasource}" || p.Datasource.Type != "prometheus" {
				t.Errorf("panel %q: datasource %+v, want the prometheus ${datasource}", p.Title, p.Datasource)
			}
			if len(p.Targets) == 0 {
				t.Errorf("panel %q has no query", p.Title)
			}
			for _, tg := range p.Targets {
				if tg.Datasource == nil || tg.Datasource.UID != "${datasource}" {
					t.Errorf("panel %q: a query's datasource %+v, want ${datasource}", p.Title, tg.Datasource)
				}
			}
		}
	}
	walk(d.Panels)
	slices.Sort(ids)
	if len(slices.Compact(slices.Clone(ids))) != len(ids) {
		t.Errorf("panel ids repeat: %v", ids)
	}
}
