package callback

import (
	"bytes"
	"context"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestDebugLogsHideURLSecrets fires callbacks whose URLs carry a token in
// the query and in the user info, one answered and one refused, with the
// HTTP library logging at debug level: the logs name the host and path but
// never the token. (go-retryablehttp logs whole URLs, and errors that
// repeat them.)
func TestDebugLogsHideURLSecrets(t *testing.T) {
	rcv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	defer rcv.Close()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := ln.Addr().String()
	ln.Close() // nothing listens there now: the attempt is refused
	var buf bytes.Buffer
	c := NewClient(true, slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug})))
	for _, u := range []string{
		rcv.URL + "/hook?access_token=secret-token-1",
		strings.Replace(rcv.URL, "http://", "http://user:secret-token-2@", 1) + "/hook",
		"http://" + closed + "/hook?access_token=secret-token-3",
		"http://user:secret-token-4@" + closed + "/hook#secret-token-5",
	} {
		c.Fire(context.Background(), Request{URL: u, Body: []byte(`{}`)})
	}
	logs := buf.String()
	if !strings.Contains(logs, "/hook") {
		t.Fatalf("no debug line names the callbacks; the test proves nothing:\n%s", logs)
	}
	if strings.Contains(logs, "secret-token") {
		t.Errorf("a URL's secret was logged:\n%s", logs)
	}
}
