package callback

import (
	"context"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// forwardProxy is a forward HTTP proxy for tests: CONNECT tunnels and
// absolute-form requests, each recorded by target. A request for a host in
// fake is answered by the proxy itself with 200, never forwarded.
type forwardProxy struct {
	*httptest.Server
	mu      sync.Mutex
	targets []string // "CONNECT host:port" or "GET http://host/path"
	fake    map[string]bool
}

func newForwardProxy(t *testing.T, fake ...string) *forwardProxy {
	t.Helper()
	p := &forwardProxy{fake: map[string]bool{}}
	for _, h := range fake {
		p.fake[h] = true
	}
	p.Server = httptest.NewServer(http.HandlerFunc(p.serve))
	t.Cleanup(p.Close)
	return p
}

func (p *forwardProxy) seen() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.targets...)
}

func (p *forwardProxy) serve(w http.ResponseWriter, r *http.Request) {
	if r.Method == http.MethodConnect {
		p.mu.Lock()
		p.targets = append(p.targets, "CONNECT "+r.Host)
		p.mu.Unlock()
		up, err := net.DialTimeout("tcp", r.Host, 5*time.Second)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		w.WriteHeader(http.StatusOK)
		conn, buf, err := http.NewResponseController(w).Hijack()
		if err != nil {
			up.Close()
			return
		}
		go func() { io.Copy(up, buf); up.Close() }()
		io.Copy(conn, up)
		conn.Close()
		return
	}
	if !r.URL.IsAbs() {
		http.Error(w, "not a proxy request", http.StatusBadRequest)
		return
	}
	p.mu.Lock()
	p.targets = append(p.targets, r.Method+" "+r.URL.String())
	p.mu.Unlock()
	if p.fake[r.URL.Hostname()] {
		io.WriteString(w, "answered by the proxy")
		return
	}
	out, _ := http.NewRequestWithContext(r.Context(), r.Method, r.URL.String(), r.Body)
	out.Header = r.Header.Clone()
	out.Header.Del("Proxy-Authorization")
	resp, err := (&http.Transport{}).RoundTrip(out) // no proxy from the environment
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	defer resp.Body.Close()
	w.WriteHeader(resp.StatusCode)
	io.Copy(w, resp.Body)
}

// caFile writes the certificate of a TLS test server as PEM and returns
// the file's path.
func caFile(t *testing.T, srv *httptest.Server) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "ca.pem")
	b := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func okServer(t *testing.T, tlsOn bool, got *int) *httptest.Server {
	t.Helper()
	var mu sync.Mutex
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		*got++
		mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	})
	srv := httptest.NewUnstartedServer(h)
	if tlsOn {
		srv.StartTLS()
	} else {
		srv.Start()
	}
	t.Cleanup(srv.Close)
	return srv
}

func TestProxySeesEveryCallback(t *testing.T) {
	proxy := newForwardProxy(t)
	var plain, secure int
	rcv := okServer(t, false, &plain)
	tlsRcv := okServer(t, true, &secure)
	pool := x509.NewCertPool()
	pool.AddCert(tlsRcv.Certificate())
	c := NewEgressClient(Egress{AllowPrivate: true, Proxy: mustURL(t, proxy.URL), RootCAs: pool}, nil)
	for i := range 3 {
		for _, u := range []string{rcv.URL + "/hook", tlsRcv.URL + "/hook"} {
			if res := c.Fire(context.Background(), Request{URL: u, Body: []byte(`{}`)}); !res.OK() {
				t.Fatalf("attempt %d to %s: %+v", i, u, res)
			}
		}
	}
	if plain != 3 || secure != 3 {
		t.Errorf("receivers got %d plain and %d TLS callbacks, want 3 and 3", plain, secure)
	}
	// http targets in absolute form, one request each; https through
	// CONNECT tunnels, reused across attempts.
	var abs, tunnels int
	for _, s := range proxy.seen() {
		switch {
		case s == "POST "+rcv.URL+"/hook":
			abs++
		case s == "CONNECT "+strings.TrimPrefix(tlsRcv.URL, "https://"):
			tunnels++
		default:
			t.Errorf("the proxy saw an unexpected request: %s", s)
		}
	}
	if abs != 3 || tunnels < 1 {
		t.Errorf("the proxy saw %d plain callbacks and %d tunnels, want 3 and at least 1: %v", abs, tunnels, proxy.seen())
	}
}

