package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/kairos-sh/kairos/client"
	"github.com/kairos-sh/kairos/internal/testproc"
	"github.com/kairos-sh/kairos/internal/testwait"
	"github.com/kairos-sh/kairos/verify"
)

// TestServeBannerBeforeListening runs `kairos serve` on the embedded Redis
// and reads its output at the moment it says it is listening: the banner
// must already be there, whole (URL, how to get in, how to allow loopback
// callbacks), with or without a given KAIROS_AUTH_SECRET.
func TestServeBannerBeforeListening(t *testing.T) {
	jwtRE := regexp.MustCompile(`eyJ[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+`)
	tests := []struct {
		name  string
		env   map[string]string
		args  []string
		wants []string
		token bool
	}{
		{name: "generated secret", env: map[string]string{"KAIROS_ADDR": "127.0.0.1:0"}, token: true,
			wants: []string{"kairos is running at http://127.0.0.1:", "valid as long as this process runs", "Signing secret of tenant admin", "\n  whsec_",
				"Callbacks to loopback and private addresses are allowed: this kairos runs on the embedded Redis", "--allow-private-urls=false"}},
		{name: "given secret", env: map[string]string{"KAIROS_ADDR": "127.0.0.1:0", "KAIROS_AUTH_SECRET": "0123456789abcdef0123"},
			wants: []string{"kairos is running at http://127.0.0.1:", "kairos token --tenant", "\n  whsec_", "are allowed: this kairos runs on the embedded Redis"}},
		{name: "private urls allowed", env: map[string]string{"KAIROS_ADDR": "127.0.0.1:0"}, args: []string{"--allow-private-urls"}, token: true,
			wants: []string{"kairos is running at", "Callbacks to loopback and private addresses are allowed (--allow-private-urls)"}},
		{name: "private urls refused when told", env: map[string]string{"KAIROS_ADDR": "127.0.0.1:0"}, args: []string{"--allow-private-urls=false"}, token: true,
			wants: []string{"kairos is running at", "\n  whsec_", "Callbacks to localhost, loopback and private addresses are refused"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			var out testproc.Buffer
			done := make(chan error, 1)
			go func() {
				done <- run(ctx, append([]string{"serve", "--grace", "1s"}, tt.args...), fakeEnv(tt.env), nil, &out, &out)
			}()
			seen := waitListening(t, &out, done)
			for _, w := range tt.wants {
				if !strings.Contains(seen, w) {
					t.Errorf("output lacks %q when it says it listens:\n%s", w, seen)
				}
			}
			if got := jwtRE.MatchString(seen); got != tt.token {
				t.Errorf("admin token printed: %v, want %v:\n%s", got, tt.token, seen)
			}
			cancel()
			select {
			case err := <-done:
				if err != nil {
					t.Fatal(err)
				}
			case <-time.After(20 * time.Second):
				t.Fatal("serve did not stop within 20s of its context ending")
			}
		})
	}
}

// servedBanner runs `kairos serve` with args on the embedded Redis, on a
// free loopback port, until the test ends, and returns its output once it
// says it listens.
func servedBanner(t *testing.T, args ...string) string {
	t.Helper()
	out, stop := serveUntil(t, map[string]string{"KAIROS_ADDR": "127.0.0.1:0"}, args...)
	t.Cleanup(stop)
	return out
}

// serveUntil runs `kairos serve` with env and args and returns its output
// once it says it listens, and the func that stops it (SIGINT's way: its
// context ends) and waits until it has.
func serveUntil(t *testing.T, env map[string]string, args ...string) (string, func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	var out testproc.Buffer
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, append([]string{"serve", "--grace", "1s"}, args...), fakeEnv(env), nil, &out, &out)
	}()
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("serve's output:\n%s", out.String())
		}
	})
	stop := func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("serve: %v", err)
			}
		case <-time.After(20 * time.Second):
			t.Error("serve did not stop within 20s of its context ending")
		}
	}
	t.Cleanup(cancel) // should it never listen
	return waitListening(t, &out, done), stop
}

// waitListening waits until serve's output says it listens, and returns
// the output; it fails the test at once if serve ends (done) before.
func waitListening(t *testing.T, out *testproc.Buffer, done <-chan error) string {
	t.Helper()
	testwait.UntilNil(t, 20*time.Second, func() error {
		select {
		case err := <-done:
			t.Fatalf("serve ended before listening: %v\n%s", err, out.String())
		default:
		}
		if !strings.Contains(out.String(), "kairos listening") {
			return fmt.Errorf("its output so far:\n%s", out.String())
		}
		return nil
	}, "serve saying it listens")
	return out.String()
}

// TestDevModeDeliversToLoopbackSigned: with nothing but `kairos serve`
// (embedded Redis, loopback listener), the banner's admin token registers a
// receiver on this machine, the callback arrives, and the banner's signing
// secret verifies it. With --allow-private-urls=false the same receiver is
// refused, naming the setting.
func TestDevModeDeliversToLoopbackSigned(t *testing.T) {
	banner := servedBanner(t)
	tok := regexp.MustCompile(`eyJ[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+`).FindString(banner)
	secret := regexp.MustCompile(`whsec_[A-Za-z0-9+/=]+`).FindString(banner)
	base := regexp.MustCompile(`kairos is running at (http://\S+)`).FindStringSubmatch(banner)
	if tok == "" || secret == "" || base == nil {
		t.Fatalf("banner lacks the token, the signing secret or the URL:\n%s", banner)
	}
	type hit struct {
		h    http.Header
		body []byte
	}
	hits := make(chan hit, 1)
	rcv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		select {
		case hits <- hit{r.Header.Clone(), b}:
		default:
		}
	}))
	defer rcv.Close()
	c, err := client.New(base[1], client.WithToken(tok))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if _, _, err := c.PutTopic(ctx, "demo", client.TopicRequest{CallbackURL: rcv.URL + "/hook"}); err != nil {
		t.Fatalf("a loopback receiver in dev mode: %v", err)
	}
	if _, err := c.CreateJob(ctx, "demo", client.JobRequest{Delay: client.Duration(time.Millisecond), Payload: json.RawMessage(`{"hello":"dev"}`)}); err != nil {
		t.Fatal(err)
	}
	select {
	case h := <-hits:
		if err := verify.Callback([]string{secret}, h.h, h.body, verify.Options{URL: rcv.URL + "/hook"}); err != nil {
			t.Errorf("the banner's secret does not verify the callback: %v", err)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("no callback within 15s")
	}

	refused := servedBanner(t, "--allow-private-urls=false")
	tok = regexp.MustCompile(`eyJ[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+`).FindString(refused)
	base = regexp.MustCompile(`kairos is running at (http://\S+)`).FindStringSubmatch(refused)
	if c, err = client.New(base[1], client.WithToken(tok)); err != nil {
		t.Fatal(err)
	}
	_, _, err = c.PutTopic(ctx, "demo", client.TopicRequest{CallbackURL: rcv.URL + "/hook"})
	var p *client.Error
	if !errors.As(err, &p) || p.Status != http.StatusBadRequest || !strings.Contains(err.Error(), "allow-private-urls") {
		t.Errorf("--allow-private-urls=false: put topic with a loopback receiver = %v, want a 400 naming the setting", err)
	}
}
