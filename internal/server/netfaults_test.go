package server

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/Shopify/toxiproxy/v2"
	"github.com/Shopify/toxiproxy/v2/collectors"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"

	"github.com/kairos-sh/kairos/internal/testredis"
)

// netFault is a network fault between kairos and Redis, made by toxiproxy's
// toxics on a TCP proxy in this process.
type netFault struct {
	name   string
	toxics []toxic
	length time.Duration // how long the fault lasts
	// pulse, when set, adds the toxics for that long every second rather
	// than for the whole length.
	pulse time.Duration
	away  bool // Redis is unreachable meanwhile: /readyz must fail
}

// toxic is one of toxiproxy's toxics: type, the stream it acts on
// (upstream: to Redis, downstream: from Redis) and its attributes.
type toxic struct {
	typ, stream string
	attrs       string // JSON
}

func (x toxic) name() string { return x.typ + "-" + x.stream }

func (x toxic) json() string {
	return fmt.Sprintf(`{"name": %q, "type": %q, "stream": %q, "attributes": %s}`, x.name(), x.typ, x.stream, x.attrs)
}

// netFaults are the faults of issue 19: latency of 200 ms and of 2 s, a
// bandwidth cap, connections reset as Redis answers (the command ran, its
// reply is lost), and a full partition (packets dropped, connections left
// open) of 20 s.
var netFaults = []netFault{
	{name: "latency 200ms", length: 10 * time.Second,
		toxics: []toxic{{"latency", "downstream", `{"latency": 200}`}}},
	{name: "latency 2s", length: 10 * time.Second, away: true,
		toxics: []toxic{{"latency", "downstream", `{"latency": 2000}`}}},
	{name: "bandwidth 2 KB/s", length: 10 * time.Second,
		toxics: []toxic{{"bandwidth", "upstream", `{"rate": 2}`}, {"bandwidth", "downstream", `{"rate": 2}`}}},
	{name: "resets mid-command", length: 10 * time.Second, pulse: 100 * time.Millisecond,
		toxics: []toxic{{"reset_peer", "downstream", `{"timeout": 0}`}}},
	{name: "partition 20s", length: 20 * time.Second, away: true,
		toxics: []toxic{{"timeout", "upstream", `{"timeout": 0}`}, {"timeout", "downstream", `{"timeout": 0}`}}},
}

// inject applies f to p for f.length, probing /readyz of ti meanwhile.
func (f netFault) inject(t *testing.T, p *toxiproxy.Proxy, ti *testInstance) readyProbe {
	if f.pulse == 0 {
		addToxics(t, p, f.toxics)
		defer removeToxics(t, p, f.toxics)
		return probeReady(t, ti, f.length)
	}
	done := make(chan readyProbe)
	go func() { done <- probeReady(t, ti, f.length) }()
	for end := time.Now().Add(f.length); time.Now().Before(end); {
		addToxics(t, p, f.toxics)
		time.Sleep(f.pulse) // the point: the fault's pulse
		removeToxics(t, p, f.toxics)
		time.Sleep(time.Second - f.pulse) // and the calm until the next
	}
	return <-done
}

// TestNetworkFaults runs each fault of netFaults between two kairos
// processes (in this process) and a real redis-server, under a steady load
// of creates and deliveries, and prints its figures. Each ends with every
// job answered 2xx delivered, none twice but those in flight during the
// fault, every API answer within 2 s (503 problem+json while Redis is
// unreachable), /readyz failing while Redis is away, and recovery without
// a restart.
func TestNetworkFaults(t *testing.T) { // not parallel: the 2 s bound is measured on a machine of 2 cores
	skipShort(t)
	for _, f := range netFaults {
		t.Run(strings.ReplaceAll(f.name, " ", "_"), func(t *testing.T) {
			srv := testredis.New(t)
			proxy := startProxy(t, srv.Addr)
			env := map[string]string{"KAIROS_REDIS_URL": "redis://" + proxy.Listen}
			a, b := startTestInstanceOn(t, env), startTestInstanceOn(t, env)
			l := newFaultLoad(t, a, b)
			done := make(chan struct{})
			go func() { defer close(done); l.run(40, f.length+6*time.Second) }()
			time.Sleep(3 * time.Second) // the point: 3 s of load before the fault
			start := time.Now()
			ready := f.inject(t, proxy, a)
			end := time.Now()
			waitReady(t, a, 30*time.Second)
			recovered := time.Since(end)
			<-done
			l.wait(90*time.Second, a.in.Client)
			r := l.figures(start, end)
			t.Logf("%s: %s; /readyz during it: %s; ready again %v after it", f.name, r, ready, recovered.Round(time.Millisecond))
			if !f.away {
				ready.failed = max(ready.failed, 1) // Redis was slow, not away: /readyz may pass
			}
			checkReport(t, r, ready, 10*time.Second)
		})
	}
}

// startProxy starts a toxiproxy TCP proxy on loopback to upstream.
func startProxy(t *testing.T, upstream string) *toxiproxy.Proxy {
	t.Helper()
	zerolog.SetGlobalLevel(zerolog.Disabled) // its toxics log through zerolog's global logger
	api := toxiproxy.NewServer(toxiproxy.NewMetricsContainer(prometheus.NewRegistry()), zerolog.Nop())
	api.Metrics.ProxyMetrics = collectors.NewProxyMetricCollectors()
	p := toxiproxy.NewProxy(api, "redis", "127.0.0.1:0", upstream)
	if err := p.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Stop)
	return p
}

func addToxics(t *testing.T, p *toxiproxy.Proxy, toxics []toxic) {
	t.Helper()
	for _, x := range toxics {
		if _, err := p.Toxics.AddToxicJson(strings.NewReader(x.json())); err != nil {
			t.Fatalf("add toxic %s: %v", x.json(), err)
		}
	}
}

func removeToxics(t *testing.T, p *toxiproxy.Proxy, toxics []toxic) {
	t.Helper()
	for _, x := range toxics {
		if err := p.Toxics.RemoveToxic(context.Background(), x.name()); err != nil {
			t.Fatalf("remove toxic %s: %v", x.name(), err)
		}
	}
}
