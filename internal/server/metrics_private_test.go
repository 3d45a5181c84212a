package server

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/kairos-sh/kairos/internal/testredis"
)

// TestMetricsArePrivateByDefault: on a public listen address with no
// KAIROS_METRICS_TOKEN and no KAIROS_METRICS_ADDR, /metrics answers 404
// and shows nothing; with the token it needs the token; with its own
// address the API's listener does not serve it; on a loopback listen
// address (the embedded dev mode) it is served as is.
func TestMetricsArePrivateByDefault(t *testing.T) {
	metrics := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "kairos_redis_up 1\n") })
	get := func(h http.Handler, authz string) (int, string) {
		if h == nil {
			return 0, ""
		}
		r := httptest.NewRequest("GET", "/metrics", nil)
		if authz != "" {
			r.Header.Set("Authorization", authz)
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		return w.Code, w.Body.String()
	}
	tests := []struct {
		name                string
		cfg                 Config
		authz               string
		wantAPI, wantOwn    int // 0: no listener
		wantAPIShowsMetrics bool
	}{
		{name: "public address", cfg: Config{Addr: ":8080"}, wantAPI: 404},
		{name: "public IPv4 address", cfg: Config{Addr: "0.0.0.0:8080"}, wantAPI: 404},
		{name: "token, none sent", cfg: Config{Addr: ":8080", MetricsToken: "s3cret-token"}, wantAPI: 401},
		{name: "token, a wrong one sent", cfg: Config{Addr: ":8080", MetricsToken: "s3cret-token"}, authz: "Bearer s3cret", wantAPI: 401},
		{name: "token sent", cfg: Config{Addr: ":8080", MetricsToken: "s3cret-token"}, authz: "Bearer s3cret-token", wantAPI: 200, wantAPIShowsMetrics: true},
		{name: "loopback address", cfg: Config{Addr: "127.0.0.1:8080"}, wantAPI: 200, wantAPIShowsMetrics: true},
		{name: "IPv6 loopback address", cfg: Config{Addr: "[::1]:8080"}, wantAPI: 200, wantAPIShowsMetrics: true},
		{name: "localhost", cfg: Config{Addr: "localhost:8080"}, wantAPI: 200, wantAPIShowsMetrics: true},
		{name: "own listener", cfg: Config{Addr: "127.0.0.1:8080", MetricsAddr: "127.0.0.1:9090"}, wantAPI: 404, wantOwn: 200},
		{name: "own listener with a token, none sent", cfg: Config{Addr: ":8080", MetricsAddr: ":9091", MetricsToken: "s3cret-token"}, wantAPI: 404, wantOwn: 401},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			api, own := metricsRoutes(tt.cfg, metrics)
			status, body := get(api, tt.authz)
			if status != tt.wantAPI || strings.Contains(body, "kairos_") != tt.wantAPIShowsMetrics {
				t.Errorf("API listener: %d %q, want %d (metrics shown: %v)", status, body, tt.wantAPI, tt.wantAPIShowsMetrics)
			}
			if status, body := get(own, tt.authz); status != tt.wantOwn {
				t.Errorf("own listener: %d %q, want %d", status, body, tt.wantOwn)
			}
		})
	}
}

// TestMetricsOnTheirOwnListener starts kairos with KAIROS_METRICS_ADDR: the
// API's listener answers 404 at /metrics, the metrics listener serves them
// and nothing else.
func TestMetricsOnTheirOwnListener(t *testing.T) {
	t.Parallel()
	in, err := startWith(map[string]string{"KAIROS_REDIS_URL": testredis.New(t).URL(), "KAIROS_METRICS_ADDR": "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(in.Stop)
	get := func(url string) (int, string) {
		t.Helper()
		resp, err := http.Get(url)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if status, body := get(in.URL + "/metrics"); status != http.StatusNotFound || strings.Contains(body, "kairos_") {
		t.Errorf("the API's /metrics: %d %q, want 404 without metrics", status, body)
	}
	if in.MetricsURL == "" {
		t.Fatal("no metrics URL")
	}
	if status, body := get(in.MetricsURL); status != http.StatusOK || !strings.Contains(body, "\nkairos_redis_up 1\n") {
		t.Errorf("%s: %d, want 200 with kairos_redis_up 1:\n%s", in.MetricsURL, status, body)
	}
	if status, _ := get(strings.TrimSuffix(in.MetricsURL, "/metrics") + "/healthz"); status != http.StatusNotFound {
		t.Errorf("the metrics listener serves /healthz: %d, want 404", status)
	}
}
