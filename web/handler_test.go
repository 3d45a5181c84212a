package web

import (
	"io"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
)

func get(t *testing.T, h http.Handler, method, path string, header ...string) *http.Response {
	t.Helper()
	req := httptest.NewRequest(method, path, nil)
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec.Result()
}

func body(t *testing.T, r *http.Response) string {
	t.Helper()
	b, err := io.ReadAll(r.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestHandlerServesFiles(t *testing.T) {
	h := Handler()
	tests := []struct {
		path  string
		ctype string
		has   string
	}{
		{"/", "text/html; charset=utf-8", `<script type="module" src="/assets/app.js"></script>`},
		{"/index.html", "text/html; charset=utf-8", `id="token-input"`},
		{"/assets/app.js", "text/javascript; charset=utf-8", "import"},
		{"/assets/api.js", "text/javascript; charset=utf-8", "sessionStorage"},
		{"/assets/style.css", "text/css; charset=utf-8", "@media"},
		{"/assets/favicon.svg", "image/svg+xml", "<svg"},
	}
	for _, tt := range tests {
		t.Run(tt.path, func(t *testing.T) {
			res := get(t, h, http.MethodGet, tt.path)
			if res.StatusCode != http.StatusOK {
				t.Fatalf("status %d, want 200", res.StatusCode)
			}
			if got := res.Header.Get("Content-Type"); got != tt.ctype {
				t.Errorf("Content-Type %q, want %q", got, tt.ctype)
			}
			if got := res.Header.Get("Content-Security-Policy"); got != ContentSecurityPolicy {
				t.Errorf("Content-Security-Policy %q, want %q", got, ContentSecurityPolicy)
			}
			if got := res.Header.Get("Cache-Control"); got != "no-cache" {
				t.Errorf("Cache-Control %q, want no-cache (revalidate with the ETag)", got)
			}
			if res.Header.Get("ETag") == "" {
				t.Error("no ETag")
			}
			if got := res.Header.Get("X-Content-Type-Options"); got != "nosniff" {
				t.Errorf("X-Content-Type-Options %q, want nosniff", got)
			}
			if b := body(t, res); !strings.Contains(b, tt.has) {
				t.Errorf("body does not contain %q", tt.has)
			}
		})
	}
}

// TestSignInNamesTheTokens: the sign-in card says where tokens come from,
// the dev mode's printed admin token included.
func TestSignInNamesTheTokens(t *testing.T) {
	html := body(t, get(t, Handler(), http.MethodGet, "/"))
	start := strings.Index(html, `<section id="view-signin"`)
	end := strings.Index(html[max(start, 0):], "</section>")
	if start < 0 || end < 0 {
		t.Fatal("no sign-in section")
	}
	card := regexp.MustCompile(`<[^>]+>`).ReplaceAllString(html[start:start+end], "")
	card = strings.Join(strings.Fields(card), " ")
	for _, want := range []string{"kairos token --tenant NAME", "--admin",
		"In dev mode (kairos serve without KAIROS_REDIS_URL, on its embedded Redis), the admin token that kairos serve printed when it started works here too."} {
		if !strings.Contains(card, want) {
			t.Errorf("the sign-in card does not say %q: %q", want, card)
		}
	}
}

func TestHandlerCSPIsStrict(t *testing.T) {
	for _, want := range []string{"default-src 'none'", "script-src 'self'", "style-src 'self'", "connect-src 'self'", "frame-ancestors 'none'"} {
		if !strings.Contains(ContentSecurityPolicy, want) {
			t.Errorf("CSP lacks %q: %s", want, ContentSecurityPolicy)
		}
	}
	if strings.Contains(ContentSecurityPolicy, "unsafe") || strings.Contains(ContentSecurityPolicy, "http") {
		t.Errorf("CSP allows more than this origin: %s", ContentSecurityPolicy)
	}
	// The page must work under it: no inline script, handler or style, and
	// nothing loaded from another origin.
	html := body(t, get(t, Handler(), http.MethodGet, "/"))
	for _, m := range regexp.MustCompile(`<script([^>]*)>([^<]*)</script>`).FindAllStringSubmatch(html, -1) {
		if !strings.Contains(m[1], ` src="/assets/`) || strings.TrimSpace(m[2]) != "" {
			t.Errorf("index.html has an inline script: %q", m[0])
		}
	}
	checks := map[string]*regexp.Regexp{
		"event handler":   regexp.MustCompile(`\son[a-z]+\s*=`),
		"style attribute": regexp.MustCompile(`\sstyle\s*=`),
		"style element":   regexp.MustCompile(`<style`),
		"remote asset":    regexp.MustCompile(`(?:src|href)="(?:https?:)?//`),
		"javascript: URL": regexp.MustCompile(`javascript:`),
	}
	for name, re := range checks {
		if m := re.FindString(html); m != "" {
			t.Errorf("index.html has %s: %q", name, m)
		}
	}
}

func TestHandlerNotFound(t *testing.T) {
	h := Handler()
	for _, p := range []string{"/assets/nope.js", "/assets/", "/assets", "/nope", "/static/index.html", "/assets/../web.go", "/app.js", "/v1/topics"} {
		t.Run(p, func(t *testing.T) {
			res := get(t, h, http.MethodGet, p)
			if res.StatusCode != http.StatusNotFound {
				t.Fatalf("GET %s: status %d, want 404", p, res.StatusCode)
			}
			if res.Header.Get("Content-Security-Policy") == "" {
				t.Error("404 without a Content-Security-Policy")
			}
		})
	}
}

func TestHandlerMethodsAndRevalidation(t *testing.T) {
	h := Handler()
	if res := get(t, h, http.MethodPost, "/"); res.StatusCode != http.StatusMethodNotAllowed || res.Header.Get("Allow") != "GET, HEAD" {
		t.Errorf("POST /: status %d Allow %q, want 405 with Allow: GET, HEAD", res.StatusCode, res.Header.Get("Allow"))
	}
	head := get(t, h, http.MethodHead, "/assets/app.js")
	if head.StatusCode != http.StatusOK || body(t, head) != "" {
		t.Errorf("HEAD: status %d with a body, want 200 and none", head.StatusCode)
	}
	etag := head.Header.Get("ETag")
	if res := get(t, h, http.MethodGet, "/assets/app.js", "If-None-Match", etag); res.StatusCode != http.StatusNotModified {
		t.Errorf("GET with If-None-Match %s: status %d, want 304", etag, res.StatusCode)
	}
	if res := get(t, h, http.MethodGet, "/assets/app.js", "If-None-Match", `"stale"`); res.StatusCode != http.StatusOK {
		t.Errorf("GET with a stale ETag: status %d, want 200", res.StatusCode)
	}
}

// TestModulesResolve checks that every ES module import and every asset the
// page names is embedded, so a typo fails here rather than in a browser.
func TestModulesResolve(t *testing.T) {
	h := Handler()
	ref := regexp.MustCompile(`(?:from\s+'\./([^']+)'|(?:src|href)="/assets/([^"]+)")`)
	total := 0
	fs.WalkDir(static, "static", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, _ := static.ReadFile(p)
		total += len(b)
		for _, m := range ref.FindAllStringSubmatch(string(b), -1) {
			name := m[1] + m[2]
			if res := get(t, h, http.MethodGet, "/assets/"+name); res.StatusCode != http.StatusOK {
				t.Errorf("%s refers to /assets/%s: status %d", p, name, res.StatusCode)
			}
		}
		return nil
	})
	t.Logf("embedded admin page: %d bytes", total)
}
