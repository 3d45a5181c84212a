package server

import (
	"encoding/pem"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/kairos-sh/kairos"
)

func fakeEnv(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

func TestParseConfig(t *testing.T) {
	defaults := Config{Addr: "127.0.0.1:8080", Prefix: "kairos", Shards: 0, Retention: 24 * time.Hour,
		Roles: map[string]bool{"api": true, "scanner": true, "worker": true}, Grace: 30 * time.Second,
		LockTTL: 10 * time.Second, LeaseGrace: 5 * time.Second, ReadyLease: 10 * time.Second, MaxPayload: 256 << 10, LogFormat: "text", LogLevel: "info",
		RedisTimeout: time.Second, ReadTimeout: 15 * time.Second, WriteTimeout: 30 * time.Second, AllowPrivate: true, DevPrivateDefault: true,
		MaxTokenTTL: 90 * 24 * time.Hour}
	tests := []struct {
		name    string
		args    []string
		env     map[string]string
		want    func(c *Config)
		wantErr string
	}{
		{name: "defaults"},
		{name: "env", env: map[string]string{"KAIROS_ADDR": ":9000", "KAIROS_REDIS_URL": "redis://r:6379", "KAIROS_AUTH_SECRET": "0123456789abcdef",
			"KAIROS_ALLOW_PRIVATE_URLS": "1", "KAIROS_SHARDS": "32", "KAIROS_ROLES": "worker,scanner"},
			want: func(c *Config) {
				c.DevPrivateDefault = false
				c.Addr, c.RedisURL, c.AuthSecret, c.AllowPrivate, c.Shards = ":9000", "redis://r:6379", "0123456789abcdef", true, 32
				c.Roles = map[string]bool{"worker": true, "scanner": true}
			}},
		{name: "flag beats env", args: []string{"--addr", ":7000", "--retention", "1h"}, env: map[string]string{"KAIROS_ADDR": ":9000"},
			want: func(c *Config) {
				c.AllowPrivate, c.DevPrivateDefault = false, false
				c.Addr, c.Retention = ":7000", time.Hour
			}},
		{name: "durations in days", args: []string{"--grace", "0.5d"}, env: map[string]string{"KAIROS_RETENTION": "7d", "KAIROS_TENANT_RATE": "1000/1d"},
			want: func(c *Config) {
				c.Retention, c.Grace = 7*24*time.Hour, 12*time.Hour
				c.Quota = kairos.Quota{Rate: 1000, RatePeriod: 24 * time.Hour, Burst: 1000}
			}},
		{name: "bad duration", env: map[string]string{"KAIROS_RETENTION": "7 days"}, wantErr: `retention "7 days": use a duration of at least 1s such as "30s" or "7d"`},
		{name: "embedded binds loopback, an external Redis every interface", env: map[string]string{"KAIROS_REDIS_URL": "redis://r:6379", "KAIROS_AUTH_SECRET": "0123456789abcdef"},
			want: func(c *Config) {
				c.AllowPrivate, c.DevPrivateDefault = false, false
				c.Addr, c.RedisURL, c.AuthSecret = ":8080", "redis://r:6379", "0123456789abcdef"
			}},
		{name: "an explicit address is kept in embedded mode", args: []string{"--addr", ":8080"}, want: func(c *Config) { c.AllowPrivate, c.DevPrivateDefault = false, false; c.Addr = ":8080" }},
		{name: "tenant quota from env", env: map[string]string{"KAIROS_TENANT_MAX_PENDING": "5000", "KAIROS_TENANT_RATE": "600/1m"},
			want: func(c *Config) {
				c.Quota = kairos.Quota{MaxPending: 5000, Rate: 600, RatePeriod: time.Minute, Burst: 600}
			}},
		{name: "tenant quota flags", args: []string{"--tenant-rate", "20", "--tenant-burst", "50"},
			want: func(c *Config) { c.Quota = kairos.Quota{Rate: 20, RatePeriod: time.Second, Burst: 50} }},
		{name: "timeouts and metrics address from env", env: map[string]string{"KAIROS_READ_TIMEOUT": "5s", "KAIROS_WRITE_TIMEOUT": "1m", "KAIROS_METRICS_ADDR": "127.0.0.1:9090"},
			want: func(c *Config) {
				c.ReadTimeout, c.WriteTimeout, c.MetricsAddr = 5*time.Second, time.Minute, "127.0.0.1:9090"
			}},
		{name: "timeout flags beat env", args: []string{"--read-timeout", "2s", "--write-timeout", "3s", "--metrics-addr", ":9091"},
			env:  map[string]string{"KAIROS_READ_TIMEOUT": "5s", "KAIROS_WRITE_TIMEOUT": "1m", "KAIROS_METRICS_ADDR": "127.0.0.1:9090"},
			want: func(c *Config) { c.ReadTimeout, c.WriteTimeout, c.MetricsAddr = 2*time.Second, 3*time.Second, ":9091" }},
		{name: "body budget and payload with units", env: map[string]string{"KAIROS_MAX_BODY_INFLIGHT": "128MiB", "KAIROS_MAX_PAYLOAD": "1MiB"},
			want: func(c *Config) { c.MaxBodyInflight, c.MaxPayload = 128<<20, 1<<20 }},
		{name: "body budget in bytes", args: []string{"--max-body-inflight", "40000000"}, want: func(c *Config) { c.MaxBodyInflight = 40_000_000 }},
		{name: "body budget below the largest body", env: map[string]string{"KAIROS_MAX_BODY_INFLIGHT": "1MiB"},
			wantErr: `max-body-inflight "1MiB": use a byte count of at least 33554432, the largest body a route takes with max-payload 262144`},
		{name: "body budget not a byte count", env: map[string]string{"KAIROS_MAX_BODY_INFLIGHT": "lots"}, wantErr: `max-body-inflight "lots": use a byte count`},
		{name: "max token ttl from env", env: map[string]string{"KAIROS_MAX_TOKEN_TTL": "7d"}, want: func(c *Config) { c.MaxTokenTTL = 7 * 24 * time.Hour }},
		{name: "max token ttl flag beats env", args: []string{"--max-token-ttl", "12h"}, env: map[string]string{"KAIROS_MAX_TOKEN_TTL": "7d"},
			want: func(c *Config) { c.MaxTokenTTL = 12 * time.Hour }},
		{name: "max token ttl too long", env: map[string]string{"KAIROS_MAX_TOKEN_TTL": "366d"}, wantErr: `max-token-ttl "366d": use a duration from 1m to 365d`},
		{name: "max token ttl too short", env: map[string]string{"KAIROS_MAX_TOKEN_TTL": "30s"}, wantErr: `max-token-ttl "30s": use a duration of at least 1m0s`},
		{name: "read timeout too short", args: []string{"--read-timeout", "1ms"}, wantErr: "read-timeout \"1ms\": use a duration of at least 100ms"},
		{name: "write timeout within the Redis timeout", args: []string{"--write-timeout", "500ms"}, wantErr: "write-timeout 500ms: make it longer than redis-timeout"},
		{name: "metrics on the API's address", args: []string{"--metrics-addr", "127.0.0.1:8080"}, wantErr: "metrics-addr \"127.0.0.1:8080\" is the API's address"},
		{name: "bad tenant rate", args: []string{"--tenant-rate", "fast"}, wantErr: "tenant-rate \"fast\": use N or N/PERIOD"},
		{name: "bad tenant rate period", args: []string{"--tenant-rate", "5/soon"}, wantErr: "PERIOD must be a duration"},
		{name: "negative max pending", env: map[string]string{"KAIROS_TENANT_MAX_PENDING": "-1"}, wantErr: "tenant-max-pending \"-1\""},
		{name: "bare boolean flag", args: []string{"--allow-private-urls"}, want: func(c *Config) { c.DevPrivateDefault = false }},
		{name: "boolean flag =true", args: []string{"--allow-private-urls=true"}, want: func(c *Config) { c.DevPrivateDefault = false }},
		{name: "boolean flag =1", args: []string{"--allow-private-urls=1"}, want: func(c *Config) { c.DevPrivateDefault = false }},
		{name: "boolean flag =0 beats env", args: []string{"--allow-private-urls=0"}, env: map[string]string{"KAIROS_ALLOW_PRIVATE_URLS": "1"},
			want: func(c *Config) { c.AllowPrivate, c.DevPrivateDefault = false, false }},
		{name: "boolean flag =false", args: []string{"-allow-private-urls=false"}, want: func(c *Config) { c.AllowPrivate, c.DevPrivateDefault = false, false }},
		{name: "embedded on loopback allows private URLs by default", args: []string{"--addr", "localhost:9000"},
			want: func(c *Config) { c.Addr = "localhost:9000" }},
		{name: "embedded on IPv6 loopback too", env: map[string]string{"KAIROS_ADDR": "[::1]:0"}, want: func(c *Config) { c.Addr = "[::1]:0" }},
		{name: "embedded refuses them when told, by env", env: map[string]string{"KAIROS_ALLOW_PRIVATE_URLS": "0"},
			want: func(c *Config) { c.AllowPrivate, c.DevPrivateDefault = false, false }},
		{name: "embedded on every interface keeps refusing them", env: map[string]string{"KAIROS_ADDR": "0.0.0.0:8080"},
			want: func(c *Config) { c.Addr, c.AllowPrivate, c.DevPrivateDefault = "0.0.0.0:8080", false, false }},
		{name: "an external Redis on loopback keeps refusing them", env: map[string]string{"KAIROS_REDIS_URL": "redis://r:6379", "KAIROS_AUTH_SECRET": "0123456789abcdef", "KAIROS_ADDR": "127.0.0.1:8080"},
			want: func(c *Config) {
				c.AllowPrivate, c.DevPrivateDefault = false, false
				c.RedisURL, c.AuthSecret = "redis://r:6379", "0123456789abcdef"
			}},
		{name: "env true", env: map[string]string{"KAIROS_ALLOW_PRIVATE_URLS": "true"}, want: func(c *Config) { c.DevPrivateDefault = false }},
		{name: "bare cluster flag", args: []string{"--redis-cluster", "--redis-url", "redis://r:1"}, env: map[string]string{"KAIROS_AUTH_SECRET": "0123456789abcdef"},
			want: func(c *Config) {
				c.AllowPrivate, c.DevPrivateDefault = false, false
				c.RedisCluster, c.RedisURL, c.AuthSecret, c.Addr = true, "redis://r:1", "0123456789abcdef", ":8080"
			}},
		{name: "sentinel master from env", env: map[string]string{"KAIROS_REDIS_URL": "redis://s1:26379?addr=s2:26379", "KAIROS_REDIS_SENTINEL_MASTER": "mymaster", "KAIROS_AUTH_SECRET": "0123456789abcdef"},
			want: func(c *Config) {
				c.AllowPrivate, c.DevPrivateDefault = false, false
				c.RedisURL, c.RedisSentinelMaster, c.AuthSecret, c.Addr = "redis://s1:26379?addr=s2:26379", "mymaster", "0123456789abcdef", ":8080"
			}},
		{name: "sentinel master flag beats env", args: []string{"--redis-sentinel-master", "other"},
			env: map[string]string{"KAIROS_REDIS_URL": "redis://s1:26379", "KAIROS_REDIS_SENTINEL_MASTER": "mymaster", "KAIROS_AUTH_SECRET": "0123456789abcdef"},
			want: func(c *Config) {
				c.AllowPrivate, c.DevPrivateDefault = false, false
				c.RedisURL, c.RedisSentinelMaster, c.AuthSecret, c.Addr = "redis://s1:26379", "other", "0123456789abcdef", ":8080"
			}},
		{name: "sentinel and cluster", env: map[string]string{"KAIROS_REDIS_URL": "redis://s1:26379", "KAIROS_REDIS_SENTINEL_MASTER": "mymaster", "KAIROS_REDIS_CLUSTER": "1", "KAIROS_AUTH_SECRET": "0123456789abcdef"},
			wantErr: "KAIROS_REDIS_SENTINEL_MASTER and KAIROS_REDIS_CLUSTER are both set"},
		{name: "sentinel master without a URL", args: []string{"--redis-sentinel-master", "mymaster"}, wantErr: "KAIROS_REDIS_SENTINEL_MASTER needs KAIROS_REDIS_URL naming the Sentinels"},
		{name: "sentinel URL checked at start", env: map[string]string{"KAIROS_REDIS_URL": "redis://s1:26379?master_name=x", "KAIROS_REDIS_SENTINEL_MASTER": "mymaster", "KAIROS_AUTH_SECRET": "0123456789abcdef"},
			wantErr: "KAIROS_REDIS_URL: parameter master_name is not taken with KAIROS_REDIS_SENTINEL_MASTER"},
		{name: "sentinel URL that is not one", env: map[string]string{"KAIROS_REDIS_URL": "unix:///run/redis.sock", "KAIROS_REDIS_SENTINEL_MASTER": "mymaster", "KAIROS_AUTH_SECRET": "0123456789abcdef"},
			wantErr: "want redis://[user:password@]sentinel1:26379"},
		{name: "sentinel over TLS with a CA", env: map[string]string{"KAIROS_REDIS_URL": "rediss://s1:26379", "KAIROS_REDIS_SENTINEL_MASTER": "m", "KAIROS_REDIS_CA": "/ca.pem", "KAIROS_AUTH_SECRET": "0123456789abcdef"},
			want: func(c *Config) {
				c.AllowPrivate, c.DevPrivateDefault = false, false
				c.RedisURL, c.RedisSentinelMaster, c.RedisCA, c.AuthSecret, c.Addr = "rediss://s1:26379", "m", "/ca.pem", "0123456789abcdef", ":8080"
			}},
		{name: "redis CA", env: map[string]string{"KAIROS_REDIS_URL": "rediss://r:6380", "KAIROS_REDIS_CA": "/etc/ca.pem", "KAIROS_AUTH_SECRET": "0123456789abcdef"},
			want: func(c *Config) {
				c.AllowPrivate, c.DevPrivateDefault = false, false
				c.RedisURL, c.RedisCA, c.AuthSecret, c.Addr = "rediss://r:6380", "/etc/ca.pem", "0123456789abcdef", ":8080"
			}},
		{name: "redis CA flag beats env", args: []string{"--redis-ca", "/flag.pem"},
			env: map[string]string{"KAIROS_REDIS_URL": "REDISS://r:6380", "KAIROS_REDIS_CA": "/env.pem", "KAIROS_AUTH_SECRET": "0123456789abcdef"},
			want: func(c *Config) {
				c.AllowPrivate, c.DevPrivateDefault = false, false
				c.RedisURL, c.RedisCA, c.AuthSecret, c.Addr = "REDISS://r:6380", "/flag.pem", "0123456789abcdef", ":8080"
			}},
		{name: "redis CA needs rediss", env: map[string]string{"KAIROS_REDIS_URL": "redis://r:6379", "KAIROS_REDIS_CA": "/etc/ca.pem", "KAIROS_AUTH_SECRET": "0123456789abcdef"},
			wantErr: "KAIROS_REDIS_CA is set but KAIROS_REDIS_URL is not a rediss:// URL"},
		{name: "redis CA on the embedded Redis", env: map[string]string{"KAIROS_REDIS_CA": "/etc/ca.pem"}, wantErr: "not a rediss:// URL"},
		{name: "ready lease", env: map[string]string{"KAIROS_READY_LEASE": "5s"}, want: func(c *Config) { c.ReadyLease = 5 * time.Second }},
		{name: "ready lease too short", args: []string{"--ready-lease", "10ms"}, wantErr: "ready-lease"},
		{name: "redis timeout", env: map[string]string{"KAIROS_REDIS_TIMEOUT": "3s"}, want: func(c *Config) { c.RedisTimeout = 3 * time.Second }},
		{name: "redis timeout too short", args: []string{"--redis-timeout", "5ms"}, wantErr: "redis-timeout"},
		{name: "allow eviction", env: map[string]string{"KAIROS_ALLOW_EVICTION": "1"}, want: func(c *Config) { c.AllowEviction = true }},
		{name: "allow eviction flag", args: []string{"--allow-eviction"}, want: func(c *Config) { c.AllowEviction = true }},
		{name: "bad shards", args: []string{"--shards", "0"}, wantErr: "shards"},
		{name: "bad role", args: []string{"--roles", "api,cron"}, wantErr: `role "cron"`},
		{name: "bad duration", env: map[string]string{"KAIROS_GRACE": "soon"}, wantErr: "grace"},
		{name: "bad bool", env: map[string]string{"KAIROS_ALLOW_PRIVATE_URLS": "yes please"}, wantErr: "KAIROS_ALLOW_PRIVATE_URLS"},
		{name: "external redis needs a secret", env: map[string]string{"KAIROS_REDIS_URL": "redis://r:6379"}, wantErr: "KAIROS_AUTH_SECRET is required"},
		{name: "workers alone need no secret", env: map[string]string{"KAIROS_REDIS_URL": "redis://r:6379", "KAIROS_ROLES": "worker"},
			want: func(c *Config) {
				c.AllowPrivate, c.DevPrivateDefault = false, false
				c.RedisURL, c.Roles, c.Addr = "redis://r:6379", map[string]bool{"worker": true}, ":8080"
			}},
		{name: "short secret", env: map[string]string{"KAIROS_AUTH_SECRET": "short"}, wantErr: "too short"},
		{name: "secret is not a flag", args: []string{"--auth-secret", "x"}, wantErr: "flag provided but not defined"},
		{name: "stray argument", args: []string{"extra"}, wantErr: "unexpected arguments"},
		{name: "OTLP over gRPC is refused at start", env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://otel:4317", "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"},
			wantErr: "OTEL_EXPORTER_OTLP_PROTOCOL=grpc: kairos sends traces over OTLP/HTTP only"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseConfig(tt.args, fakeEnv(tt.env), io.Discard)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			want := defaults
			want.Roles = map[string]bool{"api": true, "scanner": true, "worker": true}
			if tt.want != nil {
				tt.want(&want)
			}
			if d := cmp.Diff(want, got); d != "" {
				t.Errorf("config (-want +got):\n%s", d)
			}
		})
	}
}

