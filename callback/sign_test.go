package callback

import (
	"encoding/base64"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/google/go-cmp/cmp"
	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"

	"github.com/kairos-sh/kairos/verify"
)

// testSecret and the vector below are the Standard Webhooks (Svix) documented example.
const testSecret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"

func TestNewSecret(t *testing.T) {
	a, err := NewSecret()
	if err != nil {
		t.Fatal(err)
	}
	b, err := NewSecret()
	if err != nil {
		t.Fatal(err)
	}
	if a == b {
		t.Errorf("two secrets are equal: %q", a)
	}
	if !strings.HasPrefix(a, "whsec_") {
		t.Errorf("secret %q lacks the whsec_ prefix", a)
	}
	key, err := verify.SecretKey(a)
	if err != nil || len(key) != 32 {
		t.Errorf("verify.SecretKey(%q) = %d bytes, %v; want 32 bytes", a, len(key), err)
	}
}

func TestSignStandardWebhooksVector(t *testing.T) {
	h := http.Header{}
	sig := Signature{MsgID: "msg_p5jXN8AQM9LWM0D4loKWxJek", Timestamp: time.Unix(1614265330, 0)}
	if err := Sign(h, testSecret, sig, []byte(`{"test": 2432232314}`)); err != nil {
		t.Fatal(err)
	}
	want := http.Header{
		"Webhook-Id":        {"msg_p5jXN8AQM9LWM0D4loKWxJek"},
		"Webhook-Timestamp": {"1614265330"},
		"Webhook-Signature": {"v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="},
	}
	delete(h, "Kairos-Signature")
	if diff := cmp.Diff(want, h); diff != "" {
		t.Errorf("headers (-want +got):\n%s", diff)
	}
}

func TestSignToken(t *testing.T) {
	now := time.Unix(1_700_000_000, 123)
	body := []byte(`{"order":42}`)
	h := http.Header{}
	sig := Signature{MsgID: "msg_1", DeliveryID: "dlv_1", URL: "https://example.com/hook?a=<b>&c", Timestamp: now}
	if err := Sign(h, testSecret, sig, body); err != nil {
		t.Fatal(err)
	}
	key, _ := verify.SecretKey(testSecret)
	got := jwt.MapClaims{}
	tok, err := jwt.NewParser(jwt.WithValidMethods([]string{"HS256"}), jwt.WithoutClaimsValidation()).
		ParseWithClaims(h.Get("Kairos-Signature"), got, func(*jwt.Token) (any, error) { return key, nil })
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(map[string]any{"alg": "HS256", "typ": "JWT"}, tok.Header); diff != "" {
		t.Errorf("JWT header (-want +got):\n%s", diff)
	}
	want := jwt.MapClaims{
		"iss":  "kairos",
		"sub":  "https://example.com/hook?a=<b>&c",
		"iat":  float64(1_700_000_000),
		"nbf":  float64(1_700_000_000),
		"exp":  float64(1_700_000_300),
		"jti":  "dlv_1",
		"body": "VJhdw8EvraehsdtTzyPTy9S8vmThzvlQceIHPizv9O0", // base64url(sha256(body))
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("claims (-want +got):\n%s", diff)
	}
}

func TestSignRejects(t *testing.T) {
	for _, tc := range []struct {
		name, secret, msgID string
	}{
		{"bad secret", "whsec_%%%", "msg_1"},
		{"empty id", testSecret, ""},
		{"id with newline", testSecret, "msg\r\nX-Evil: 1"},
		{"id with spaces around", testSecret, " msg_1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := http.Header{}
			if err := Sign(h, tc.secret, Signature{MsgID: tc.msgID}, nil); err == nil {
				t.Fatal("Sign succeeded, want an error")
			}
			if len(h) != 0 {
				t.Errorf("Sign set headers on failure: %v", h)
			}
		})
	}
}

func TestSignZeroTimestampIsNow(t *testing.T) {
	h := http.Header{}
	if err := Sign(h, testSecret, Signature{MsgID: "m"}, nil); err != nil {
		t.Fatal(err)
	}
	if err := verify.Callback([]string{testSecret}, h, nil, verify.Options{}); err != nil {
		t.Errorf("Verify of a zero-timestamp signature: %v", err)
	}
}

func BenchmarkSign(b *testing.B) {
	body := []byte(strings.Repeat(`{"order":42,"state":"unpaid"}`, 32))
	sig := Signature{
		MsgID:      "msg_2kq8bXf3Yz1",
		DeliveryID: "dlv_2kq8bXf3Yz1_3",
		URL:        "https://example.com/hooks/orders",
		Timestamp:  time.Unix(1_700_000_000, 0),
	}
	h := http.Header{}
	b.ReportAllocs()
	b.SetBytes(int64(len(body)))
	for b.Loop() {
		if err := Sign(h, testSecret, sig, body); err != nil {
			b.Fatal(err)
		}
	}
}

// TestSignAlternatingSecrets: Sign keeps keyed MACs for reuse; signatures
// made with two secrets in turn each verify with their own secret only.
func TestSignAlternatingSecrets(t *testing.T) {
	other := "whsec_" + base64.StdEncoding.EncodeToString([]byte("another tenant's key, 32 bytes!!"))
	body := []byte(`{"n":1}`)
	for i := range 20 {
		secret, wrong := testSecret, other
		if i%2 == 1 {
			secret, wrong = other, testSecret
		}
		h := http.Header{}
		if err := Sign(h, secret, Signature{MsgID: "m" + strconv.Itoa(i), DeliveryID: "d", URL: "https://example.com/h"}, body); err != nil {
			t.Fatal(err)
		}
		if err := verify.Callback([]string{secret}, h, body, verify.Options{}); err != nil {
			t.Errorf("signature %d does not verify with its own secret: %v", i, err)
		}
		if err := verify.Callback([]string{wrong}, h, body, verify.Options{}); err == nil {
			t.Errorf("signature %d verifies with the other secret", i)
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
	body := []byte(`{"order":42}`)
	sig := Signature{MsgID: "msg_1", DeliveryID: "dlv_1", URL: "https://example.com/hook", Timestamp: time.Now()}
	h := http.Header{}
	if err := Sign(h, secret, sig, body); err != nil {
		t.Fatal(err)
	}
	wh, err := standardwebhooks.NewWebhook(secret)
	if err != nil {
		t.Fatal(err)
	}
	if err := wh.Verify(body, h); err != nil {
		t.Errorf("standardwebhooks Verify: %v", err)
	}
	if err := wh.Verify([]byte(`{"order":43}`), h); err == nil {
		t.Error("standardwebhooks Verify of a tampered body succeeded")
	}
	// And the other way round: the library signs as Sign does.
	want, err := wh.Sign(sig.MsgID, sig.Timestamp, body)
	if err != nil {
		t.Fatal(err)
	}
	if got := h.Get("webhook-signature"); got != want {
		t.Errorf("webhook-signature = %q, library signs %q", got, want)
	}
}
