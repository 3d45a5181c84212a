package callback

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"strings"
	"testing"
)

func TestCheckAddr(t *testing.T) {
	for _, tc := range []struct {
		addr   string
		reason string // "" = allowed
	}{
		{"93.184.216.34", ""},
		{"8.8.8.8", ""},
		{"2606:4700:4700::1111", ""},
		{"::ffff:93.184.216.34", ""},
		{"172.32.0.1", ""},
		{"100.128.0.1", ""},
		{"198.20.0.1", ""},
		{"0.0.0.0", "unspecified address"},
		{"::", "unspecified address"},
		{"0.1.2.3", "this-network address"},
		{"127.0.0.1", "loopback address"},
		{"127.255.255.254", "loopback address"},
		{"::1", "loopback address"},
		{"::ffff:127.0.0.1", "loopback address"},
		{"10.0.0.1", "private address"},
		{"172.16.0.1", "private address"},
		{"172.31.255.255", "private address"},
		{"192.168.1.1", "private address"},
		{"::ffff:192.168.1.1", "private address"},
		{"fc00::1", "private address"},
		{"fdff:ffff::1", "private address"},
		{"169.254.1.1", "link-local address"},
		{"fe80::1", "link-local address"},
		{"fe80::1%eth0", "link-local address"},
		{"169.254.169.254", "cloud metadata address"},
		{"::ffff:169.254.169.254", "cloud metadata address"},
		{"fd00:ec2::254", "cloud metadata address"},
		{"100.64.0.1", "shared (CGNAT) address"},
		{"100.127.255.255", "shared (CGNAT) address"},
		{"224.0.0.1", "multicast address"},
		{"ff02::1", "multicast address"},
		{"255.255.255.255", "broadcast address"},
		{"240.0.0.1", "reserved address"},
		{"192.0.0.8", "IETF protocol assignment address"},
		{"198.18.0.1", "benchmarking address"},
		{"198.19.255.255", "benchmarking address"},
		{"64:ff9b::7f00:1", "IPv6 address embedding a loopback address"},
		{"64:ff9b::a9fe:a9fe", "IPv6 address embedding a cloud metadata address"},
		{"64:ff9b::5db8:d822", ""},
		{"2002:c0a8:0101::1", "IPv6 address embedding a private address"},
		{"::127.0.0.1", "IPv6 address embedding a loopback address"},
		// IPv4-translated (::ffff:0:0/96) and Teredo (2001::/32)
		{"::ffff:0:7f00:1", "IPv6 address embedding a loopback address"},
		{"::ffff:0:a9fe:a9fe", "IPv6 address embedding a cloud metadata address"},
		{"::ffff:0:c0a8:101", "IPv6 address embedding a private address"},
		{"::ffff:0:5db8:d822", ""},
		{"2001:0:4136:e378:8000:63bf:3fff:fdd2", "Teredo address"},
		{"2001::1", "Teredo address"},
		{"2001:4860:4860::8888", ""}, // 2001: outside the Teredo /32
		// the documentation ranges (RFC 5737, RFC 3849): no one's public
		// service; a host may route them to itself
		{"192.0.2.1", "documentation address"},
		{"198.51.100.7", "documentation address"},
		{"203.0.113.255", "documentation address"},
		{"::ffff:203.0.113.5", "documentation address"},
		{"2001:db8::1", "documentation address"},
		{"2001:db8:ffff::1", "documentation address"},
		{"64:ff9b::c000:201", "IPv6 address embedding a documentation address"},
		{"192.0.3.1", ""},
		{"198.51.101.1", ""},
		{"203.0.114.1", ""},
		{"2001:db9::1", ""},
	} {
		t.Run(tc.addr, func(t *testing.T) {
			a := netip.MustParseAddr(tc.addr)
			err := CheckAddr(a)
			if tc.reason == "" {
				if err != nil {
					t.Fatalf("CheckAddr(%s) = %v, want nil", a, err)
				}
				return
			}
			var blocked *BlockedAddressError
			if !errors.As(err, &blocked) {
				t.Fatalf("CheckAddr(%s) = %v, want *BlockedAddressError", a, err)
			}
			if blocked.Reason != tc.reason || blocked.Addr != a {
				t.Errorf("CheckAddr(%s) = {%s, %q}, want {%s, %q}", a, blocked.Addr, blocked.Reason, a, tc.reason)
			}
		})
	}
	if err := CheckAddr(netip.Addr{}); err == nil {
		t.Error("CheckAddr of the zero Addr = nil, want an error")
	}
}

func TestBlockedAddressErrorText(t *testing.T) {
	err := CheckAddr(netip.MustParseAddr("127.0.0.1"))
	want := "callback target 127.0.0.1 refused: loopback address (set KAIROS_ALLOW_PRIVATE_URLS=1 or --allow-private-urls to allow)"
	if err == nil || err.Error() != want {
		t.Errorf("error = %v, want %q", err, want)
	}
}

