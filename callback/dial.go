package callback

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// BlockedAddressError is the error of a target that the address policy
// refused: at dial time (Addr is the resolved address), or when a callback
// URL is registered (CheckTarget; Host is the URL's host). Retrying will not
// help, so the attempt is permanent.
type BlockedAddressError struct {
	Addr   netip.Addr // the address kairos was about to connect to, or the URL's literal address
	Host   string     // the URL's host name, when it was refused by name (localhost)
	Reason string     // such as "loopback address"
	// Resolved is set when the address was refused at dial time, after
	// the URL's host was resolved: the message then does not show it, so
	// that an attempt's error tells no one what a host name of an
	// internal network resolves to.
	Resolved bool
}

func (e *BlockedAddressError) Error() string {
	const allow = " (set KAIROS_ALLOW_PRIVATE_URLS=1 or --allow-private-urls to allow)"
	if e.Resolved {
		return "callback target refused: its host resolves to a " + e.Reason + allow
	}
	target := e.Host
	if target == "" {
		target = e.Addr.String()
	}
	return fmt.Sprintf("callback target %s refused: %s", target, e.Reason) + allow
}

// blockedPrefixes are refused ranges that netip.Addr has no predicate for,
// checked after unmapping IPv4-mapped IPv6 addresses.
var blockedPrefixes = []struct {
	prefix netip.Prefix
	reason string
}{
	{netip.MustParsePrefix("0.0.0.0/8"), "this-network address"},
	{netip.MustParsePrefix("100.64.0.0/10"), "shared (CGNAT) address"},
	{netip.MustParsePrefix("192.0.0.0/24"), "IETF protocol assignment address"},
	{netip.MustParsePrefix("198.18.0.0/15"), "benchmarking address"},
	// documentation ranges (RFC 5737, RFC 3849): no one serves a public
	// callback there, and a host may route them to one of its own services
	{netip.MustParsePrefix("192.0.2.0/24"), "documentation address"},
	{netip.MustParsePrefix("198.51.100.0/24"), "documentation address"},
	{netip.MustParsePrefix("203.0.113.0/24"), "documentation address"},
	{netip.MustParsePrefix("2001:db8::/32"), "documentation address"},
	{netip.MustParsePrefix("240.0.0.0/4"), "reserved address"}, // includes broadcast
	{netip.MustParsePrefix("fec0::/10"), "site-local address"},
	{netip.MustParsePrefix("64:ff9b:1::/48"), "local-use NAT64 address"},
	// Teredo tunnels to an IPv4 address carried (obfuscated) in its low
	// bits, and to a relay: refused whole, as its targets cannot be told
	{netip.MustParsePrefix("2001::/32"), "Teredo address"},
}

var (
	metadataV4 = netip.MustParseAddr("169.254.169.254")
	metadataV6 = netip.MustParseAddr("fd00:ec2::254")
	// embedding prefixes carry an IPv4 address in their low bits (NAT64,
	// IPv4-compatible); 6to4 carries it in bits 16-48.
	nat64    = netip.MustParsePrefix("64:ff9b::/96")
	v4Compat = netip.MustParsePrefix("::/96")
	// IPv4-translated addresses (RFC 2765, SIIT): ::ffff:0:a.b.c.d, not
	// the IPv4-mapped ::ffff:a.b.c.d that Unmap reads
	v4Translated = netip.MustParsePrefix("::ffff:0:0:0/96")
	sixToFour    = netip.MustParsePrefix("2002::/16")
	broadcast4   = netip.MustParseAddr("255.255.255.255")
)

// CheckAddr returns a *BlockedAddressError if a is not a public unicast
// address: unspecified, loopback, private, link-local (including the cloud
// metadata addresses), CGNAT, multicast, broadcast, reserved and the
// documentation ranges (192.0.2.0/24, 198.51.100.0/24, 203.0.113.0/24,
// 2001:db8::/32), in IPv4, IPv4-mapped IPv6 and IPv6 forms (including IPv4
// embedded by NAT64, 6to4, IPv4-compatible and IPv4-translated prefixes,
// and any Teredo address). It returns nil otherwise.
func CheckAddr(a netip.Addr) error {
	if reason := blockReason(a.WithZone("").Unmap()); reason != "" {
		return &BlockedAddressError{Addr: a, Reason: reason}
	}
	return nil
}

