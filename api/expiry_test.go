package api

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestExpiry(t *testing.T) {
	runAt := t0.Add(time.Hour)
	for _, tc := range []struct {
		name       string
		expiresAt  string
		ttl        string
		want       time.Time // when it is accepted
		wantFields []string
	}{
		{name: "none"},
		{name: "expires_at rounds down", expiresAt: "2026-11-21T12:00:00.0009Z", want: t0.Add(2 * time.Hour)},
		{name: "ttl from run_at", ttl: "30m", want: runAt.Add(30 * time.Minute)},
		{name: "before run_at", expiresAt: "2026-11-21T10:30:00Z", wantFields: []string{"expires_at"}},
		{name: "both", expiresAt: "2026-11-21T12:00:00Z", ttl: "1h", wantFields: []string{"expires_at", "ttl"}},
		{name: "bad ttl", ttl: "soon", wantFields: []string{"ttl"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var req jobRequest
			if tc.expiresAt != "" {
				req.ExpiresAt = &tc.expiresAt
			}
			if tc.ttl != "" {
				req.TTL = &tc.ttl
			}
			var fe fieldErrors
			got := req.expiry(&fe, runAt, t0)
			if len(fe) == 0 && !got.Equal(tc.want) {
				t.Errorf("expiry %s, want %s", got, tc.want)
			}
			if d := cmp.Diff(tc.wantFields, fieldNames(fe)); d != "" {
				t.Errorf("field errors (-want +got):\n%s", d)
			}
		})
	}
}

// fieldNames lists the fields of fe in order.
func fieldNames(fe fieldErrors) []string {
	var out []string
	for _, f := range fe {
		out = append(out, f.Field)
	}
	return out
}
