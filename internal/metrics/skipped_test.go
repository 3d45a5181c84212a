package metrics

import (
	"strings"
	"testing"
)

// TestSkippedMetric: the scanner's skip reports add up per topic in
// kairos_occurrences_skipped_total, the occurrence metrics' name and label.
func TestSkippedMetric(t *testing.T) {
	m := New()
	m.Skipped("acme", "ticks", 2)
	m.Skipped("acme", "ticks", 1)
	m.Skipped("beta", "ticks", 1)
	text := scrape(t, m)
	for _, want := range []string{
		`kairos_occurrences_skipped_total{topic="acme/ticks"} 3`,
		`kairos_occurrences_skipped_total{topic="beta/ticks"} 1`,
	} {
		if !strings.Contains(text, want+"\n") {
			t.Errorf("metrics lack %q", want)
		}
	}
}