func TestCheckURL(t *testing.T) {
	for _, tc := range []struct {
		name, url string
		wantErr   string // "" = valid
	}{
		{"https", "https://example.com/hooks/orders?x=1", ""},
		{"http with port", "http://example.com:8080/", ""},
		{"IP literal", "http://127.0.0.1:9/", ""}, // the dial decides
		{"IPv6 literal", "http://[::1]:8080/", ""},
		{"upper-case scheme", "HTTPS://example.com/", ""},
		{"empty", "", "empty"},
		{"relative", "/hooks", "http or https"},
		{"no scheme", "example.com/hook", "http or https"},
		{"ftp", "ftp://example.com/", "http or https"},
		{"javascript", "javascript:alert(1)", "http or https"},
		{"no host", "https:///path", "host"},
		{"opaque", "https:example.com", "host"},
		{"port only", "http://:80/", "host"},
		{"user info", "https://user:pass@example.com/", "user info"},
		{"user only", "https://user@example.com/", "user info"},
		{"control character", "https://example.com/\x7f", "parse"},
		{"space in host", "https://exa mple.com/", "parse"},
		{"bad port", "https://example.com:port/", "parse"},
		{"too long", "https://example.com/" + strings.Repeat("a", 2048), "longer than 2048"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := CheckURL(tc.url)
			switch {
			case tc.wantErr == "" && err != nil:
				t.Fatalf("CheckURL(%q) = %v, want nil", tc.url, err)
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Fatalf("CheckURL(%q) = %v, want an error mentioning %q", tc.url, err, tc.wantErr)
			}
		})
	}
}

func FuzzCheckURL(f *testing.F) {
	for _, s := range []string{
		"https://example.com/hook", "http://[::1]:80", "http://a@b", "https:opaque", "//host/path",
		"http://%41/", "http://x/%zz", "http://[fe80::1%25eth0]/", "\x00", "HTTP://X", "http://:0",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		if CheckURL(raw) != nil {
			return
		}
		// Whatever CheckURL accepts, the client can build a request for.
		u, err := url.Parse(raw)
		if err != nil {
			t.Fatalf("CheckURL(%q) = nil but url.Parse: %v", raw, err)
		}
		if u.Scheme != "http" && u.Scheme != "https" || u.Hostname() == "" || u.User != nil || len(raw) > 2048 {
			t.Fatalf("CheckURL(%q) = nil for %#v", raw, u)
		}
		if _, err := http.NewRequest(http.MethodPost, raw, nil); err != nil {
			t.Fatalf("CheckURL(%q) = nil but http.NewRequest: %v", raw, err)
		}
	})
}

func TestTransportRefusesPrivate(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	t.Cleanup(srv.Close)
	u, err := url.Parse(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, url string
	}{
		{"IP literal", srv.URL},
		{"name resolving to loopback", "http://localhost:" + u.Port()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := &http.Client{Transport: NewTransport(false)}
			t.Cleanup(c.CloseIdleConnections)
			resp, err := c.Get(tc.url)
			if err == nil {
				resp.Body.Close()
				t.Fatalf("GET %s: status %d, want a refused dial", tc.url, resp.StatusCode)
			}
			var blocked *BlockedAddressError
			if !errors.As(err, &blocked) {
				t.Fatalf("GET %s: %v, want *BlockedAddressError", tc.url, err)
			}
			if !blocked.Addr.IsLoopback() || blocked.Reason != "loopback address" {
				t.Errorf("refused %s for %q, want a loopback address", blocked.Addr, blocked.Reason)
			}

			c = &http.Client{Transport: NewTransport(true)}
			t.Cleanup(c.CloseIdleConnections)
			resp, err = c.Get(tc.url)
			if err != nil {
				t.Fatalf("GET %s with allowPrivate: %v", tc.url, err)
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				t.Errorf("GET %s with allowPrivate: status %d, want 200", tc.url, resp.StatusCode)
			}
		})
	}
}

func TestTransportIgnoresProxyEnv(t *testing.T) {
	t.Setenv("HTTP_PROXY", "http://proxy.invalid:3128")
	t.Setenv("HTTPS_PROXY", "http://proxy.invalid:3128")
	if tr := NewTransport(false); tr.Proxy != nil {
		t.Error("NewTransport has a Proxy func, want none")
	}
}

// TestTransportRefusesDocumentationRanges: a connection to an address of
// a documentation range is refused when dialled, as a private one is.
func TestTransportRefusesDocumentationRanges(t *testing.T) {
	for _, u := range []string{"http://192.0.2.1/", "http://198.51.100.1:8080/", "http://203.0.113.9/", "http://[2001:db8::1]/"} {
		c := &http.Client{Transport: NewTransport(false)}
		resp, err := c.Get(u)
		if err == nil {
			resp.Body.Close()
			t.Fatalf("GET %s: status %d, want a refused dial", u, resp.StatusCode)
		}
		var blocked *BlockedAddressError
		if !errors.As(err, &blocked) || blocked.Reason != "documentation address" {
			t.Errorf("GET %s: %v, want a *BlockedAddressError for a documentation address", u, err)
		}
	}
}
