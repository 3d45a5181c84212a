package server

import (
	"io"
	"log/slog"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/redis/go-redis/v9"
)

// TestRedisPools: both clients get their pool's name, size and idle bound;
// pool_size, max_idle_conns and client_name in the URL change the main
// pool (and the names), never the blocking pool's size or idle bound; the
// same for a cluster URL.
func TestRedisPools(t *testing.T) {
	type pool struct {
		Name          string
		Size, MaxIdle int
	}
	tests := []struct {
		name           string
		url            string
		cluster        bool
		main, blocking pool
	}{
		{name: "defaults", url: "redis://127.0.0.1:1",
			main: pool{"kairos:main", 128, 3}, blocking: pool{"kairos:blocking", 4096, 2}},
		{name: "URL settings", url: "redis://127.0.0.1:1?pool_size=64&max_idle_conns=8&client_name=eu",
			main: pool{"eu:main", 64, 8}, blocking: pool{"eu:blocking", 4096, 2}},
		{name: "cluster defaults", url: "redis://127.0.0.1:1?addr=127.0.0.1:2", cluster: true,
			main: pool{"kairos:main", 128, 3}, blocking: pool{"kairos:blocking", 4096, 2}},
		{name: "cluster URL settings", url: "redis://127.0.0.1:1?addr=127.0.0.1:2&pool_size=64&max_idle_conns=8&client_name=eu", cluster: true,
			main: pool{"eu:main", 64, 8}, blocking: pool{"eu:blocking", 4096, 2}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			client, blocking, closeEmbedded, err := redisClients(Config{RedisURL: tt.url, RedisCluster: tt.cluster}, slog.New(slog.NewTextHandler(io.Discard, nil)))
			if err != nil {
				t.Fatal(err)
			}
			defer closeEmbedded()
			defer client.Close()
			defer blocking.Close()
			of := func(c redis.UniversalClient) pool {
				switch c := c.(type) {
				case *redis.Client:
					o := c.Options()
					return pool{o.ClientName, o.PoolSize, o.MaxIdleConns}
				case *redis.ClusterClient:
					o := c.Options()
					return pool{o.ClientName, o.PoolSize, o.MaxIdleConns}
				}
				t.Fatalf("client of type %T", c)
				return pool{}
			}
			if diff := cmp.Diff(tt.main, of(client)); diff != "" {
				t.Errorf("main pool (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.blocking, of(blocking)); diff != "" {
				t.Errorf("blocking pool (-want +got):\n%s", diff)
			}
		})
	}
}
