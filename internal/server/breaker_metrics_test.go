package server

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/kairos-sh/kairos/internal/testredis"
	"github.com/kairos-sh/kairos/internal/testwait"
)

// TestBreakerMovesInMetrics: a serving process's /metrics counts its
// topic's circuit breaker opening (two failures in a row) and closing (the
// probe delivered after the cool-down), once each, in
// kairos_breaker_transitions_total.
func TestBreakerMovesInMetrics(t *testing.T) {
	rcv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasPrefix(r.Header.Get("Kairos-Job-Id"), "fail") {
			w.WriteHeader(http.StatusServiceUnavailable)
		}
	}))
	t.Cleanup(rcv.Close)
	ti := startTestInstanceOn(t, map[string]string{"KAIROS_REDIS_URL": testredis.New(t).URL()})
	ti.call(t, "PUT", "/v1/topics/partner", `{"callback_url": "`+rcv.URL+`", "max_attempts": 1, "breaker": {"failures": 2, "cooldown": "1s"}}`, http.StatusCreated)
	ti.call(t, "POST", "/v1/topics/partner/jobs", `{"id": "fail1", "payload": 1}`, http.StatusCreated)
	ti.call(t, "POST", "/v1/topics/partner/jobs", `{"id": "fail2", "payload": 2}`, http.StatusCreated)
	testwait.Until(t, 20*time.Second, func() bool {
		var tp struct {
			Breaker struct {
				State string `json:"state"`
			} `json:"breaker"`
		}
		json.Unmarshal([]byte(ti.call(t, "GET", "/v1/topics/partner", "", http.StatusOK)), &tp)
		return tp.Breaker.State == "open"
	}, "the breaker opened")
	ti.call(t, "POST", "/v1/topics/partner/jobs", `{"id": "works", "payload": 3}`, http.StatusCreated)
	want := []string{
		`kairos_breaker_transitions_total{state="open",topic="acme/partner"} 1`,
		`kairos_breaker_transitions_total{state="closed",topic="acme/partner"} 1`,
	}
	testwait.Until(t, 20*time.Second, func() bool {
		metrics := ti.call(t, "GET", "/metrics", "", http.StatusOK)
		for _, l := range want {
			if !strings.Contains(metrics, "\n"+l+"\n") {
				return false
			}
		}
		return true
	}, "/metrics counting one opening and one closing")
}
