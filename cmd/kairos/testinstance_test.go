package main

import (
	"context"
	"io"
	"log/slog"
	"maps"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/kairos-sh/kairos/internal/server"
)

// testInstance is kairos started in this process for a test, with a
// receiver on loopback that answers 200 to every callback.
type testInstance struct {
	rcvURL     string
	url, token string // the API's, and a token of tenant acme
	admin      string // an admin token
}

// startTestInstanceOn starts kairos in this process as the tests do
// (loopback listener, loopback callbacks allowed, a short grace, a fixed
// auth secret) with env added to the environment (KAIROS_REDIS_URL and any
// other KAIROS_* variables), and stops it at cleanup.
func startTestInstanceOn(t *testing.T, env map[string]string) *testInstance {
	t.Helper()
	rcv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	t.Cleanup(rcv.Close)
	all := map[string]string{"KAIROS_AUTH_SECRET": "0123456789abcdef0123"}
	maps.Copy(all, env)
	cfg, err := server.ParseConfig([]string{"--addr", "127.0.0.1:0", "--grace", "1s", "--allow-private-urls"}, fakeEnv(all), io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	in, err := server.Start(context.Background(), cfg, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(in.Stop)
	ti := &testInstance{rcvURL: rcv.URL, url: in.URL}
	if ti.token, err = in.Authn.Mint("acme", false, time.Hour); err != nil {
		t.Fatal(err)
	}
	if ti.admin, err = in.Authn.Mint("ops", true, time.Hour); err != nil {
		t.Fatal(err)
	}
	return ti
}
