package redact

import (
	"bytes"
	"errors"
	"log/slog"
	"net/url"
	"strings"
	"testing"
)

func TestString(t *testing.T) {
	for _, tt := range []struct{ in, want string }{
		{"no URL here", "no URL here"},
		{"https://example.com/hook", "https://example.com/hook"},
		{"https://example.com/hook?access_token=secret", "https://example.com/hook?redacted"},
		{"https://user:secret@example.com/hook", "https://example.com/hook"},
		{"http://secret@example.com", "http://example.com"},
		{"HTTPS://example.com/h#secret", "HTTPS://example.com/h?redacted"},
		{`Post "https://example.com/h?sig=secret&a=b": dial tcp: refused`, `Post "https://example.com/h?redacted": dial tcp: refused`},
		{"two: http://a.example/?x=secret and https://u:secret@b.example/p?y=secret.", "two: http://a.example/?redacted and https://b.example/p?redacted"},
		{"https://ex%zz.com/?secret", "https://ex%zz.com/?redacted"}, // does not parse: redacted all the same
		{"a path with @ http://example.com/a@b?secret", "a path with @ http://example.com/a@b?redacted"},
	} {
		if got := String(tt.in); got != tt.want {
			t.Errorf("String(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

// TestHandlerRedactsEveryAttribute logs a message, string, error, URL and
// grouped attributes that carry secrets, through With too: none is left.
func TestHandlerRedactsEveryAttribute(t *testing.T) {
	var buf bytes.Buffer
	log := slog.New(Handler(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug})))
	u, _ := url.Parse("https://user:secret@example.com/hook?access_token=secret#secret")
	log.With("callback", "https://example.com/?token=secret").WithGroup("g").Debug("calling https://example.com/x?secret",
		"url", u, "s", "http://example.com/?k=secret", "err", errors.New(`Get "https://example.com/?k=secret": EOF`),
		slog.Group("in", "u", *u), "n", 3, "list", []string{"kept"})
	out := buf.String()
	if strings.Contains(out, "secret") {
		t.Errorf("a secret was logged:\n%s", out)
	}
	for _, want := range []string{"https://example.com/hook?redacted", "n=3", "list=[kept]"} {
		if !strings.Contains(out, want) {
			t.Errorf("log lacks %q:\n%s", want, out)
		}
	}
}
