package api

import (
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"
)

// TestNotPrimaryWritesAnswer503: a write refused because the node is a
// replica, or lacks replicas, answers 503 with Retry-After and advice a
// retry can follow safely, not 500.
func TestNotPrimaryWritesAnswer503(t *testing.T) {
	s := &Server{log: slog.New(slog.DiscardHandler)}
	for _, err := range []error{
		redis.ErrClosed, // unreachable, for comparison
		errors.New("READONLY You can't write against a read only replica."),
		fmt.Errorf("create job: %w", errors.New("READONLY You can't write against a read only replica. script: 1f2e, on @user_script:12.")),
		errors.New("NOREPLICAS Not enough good replicas to write."),
	} {
		w := httptest.NewRecorder()
		s.writeError(w, httptest.NewRequest(http.MethodPost, "/v1/topics/t/jobs", nil), err)
		if w.Code != http.StatusServiceUnavailable || w.Header().Get("Retry-After") == "" {
			t.Errorf("%v: %d, Retry-After %q; want 503 with Retry-After", err, w.Code, w.Header().Get("Retry-After"))
		}
		if err != redis.ErrClosed && (!strings.Contains(w.Body.String(), "dedup_key") || !strings.Contains(w.Body.String(), "dedup_window (default 10m")) {
			t.Errorf("%v: the advice does not name dedup_key and its window: %s", err, w.Body)
		}
	}
}
