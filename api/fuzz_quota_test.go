package api

import (
	"testing"
)

// FuzzQuotaRequest holds the quota and revocation bodies to their rules:
// no panic, a refusal names its fields, and what is accepted is in range.
func FuzzQuotaRequest(f *testing.F) {
	addSpecExamples(f, "PUT", "/v1/tenants/{tenant}/quota")
	addSpecExamples(f, "POST", "/v1/tenants/{tenant}/revocations")
	for _, s := range []string{
		`{}`, `{"max_pending": 0}`, `{"max_pending": -1}`, `{"max_pending": 1e3}`, `{"max_pending": 1099511627777}`,
		`{"rate": {"limit": 5}}`, `{"rate": {"period": "1s"}}`, `{"rate": {"limit": 5, "period": "0s"}}`, `{"rate": null}`,
		`{"rate": {"limit": 1000001, "period": "25h"}}`, `{"burst": 0}`, `{"burst": 1}`, `{"RATE": {}}`,
		`{"jti": ""}`, `{"jti": "x", "issued_before": "2026-11-21T10:00:00Z"}`, `{"issued_before": "soon"}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		var req quotaRequest
		if err := decodeBytes(body, &req); err == nil {
			o, err := req.override()
			if err != nil {
				checkRefusal(t, err)
			} else {
				q := o.Apply(quotaDefaults(0, 0, 0))
				if q.MaxPending < 0 || q.MaxPending > maxQuotaPending || q.Rate < 0 || q.Rate > maxQuotaRate ||
					(q.Rate > 0 && (q.RatePeriod <= 0 || q.Burst < 1)) {
					t.Errorf("accepted %s as %+v", body, q)
				}
			}
		} else {
			checkRefusal(t, err)
		}
		var rr revocationRequest
		if err := decodeBytes(body, &rr); err != nil {
			checkRefusal(t, err)
		}
	})
}
