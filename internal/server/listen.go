package server

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"syscall"
	"time"
)

// listenError is the error of a listener that could not open on addr,
// naming the setting that sets addr: a busy port is the usual cause.
func listenError(addr, setting string, err error) error {
	hint := "choose another address with " + setting
	if errors.Is(err, syscall.EADDRINUSE) {
		hint = "another process listens there: stop it, or " + hint
	}
	return fmt.Errorf("listen on %s: %w; %s", addr, err, hint)
}

// The timeouts of a Config built without ParseConfig (zero fields).
const (
	DefaultReadTimeout  = 15 * time.Second
	DefaultWriteTimeout = 30 * time.Second
	// maxHeaderWait is the longest a request's headers may take to arrive.
	maxHeaderWait = 10 * time.Second
)

// newHTTPServer returns the HTTP server of h with cfg's timeouts, so that
// every connection is answered or closed within a bounded time: headers
// within min(ReadTimeout, 10s), the whole request within ReadTimeout
// (a handler that reads a body paces it instead: a second to start, then
// api.BodyFloor bytes a second, and the timeouts again from its end), the
// answer within WriteTimeout of the headers, an idle keep-alive within 2
// minutes. Requests' contexts derive from base.
func newHTTPServer(cfg Config, h http.Handler, base context.Context) *http.Server {
	read, write := timeouts(cfg)
	return &http.Server{Handler: h, ReadHeaderTimeout: min(read, maxHeaderWait), ReadTimeout: read, WriteTimeout: write,
		IdleTimeout: 2 * time.Minute, BaseContext: func(net.Listener) context.Context { return base }}
}

// timeouts returns cfg's read and write timeouts, or their defaults.
func timeouts(cfg Config) (read, write time.Duration) {
	read, write = cfg.ReadTimeout, cfg.WriteTimeout
	if read <= 0 {
		read = DefaultReadTimeout
	}
	if write <= 0 {
		write = DefaultWriteTimeout
	}
	return read, write
}

// metricsRoutes returns what the API's listener serves at /metrics, given
// the metrics handler h, and the handler of a listener of its own (nil
// when cfg names none). /metrics is private by default:
//   - with MetricsAddr it is served there only (behind MetricsToken when
//     set), and the API's listener answers 404;
//   - else with MetricsToken it needs the token as a bearer token;
//   - else it is served only when the API listens on a loopback address
//     (the embedded dev mode, tests), and answers 404 otherwise.
func metricsRoutes(cfg Config, h http.Handler) (onAPI, own http.Handler) {
	switch {
	case cfg.MetricsAddr != "":
		return metricsPrivate("/metrics is served on its own listener (KAIROS_METRICS_ADDR), not here"), protect(h, cfg.MetricsToken)
	case cfg.MetricsToken != "":
		return protect(h, cfg.MetricsToken), nil
	case loopbackOnly(cfg.Addr):
		return h, nil
	}
	return metricsPrivate("/metrics is private: set KAIROS_METRICS_TOKEN to scrape it here with that bearer token, or KAIROS_METRICS_ADDR to serve it on a listener of its own (such as 127.0.0.1:9090)"), nil
}

func metricsPrivate(msg string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { http.Error(w, msg, http.StatusNotFound) })
}

// serveMetrics starts the listener of /metrics alone on cfg.MetricsAddr
// when h is not nil, and returns its URL and the func that stops it. The
// listener has the API's timeouts.
func serveMetrics(cfg Config, h http.Handler, base context.Context, log *slog.Logger) (url string, stop func(), err error) {
	if h == nil {
		return "", func() {}, nil
	}
	ln, err := net.Listen("tcp", cfg.MetricsAddr)
	if err != nil {
		return "", nil, fmt.Errorf("/metrics: %w", listenError(cfg.MetricsAddr, "--metrics-addr or KAIROS_METRICS_ADDR", err))
	}
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", h)
	srv := newHTTPServer(cfg, mux, base)
	var wg sync.WaitGroup
	wg.Go(func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error("metrics server", "err", err)
		}
	})
	url = "http://" + displayAddr(ln.Addr()) + "/metrics"
	log.Info("serving /metrics", "url", url)
	return url, func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		srv.Shutdown(ctx)
		wg.Wait()
	}, nil
}
