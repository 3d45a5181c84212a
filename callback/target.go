package callback

import (
	"net/netip"
	"net/url"
	"strconv"
	"strings"
)

// CheckTarget applies the address policy to a callback URL when it is
// registered, without resolving any name: it returns a *BlockedAddressError
// when the URL's host is a literal IP address that CheckAddr refuses (in any
// form a resolver takes as an address, such as 127.1 or 0x7f000001), or
// "localhost" or a name under ".localhost", which resolve to loopback (RFC
// 6761). Other names pass: what they resolve to is checked when dialled
// (NewTransport). A URL that does not parse passes too; CheckURL reports it.
func CheckTarget(raw string) error {
	u, err := url.Parse(raw)
	if err != nil {
		return nil
	}
	host := strings.TrimSuffix(u.Hostname(), ".")
	if name := strings.ToLower(host); name == "localhost" || strings.HasSuffix(name, ".localhost") {
		return &BlockedAddressError{Host: host, Reason: "loopback name"}
	}
	a, err := netip.ParseAddr(host)
	if err != nil {
		var ok bool
		if a, ok = parseLegacyIPv4(host); !ok {
			return nil
		}
	}
	return CheckAddr(a)
}

// parseLegacyIPv4 reads the IPv4 forms inet_aton takes beside the dotted
// quad, which getaddrinfo (and so a resolver) treats as addresses: one to
// four parts, each decimal, octal with a leading 0 or hexadecimal with 0x,
// the last part filling the bytes left (127.1 is 127.0.0.1).
func parseLegacyIPv4(s string) (netip.Addr, bool) {
	parts := strings.Split(s, ".")
	if len(parts) > 4 {
		return netip.Addr{}, false
	}
	var v uint64
	for i, p := range parts {
		base := 10
		switch {
		case len(p) > 2 && (p[:2] == "0x" || p[:2] == "0X"):
			p, base = p[2:], 16
		case len(p) > 1 && p[0] == '0':
			p, base = p[1:], 8
		}
		if p == "" || p[0] == '+' || p[0] == '-' {
			return netip.Addr{}, false
		}
		n, err := strconv.ParseUint(p, base, 32)
		if err != nil {
			return netip.Addr{}, false
		}
		bits := uint(8)
		if i == len(parts)-1 {
			bits = uint(8 * (4 - i))
		}
		if n >= 1<<bits {
			return netip.Addr{}, false
		}
		v = v<<bits | n
	}
	return netip.AddrFrom4([4]byte{byte(v >> 24), byte(v >> 16), byte(v >> 8), byte(v)}), true
}
