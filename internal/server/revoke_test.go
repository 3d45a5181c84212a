package server

import (
	"encoding/json"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/kairos-sh/kairos/internal/testredis"
	"github.com/kairos-sh/kairos/internal/testwait"
)

// TestRevokedTokensRefusedOnEveryProcess runs two kairos processes on one
// redis-server. A tenant's token, used (and so remembered) on both, is
// revoked through one: that one refuses it at once, the other as soon as
// the revocation reaches it (the time is printed, not asserted). A token
// minted after it still passes; one token revoked by its jti is refused on
// both while the tenant's other tokens pass.
func TestRevokedTokensRefusedOnEveryProcess(t *testing.T) {
	url := testredis.New(t).URL()
	var ins [2]*testInstance
	var first *Instance
	for i := range ins {
		in, err := startWith(map[string]string{"KAIROS_REDIS_URL": url})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(in.Stop)
		ins[i] = &testInstance{url: in.URL}
		if i == 0 {
			first = in
		}
	}
	mint := func(tenant string, admin bool) string {
		tok, err := first.Authn.Mint(tenant, admin, time.Hour) // both processes share the secret
		if err != nil {
			t.Fatal(err)
		}
		return tok
	}
	as := func(in *testInstance, token string) *testInstance { return &testInstance{url: in.url, token: token} }
	acmeOld := mint("acme", false)
	for _, in := range ins {
		as(in, acmeOld).call(t, "GET", "/v1/topics", "", http.StatusOK)
	}
	admin := as(ins[0], mint("ops", true))
	start := time.Now()
	var rev struct {
		IssuedBefore string `json:"issued_before"`
	}
	json.Unmarshal([]byte(admin.call(t, "POST", "/v1/tenants/acme/revocations", `{}`, http.StatusOK)), &rev)
	as(ins[0], acmeOld).call(t, "GET", "/v1/topics", "", http.StatusUnauthorized)
	took := waitStatus(t, as(ins[1], acmeOld), http.StatusUnauthorized)
	t.Logf("a tenant's tokens revoked (issued_before %s) through one process: refused by the other %s after the revocation was answered (%s after it was sent)", rev.IssuedBefore, took, time.Since(start))

	// a token minted after the revocation's second passes on both
	time.Sleep(time.Until(time.Now().Truncate(time.Second).Add(time.Second + 10*time.Millisecond))) // the point: into the next second (iat counts seconds)
	fresh, other := mint("acme", false), mint("acme", false)
	for _, in := range ins {
		as(in, fresh).call(t, "GET", "/v1/topics", "", http.StatusOK)
		as(in, other).call(t, "GET", "/v1/topics", "", http.StatusOK)
	}
	var claims jwt.RegisteredClaims
	if _, _, err := jwt.NewParser().ParseUnverified(fresh, &claims); err != nil || claims.ID == "" {
		t.Fatalf("minted token has no jti: %v", err)
	}
	as(ins[1], admin.token).call(t, "POST", "/v1/tenants/acme/revocations", `{"jti": "`+claims.ID+`"}`, http.StatusOK)
	took = waitStatus(t, as(ins[0], fresh), http.StatusUnauthorized)
	t.Logf("one token revoked by jti through the second process: refused by the first after %s", took)
	as(ins[1], fresh).call(t, "GET", "/v1/topics", "", http.StatusUnauthorized)
	for _, in := range ins {
		as(in, other).call(t, "GET", "/v1/topics", "", http.StatusOK)
	}
	// refusals
	as(ins[0], other).call(t, "POST", "/v1/tenants/acme/revocations", `{}`, http.StatusForbidden)
	admin.call(t, "POST", "/v1/tenants/acme/revocations", `{"jti": "x", "issued_before": "2026-01-01T00:00:00Z"}`, http.StatusBadRequest)
	admin.call(t, "POST", "/v1/tenants/acme/revocations", `{"issued_before": "2999-01-01T00:00:00Z"}`, http.StatusBadRequest)
}

// waitStatus calls GET /v1/topics until it answers status, for at most
// 10 s, and returns how long that took.
func waitStatus(t *testing.T, in *testInstance, status int) time.Duration {
	t.Helper()
	start := time.Now()
	testwait.UntilNil(t, 10*time.Second, func() error {
		got, body, err := in.do("GET", "/v1/topics", "")
		if err != nil || got != status {
			return fmt.Errorf("%d %v %s", got, err, body)
		}
		return nil
	}, fmt.Sprintf("GET /v1/topics answered %d", status))
	return time.Since(start)
}
