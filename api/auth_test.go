package api

import (
	"encoding/base64"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/kairos-sh/kairos/web"
)

// signed returns a token for claims signed with method and key.
func signed(tb testing.TB, method jwt.SigningMethod, claims jwt.MapClaims, key any) string {
	tb.Helper()
	tok, err := jwt.NewWithClaims(method, claims).SignedString(key)
	if err != nil {
		tb.Fatal(err)
	}
	return tok
}

// forged returns a token with the given header and claims and a junk signature.
func forged(tb testing.TB, header, claims map[string]any) string {
	tb.Helper()
	part := func(v any) string {
		b, err := json.Marshal(v)
		if err != nil {
			tb.Fatal(err)
		}
		return base64.RawURLEncoding.EncodeToString(b)
	}
	return part(header) + "." + part(claims) + "." + base64.RawURLEncoding.EncodeToString([]byte("not a signature"))
}

// TestAuthRefused sends every kind of bad credential: each is a 401 with
// its reason in detail and a WWW-Authenticate challenge, and nothing changes.
func TestAuthRefused(t *testing.T) {
	t.Parallel()
	e := newEnv(t, Config{})
	now := t0.Unix()
	key := []byte(testSecret)
	claims := func(kv ...any) jwt.MapClaims {
		c := jwt.MapClaims{"sub": "acme", "iat": now}
		for i := 0; i < len(kv); i += 2 {
			if kv[i+1] == nil {
				delete(c, kv[i].(string))
				continue
			}
			c[kv[i].(string)] = kv[i+1]
		}
		return c
	}
	tests := []struct {
		name   string
		header string
		detail string
	}{
		{"no header", "", "missing bearer token"},
		{"basic scheme", "Basic YWNtZTpwdw==", "malformed Authorization header"},
		{"bearer alone", "Bearer", "malformed Authorization header"},
		{"bearer blank", "Bearer    ", "malformed Authorization header"},
		{"not a JWT", "Bearer abc.def", "token is malformed"},
		{"garbage", "Bearer " + strings.Repeat("x", 300), "token is malformed"},
		{"alg none", "Bearer " + signed(t, jwt.SigningMethodNone, claims(), jwt.UnsafeAllowNoneSignatureType), "only HS256"},
		{"HS512", "Bearer " + signed(t, jwt.SigningMethodHS512, claims(), key), "only HS256"},
		{"HS384", "Bearer " + signed(t, jwt.SigningMethodHS384, claims(), key), "only HS256"},
		{"RS256 header", "Bearer " + forged(t, map[string]any{"alg": "RS256", "typ": "JWT"}, claims()), "only HS256"},
		{"other secret", "Bearer " + signed(t, jwt.SigningMethodHS256, claims(), []byte("another secret of some length!!")), "signature is invalid: it was not signed with this server's KAIROS_AUTH_SECRET (the server may have restarted with a new secret)"},
		{"tampered claims", "Bearer " + tamper(t, signed(t, jwt.SigningMethodHS256, claims(), key)), "signature is invalid"},
		{"expired", "Bearer " + signed(t, jwt.SigningMethodHS256, claims("exp", now-6), key), "expired"},
		{"not yet valid", "Bearer " + signed(t, jwt.SigningMethodHS256, claims("nbf", now+60), key), "not valid yet"},
		{"no sub", "Bearer " + signed(t, jwt.SigningMethodHS256, claims("sub", nil), key), "no sub claim"},
		{"empty sub", "Bearer " + signed(t, jwt.SigningMethodHS256, claims("sub", ""), key), "no sub claim"},
		{"bad sub", "Bearer " + signed(t, jwt.SigningMethodHS256, claims("sub", "acme/ops"), key), "not a valid tenant name"},
		{"admin not a bool", "Bearer " + signed(t, jwt.SigningMethodHS256, claims("admin", "yes"), key), "malformed"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			before := e.snapshot(t)
			res := e.do(t, "PUT", "/v1/topics/orders", tc.header, obj{"callback_url": hook})
			p := wantProblem(t, res, http.StatusUnauthorized)
			if !strings.Contains(p.Detail, tc.detail) {
				t.Errorf("detail %q, want it to say %q", p.Detail, tc.detail)
			}
			if p.Type != problemBase+"unauthorized" {
				t.Errorf("type %q", p.Type)
			}
			if got := res.Header.Get("WWW-Authenticate"); got != `Bearer realm="kairos"` {
				t.Errorf("WWW-Authenticate = %q", got)
			}
			e.unchanged(t, before)
		})
	}

	// Within the 5 s leeway a token still works; lowercase "bearer" is fine.
	ok := signed(t, jwt.SigningMethodHS256, claims("exp", now-4, "nbf", now+4), key)
	if res := e.do(t, "GET", "/v1/topics", "bearer "+ok, nil); res.Status != http.StatusOK {
		t.Errorf("token within leeway: %d %s", res.Status, res.Body)
	}
	// A minted token expires with the injected clock.
	tok := e.token(t, "acme", false)
	e.clock.Add(time.Hour + 6*time.Second)
	wantProblem(t, e.do(t, "GET", "/v1/topics", tok, nil), http.StatusUnauthorized)
}

// tamper changes the claims of a signed token and keeps its signature.
func tamper(tb testing.TB, tok string) string {
	tb.Helper()
	parts := strings.Split(tok, ".")
	parts[1] = base64.RawURLEncoding.EncodeToString([]byte(`{"sub":"acme","admin":true}`))
	return strings.Join(parts, ".")
}

// TestAuthEveryRoute checks that every /v1 operation in the spec refuses a
// request without a token, so no route is left open by mistake.
func TestAuthEveryRoute(t *testing.T) {
	t.Parallel()
	ok := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		w.Write([]byte("mounted\n"))
	})
	e := newEnv(t, Config{Page: web.Handler(), Metrics: ok})
	s := mustSpec(t)
	n := 0
	for path, item := range s.doc.Paths.Map() {
		for method := range item.Operations() {
			concrete := strings.NewReplacer("{topic}", "orders", "{id}", "o1", "{path}", "app.js", "{tenant}", "acme", "{sub}", "billing").Replace(path)
			res := e.do(t, method, concrete, "", nil)
			if !strings.HasPrefix(path, "/v1/") {
				if res.Status != http.StatusOK {
					t.Errorf("%s %s without a token: %d, want 200", method, path, res.Status)
				}
				continue
			}
			n++
			wantProblem(t, res, http.StatusUnauthorized)
		}
	}
	if n != 45 {
		t.Errorf("checked %d /v1 operations, want 45", n)
	}
}