func blockReason(a netip.Addr) string {
	switch {
	case !a.IsValid():
		return "invalid address"
	case a == metadataV4 || a == metadataV6:
		return "cloud metadata address"
	case a.IsUnspecified():
		return "unspecified address"
	case a.IsLoopback():
		return "loopback address"
	case a.IsPrivate():
		return "private address"
	case a.IsLinkLocalUnicast():
		return "link-local address"
	case a.IsMulticast():
		return "multicast address"
	case a == broadcast4:
		return "broadcast address"
	}
	for _, b := range blockedPrefixes {
		if b.prefix.Contains(a) {
			return b.reason
		}
	}
	if a.Is6() {
		b := a.As16()
		var v4 netip.Addr
		switch {
		case nat64.Contains(a), v4Compat.Contains(a), v4Translated.Contains(a):
			v4 = netip.AddrFrom4([4]byte(b[12:16]))
		case sixToFour.Contains(a):
			v4 = netip.AddrFrom4([4]byte(b[2:6]))
		}
		if v4.IsValid() {
			if r := blockReason(v4); r != "" {
				return "IPv6 address embedding a " + r
			}
		}
	}
	return ""
}

// Egress says how callbacks leave the process. The zero value dials every
// target directly, trusts the system's roots and refuses private targets.
type Egress struct {
	// AllowPrivate permits loopback, private and link-local targets.
	AllowPrivate bool
	// Proxy, when set, is an http:// or https:// forward proxy every
	// callback goes through (KAIROS_CALLBACK_PROXY): https targets by
	// CONNECT, http targets in absolute form. Its user info, if any, is
	// sent as Proxy-Authorization.
	Proxy *url.URL
	// RootCAs verify the receivers' certificates (and an https proxy's);
	// nil means the system's roots. LoadRoots adds KAIROS_CALLBACK_CA's.
	RootCAs *x509.CertPool
}

// NewTransport returns the transport kairos fires callbacks through when
// no proxy is configured: Egress{AllowPrivate: allowPrivate}.Transport().
func NewTransport(allowPrivate bool) *http.Transport {
	return Egress{AllowPrivate: allowPrivate}.Transport()
}

// Transport returns the transport kairos fires callbacks through: HTTP/2
// where offered, 64 idle connections per host, a 10s TLS handshake limit,
// answers' headers of at most MaxResponseHeaderBytes, and no proxy from the
// environment (HTTP_PROXY and the like are ignored). Each attempt's
// context bounds the rest.
//
// Unless AllowPrivate, the address rule holds: without a proxy, every
// connection is checked with CheckAddr after DNS resolution, just before
// connecting, so a name that resolves (or re-resolves) to a refused
// address fails with a *BlockedAddressError. With a proxy, kairos connects
// to the proxy only, whatever its address (it is the operator's choice);
// before each request is handed to it, the target's host is resolved here
// and every address it has is checked, so a private target fails with a
// *BlockedAddressError without reaching the proxy. The proxy resolves the
// name again itself: a name that answers differently to the proxy (DNS
// rebinding) is the proxy's egress rules to stop.
func (e Egress) Transport() *http.Transport {
	d := &net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.Proxy = nil
	if e.RootCAs != nil {
		t.TLSClientConfig = &tls.Config{RootCAs: e.RootCAs, MinVersion: tls.VersionTLS12}
	}
	switch {
	case e.Proxy != nil:
		proxy, proxyAddr := e.Proxy, proxyAddr(e.Proxy)
		t.Proxy = func(req *http.Request) (*url.URL, error) {
			if !e.AllowPrivate {
				if err := checkHost(req.Context(), req.URL.Hostname()); err != nil {
					return nil, err
				}
			}
			return proxy, nil
		}
		t.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
			if !strings.EqualFold(addr, proxyAddr) {
				return nil, fmt.Errorf("dial %s: callbacks go through the proxy %s only", addr, proxyAddr)
			}
			return d.DialContext(ctx, network, addr)
		}
	case !e.AllowPrivate:
		d.Control = controlAddr
		t.DialContext = d.DialContext
	default:
		t.DialContext = d.DialContext
	}
	t.ForceAttemptHTTP2 = true
	t.MaxIdleConns = 512
	t.MaxIdleConnsPerHost = 64
	t.IdleConnTimeout = 90 * time.Second
	t.TLSHandshakeTimeout = 10 * time.Second
	t.ResponseHeaderTimeout = 0
	t.MaxResponseHeaderBytes = MaxResponseHeaderBytes
	t.ExpectContinueTimeout = time.Second
	return t
}

