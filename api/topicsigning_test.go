package api

import (
	"net/http"
	"strings"
	"testing"
)

// TestTopicSigningKeys: a topic shows its signing (tenant by default); one
// PUT with signing: topic has keys of its own, apart from the tenant's,
// that rotate alone; a topic signed with the tenant's secret answers 409 at
// its keys' routes, another tenant's topic 404, and a signing that is
// neither is refused naming the field.
func TestTopicSigningKeys(t *testing.T) {
	t.Parallel()
	e := newEnv(t, Config{})
	acme, globex := e.token(t, "acme", false), e.token(t, "globex", false)
	plain := want[topicResponse](t, e.do(t, "PUT", "/v1/topics/plain", acme, obj{"callback_url": "https://example.com/a"}), http.StatusCreated)
	if plain.Signing != "tenant" {
		t.Errorf("a topic's default signing %q, want tenant", plain.Signing)
	}
	own := want[topicResponse](t, e.do(t, "PUT", "/v1/topics/own", acme, obj{"callback_url": "https://example.com/b", "signing": "topic"}), http.StatusCreated)
	if own.Signing != "topic" {
		t.Errorf("signing %q, want topic", own.Signing)
	}
	tenant := want[signingKeysResponse](t, e.do(t, "GET", "/v1/signing-keys", acme, nil), http.StatusOK)
	keys := want[signingKeysResponse](t, e.do(t, "GET", "/v1/topics/own/signing-keys", acme, nil), http.StatusOK)
	if !strings.HasPrefix(keys.Current, "whsec_") || keys.Current == tenant.Current || keys.Next == tenant.Next {
		t.Errorf("topic keys %+v, tenant keys %+v", keys, tenant)
	}
	rotated := want[signingKeysResponse](t, e.do(t, "POST", "/v1/topics/own/signing-keys/rotate", acme, nil), http.StatusOK)
	if rotated.Current != keys.Next {
		t.Errorf("rotated %+v from %+v", rotated, keys)
	}
	if again := want[signingKeysResponse](t, e.do(t, "GET", "/v1/signing-keys", acme, nil), http.StatusOK); again != tenant {
		t.Errorf("the tenant's keys changed with the topic's: %+v, then %+v", tenant, again)
	}
	p := wantProblem(t, e.do(t, "GET", "/v1/topics/plain/signing-keys", acme, nil), http.StatusConflict)
	if !strings.Contains(p.Detail, `"signing": "topic"`) {
		t.Errorf("detail %q", p.Detail)
	}
	wantProblem(t, e.do(t, "POST", "/v1/topics/plain/signing-keys/rotate", acme, nil), http.StatusConflict)
	wantProblem(t, e.do(t, "GET", "/v1/topics/own/signing-keys", globex, nil), http.StatusNotFound)
	wantProblem(t, e.do(t, "POST", "/v1/topics/own/signing-keys/rotate", globex, nil), http.StatusNotFound)

	before := e.snapshot(t)
	e.refused(t, e.do(t, "PUT", "/v1/topics/own", acme, obj{"callback_url": "https://example.com/b", "signing": "TOPIC"}), before, http.StatusBadRequest, []string{"signing"}, true)
	back := want[topicResponse](t, e.do(t, "PUT", "/v1/topics/own", acme, obj{"callback_url": "https://example.com/b", "signing": "tenant"}), http.StatusOK)
	if back.Signing != "tenant" {
		t.Errorf("signing %q after a PUT with tenant", back.Signing)
	}
}
