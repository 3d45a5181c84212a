package metrics

import (
	"strings"
	"testing"

	"github.com/kairos-sh/kairos"
)

// TestBreakerMetric: the breaker moves the workers report add up per topic
// and state moved to in kairos_breaker_transitions_total.
func TestBreakerMetric(t *testing.T) {
	m := New()
	m.Breaker("acme", "orders", kairos.Breaker{State: "open", Changed: true})
	m.Breaker("acme", "orders", kairos.Breaker{State: "open", Changed: true})
	m.Breaker("acme", "orders", kairos.Breaker{State: "closed", Changed: true})
	text := scrape(t, m)
	for _, want := range []string{
		`kairos_breaker_transitions_total{state="open",topic="acme/orders"} 2`,
		`kairos_breaker_transitions_total{state="closed",topic="acme/orders"} 1`,
	} {
		if !strings.Contains(text, want+"\n") {
			t.Errorf("metrics lack %q", want)
		}
	}
}
