package verify_test

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/golang-jwt/jwt/v5"

	"github.com/kairos-sh/kairos/callback"
	"github.com/kairos-sh/kairos/verify"
)

// testSecret is the Standard Webhooks (Svix) documented example.
const testSecret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"

const nextSecret = "whsec_c2Vjb25kIHNlY3JldCBmb3Igcm90YXRpb24="

var (
	testNow  = time.Unix(1_700_000_000, 0)
	testBody = []byte(`{"order":42}`)
	testSig  = callback.Signature{MsgID: "msg_1", DeliveryID: "dlv_1", URL: "https://example.com/hook", Timestamp: testNow}
)

// signed returns the headers Sign sets for body, failing tb on error.
func signed(tb testing.TB, secret string, sig callback.Signature, body []byte) http.Header {
	tb.Helper()
	h := http.Header{}
	if err := callback.Sign(h, secret, sig, body); err != nil {
		tb.Fatal(err)
	}
	return h
}

// token returns an HS-family JWT over claims, keyed by secret.
func token(tb testing.TB, m jwt.SigningMethod, secret string, claims jwt.MapClaims) string {
	tb.Helper()
	key, err := verify.SecretKey(secret)
	if err != nil {
		tb.Fatal(err)
	}
	s, err := jwt.NewWithClaims(m, claims).SignedString(key)
	if err != nil {
		tb.Fatal(err)
	}
	return s
}

func validClaims() jwt.MapClaims {
	return jwt.MapClaims{
		"iss": "kairos", "sub": "https://example.com/hook", "jti": "dlv_1",
		"iat": testNow.Unix(), "nbf": testNow.Unix(), "exp": testNow.Add(5 * time.Minute).Unix(),
		"body": "VJhdw8EvraehsdtTzyPTy9S8vmThzvlQceIHPizv9O0", // of testBody
	}
}

