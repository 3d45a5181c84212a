package api

import (
	"net/http"
	"strings"
)

// headerMask replaces the value of a secret-looking callback header, and
// each query value of a callback, success or failure URL, in API answers,
// whatever the value's length.
const headerMask = "••••••••"

// secretWords: a header whose name contains one of them, in any case,
// looks secret (Authorization, Cookie, Set-Cookie, X-Api-Key, X-Auth-Token,
// X-Jwt, X-Hmac-Sha256, X-Session-Id, ...): masking goes by what a name
// means, not by a list of names. The admin page and the CLI show what the
// API sends and keep no list of their own.
var secretWords = []string{"auth", "cookie", "credential", "hmac", "jwt", "key", "passwd", "password", "secret", "session", "signature", "token"}

// secretHeader reports whether a header named name looks secret.
func secretHeader(name string) bool {
	name = strings.ToLower(name)
	for _, w := range secretWords {
		if strings.Contains(name, w) {
			return true
		}
	}
	return false
}

// maskHeaders returns h with the values of secret-looking headers replaced
// by headerMask: h itself when it holds none, else a copy.
func maskHeaders(h map[string]string) map[string]string {
	var out map[string]string
	for name := range h {
		if !secretHeader(name) {
			continue
		}
		if out == nil {
			out = make(map[string]string, len(h))
			for k, v := range h {
				out[k] = v
			}
		}
		out[name] = headerMask
	}
	if out == nil {
		return h
	}
	return out
}

// maskURL returns the callback, success or failure URL raw with each value
// of its query replaced by headerMask (a parameter without '=' whole), and
// its fragment too: a receiver's token often rides there, and no name
// tells which parameter holds one. Names of parameters, the host and the
// path stay readable. raw comes back as it is when it has neither.
func maskURL(raw string) string {
	rest, frag, hasFrag := strings.Cut(raw, "#")
	base, query, hasQuery := strings.Cut(rest, "?")
	if !hasQuery && !hasFrag {
		return raw
	}
	var b strings.Builder
	b.WriteString(base)
	if hasQuery {
		b.WriteByte('?')
		for i, p := range strings.Split(query, "&") {
			if i > 0 {
				b.WriteByte('&')
			}
			if name, _, ok := strings.Cut(p, "="); ok {
				b.WriteString(name + "=" + headerMask)
			} else if p != "" {
				b.WriteString(headerMask)
			}
		}
	}
	if hasFrag && frag != "" {
		b.WriteString("#" + headerMask)
	}
	return b.String()
}

// revealHeaders reads ?reveal=headers, which asks a GET of a topic, job or
// schedule for what answers mask, in full: its headers' values and its
// URLs' queries. The caller may read the topic or job, so it is theirs (or
// an admin's) to see.
func revealHeaders(r *http.Request) (bool, error) {
	switch v := r.URL.Query().Get("reveal"); v {
	case "":
		return false, nil
	case "headers":
		return true, nil
	default:
		return false, &ValidationError{Errors: []FieldError{{Field: "reveal", Message: "\"" + v + "\" cannot be revealed: use reveal=headers"}}}
	}
}
