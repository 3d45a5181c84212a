package callback

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
	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"
)

const nextSecret = "whsec_c2Vjb25kIHNlY3JldCBmb3Igcm90YXRpb24="

var (
	testNow  = time.Unix(1_700_000_000, 0)
	testBody = []byte(`{"order":42}`)
	testSig  = Signature{MsgID: "msg_1", DeliveryID: "dlv_1", URL: "https://example.com/hook", Timestamp: testNow}
)

// signed returns the headers Sign sets for body, failing tb on error.
func signed(tb testing.TB, secret string, sig Signature, body []byte) http.Header {
	tb.Helper()
	h := http.Header{}
	if err := Sign(h, secret, sig, body); err != nil {
		tb.Fatal(err)
	}
	return h
}

// token returns an HS-family JWT over claims, keyed by secret.
func token(tb testing.TB, m jwt.SigningMethod, secret string, claims jwt.MapClaims) string {
	tb.Helper()
	key, err := secretBytes(secret)
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

func TestVerify(t *testing.T) {
	at := func(d time.Duration) func() time.Time { return func() time.Time { return testNow.Add(d) } }
	for _, tc := range []struct {
		name     string
		secrets  []string
		header   func() http.Header
		body     []byte
		opts     VerifyOptions
		wantErr  error  // nil: want success
		wantText string // in the error message
	}{
		{
			name:    "round trip",
			secrets: []string{testSecret},
			header:  func() http.Header { return signed(t, testSecret, testSig, testBody) },
			opts:    VerifyOptions{Now: at(0), URL: "https://example.com/hook"},
		},
		{
			name:    "signed with the next secret",
			secrets: []string{testSecret, nextSecret},
			header:  func() http.Header { return signed(t, nextSecret, testSig, testBody) },
			opts:    VerifyOptions{Now: at(0)},
		},
		{
			name:    "within tolerance",
			secrets: []string{testSecret},
			header:  func() http.Header { return signed(t, testSecret, testSig, testBody) },
			opts:    VerifyOptions{Now: at(4 * time.Minute)},
		},
		{
			name:     "wrong secret",
			secrets:  []string{nextSecret},
			header:   func() http.Header { return signed(t, testSecret, testSig, testBody) },
			opts:     VerifyOptions{Now: at(0)},
			wantErr:  ErrInvalidSignature,
			wantText: "webhook-signature",
		},
		{
			name:     "tampered body",
			secrets:  []string{testSecret},
			header:   func() http.Header { return signed(t, testSecret, testSig, testBody) },
			body:     []byte(`{"order":43}`),
			opts:     VerifyOptions{Now: at(0)},
			wantErr:  ErrInvalidSignature,
			wantText: "webhook-signature",
		},
		{
			name:     "old timestamp",
			secrets:  []string{testSecret},
			header:   func() http.Header { return signed(t, testSecret, testSig, testBody) },
			opts:     VerifyOptions{Now: at(6 * time.Minute)},
			wantErr:  ErrTimestamp,
			wantText: "webhook-timestamp",
		},
		{
			name:     "future timestamp",
			secrets:  []string{testSecret},
			header:   func() http.Header { return signed(t, testSecret, testSig, testBody) },
			opts:     VerifyOptions{Now: at(-6 * time.Minute)},
			wantErr:  ErrTimestamp,
			wantText: "webhook-timestamp",
		},
		{
			name:    "wider tolerance",
			secrets: []string{testSecret},
			header:  func() http.Header { return signed(t, testSecret, testSig, testBody) },
			opts:    VerifyOptions{Now: at(time.Hour), Tolerance: 2 * time.Hour},
		},
		{
			name:    "malformed timestamp",
			secrets: []string{testSecret},
			header: func() http.Header {
				h := signed(t, testSecret, testSig, testBody)
				h.Set("webhook-timestamp", "1e9")
				return h
			},
			opts:     VerifyOptions{Now: at(0)},
			wantErr:  ErrInvalidSignature,
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
			opts: VerifyOptions{Now: at(0)},
		},
		{
			name:    "right signature under another version",
			secrets: []string{testSecret},
			header: func() http.Header {
				h := signed(t, testSecret, testSig, testBody)
				h.Set("webhook-signature", "v2"+strings.TrimPrefix(h.Get("webhook-signature"), "v1"))
				return h
			},
			opts:     VerifyOptions{Now: at(0)},
			wantErr:  ErrInvalidSignature,
			wantText: "webhook-signature",
		},
		{
			name:     "URL mismatch",
			secrets:  []string{testSecret},
			header:   func() http.Header { return signed(t, testSecret, testSig, testBody) },
			opts:     VerifyOptions{Now: at(0), URL: "https://evil.example/hook"},
			wantErr:  ErrInvalidSignature,
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
			opts:     VerifyOptions{Now: at(0)},
			wantErr:  ErrInvalidSignature,
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
			opts:     VerifyOptions{Now: at(0)},
			wantErr:  ErrTimestamp,
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
			opts:     VerifyOptions{Now: at(0)},
			wantErr:  ErrInvalidSignature,
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
			opts:     VerifyOptions{Now: at(0)},
			wantErr:  ErrInvalidSignature,
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
			opts: VerifyOptions{Now: at(0)},
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
			opts:     VerifyOptions{Now: at(0)},
			wantErr:  ErrInvalidSignature,
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
			opts:     VerifyOptions{Now: at(0)},
			wantErr:  ErrInvalidSignature,
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
			opts:     VerifyOptions{Now: at(0)},
			wantErr:  ErrInvalidSignature,
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
			opts:     VerifyOptions{Now: at(0)},
			wantErr:  ErrInvalidSignature,
			wantText: "kairos-signature",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			body := tc.body
			if body == nil {
				body = testBody
			}
			err := Verify(tc.secrets, tc.header(), body, tc.opts)
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

func TestVerifyMissingHeaders(t *testing.T) {
	for _, name := range []string{"webhook-id", "webhook-timestamp", "webhook-signature", "kairos-signature"} {
		t.Run(name, func(t *testing.T) {
			h := signed(t, testSecret, testSig, testBody)
			h.Del(name)
			err := Verify([]string{testSecret}, h, testBody, VerifyOptions{Now: func() time.Time { return testNow }})
			checkErr(t, err, ErrMissingSignature, name)
		})
	}
}

func TestVerifyBadSecrets(t *testing.T) {
	h := signed(t, testSecret, testSig, testBody)
	for _, secrets := range [][]string{nil, {"whsec_!!"}, {testSecret, ""}} {
		if err := Verify(secrets, h, testBody, VerifyOptions{Now: func() time.Time { return testNow }}); err == nil {
			t.Errorf("Verify with secrets %q succeeded, want an error", secrets)
		}
	}
}

// TestStandardWebhooksLibrary checks kairos's signature with the Standard
// Webhooks project's own Go library, the one receivers are told to use.
func TestStandardWebhooksLibrary(t *testing.T) {
	secret, err := NewSecret()
	if err != nil {
		t.Fatal(err)
	}
	sig := testSig
	sig.Timestamp = time.Now()
	h := signed(t, secret, sig, testBody)
	wh, err := standardwebhooks.NewWebhook(secret)
	if err != nil {
		t.Fatal(err)
	}
	if err := wh.Verify(testBody, h); err != nil {
		t.Errorf("standardwebhooks Verify: %v", err)
	}
	if err := wh.Verify([]byte(`{"order":43}`), h); err == nil {
		t.Error("standardwebhooks Verify of a tampered body succeeded")
	}
	// And the other way round: the library's signature passes our check of it.
	want, err := wh.Sign(sig.MsgID, sig.Timestamp, testBody)
	if err != nil {
		t.Fatal(err)
	}
	if got := h.Get("webhook-signature"); got != want {
		t.Errorf("webhook-signature = %q, library signs %q", got, want)
	}
}

func TestVerifyRequest(t *testing.T) {
	now := func() time.Time { return testNow }
	req := httptest.NewRequest(http.MethodPost, "/hook", bytes.NewReader(testBody))
	req.Header = signed(t, testSecret, testSig, testBody)
	body, err := VerifyRequest(req, []string{testSecret}, VerifyOptions{Now: now})
	if err != nil || !bytes.Equal(body, testBody) {
		t.Fatalf("VerifyRequest = %q, %v; want %q, nil", body, err, testBody)
	}

	huge := bytes.Repeat([]byte("x"), 10<<20+1)
	req = httptest.NewRequest(http.MethodPost, "/hook", bytes.NewReader(huge))
	req.Header = signed(t, testSecret, testSig, huge)
	var tooLarge *http.MaxBytesError
	if body, err := VerifyRequest(req, []string{testSecret}, VerifyOptions{Now: now}); !errors.As(err, &tooLarge) || body != nil {
		t.Fatalf("VerifyRequest of 10 MiB + 1 = %d bytes, %v; want *http.MaxBytesError", len(body), err)
	}

	req = httptest.NewRequest(http.MethodPost, "/hook", bytes.NewReader(testBody))
	req.Header = signed(t, nextSecret, testSig, testBody)
	if body, err := VerifyRequest(req, []string{testSecret}, VerifyOptions{Now: now}); !errors.Is(err, ErrInvalidSignature) || body != nil {
		t.Fatalf("VerifyRequest with the wrong secret = %q, %v; want ErrInvalidSignature", body, err)
	}
}

func FuzzVerify(f *testing.F) {
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
		if err := Verify([]string{testSecret}, h, body, VerifyOptions{Now: now}); err == nil {
			if !strings.Contains(sigHeader, webhookSig(t, testSecret, msgID, ts, body)) {
				t.Fatalf("forged headers verified: %v", h)
			}
		}

		// A valid signature always verifies, within tolerance.
		sig := Signature{MsgID: msgID, DeliveryID: deliveryID, URL: url, Timestamp: testNow.Add(time.Duration(skew%300) * time.Second)}
		h = http.Header{}
		if err := Sign(h, testSecret, sig, body); err != nil {
			if msgID != "" && headerSafe(msgID) {
				t.Fatalf("Sign(%+v): %v", sig, err)
			}
			return
		}
		opts := VerifyOptions{Now: now}
		if utf8.ValidString(url) {
			opts.URL = url
		}
		if err := Verify([]string{nextSecret, testSecret}, h, body, opts); err != nil {
			t.Fatalf("Verify of a valid signature %+v: %v", sig, err)
		}
		if len(body) > 0 {
			body[0] ^= 1
			if err := Verify([]string{testSecret}, h, body, opts); err == nil {
				t.Fatal("Verify of a changed body succeeded")
			}
		}
	})
}

// webhookSig computes a Standard Webhooks signature independently of Sign.
func webhookSig(t *testing.T, secret, msgID, ts string, body []byte) string {
	t.Helper()
	key, err := secretBytes(secret)
	if err != nil {
		t.Fatal(err)
	}
	mac := hmac.New(sha256.New, key)
	mac.Write([]byte(msgID + "." + ts + "."))
	mac.Write(body)
	return "v1," + base64.StdEncoding.EncodeToString(mac.Sum(nil))
}