func TestCallback(t *testing.T) {
	at := func(d time.Duration) func() time.Time { return func() time.Time { return testNow.Add(d) } }
	for _, tc := range []struct {
		name     string
		secrets  []string
		header   func() http.Header
		body     []byte
		opts     verify.Options
		wantErr  error  // nil: want success
		wantText string // in the error message
	}{
		{
			name:    "round trip",
			secrets: []string{testSecret},
			header:  func() http.Header { return signed(t, testSecret, testSig, testBody) },
			opts:    verify.Options{Now: at(0), URL: "https://example.com/hook"},
		},
		{
			name:    "signed with the next secret",
			secrets: []string{testSecret, nextSecret},
			header:  func() http.Header { return signed(t, nextSecret, testSig, testBody) },
			opts:    verify.Options{Now: at(0)},
		},
		{
			name:    "within tolerance",
			secrets: []string{testSecret},
			header:  func() http.Header { return signed(t, testSecret, testSig, testBody) },
			opts:    verify.Options{Now: at(4 * time.Minute)},
		},
		{
			name:     "wrong secret",
			secrets:  []string{nextSecret},
			header:   func() http.Header { return signed(t, testSecret, testSig, testBody) },
			opts:     verify.Options{Now: at(0)},
			wantErr:  verify.ErrInvalidSignature,
			wantText: "webhook-signature",
		},
		{
			name:     "tampered body",
			secrets:  []string{testSecret},
			header:   func() http.Header { return signed(t, testSecret, testSig, testBody) },
			body:     []byte(`{"order":43}`),
			opts:     verify.Options{Now: at(0)},
			wantErr:  verify.ErrInvalidSignature,
			wantText: "webhook-signature",
		},
		{
			name:     "old timestamp",
			secrets:  []string{testSecret},
			header:   func() http.Header { return signed(t, testSecret, testSig, testBody) },
			opts:     verify.Options{Now: at(6 * time.Minute)},
			wantErr:  verify.ErrTimestamp,
			wantText: "webhook-timestamp",
		},
		{
			name:     "future timestamp",
			secrets:  []string{testSecret},
			header:   func() http.Header { return signed(t, testSecret, testSig, testBody) },
			opts:     verify.Options{Now: at(-6 * time.Minute)},
			wantErr:  verify.ErrTimestamp,
			wantText: "webhook-timestamp",
		},
		{
			name:    "wider tolerance",
			secrets: []string{testSecret},
			header:  func() http.Header { return signed(t, testSecret, testSig, testBody) },
			opts:    verify.Options{Now: at(time.Hour), Tolerance: 2 * time.Hour},
		},
		{
			name:    "malformed timestamp",
			secrets: []string{testSecret},
			header: func() http.Header {
				h := signed(t, testSecret, testSig, testBody)
				h.Set("webhook-timestamp", "1e9")
				return h
			},
			opts:     verify.Options{Now: at(0)},
			wantErr:  verify.ErrInvalidSignature,
			wantText: "webhook-timestamp",
		},
		{
			name:    "several signatures, one matches",
			secrets: []string{testSecret},
			header: func() http.Header {
				h := signed(t, testSecret, testSig, testBody)
				h.Set("webhook-signature", "v1,Zm9v v1a,x "+h.Get("webhook-signature")+" v2,bar")
				return h
			},
			opts: verify.Options{Now: at(0)},
		},
		{
			name:    "right signature under another version",
			secrets: []string{testSecret},
			header: func() http.Header {
				h := signed(t, testSecret, testSig, testBody)
				h.Set("webhook-signature", "v2"+strings.TrimPrefix(h.Get("webhook-signature"), "v1"))
				return h
			},
			opts:     verify.Options{Now: at(0)},
			wantErr:  verify.ErrInvalidSignature,
			wantText: "webhook-signature",
		},
		{
			name:     "URL mismatch",
			secrets:  []string{testSecret},
			header:   func() http.Header { return signed(t, testSecret, testSig, testBody) },
			opts:     verify.Options{Now: at(0), URL: "https://evil.example/hook"},
			wantErr:  verify.ErrInvalidSignature,
			wantText: "kairos-signature",
		},
		{
			name:    "token for another body",
			secrets: []string{testSecret},
			header: func() http.Header {
				h := signed(t, testSecret, testSig, testBody)
				h.Set("Kairos-Signature", signed(t, testSecret, testSig, []byte("other")).Get("Kairos-Signature"))
				return h
			},
			opts:     verify.Options{Now: at(0)},
			wantErr:  verify.ErrInvalidSignature,
			wantText: "body claim",
		},
		{
			name:    "expired token, fresh webhook signature",
			secrets: []string{testSecret},
			header: func() http.Header {
				h := signed(t, testSecret, testSig, testBody)
				old := testSig
				old.Timestamp = testNow.Add(-11 * time.Minute)
				h.Set("Kairos-Signature", signed(t, testSecret, old, testBody).Get("Kairos-Signature"))
				return h
			},
			opts:     verify.Options{Now: at(0)},
			wantErr:  verify.ErrTimestamp,
			wantText: "kairos-signature",
		},
		{
			name:    "alg none",
			secrets: []string{testSecret},
			header: func() http.Header {
				h := signed(t, testSecret, testSig, testBody)
				s, err := jwt.NewWithClaims(jwt.SigningMethodNone, validClaims()).SignedString(jwt.UnsafeAllowNoneSignatureType)
				if err != nil {
					t.Fatal(err)
				}
				h.Set("Kairos-Signature", s)
				return h
			},
			opts:     verify.Options{Now: at(0)},
			wantErr:  verify.ErrInvalidSignature,
			wantText: "kairos-signature",
		},
		{
			name:    "HS512",
			secrets: []string{testSecret},
			header: func() http.Header {
				h := signed(t, testSecret, testSig, testBody)
				h.Set("Kairos-Signature", token(t, jwt.SigningMethodHS512, testSecret, validClaims()))
				return h
			},
			opts:     verify.Options{Now: at(0)},
			wantErr:  verify.ErrInvalidSignature,
			wantText: "kairos-signature",
		},
		{
			name:    "HS256 built by the jwt library is accepted",
			secrets: []string{testSecret},
			header: func() http.Header {
				h := signed(t, testSecret, testSig, testBody)
				h.Set("Kairos-Signature", token(t, jwt.SigningMethodHS256, testSecret, validClaims()))
				return h
			},
			opts: verify.Options{Now: at(0)},
		},
		{
			name:    "wrong issuer",
			secrets: []string{testSecret},
			header: func() http.Header {
				h := signed(t, testSecret, testSig, testBody)
				c := validClaims()
				c["iss"] = "someone"
				h.Set("Kairos-Signature", token(t, jwt.SigningMethodHS256, testSecret, c))
				return h
			},
			opts:     verify.Options{Now: at(0)},
			wantErr:  verify.ErrInvalidSignature,
			wantText: "kairos-signature",
		},
		{
			name:    "token without exp",
			secrets: []string{testSecret},
			header: func() http.Header {
				h := signed(t, testSecret, testSig, testBody)
				c := validClaims()
				delete(c, "exp")
				h.Set("Kairos-Signature", token(t, jwt.SigningMethodHS256, testSecret, c))
				return h
			},
			opts:     verify.Options{Now: at(0)},
			wantErr:  verify.ErrInvalidSignature,
			wantText: "kairos-signature",
		},
		{
			name:    "token under another secret",
			secrets: []string{testSecret},
			header: func() http.Header {
				h := signed(t, testSecret, testSig, testBody)
				h.Set("Kairos-Signature", token(t, jwt.SigningMethodHS256, nextSecret, validClaims()))
				return h
			},
			opts:     verify.Options{Now: at(0)},
			wantErr:  verify.ErrInvalidSignature,
			wantText: "kairos-signature",
		},
		{
			name:    "garbage token",
			secrets: []string{testSecret},
			header: func() http.Header {
				h := signed(t, testSecret, testSig, testBody)
				h.Set("Kairos-Signature", "a.b.c")
				return h
			},
			opts:     verify.Options{Now: at(0)},
			wantErr:  verify.ErrInvalidSignature,
			wantText: "kairos-signature",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			body := tc.body
			if body == nil {
				body = testBody
			}
			err := verify.Callback(tc.secrets, tc.header(), body, tc.opts)
			checkErr(t, err, tc.wantErr, tc.wantText)
		})
	}
}

