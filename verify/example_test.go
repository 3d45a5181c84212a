package verify_test

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"time"

	"github.com/kairos-sh/kairos/callback"
	"github.com/kairos-sh/kairos/verify"
)

// A receiver checks every callback before acting on it. secrets holds the
// tenant's current and next signing secrets (GET /v1/signing-keys), so that
// a key rotation needs no downtime.
func ExampleCallback() {
	secret, _ := callback.NewSecret()
	secrets := []string{secret}
	const hookURL = "https://example.com/hooks/orders"

	receiver := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, 1<<20))
		if err != nil {
			http.Error(w, "body too large", http.StatusRequestEntityTooLarge)
			return
		}
		err = verify.Callback(secrets, r.Header, body, verify.Options{URL: hookURL})
		switch {
		case errors.Is(err, verify.ErrTimestamp):
			http.Error(w, "stale callback", http.StatusUnauthorized)
			return
		case err != nil:
			http.Error(w, "bad signature", http.StatusUnauthorized)
			return
		}
		// webhook-id stays the same across retries: deduplicate on it.
		fmt.Printf("message %s: %s\n", r.Header.Get("webhook-id"), body)
		w.WriteHeader(http.StatusNoContent)
	})

	// What kairos sends (package callback signs).
	send := func(body, signed []byte, at time.Time) int {
		req := httptest.NewRequest(http.MethodPost, hookURL, bytes.NewReader(body))
		sig := callback.Signature{MsgID: "msg_7", DeliveryID: "dlv_7_1", URL: hookURL, Timestamp: at}
		if err := callback.Sign(req.Header, secret, sig, signed); err != nil {
			panic(err)
		}
		rec := httptest.NewRecorder()
		receiver.ServeHTTP(rec, req)
		return rec.Code
	}
	order := []byte(`{"order":42,"action":"cancel"}`)
	fmt.Println(send(order, order, time.Now()))
	fmt.Println(send([]byte(`{"order":43,"action":"cancel"}`), order, time.Now()))
	fmt.Println(send(order, order, time.Now().Add(-time.Hour)))
	// Output:
	// message msg_7: {"order":42,"action":"cancel"}
	// 204
	// 401
	// 401
}

// Request reads and verifies the body in one step.
func ExampleRequest() {
	secret, _ := callback.NewSecret()
	receiver := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := verify.Request(r, []string{secret}, verify.Options{})
		if err != nil {
			fmt.Println("refused:", err)
			http.Error(w, "bad signature", http.StatusUnauthorized)
			return
		}
		fmt.Printf("accepted: %s\n", body)
	})

	body := []byte(`{"coupon":"X1"}`)
	req := httptest.NewRequest(http.MethodPost, "/hook", bytes.NewReader(body))
	_ = callback.Sign(req.Header, secret, callback.Signature{MsgID: "msg_8"}, body)
	receiver.ServeHTTP(httptest.NewRecorder(), req)

	req = httptest.NewRequest(http.MethodPost, "/hook", bytes.NewReader(body))
	receiver.ServeHTTP(httptest.NewRecorder(), req)
	// Output:
	// accepted: {"coupon":"X1"}
	// refused: webhook-id header: missing signature
}