// FuzzParseRate: no panic; an accepted rate is in range, and 0 is no limit.
func FuzzParseRate(f *testing.F) {
	for _, s := range []string{"0", "5", "600/1m", "5/0s", "-1", "1/", "/1s", "1000001", "7/24h1ns", " 3/1ms ", "1e3"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		n, per, err := ParseRate(s)
		if err != nil {
			return
		}
		if n < 0 || n > 1_000_000 || (n > 0 && (per < time.Millisecond || per > 24*time.Hour)) || (n == 0 && per != 0) {
			t.Errorf("ParseRate(%q) = %d, %s", s, n, per)
		}
	})
}

func TestParseConfigCallbackEgress(t *testing.T) {
	dir := t.TempDir()
	srv := httptest.NewTLSServer(http.NotFoundHandler())
	srv.Close()
	ca := filepath.Join(dir, "ca.pem")
	os.WriteFile(ca, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}), 0o600)
	empty := filepath.Join(dir, "empty.pem")
	os.WriteFile(empty, []byte("nothing"), 0o600)
	parse := func(args []string, env map[string]string) (Config, error) {
		return ParseConfig(args, func(k string) string { return env[k] }, io.Discard)
	}

	c, err := parse(nil, map[string]string{"KAIROS_CALLBACK_PROXY": "http://user:s3cret@proxy.internal:3128", "KAIROS_CALLBACK_CA": ca})
	if err != nil {
		t.Fatal(err)
	}
	if c.CallbackProxy == nil || c.CallbackProxy.Host != "proxy.internal:3128" || c.CallbackCA != ca || c.CallbackRoots == nil {
		t.Errorf("proxy %v, CA %q, roots %v", c.CallbackProxy, c.CallbackCA, c.CallbackRoots)
	}
	if c, err := parse([]string{"--callback-ca", ca}, nil); err != nil || c.CallbackRoots == nil {
		t.Errorf("--callback-ca: %v", err)
	}
	if c, err := parse(nil, nil); err != nil || c.CallbackProxy != nil || c.CallbackRoots != nil {
		t.Errorf("unset: proxy %v, roots %v, %v", c.CallbackProxy, c.CallbackRoots, err)
	}
	for _, tc := range []struct {
		env  map[string]string
		want string
	}{
		{map[string]string{"KAIROS_CALLBACK_PROXY": "socks5://user:s3cret@proxy:1080"}, "KAIROS_CALLBACK_PROXY: callback proxy must be an http:// or https:// URL"},
		{map[string]string{"KAIROS_CALLBACK_PROXY": "http://user:s3cret@proxy/x"}, "KAIROS_CALLBACK_PROXY: callback proxy must not have a path"},
		{map[string]string{"KAIROS_CALLBACK_CA": empty}, "KAIROS_CALLBACK_CA: callback CA " + empty + ": no PEM certificate"},
		{map[string]string{"KAIROS_CALLBACK_CA": filepath.Join(dir, "missing.pem")}, "KAIROS_CALLBACK_CA: callback CA: open"},
	} {
		_, err := parse(nil, tc.env)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: %v, want %q", tc.env, err, tc.want)
		}
		if err != nil && strings.Contains(err.Error(), "s3cret") {
			t.Errorf("the error shows the proxy's password: %v", err)
		}
	}
}