func checkErr(t *testing.T, err, wantErr error, wantText string) {
	t.Helper()
	switch {
	case wantErr == nil && err != nil:
		t.Fatalf("err = %v, want nil", err)
	case wantErr == nil:
	case !errors.Is(err, wantErr):
		t.Fatalf("err = %v, want errors.Is %v", err, wantErr)
	case !strings.Contains(err.Error(), wantText):
		t.Fatalf("err = %q, want it to mention %q", err, wantText)
	}
}

func TestCallbackMissingHeaders(t *testing.T) {
	for _, name := range []string{"webhook-id", "webhook-timestamp", "webhook-signature", "kairos-signature"} {
		t.Run(name, func(t *testing.T) {
			h := signed(t, testSecret, testSig, testBody)
			h.Del(name)
			err := verify.Callback([]string{testSecret}, h, testBody, verify.Options{Now: func() time.Time { return testNow }})
			checkErr(t, err, verify.ErrMissingSignature, name)
		})
	}
}

func TestCallbackBadSecrets(t *testing.T) {
	h := signed(t, testSecret, testSig, testBody)
	for _, secrets := range [][]string{nil, {"whsec_!!"}, {testSecret, ""}} {
		if err := verify.Callback(secrets, h, testBody, verify.Options{Now: func() time.Time { return testNow }}); err == nil {
			t.Errorf("Verify with secrets %q succeeded, want an error", secrets)
		}
	}
}

func TestRequest(t *testing.T) {
	now := func() time.Time { return testNow }
	req := httptest.NewRequest(http.MethodPost, "/hook", bytes.NewReader(testBody))
	req.Header = signed(t, testSecret, testSig, testBody)
	body, err := verify.Request(req, []string{testSecret}, verify.Options{Now: now})
	if err != nil || !bytes.Equal(body, testBody) {
		t.Fatalf("Request = %q, %v; want %q, nil", body, err, testBody)
	}

	huge := bytes.Repeat([]byte("x"), 10<<20+1)
	req = httptest.NewRequest(http.MethodPost, "/hook", bytes.NewReader(huge))
	req.Header = signed(t, testSecret, testSig, huge)
	var tooLarge *http.MaxBytesError
	if body, err := verify.Request(req, []string{testSecret}, verify.Options{Now: now}); !errors.As(err, &tooLarge) || body != nil {
		t.Fatalf("Request of 10 MiB + 1 = %d bytes, %v; want *http.MaxBytesError", len(body), err)
	}

	req = httptest.NewRequest(http.MethodPost, "/hook", bytes.NewReader(testBody))
	req.Header = signed(t, nextSecret, testSig, testBody)
	if body, err := verify.Request(req, []string{testSecret}, verify.Options{Now: now}); !errors.Is(err, verify.ErrInvalidSignature) || body != nil {
		t.Fatalf("Request with the wrong secret = %q, %v; want verify.ErrInvalidSignature", body, err)
	}
}

