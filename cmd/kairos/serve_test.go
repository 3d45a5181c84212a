package main

import (
	"context"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/kairos-sh/kairos/internal/testproc"
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
			wants: []string{"kairos is running at http://127.0.0.1:", "valid as long as this process runs", "--allow-private-urls"}},
		{name: "given secret", env: map[string]string{"KAIROS_ADDR": "127.0.0.1:0", "KAIROS_AUTH_SECRET": "0123456789abcdef0123"},
			wants: []string{"kairos is running at http://127.0.0.1:", "kairos token --tenant", "--allow-private-urls"}},
		{name: "private urls allowed", env: map[string]string{"KAIROS_ADDR": "127.0.0.1:0"}, args: []string{"--allow-private-urls"}, token: true,
			wants: []string{"kairos is running at", "Callbacks to loopback and private addresses are allowed"}},
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
			deadline := time.Now().Add(20 * time.Second)
			var seen string
			for seen = out.String(); !strings.Contains(seen, "kairos listening"); seen = out.String() {
				select {
				case err := <-done:
					t.Fatalf("serve ended before listening: %v\n%s", err, seen)
				default:
				}
				if time.Now().After(deadline) {
					t.Fatalf("serve did not say it listens within 20s:\n%s", seen)
				}
				time.Sleep(5 * time.Millisecond)
			}
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
