package api

import (
	"os"
	"strings"
	"testing"
	"time"

	"github.com/kairos-sh/kairos/callback"
)

// TestBackoffDocumented holds openapi.yaml's backoff settings and the
// retry line of docs/callbacks.md to what callback.Backoff does: the n-th retry
// waits a random time in [0, min(max, initial·2^(n-1))], so initial bounds
// the first wait and is not a minimum.
func TestBackoffDocumented(t *testing.T) {
	const formula = "[0, min(max, initial·2^(n-1))]"
	initial, max := 2*time.Second, time.Minute
	for n, want := range map[int]time.Duration{1: initial, 2: 2 * initial, 3: 4 * initial, 10: max} {
		low := callback.Backoff(n, initial, max, func() float64 { return 0 })
		high := callback.Backoff(n, initial, max, func() float64 { return 1 })
		if low != 0 || high != want {
			t.Errorf("retry %d waits from %v to %v; the docs say from 0 to %v", n, low, high, want)
		}
	}
	s := mustSpec(t)
	req := s.doc.Components.Schemas["BackoffRequest"].Value
	for what, text := range map[string]string{
		"BackoffRequest":         req.Description,
		"BackoffRequest.initial": req.Properties["initial"].Value.Description,
		"BackoffRequest.max":     req.Properties["max"].Value.Description,
		"Backoff":                s.doc.Components.Schemas["Backoff"].Value.Description,
	} {
		if !strings.Contains(strings.Join(strings.Fields(text), " "), "min(max, initial·2^(n-1))") {
			t.Errorf("openapi.yaml %s does not state the wait bound: %q", what, text)
		}
	}
	if d := req.Properties["initial"].Value.Description; !strings.Contains(d, "not a minimum") {
		t.Errorf("openapi.yaml BackoffRequest.initial does not say it is not a minimum: %q", d)
	}
	doc, err := os.ReadFile("../docs/callbacks.md")
	if err != nil {
		t.Fatal(err)
	}
	if text := strings.Join(strings.Fields(string(doc)), " "); !strings.Contains(text, formula) || !strings.Contains(text, "is not a minimum") {
		t.Errorf("docs/callbacks.md does not say the n-th retry waits a random time in %s and that initial is not a minimum", formula)
	}
}