func FuzzCallback(f *testing.F) {
	good := signed(f, testSecret, testSig, testBody)
	f.Add("msg_1", "dlv_1", "https://example.com/hook", testBody, int64(0),
		good.Get("webhook-timestamp"), good.Get("webhook-signature"), good.Get("Kairos-Signature"))
	f.Add("m", "", "", []byte{}, int64(299), "", "", "")
	f.Add("msg\x00", "d\"\\\n", "http://ü/\xff", []byte{0xff, 0xfe}, int64(-299), "-1", "v1,", "e30.e30.")
	f.Add("x", "y", "z", []byte("b"), int64(1), "99999999999999999999", "v1,a v1,b", "eyJhbGciOiJub25lIn0.e30.")
	f.Fuzz(func(t *testing.T, msgID, deliveryID, url string, body []byte, skew int64, ts, sigHeader, tok string) {
		now := func() time.Time { return testNow }
		// Arbitrary headers must not panic, and must not verify unless they
		// happen to be the valid ones.
		h := http.Header{}
		h.Set("webhook-id", msgID)
		h.Set("webhook-timestamp", ts)
		h.Set("webhook-signature", sigHeader)
		h.Set("Kairos-Signature", tok)
		if err := verify.Callback([]string{testSecret}, h, body, verify.Options{Now: now}); err == nil {
			if !strings.Contains(sigHeader, webhookSig(t, testSecret, msgID, ts, body)) {
				t.Fatalf("forged headers verified: %v", h)
			}
		}

		// A valid signature always verifies, within tolerance.
		sig := callback.Signature{MsgID: msgID, DeliveryID: deliveryID, URL: url, Timestamp: testNow.Add(time.Duration(skew%300) * time.Second)}
		h = http.Header{}
		if err := callback.Sign(h, testSecret, sig, body); err != nil {
			if msgID != "" && headerSafe(msgID) {
				t.Fatalf("Sign(%+v): %v", sig, err)
			}
			return
		}
		opts := verify.Options{Now: now}
		if utf8.ValidString(url) {
			opts.URL = url
		}
		if err := verify.Callback([]string{nextSecret, testSecret}, h, body, opts); err != nil {
			t.Fatalf("Verify of a valid signature %+v: %v", sig, err)
		}
		if len(body) > 0 {
			body[0] ^= 1
			if err := verify.Callback([]string{testSecret}, h, body, opts); err == nil {
				t.Fatal("Verify of a changed body succeeded")
			}
		}
	})
}

// webhookSig computes a Standard Webhooks signature independently of Sign.
func webhookSig(t *testing.T, secret, msgID, ts string, body []byte) string {
	t.Helper()
	key, err := verify.SecretKey(secret)
	if err != nil {
		t.Fatal(err)
	}
	mac := hmac.New(sha256.New, key)
	mac.Write([]byte(msgID + "." + ts + "."))
	mac.Write(body)
	return "v1," + base64.StdEncoding.EncodeToString(mac.Sum(nil))
}

// headerSafe reports whether s arrives unchanged as a header value, the
// message ids callback.Sign accepts.
func headerSafe(s string) bool {
	if strings.TrimSpace(s) != s {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < ' ' && c != '\t' || c == 0x7f {
			return false
		}
	}
	return true
}

func TestSecretKey(t *testing.T) {
	for _, tc := range []struct {
		name, secret string
		wantLen      int // 0: want an error
	}{
		{"prefixed", testSecret, 24},
		{"bare", strings.TrimPrefix(testSecret, "whsec_"), 24},
		{"empty", "", 0},
		{"prefix only", "whsec_", 0},
		{"not base64", "whsec_not base64!", 0},
		{"url alphabet", "whsec_-_-_", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			key, err := verify.SecretKey(tc.secret)
			if tc.wantLen == 0 {
				if err == nil {
					t.Fatalf("verify.SecretKey(%q) = %x, want an error", tc.secret, key)
				}
				return
			}
			if err != nil || len(key) != tc.wantLen {
				t.Fatalf("verify.SecretKey(%q) = %d bytes, %v; want %d bytes", tc.secret, len(key), err, tc.wantLen)
			}
		})
	}
}
