package callback

import (
	"errors"
	"net/netip"
	"net/url"
	"testing"
)

func TestCheckTarget(t *testing.T) {
	for _, tc := range []struct {
		url    string
		target string // "" = allowed
		reason string
	}{
		{"https://hooks.example.com/x", "", ""},
		{"https://93.184.216.34/x", "", ""},
		{"https://[2606:4700:4700::1111]/", "", ""},
		{"http://localhost.example.com/", "", ""}, // a name like any other: checked when dialled
		{"http://mylocalhost/", "", ""},
		{"http://private.example.internal/", "", ""}, // names are never resolved here
		{"http://1.2.3/", "", ""},                    // 1.2.0.3, public
		{"http://08.1/", "", ""},                     // not octal: a name
		{"http://127.0.0.1:8080/hook", "127.0.0.1", "loopback address"},
		{"http://127.0.0.1./", "127.0.0.1", "loopback address"},
		{"http://[::1]/", "::1", "loopback address"},
		{"http://[::ffff:10.0.0.1]/", "::ffff:10.0.0.1", "private address"},
		{"http://10.1.2.3/", "10.1.2.3", "private address"},
		{"http://192.168.0.10/", "192.168.0.10", "private address"},
		{"http://169.254.169.254/latest/meta-data/", "169.254.169.254", "cloud metadata address"},
		{"http://[fe80::1%25eth0]/", "fe80::1%eth0", "link-local address"},
		{"http://0.0.0.0/", "0.0.0.0", "unspecified address"},
		{"http://127.1/", "127.0.0.1", "loopback address"},
		{"http://2130706433/", "127.0.0.1", "loopback address"},
		{"http://0x7f000001/", "127.0.0.1", "loopback address"},
		{"http://0177.0.0.1/", "127.0.0.1", "loopback address"},
		{"http://0xa9.0xfe.0xa9.0xfe/", "169.254.169.254", "cloud metadata address"},
		{"http://192.0.2.10/hook", "192.0.2.10", "documentation address"},
		{"https://[2001:db8::5]/", "2001:db8::5", "documentation address"},
		{"http://localhost:9000/", "localhost", "loopback name"},
		{"http://LocalHost./", "LocalHost", "loopback name"},
		{"http://api.localhost/", "api.localhost", "loopback name"},
	} {
		t.Run(tc.url, func(t *testing.T) {
			err := CheckTarget(tc.url)
			if tc.target == "" {
				if err != nil {
					t.Fatalf("CheckTarget = %v, want nil", err)
				}
				return
			}
			var blocked *BlockedAddressError
			if !errors.As(err, &blocked) {
				t.Fatalf("CheckTarget = %v, want *BlockedAddressError", err)
			}
			target := blocked.Host
			if target == "" {
				target = blocked.Addr.String()
			}
			if target != tc.target || blocked.Reason != tc.reason {
				t.Errorf("refused %s for %q, want %s for %q", target, blocked.Reason, tc.target, tc.reason)
			}
		})
	}
}

func TestBlockedNameText(t *testing.T) {
	err := CheckTarget("http://localhost:8080/")
	want := "callback target localhost refused: loopback name (set KAIROS_ALLOW_PRIVATE_URLS=1 or --allow-private-urls to allow)"
	if err == nil || err.Error() != want {
		t.Errorf("error = %v, want %q", err, want)
	}
}

// FuzzCheckTarget: no panic; a host that is a dotted quad or an IPv6
// literal is judged as CheckAddr judges it, and whatever legacy form
// parses is an address CheckAddr judges the same way.
func FuzzCheckTarget(f *testing.F) {
	for _, s := range []string{"http://127.0.0.1/", "http://[::1]/", "http://127.1/", "http://0x7f.1/", "http://4294967295/",
		"http://4294967296/", "http://1.2.3.4.5/", "http://0x/", "http://localhost/", "http://a.b/", "http://[fe80::1%25x]/"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		err := CheckTarget(raw)
		u, perr := url.Parse(raw)
		if perr != nil {
			if err != nil {
				t.Fatalf("CheckTarget(%q) = %v for a URL that does not parse", raw, err)
			}
			return
		}
		if a, aerr := netip.ParseAddr(u.Hostname()); aerr == nil && (CheckAddr(a) == nil) != (err == nil) {
			t.Fatalf("CheckTarget(%q) = %v, CheckAddr(%s) = %v", raw, err, a, CheckAddr(a))
		}
		if a, ok := parseLegacyIPv4(u.Hostname()); ok && !a.Is4() {
			t.Fatalf("parseLegacyIPv4(%q) = %s", u.Hostname(), a)
		}
	})
}