// proxyAddr is the host:port the transport dials for proxy u, its port
// defaulting to the scheme's.
func proxyAddr(u *url.URL) string {
	port := u.Port()
	if port == "" {
		port = "80"
		if u.Scheme == "https" {
			port = "443"
		}
	}
	return net.JoinHostPort(u.Hostname(), port)
}

// lookupNetIP resolves a host name for checkHost; tests replace it.
var lookupNetIP = net.DefaultResolver.LookupNetIP

// checkHost applies the address rule to a target host before a proxy gets
// the request: a literal address is checked as it is, a name by every
// address it resolves to here.
func checkHost(ctx context.Context, host string) error {
	if a, err := netip.ParseAddr(host); err == nil {
		return CheckAddr(a)
	}
	addrs, err := lookupNetIP(ctx, "ip", host)
	if err != nil {
		return err
	}
	for _, a := range addrs {
		if reason := blockReason(a.WithZone("").Unmap()); reason != "" {
			return &BlockedAddressError{Addr: a, Host: host, Reason: reason, Resolved: true}
		}
	}
	return nil
}

// ParseProxy reads KAIROS_CALLBACK_PROXY: an absolute http:// or https://
// URL with a host and nothing after it but an optional "/".
func ParseProxy(raw string) (*url.URL, error) {
	u, err := url.Parse(raw)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return nil, fmt.Errorf("callback proxy does not parse: %w", err)
	}
	switch {
	case u.Scheme != "http" && u.Scheme != "https":
		return nil, errors.New("callback proxy must be an http:// or https:// URL, as in http://proxy.internal:3128")
	case u.Opaque != "" || u.Hostname() == "":
		return nil, errors.New("callback proxy must have a host, as in http://proxy.internal:3128")
	case u.Path != "" && u.Path != "/" || u.RawQuery != "" || u.Fragment != "":
		return nil, errors.New("callback proxy must not have a path, query or fragment")
	}
	if p := u.Port(); p != "" {
		if n, err := strconv.Atoi(p); err != nil || n < 1 || n > 65535 {
			return nil, fmt.Errorf("callback proxy port %q: use 1 to 65535", p)
		}
	}
	return u, nil
}

// LoadRoots returns the system's roots plus the certificates of the PEM
// file at path (KAIROS_CALLBACK_CA). A file without a certificate is an
// error; so is one that cannot be read.
func LoadRoots(path string) (*x509.CertPool, error) {
	pem, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("callback CA: %w", err)
	}
	pool, err := x509.SystemCertPool()
	if err != nil || pool == nil {
		pool = x509.NewCertPool()
	}
	if !pool.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("callback CA %s: no PEM certificate in it", path)
	}
	return pool, nil
}

// controlAddr is a net.Dialer Control func: address is the resolved "ip:port".
func controlAddr(_, address string, _ syscall.RawConn) error {
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return &BlockedAddressError{Reason: "unparsable address " + address}
	}
	err = CheckAddr(ap.Addr())
	var blocked *BlockedAddressError
	if errors.As(err, &blocked) {
		blocked.Resolved = true
	}
	return err
}

// maxURLLen is the longest callback URL CheckURL accepts.
const maxURLLen = 2048

// CheckURL checks the syntax of a callback URL at the API edge: an absolute
// http or https URL with a host, no user info, at most 2048 bytes. Which
// addresses may be called is decided when dialling (see NewTransport), not
// here.
func CheckURL(raw string) error {
	if raw == "" {
		return errors.New("callback URL is empty")
	}
	if len(raw) > maxURLLen {
		return fmt.Errorf("callback URL is %d bytes, longer than %d", len(raw), maxURLLen)
	}
	u, err := url.Parse(raw)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return fmt.Errorf("callback URL does not parse: %w", err)
	}
	switch {
	case u.Scheme != "http" && u.Scheme != "https":
		return errors.New("callback URL must be absolute and use http or https")
	case u.Opaque != "" || u.Host == "" || u.Hostname() == "":
		return errors.New("callback URL must have a host, as in https://example.com/hook")
	case u.User != nil:
		return errors.New("callback URL must not hold user info; send credentials in headers")
	}
	return nil
}
