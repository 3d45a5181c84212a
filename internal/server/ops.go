package server

import (
	"context"
	"crypto/subtle"
	"net/http"
	"time"

	"github.com/kairos-sh/kairos/internal/rdb"
)

// opsHandler serves /healthz, /readyz and /metrics for a process that runs
// no API (a scanner or worker machine), so that it can be health-checked
// and scraped.
func opsHandler(store *rdb.Store, metrics http.Handler, timeout time.Duration) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"status":"ok"}` + "\n"))
	})
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithTimeout(r.Context(), timeout)
		defer cancel()
		w.Header().Set("Content-Type", "application/json")
		if err := store.Ping(ctx); err != nil {
			w.WriteHeader(http.StatusServiceUnavailable)
			w.Write([]byte(`{"status":"redis unreachable"}` + "\n"))
			return
		}
		w.Write([]byte(`{"status":"ready"}` + "\n"))
	})
	mux.Handle("GET /metrics", metrics)
	return mux
}

// protect requires "Authorization: Bearer token" when token is set.
func protect(h http.Handler, token string) http.Handler {
	if token == "" {
		return h
	}
	want := []byte("Bearer " + token)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if subtle.ConstantTimeCompare([]byte(r.Header.Get("Authorization")), want) != 1 {
			w.Header().Set("WWW-Authenticate", `Bearer realm="kairos metrics"`)
			http.Error(w, "metrics need Authorization: Bearer $KAIROS_METRICS_TOKEN", http.StatusUnauthorized)
			return
		}
		h.ServeHTTP(w, r)
	})
}
