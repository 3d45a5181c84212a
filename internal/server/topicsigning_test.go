package server

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/kairos-sh/kairos/internal/testredis"
	"github.com/kairos-sh/kairos/internal/testwait"
	"github.com/kairos-sh/kairos/verify"
)

// TestTopicSigningKeepsReceiversApart delivers a callback of topic own
// (signing: topic) and one of topic shared (the tenant's secret): own's is
// verified by its own secret and not by the tenant's, shared's by the
// tenant's and not by own's; after own's keys rotate, its next callback is
// signed with the new current secret.
func TestTopicSigningKeepsReceiversApart(t *testing.T) {
	t.Parallel()
	type delivery struct {
		h    http.Header
		body []byte
	}
	var mu sync.Mutex
	got := map[string][]delivery{}
	rcv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		got[r.URL.Path] = append(got[r.URL.Path], delivery{r.Header.Clone(), b})
		mu.Unlock()
	}))
	t.Cleanup(rcv.Close)
	ti := startTestInstanceOn(t, map[string]string{"KAIROS_REDIS_URL": testredis.New(t).URL()})
	keys := func(path string) (k struct{ Current, Next string }) {
		t.Helper()
		if err := json.Unmarshal([]byte(ti.call(t, "GET", path, "", http.StatusOK)), &k); err != nil {
			t.Fatal(err)
		}
		return k
	}
	ti.call(t, "PUT", "/v1/topics/own", `{"callback_url": "`+rcv.URL+`/own", "signing": "topic"}`, http.StatusCreated)
	ti.call(t, "PUT", "/v1/topics/shared", `{"callback_url": "`+rcv.URL+`/shared"}`, http.StatusCreated)
	tenant, own := keys("/v1/signing-keys"), keys("/v1/topics/own/signing-keys")
	if own.Current == tenant.Current || own.Current == tenant.Next || own.Next == tenant.Current {
		t.Fatalf("the topic's secrets are the tenant's: %+v, %+v", own, tenant)
	}
	wait := func(path string, n int) (d delivery) {
		t.Helper()
		testwait.UntilNil(t, 20*time.Second, func() error {
			mu.Lock()
			defer mu.Unlock()
			if have := got[path]; len(have) < n {
				return fmt.Errorf("%d callbacks", len(have))
			}
			d = got[path][n-1]
			return nil
		}, fmt.Sprintf("%d callbacks to %s", n, path))
		return d
	}
	check := func(d delivery, url string, secrets ...string) error {
		return verify.Callback(secrets, d.h, d.body, verify.Options{URL: url})
	}
	ti.call(t, "POST", "/v1/topics/own/jobs", `{"delay": "0s", "payload": {"n": 1}}`, http.StatusCreated)
	ti.call(t, "POST", "/v1/topics/shared/jobs", `{"delay": "0s", "payload": {"n": 2}}`, http.StatusCreated)
	o, s := wait("/own", 1), wait("/shared", 1)
	if err := check(o, rcv.URL+"/own", own.Current); err != nil {
		t.Errorf("own's callback with own's secret: %v", err)
	}
	if err := check(o, rcv.URL+"/own", tenant.Current, tenant.Next); !errors.Is(err, verify.ErrInvalidSignature) {
		t.Errorf("own's callback with the tenant's secrets: %v, want an invalid signature", err)
	}
	if err := check(s, rcv.URL+"/shared", tenant.Current); err != nil {
		t.Errorf("shared's callback with the tenant's secret: %v", err)
	}
	if err := check(s, rcv.URL+"/shared", own.Current, own.Next); !errors.Is(err, verify.ErrInvalidSignature) {
		t.Errorf("shared's callback with own's secrets: %v, want an invalid signature", err)
	}

	rotated := keys("/v1/topics/own/signing-keys") // the same until rotated
	if rotated != own {
		t.Fatalf("keys changed without a rotation: %+v, then %+v", own, rotated)
	}
	var r struct{ Current, Next string }
	json.Unmarshal([]byte(ti.call(t, "POST", "/v1/topics/own/signing-keys/rotate", "", http.StatusOK)), &r)
	if r.Current != own.Next || r.Next == own.Next {
		t.Fatalf("rotation %+v of %+v", r, own)
	}
	time.Sleep(2100 * time.Millisecond) // the point: past the 2 s the worker keeps a secret
	ti.call(t, "POST", "/v1/topics/own/jobs", `{"delay": "0s", "payload": {"n": 3}}`, http.StatusCreated)
	if err := check(wait("/own", 2), rcv.URL+"/own", r.Current); err != nil {
		t.Errorf("own's callback after rotation, with its new current secret: %v", err)
	}
	if keys("/v1/signing-keys") != tenant {
		t.Error("rotating a topic's keys changed the tenant's")
	}
}