// TestLoggerRedactsURLs: every line of the process's logger, text or JSON,
// has URL queries and user info redacted, whoever logs them.
func TestLoggerRedactsURLs(t *testing.T) {
	for _, format := range []string{"text", "json"} {
		var b strings.Builder
		log := NewLogger(Config{LogFormat: format, LogLevel: "debug"}, &b)
		log.With("target", "https://u:secret@example.com/a").Debug("fire https://example.com/b?access_token=secret",
			"url", "https://example.com/c?access_token=secret", "err", errors.New(`Post "https://example.com/d?sig=secret": EOF`))
		if out := b.String(); strings.Contains(out, "secret") || !strings.Contains(out, "example.com/c?redacted") {
			t.Errorf("%s: %s", format, out)
		}
	}
}

// TestDevSecretsPath: the embedded dev mode keeps its secrets under
// $XDG_CONFIG_HOME, else ~/.config (on Linux), and nowhere without either;
// a real Redis keeps none.
func TestDevSecretsPath(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the XDG layout is Linux's")
	}
	for _, tc := range []struct {
		name string
		env  map[string]string
		want string
	}{
		{"xdg", map[string]string{"XDG_CONFIG_HOME": "/x/cfg", "HOME": "/home/u"}, "/x/cfg/kairos/dev-secrets.json"},
		{"home", map[string]string{"HOME": "/home/u"}, "/home/u/.config/kairos/dev-secrets.json"},
		{"relative xdg is ignored", map[string]string{"XDG_CONFIG_HOME": "cfg", "HOME": "/home/u"}, "/home/u/.config/kairos/dev-secrets.json"},
		{"neither", map[string]string{}, ""},
		{"real redis", map[string]string{"HOME": "/home/u", "KAIROS_REDIS_URL": "redis://r:6379", "KAIROS_AUTH_SECRET": "0123456789abcdef"}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := ParseConfig(nil, func(k string) string { return tc.env[k] }, io.Discard)
			if err != nil {
				t.Fatal(err)
			}
			if c.DevSecretsFile != tc.want {
				t.Errorf("DevSecretsFile = %q, want %q", c.DevSecretsFile, tc.want)
			}
		})
	}
}