// TestProxyKeepsTheAddressRule: with a proxy and private targets refused,
// kairos still dials the proxy (on loopback here), a public target goes
// through it, and a private one, by address or by name, is refused before
// the proxy sees it.
func TestProxyKeepsTheAddressRule(t *testing.T) {
	proxy := newForwardProxy(t, "93.184.216.34", "public.example")
	var got int
	rcv := okServer(t, false, &got)
	old := lookupNetIP
	t.Cleanup(func() { lookupNetIP = old })
	lookupNetIP = func(ctx context.Context, network, host string) ([]netip.Addr, error) {
		switch host {
		case "public.example":
			return []netip.Addr{netip.MustParseAddr("93.184.216.34")}, nil
		case "rebind.example": // one public and one private address
			return []netip.Addr{netip.MustParseAddr("93.184.216.35"), netip.MustParseAddr("10.1.2.3")}, nil
		}
		return old(ctx, network, host)
	}
	c := NewEgressClient(Egress{Proxy: mustURL(t, proxy.URL)}, nil)
	for _, u := range []string{"http://93.184.216.34/hook", "http://public.example/hook"} {
		if res := c.Fire(context.Background(), Request{URL: u}); !res.OK() {
			t.Errorf("%s through the proxy: %+v", u, res)
		}
	}
	port := strings.TrimPrefix(rcv.URL, "http://127.0.0.1")
	for _, u := range []string{rcv.URL, "http://localhost" + port, "https://rebind.example/", "http://[::ffff:10.0.0.1]/", "http://169.254.169.254/latest",
		"http://198.51.100.7/hook"} {
		res := c.Fire(context.Background(), Request{URL: u})
		var blocked *BlockedAddressError
		if !errors.As(res.Err, &blocked) || res.Permanent {
			t.Errorf("%s: %+v, want a *BlockedAddressError, retried like a connection error", u, res)
		}
		if u == "https://rebind.example/" && strings.Contains(res.Err.Error(), "10.1.2.3") {
			t.Errorf("%s: %q names the private address its name resolves to", u, res.Err)
		}
	}
	if got != 0 {
		t.Errorf("the private receiver got %d callbacks", got)
	}
	want := []string{"POST http://93.184.216.34/hook", "POST http://public.example/hook"}
	if s := proxy.seen(); strings.Join(s, ",") != strings.Join(want, ",") {
		t.Errorf("the proxy saw %v, want only %v", s, want)
	}
}

func TestCallbackCAAddsRoots(t *testing.T) {
	var got int
	srv := okServer(t, true, &got)
	plain := NewEgressClient(Egress{AllowPrivate: true}, nil)
	res := plain.Fire(context.Background(), Request{URL: srv.URL})
	var unknown x509.UnknownAuthorityError
	if res.OK() || !errors.As(res.Err, &unknown) {
		t.Errorf("without KAIROS_CALLBACK_CA: %+v, want an unknown authority error", res)
	}
	pool, err := LoadRoots(caFile(t, srv))
	if err != nil {
		t.Fatal(err)
	}
	withCA := NewEgressClient(Egress{AllowPrivate: true, RootCAs: pool}, nil)
	if res := withCA.Fire(context.Background(), Request{URL: srv.URL}); !res.OK() {
		t.Errorf("with KAIROS_CALLBACK_CA: %+v", res)
	}
	if got != 1 {
		t.Errorf("receiver got %d callbacks, want 1", got)
	}
	// The system's roots stay: the pool holds more than the one certificate
	// wherever the system has roots.
	if sys, err := x509.SystemCertPool(); err == nil && !sys.Equal(x509.NewCertPool()) && pool.Equal(onlyCert(srv)) {
		t.Error("LoadRoots dropped the system's roots")
	}
	// The CA also verifies an https proxy.
	proxyTLS := httptest.NewTLSServer(http.HandlerFunc((&forwardProxy{fake: map[string]bool{}}).serve))
	t.Cleanup(proxyTLS.Close)
	pool.AddCert(proxyTLS.Certificate())
	viaTLS := NewEgressClient(Egress{AllowPrivate: true, RootCAs: pool, Proxy: mustURL(t, proxyTLS.URL)}, nil)
	if res := viaTLS.Fire(context.Background(), Request{URL: srv.URL}); !res.OK() {
		t.Errorf("through an https proxy: %+v", res)
	}
}

func onlyCert(srv *httptest.Server) *x509.CertPool {
	p := x509.NewCertPool()
	p.AddCert(srv.Certificate())
	return p
}

func TestLoadRootsRefusesAFileWithoutCertificates(t *testing.T) {
	path := filepath.Join(t.TempDir(), "empty.pem")
	os.WriteFile(path, []byte("not a certificate\n"), 0o600)
	if _, err := LoadRoots(path); err == nil || !strings.Contains(err.Error(), "no PEM certificate") {
		t.Errorf("LoadRoots of a file without certificates: %v", err)
	}
	if _, err := LoadRoots(filepath.Join(t.TempDir(), "missing.pem")); err == nil {
		t.Error("LoadRoots of a missing file: no error")
	}
}

func TestParseProxy(t *testing.T) {
	for _, tc := range []struct {
		raw, err string
	}{
		{"http://proxy.internal:3128", ""},
		{"https://user:pass@proxy.internal", ""},
		{"http://10.0.0.5:8080/", ""},
		{"socks5://proxy:1080", "http:// or https://"},
		{"proxy:3128", "http:// or https://"},
		{"http://", "must have a host"},
		{"http://proxy/path", "path, query or fragment"},
		{"http://proxy:99999", "port"},
		{"http://[::1", "does not parse"},
	} {
		t.Run(tc.raw, func(t *testing.T) {
			_, err := ParseProxy(tc.raw)
			if (err == nil) != (tc.err == "") || err != nil && !strings.Contains(err.Error(), tc.err) {
				t.Errorf("ParseProxy(%q) = %v, want an error containing %q", tc.raw, err, tc.err)
			}
		})
	}
}

func FuzzParseProxy(f *testing.F) {
	for _, s := range []string{"http://proxy:3128", "https://u:p@[::1]:443/", "socks5://x", "http://a/b?c", "", "http://:80"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		u, err := ParseProxy(raw)
		if err != nil {
			return
		}
		if (u.Scheme != "http" && u.Scheme != "https") || u.Hostname() == "" {
			t.Fatalf("ParseProxy(%q) accepted %#v", raw, u)
		}
		if _, port, err := net.SplitHostPort(proxyAddr(u)); err != nil || port == "" {
			t.Fatalf("proxyAddr(%q) = %q: %v", raw, proxyAddr(u), err)
		}
	})
}

func mustURL(t *testing.T, raw string) *url.URL {
	t.Helper()
	u, err := url.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	return u
}
