// Package redact keeps secrets that ride in URLs out of log lines: the
// query (access tokens, signatures), the fragment and the user info of
// every http and https URL.
package redact

import (
	"context"
	"log/slog"
	"net/url"
	"strings"
)

// URL returns u as text without its user info, and with its query and
// fragment replaced by "redacted": "https://example.com/hook?redacted".
func URL(u *url.URL) string {
	if u == nil {
		return "<nil>"
	}
	c := *u
	c.User = nil
	c.Fragment, c.RawFragment = "", ""
	if c.RawQuery != "" || c.ForceQuery {
		c.RawQuery, c.ForceQuery = "redacted", false
	}
	return c.String()
}

// String returns s with every http:// and https:// URL in it redacted as
// URL does. A URL ends at white space or a quote, angle bracket or
// backquote. s comes back as it is, without copying, when it holds no URL.
func String(s string) string {
	if !strings.Contains(s, "://") {
		return s
	}
	var b strings.Builder
	rest := s
	for {
		i := schemeAt(rest)
		if i < 0 {
			if b.Len() == 0 {
				return s
			}
			b.WriteString(rest)
			return b.String()
		}
		b.WriteString(rest[:i])
		end := strings.IndexAny(rest[i:], " \t\r\n\"'<>`")
		if end < 0 {
			end = len(rest) - i
		}
		b.WriteString(rawURL(rest[i : i+end]))
		rest = rest[i+end:]
	}
}

// schemeAt returns where the first http:// or https:// URL in s starts,
// in any letter case, or -1.
func schemeAt(s string) int {
	lower := strings.ToLower(s)
	i, j := strings.Index(lower, "http://"), strings.Index(lower, "https://")
	switch {
	case i < 0:
		return j
	case j < 0:
		return i
	}
	return min(i, j)
}

// rawURL redacts one URL's text without parsing it, so that a URL that
// does not parse is redacted too: user info goes, and everything from the
// first '?' or '#' becomes "?redacted".
func rawURL(u string) string {
	scheme, rest, _ := strings.Cut(u, "://")
	authEnd := strings.IndexAny(rest, "/?#")
	if authEnd < 0 {
		authEnd = len(rest)
	}
	if at := strings.LastIndex(rest[:authEnd], "@"); at >= 0 {
		rest = rest[at+1:]
	}
	if q := strings.IndexAny(rest, "?#"); q >= 0 {
		rest = rest[:q] + "?redacted"
	}
	return scheme + "://" + rest
}

// Value returns v with the URLs in it redacted: a *url.URL or url.URL
// becomes URL's text, a string or an error the text String makes of it;
// other values come back as they are.
func Value(v any) any {
	out, _ := value(v)
	return out
}

// value is Value, and whether it changed v (values of other types are
// not compared: some cannot be).
func value(v any) (any, bool) {
	switch x := v.(type) {
	case string:
		r := String(x)
		return r, r != x
	case *url.URL:
		return URL(x), true
	case url.URL:
		return URL(&x), true
	case error:
		if msg := x.Error(); String(msg) != msg {
			return String(msg), true
		}
	}
	return v, false
}

// Handler returns a slog.Handler that passes records to h with the URLs
// in their message and attributes (in groups too) redacted.
func Handler(h slog.Handler) slog.Handler { return handler{h} }

type handler struct{ h slog.Handler }

func (r handler) Enabled(ctx context.Context, l slog.Level) bool { return r.h.Enabled(ctx, l) }

func (r handler) Handle(ctx context.Context, rec slog.Record) error {
	out := slog.NewRecord(rec.Time, rec.Level, String(rec.Message), rec.PC)
	rec.Attrs(func(a slog.Attr) bool {
		out.AddAttrs(attr(a))
		return true
	})
	return r.h.Handle(ctx, out)
}

func (r handler) WithAttrs(as []slog.Attr) slog.Handler {
	out := make([]slog.Attr, len(as))
	for i, a := range as {
		out[i] = attr(a)
	}
	return handler{r.h.WithAttrs(out)}
}

func (r handler) WithGroup(name string) slog.Handler { return handler{r.h.WithGroup(name)} }

func attr(a slog.Attr) slog.Attr {
	v := a.Value.Resolve()
	switch v.Kind() {
	case slog.KindString:
		if s := v.String(); String(s) != s {
			return slog.String(a.Key, String(s))
		}
	case slog.KindGroup:
		g := v.Group()
		out := make([]slog.Attr, len(g))
		for i, ga := range g {
			out[i] = attr(ga)
		}
		return slog.Attr{Key: a.Key, Value: slog.GroupValue(out...)}
	case slog.KindAny:
		if x, changed := value(v.Any()); changed {
			return slog.Any(a.Key, x)
		}
	}
	return slog.Attr{Key: a.Key, Value: v}
}
