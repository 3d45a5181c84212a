package main

import (
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/kairos-sh/kairos/auth"
)

var (
	bannerToken  = regexp.MustCompile(`eyJ[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+`)
	bannerSecret = regexp.MustCompile(`whsec_[A-Za-z0-9+/=]+`)
	bannerURL    = regexp.MustCompile(`kairos is running at (http://\S+)`)
)

// bannerParts reads the token, the signing secret and the URL of a banner.
func bannerParts(t *testing.T, banner string) (tok, secret, url string) {
	t.Helper()
	tok, secret = bannerToken.FindString(banner), bannerSecret.FindString(banner)
	m := bannerURL.FindStringSubmatch(banner)
	if tok == "" || secret == "" || m == nil {
		t.Fatalf("banner lacks the token, the signing secret or the URL:\n%s", banner)
	}
	return tok, secret, m[1]
}

// call sends method path with tok to url and returns the status and the
// decoded JSON answer.
func call(t *testing.T, method, url, tok string) (int, map[string]any) {
	t.Helper()
	req, err := http.NewRequest(method, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+tok)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var body map[string]any
	json.NewDecoder(res.Body).Decode(&body)
	return res.StatusCode, body
}

// TestDevSecretsKeptAcrossRestarts: the embedded dev mode keeps its
// secrets in a file of the user's configuration directory (mode 0600,
// named in the banner), so a token and a receiver's signing secret from
// before a restart still work after it, a rotation of the signing secrets
// included. A kairos with other secrets answers that token 401, saying the
// token was signed with another secret, and nothing of the secrets.
func TestDevSecretsKeptAcrossRestarts(t *testing.T) {
	dir := t.TempDir()
	env := map[string]string{"KAIROS_ADDR": "127.0.0.1:0", "XDG_CONFIG_HOME": dir}
	file := filepath.Join(dir, "kairos", "dev-secrets.json")
	// A busy machine under -race may take more than the default second
	// for the first requests' Redis work.
	env["KAIROS_REDIS_TIMEOUT"] = "5s"

	banner, stop := serveUntil(t, env)
	tok, secret, url := bannerParts(t, banner)
	if !strings.Contains(banner, "kept in "+file) {
		t.Errorf("the banner does not say the secrets are kept in %s:\n%s", file, banner)
	}
	if want := url + "/#token=" + tok; !strings.Contains(banner, want) {
		t.Errorf("the banner lacks the signed-in link %s:\n%s", want, banner)
	}
	if strings.Contains(banner, "?token=") {
		t.Errorf("the banner puts the token in a query, which browsers send and servers log:\n%s", banner)
	}
	fi, err := os.Stat(file)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("%s has mode %v, want 0600", file, fi.Mode().Perm())
	}
	if code, _ := call(t, "GET", url+"/v1/topics", tok); code != http.StatusOK {
		t.Fatalf("GET /v1/topics with the banner's token: %d", code)
	}
	code, keys := call(t, "POST", url+"/v1/signing-keys/rotate", tok)
	if code != http.StatusOK || keys["current"] == secret {
		t.Fatalf("rotate: %d %v", code, keys)
	}
	rotated := keys["current"].(string)
	stop()

	banner, stop = serveUntil(t, env)
	_, secret2, url := bannerParts(t, banner)
	if code, body := call(t, "GET", url+"/v1/topics", tok); code != http.StatusOK {
		t.Errorf("after a restart, the token from before: %d %v, want 200", code, body)
	}
	if secret2 != rotated {
		t.Errorf("after a restart the signing secret is %s, want the one rotated in before it, %s", secret2, rotated)
	}
	stop()

	raw, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var kept struct {
		AuthSecret string `json:"auth_secret"`
	}
	if err := json.Unmarshal(raw, &kept); err != nil || kept.AuthSecret == "" {
		t.Fatalf("%s: %v %s", file, err, raw)
	}
	banner, stop = serveUntil(t, map[string]string{"KAIROS_ADDR": "127.0.0.1:0", "XDG_CONFIG_HOME": t.TempDir(), "KAIROS_REDIS_TIMEOUT": "5s"})
	defer stop()
	_, _, url = bannerParts(t, banner)
	code, body := call(t, "GET", url+"/v1/topics", tok)
	if code != http.StatusUnauthorized || body["detail"] != auth.OtherSecretReason {
		t.Errorf("a token of another secret: %d %v, want 401 with detail %q", code, body, auth.OtherSecretReason)
	}
	if strings.Contains(body["detail"].(string), kept.AuthSecret) {
		t.Error("the 401 shows the secret")
	}
}
