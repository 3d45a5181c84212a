package api

import (
	"net/http"
	"strings"
)

// headerMask replaces the value of a secret-looking callback header in API
// answers, whatever the value's length.
const headerMask = "••••••••"

// secretWords: a header whose name contains one of them, in any case,
// looks secret (Authorization, Proxy-Authorization, Cookie, Set-Cookie,
// X-Api-Key, X-Auth-Token, ...). The admin page shows what the API sends
// and keeps no list of its own.
var secretWords = []string{"auth", "cookie", "credential", "key", "passwd", "password", "secret", "session", "signature", "token"}

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

// revealHeaders reads ?reveal=headers, which asks a GET of a topic or job
// for its headers in full: the caller may read the topic or job, so it is
// theirs (or an admin's) to see.
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
