package testredis

import (
	"context"
	"testing"

	"github.com/redis/go-redis/v9"
)

// TestTLSServerAnswersOnlyOverTLS starts a TLS redis-server: a client
// trusting its CA gets PONG, a plain TCP client gets nothing.
func TestTLSServerAnswersOnlyOverTLS(t *testing.T) {
	s := NewTLS(t)
	ctx := context.Background()
	c := redis.NewClient(s.Options())
	defer c.Close()
	if err := c.Ping(ctx).Err(); err != nil {
		t.Fatalf("PING over TLS: %v", err)
	}
	plain := redis.NewClient(&redis.Options{Addr: s.Addr, MaxRetries: -1})
	defer plain.Close()
	if err := plain.Ping(ctx).Err(); err == nil {
		t.Fatal("PING without TLS answered: the server speaks plain TCP too")
	}
}

func TestRefusedTLS(t *testing.T) {
	for said, want := range map[string]bool{
		"*** FATAL CONFIG FILE ERROR (Redis 7.0.15) ***\n>>> 'tls-port \"6380\"'\nBad directive or wrong number of arguments": true,
		"# Failed listening on port 6380 (tls), aborting.":                                                                    false,
		"*** FATAL CONFIG FILE ERROR ***\n>>> 'save-x'\nBad directive or wrong number of arguments":                           false,
	} {
		if got := refusedTLS(said); got != want {
			t.Errorf("refusedTLS(%q) = %v, want %v", said, got, want)
		}
	}
}
