package server

import (
	"github.com/kairos-sh/kairos"
	"github.com/kairos-sh/kairos/api"
	"github.com/kairos-sh/kairos/callback"
	"github.com/kairos-sh/kairos/internal/duration"
	"github.com/kairos-sh/kairos/internal/redact"
	"github.com/kairos-sh/kairos/internal/tracing"

	"crypto/x509"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// Config is the configuration of `kairos serve`. Flags beat KAIROS_*
// environment variables, which beat the defaults. Secrets come from the
// environment only.
type Config struct {
	Addr         string
	RedisURL     string
	RedisCA      string // PEM file of the CA that signs the TLS Redis's certificate; empty: the system's roots
	RedisCluster bool
	// RedisSentinelMaster, when set, is the name of the master the
	// Sentinels in RedisURL watch (KAIROS_REDIS_SENTINEL_MASTER): kairos
	// asks them where it is and follows it through failovers.
	RedisSentinelMaster string
	WaitReplicas        int
	// AllowEviction lets kairos run on a Redis whose maxmemory-policy is
	// not noeviction (KAIROS_ALLOW_EVICTION): eviction deletes jobs.
	AllowEviction bool
	// RedisTimeout bounds the Redis work of one API request (and /readyz):
	// past it the request gets a 503 instead of hanging on a frozen,
	// partitioned or overloaded Redis.
	RedisTimeout time.Duration
	AuthSecret   string // env only
	MetricsToken string // env only; when set, /metrics needs it as a bearer token
	// MetricsAddr, when set, is the listen address of a listener of
	// /metrics alone, and the API's listener no longer serves it. Without
	// it (and without MetricsToken) /metrics answers only on a loopback
	// listener (metricsHandler).
	MetricsAddr string
	// ReadTimeout bounds how long a request may take to arrive, headers
	// and body (a body a route reads is paced instead: api.Config.ReadTimeout);
	// WriteTimeout bounds the rest, from the end of its headers to the last
	// byte of the answer. A silent or trickling client is cut off.
	ReadTimeout  time.Duration
	WriteTimeout time.Duration
	Tracing      bool // env only: the standard OTEL_* variables name an OTLP endpoint (internal/tracing)
	AllowPrivate bool
	// CallbackProxy is the forward proxy every callback goes through
	// (KAIROS_CALLBACK_PROXY, env only: it may hold credentials); nil: direct.
	CallbackProxy *url.URL
	// CallbackCA is the PEM file of roots added to the system's for
	// receivers (KAIROS_CALLBACK_CA), loaded into CallbackRoots.
	CallbackCA    string
	CallbackRoots *x509.CertPool
	// DevPrivateDefault says AllowPrivate is on by the embedded mode's
	// default: no KAIROS_REDIS_URL, listening on loopback only, and neither
	// --allow-private-urls nor KAIROS_ALLOW_PRIVATE_URLS given, so that a
	// newcomer's receiver on this machine works without a restart.
	DevPrivateDefault bool
	// DevSecretsFile is where the embedded dev mode keeps its secrets
	// across restarts (the API tokens' secret unless AuthSecret is set, and
	// DevTenant's signing secrets): kairos/dev-secrets.json in the user's
	// configuration directory. "" with a real Redis, or when there is no
	// such directory: then they are made anew at each start.
	DevSecretsFile string
	Prefix         string
	Shards         int
	Retention      time.Duration
	Roles          map[string]bool
	Grace          time.Duration
	LockTTL        time.Duration
	LeaseGrace     time.Duration
	ReadyLease     time.Duration
	MaxPayload     int64
	// MaxBodyInflight is the API's budget of request body bytes in flight
	// (KAIROS_MAX_BODY_INFLIGHT, api.Config.MaxBodyInflight); 0: its
	// default.
	MaxBodyInflight int64
	// MaxTokenTTL is the longest a token minted through POST /v1/tokens
	// may live (KAIROS_MAX_TOKEN_TTL); none outlives the token that mints
	// it either.
	MaxTokenTTL time.Duration
	// Quota is every tenant's default quota; an admin may set another for
	// one tenant (PUT /v1/tenants/{tenant}/quota). Zero fields: no limit.
	Quota     kairos.Quota
	LogFormat string
	LogLevel  string
}

var allRoles = []string{"api", "scanner", "worker"}

// ParseConfig reads the flags of `kairos serve` from args, their defaults
// from the KAIROS_* variables getenv returns, and checks the result; every
// problem is reported at once. Usage goes to out.
func ParseConfig(args []string, getenv func(string) string, out io.Writer) (Config, error) {
	var c Config
	fs := flag.NewFlagSet("kairos serve", flag.ContinueOnError)
	fs.SetOutput(out)
	env := func(name, def string) string {
		if v := getenv(name); v != "" {
			return v
		}
		return def
	}
	var errs []error
	// envBool reads a boolean variable for a flag's default; a bad value is
	// reported with the others after parsing.
	envBool := func(name string) bool {
		raw := getenv(name)
		if raw == "" {
			return false
		}
		v, err := strconv.ParseBool(raw)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s=%q: use 1, 0, true or false", name, raw))
		}
		return v
	}
	var roles, shards, retention, grace, lockTTL, leaseGrace, readyLease, maxPayload, waitReplicas, redisTimeout string
	var maxPending, rate, burst, readTimeout, writeTimeout, maxTokenTTL, maxBodyInflight string
	fs.StringVar(&c.Addr, "addr", env("KAIROS_ADDR", ""), "listen address of the API and admin page; default :8080, or 127.0.0.1:8080 on the embedded Redis (KAIROS_ADDR)")
	fs.StringVar(&c.RedisURL, "redis-url", env("KAIROS_REDIS_URL", ""), "redis:// or rediss:// URL; empty runs an embedded in-memory Redis (KAIROS_REDIS_URL)")
	fs.StringVar(&c.RedisCA, "redis-ca", env("KAIROS_REDIS_CA", ""), "PEM file of the CA that signed a rediss:// Redis's certificate; default the system's roots (KAIROS_REDIS_CA)")
	fs.BoolVar(&c.RedisCluster, "redis-cluster", envBool("KAIROS_REDIS_CLUSTER"), "KAIROS_REDIS_URL names Redis Cluster nodes, redis://host:port?addr=host2:port (KAIROS_REDIS_CLUSTER=1)")
	fs.StringVar(&c.RedisSentinelMaster, "redis-sentinel-master", env("KAIROS_REDIS_SENTINEL_MASTER", ""), "name of the master that the Redis Sentinels of KAIROS_REDIS_URL watch, redis://sentinel1:26379?addr=sentinel2:26379&addr=sentinel3:26379; kairos follows it through failovers (KAIROS_REDIS_SENTINEL_MASTER)")
	fs.StringVar(&waitReplicas, "wait-replicas", env("KAIROS_WAIT_REPLICAS", "0"), "acknowledge a create only once this many replicas have it (Redis WAIT), so a failover cannot lose it (KAIROS_WAIT_REPLICAS)")
	fs.StringVar(&redisTimeout, "redis-timeout", env("KAIROS_REDIS_TIMEOUT", "1s"), "how long an API request may wait for Redis before it answers 503 (KAIROS_REDIS_TIMEOUT)")
	fs.StringVar(&readTimeout, "read-timeout", env("KAIROS_READ_TIMEOUT", "15s"), "how long a request may take to arrive, headers and body; a body that a route reads gets a second to start and must then arrive at 16KiB a second at least, whatever length it declares, and the rest of the request gets this again from the body's end (KAIROS_READ_TIMEOUT)")
	fs.StringVar(&writeTimeout, "write-timeout", env("KAIROS_WRITE_TIMEOUT", "30s"), "how long a request may take from the end of its headers to the last byte of its answer (POST /v1/tick gets its tick on top) (KAIROS_WRITE_TIMEOUT)")
	fs.StringVar(&c.MetricsAddr, "metrics-addr", env("KAIROS_METRICS_ADDR", ""), "serve /metrics on a listener of its own at this address, such as 127.0.0.1:9090, and not on --addr; unset: /metrics answers on --addr only when that is a loopback address or KAIROS_METRICS_TOKEN is set (KAIROS_METRICS_ADDR)")
	fs.BoolVar(&c.AllowEviction, "allow-eviction", envBool("KAIROS_ALLOW_EVICTION"), "run even when Redis's maxmemory-policy is not noeviction, although an evicting Redis silently deletes jobs (KAIROS_ALLOW_EVICTION=1)")
	fs.BoolVar(&c.AllowPrivate, "allow-private-urls", envBool("KAIROS_ALLOW_PRIVATE_URLS"), "allow callbacks to loopback, private and link-local addresses (KAIROS_ALLOW_PRIVATE_URLS=1); default on with the embedded Redis while listening on loopback only, where --allow-private-urls=false refuses them")
	fs.StringVar(&c.CallbackCA, "callback-ca", env("KAIROS_CALLBACK_CA", ""), "PEM file of CA certificates trusted for callback receivers besides the system's roots (KAIROS_CALLBACK_CA)")
	fs.StringVar(&c.Prefix, "prefix", env("KAIROS_PREFIX", "kairos"), "Redis key prefix, so deployments can share a Redis (KAIROS_PREFIX)")
	fs.StringVar(&shards, "shards", env("KAIROS_SHARDS", ""), "Delay Bucket shards, fixed at first start; unset: as recorded in Redis, or 4 on a fresh Redis (16 on a cluster) (KAIROS_SHARDS)")
	fs.StringVar(&retention, "retention", env("KAIROS_RETENTION", "24h"), "how long delivered jobs stay readable (KAIROS_RETENTION)")
	fs.StringVar(&roles, "roles", env("KAIROS_ROLES", "api,scanner,worker"), "comma-separated roles to run: api, scanner, worker (KAIROS_ROLES)")
	fs.StringVar(&grace, "grace", env("KAIROS_GRACE", "30s"), "how long in-flight callbacks may finish at shutdown (KAIROS_GRACE)")
	fs.StringVar(&lockTTL, "lock-ttl", env("KAIROS_LOCK_TTL", "10s"), "scanner shard lock expiry: how fast a dead instance's shards are taken over (KAIROS_LOCK_TTL)")
	fs.StringVar(&leaseGrace, "lease-grace", env("KAIROS_LEASE_GRACE", "5s"), "added to a callback's timeout to make its lease: a lost worker's job is re-sent after timeout+grace (KAIROS_LEASE_GRACE)")
	fs.StringVar(&readyLease, "ready-lease", env("KAIROS_READY_LEASE", "10s"), "how long past its due time a claimed job may wait for a free worker; a claimed job's lease is its due time + this + its callback timeout + the lease grace, so a job claimed by a process that died is handed out again after that (KAIROS_READY_LEASE)")
	fs.StringVar(&maxPayload, "max-payload", env("KAIROS_MAX_PAYLOAD", "262144"), "largest job payload in bytes, or with a unit such as 1MiB (KAIROS_MAX_PAYLOAD)")
	fs.StringVar(&maxBodyInflight, "max-body-inflight", env("KAIROS_MAX_BODY_INFLIGHT", ""), "most request body bytes the API holds at once, across requests, such as 64MiB; a body past it waits a second, then is answered 503 with Retry-After; unset: 64MiB, or twice the largest body a route takes when that is more (KAIROS_MAX_BODY_INFLIGHT)")
	fs.StringVar(&maxTokenTTL, "max-token-ttl", env("KAIROS_MAX_TOKEN_TTL", "90d"), "longest a token minted through POST /v1/tokens may live, 1m to 365d; none outlives the admin token that mints it (KAIROS_MAX_TOKEN_TTL)")
	fs.StringVar(&maxPending, "tenant-max-pending", env("KAIROS_TENANT_MAX_PENDING", "0"), "default most pending jobs a tenant may hold; 0: no limit (KAIROS_TENANT_MAX_PENDING)")
	fs.StringVar(&rate, "tenant-rate", env("KAIROS_TENANT_RATE", "0"), "default most API requests a tenant may make, as N (a second) or N/PERIOD such as 600/1m; 0: no limit (KAIROS_TENANT_RATE)")
	fs.StringVar(&burst, "tenant-burst", env("KAIROS_TENANT_BURST", "0"), "requests a tenant may make at once within its rate; 0: the rate's N (KAIROS_TENANT_BURST)")
	fs.StringVar(&c.LogFormat, "log-format", env("KAIROS_LOG_FORMAT", "text"), "text or json (KAIROS_LOG_FORMAT)")
	fs.StringVar(&c.LogLevel, "log-level", env("KAIROS_LOG_LEVEL", "info"), "debug, info, warn or error (KAIROS_LOG_LEVEL)")
	if err := fs.Parse(args); err != nil {
		return Config{}, err
	}
	if fs.NArg() > 0 {
		return Config{}, fmt.Errorf("unexpected arguments: %s", strings.Join(fs.Args(), " "))
	}
	c.AuthSecret = getenv("KAIROS_AUTH_SECRET")
	c.MetricsToken = getenv("KAIROS_METRICS_TOKEN")
	c.Tracing = tracing.Enabled(getenv)
	if err := tracing.Check(getenv); err != nil {
		errs = append(errs, err)
	}
	var err error
	if raw := getenv("KAIROS_CALLBACK_PROXY"); raw != "" {
		if c.CallbackProxy, err = callback.ParseProxy(raw); err != nil {
			// the value may hold a password: the error names the variable only
			errs = append(errs, fmt.Errorf("KAIROS_CALLBACK_PROXY: %w", err))
		}
	}
	if c.CallbackCA != "" {
		if c.CallbackRoots, err = callback.LoadRoots(c.CallbackCA); err != nil {
			errs = append(errs, fmt.Errorf("KAIROS_CALLBACK_CA: %w", err))
		}
	}
	if c.Addr == "" {
		c.Addr = ":8080"
		if c.RedisURL == "" {
			c.Addr = "127.0.0.1:8080" // the embedded Redis is for trying kairos out: this machine only
		}
	}
	if c.RedisURL == "" {
		c.DevSecretsFile = devSecretsPath(getenv)
	}
	privateGiven := getenv("KAIROS_ALLOW_PRIVATE_URLS") != ""
	fs.Visit(func(f *flag.Flag) { privateGiven = privateGiven || f.Name == "allow-private-urls" })
	if c.RedisURL == "" && !privateGiven && loopbackOnly(c.Addr) {
		c.AllowPrivate, c.DevPrivateDefault = true, true
	}
	if c.RedisCluster && c.RedisURL == "" {
		errs = append(errs, errors.New("KAIROS_REDIS_CLUSTER needs KAIROS_REDIS_URL naming at least one cluster node"))
	}
	if c.RedisSentinelMaster != "" {
		switch {
		case c.RedisCluster:
			errs = append(errs, errors.New("KAIROS_REDIS_SENTINEL_MASTER and KAIROS_REDIS_CLUSTER are both set: Sentinel watches a single master and its replicas, a cluster fails over by itself; set one of them"))
		case c.RedisURL == "":
			errs = append(errs, errors.New("KAIROS_REDIS_SENTINEL_MASTER needs KAIROS_REDIS_URL naming the Sentinels, redis://sentinel1:26379?addr=sentinel2:26379&addr=sentinel3:26379"))
		default:
			if _, err := sentinelOptions(c.RedisURL, c.RedisSentinelMaster); err != nil {
				errs = append(errs, fmt.Errorf("KAIROS_REDIS_URL: %w", err))
			}
		}
	}
	if c.RedisCA != "" && !strings.HasPrefix(strings.ToLower(c.RedisURL), "rediss://") {
		errs = append(errs, errors.New("KAIROS_REDIS_CA is set but KAIROS_REDIS_URL is not a rediss:// URL: the CA verifies TLS connections only"))
	}
	if c.WaitReplicas, err = strconv.Atoi(waitReplicas); err != nil || c.WaitReplicas < 0 || c.WaitReplicas > 16 {
		errs = append(errs, fmt.Errorf("wait-replicas %q: use a whole number from 0 to 16", waitReplicas))
	}
	if shards == "" {
		c.Shards = 0 // as recorded in Redis, or the default (rdb.Options.Shards)
	} else if c.Shards, err = strconv.Atoi(shards); err != nil || c.Shards < 1 || c.Shards > 4096 {
		errs = append(errs, fmt.Errorf("shards %q: use a whole number from 1 to 4096, or leave it unset", shards))
	}
	if c.MaxPayload, err = parseBytes(maxPayload); err != nil || c.MaxPayload < 1 || c.MaxPayload > 64<<20 {
		errs = append(errs, fmt.Errorf("max-payload %q: use a byte count from 1 to %d (64MiB)", maxPayload, 64<<20))
	} else if maxBodyInflight != "" {
		least := api.LargestBody(c.MaxPayload)
		if c.MaxBodyInflight, err = parseBytes(maxBodyInflight); err != nil || c.MaxBodyInflight < least {
			errs = append(errs, fmt.Errorf("max-body-inflight %q: use a byte count of at least %d, the largest body a route takes with max-payload %d (or leave it unset)",
				maxBodyInflight, least, c.MaxPayload))
		}
	}
	if c.Quota.MaxPending, err = strconv.ParseInt(maxPending, 10, 64); err != nil || c.Quota.MaxPending < 0 {
		errs = append(errs, fmt.Errorf("tenant-max-pending %q: use a whole number of jobs, 0 for no limit", maxPending))
	}
	if c.Quota.Rate, c.Quota.RatePeriod, err = ParseRate(rate); err != nil {
		errs = append(errs, fmt.Errorf("tenant-rate %q: %v", rate, err))
	}
	if c.Quota.Burst, err = strconv.Atoi(burst); err != nil || c.Quota.Burst < 0 || c.Quota.Burst > 1_000_000 {
		errs = append(errs, fmt.Errorf("tenant-burst %q: use a whole number from 0 to 1000000 (0: the rate's N)", burst))
	}
	c.Quota = c.Quota.WithDefaults()
	durations := []struct {
		name string
		raw  string
		dst  *time.Duration
		min  time.Duration
	}{{"retention", retention, &c.Retention, time.Second}, {"grace", grace, &c.Grace, 0}, {"lock-ttl", lockTTL, &c.LockTTL, 300 * time.Millisecond}, {"lease-grace", leaseGrace, &c.LeaseGrace, 100 * time.Millisecond},
		{"ready-lease", readyLease, &c.ReadyLease, time.Second}, {"redis-timeout", redisTimeout, &c.RedisTimeout, 100 * time.Millisecond},
		{"read-timeout", readTimeout, &c.ReadTimeout, 100 * time.Millisecond}, {"write-timeout", writeTimeout, &c.WriteTimeout, 100 * time.Millisecond},
		{"max-token-ttl", maxTokenTTL, &c.MaxTokenTTL, time.Minute}}
	for _, d := range durations {
		v, err := duration.Parse(d.raw)
		if err != nil || v < d.min {
			errs = append(errs, fmt.Errorf("%s %q: use a duration of at least %s such as \"30s\" or \"7d\"", d.name, d.raw, d.min))
		}
		*d.dst = v
	}
	if c.MaxTokenTTL > 365*24*time.Hour {
		errs = append(errs, fmt.Errorf("max-token-ttl %q: use a duration from 1m to 365d", maxTokenTTL))
	}
	if c.WriteTimeout > 0 && c.WriteTimeout <= c.RedisTimeout {
		errs = append(errs, fmt.Errorf("write-timeout %s: make it longer than redis-timeout (%s), or requests are cut off before Redis answers them", c.WriteTimeout, c.RedisTimeout))
	}
	if c.MetricsAddr != "" && c.MetricsAddr == c.Addr && !strings.HasSuffix(c.Addr, ":0") {
		errs = append(errs, fmt.Errorf("metrics-addr %q is the API's address: give /metrics a listener of its own, or leave it unset", c.MetricsAddr))
	}
	c.Roles = map[string]bool{}
	for _, r := range strings.Split(roles, ",") {
		r = strings.TrimSpace(r)
		if r == "" {
			continue
		}
		ok := false
		for _, a := range allRoles {
			ok = ok || r == a
		}
		if !ok {
			errs = append(errs, fmt.Errorf("role %q: use api, scanner or worker", r))
		}
		c.Roles[r] = true
	}
	if len(c.Roles) == 0 {
		errs = append(errs, errors.New("roles: name at least one of api, scanner, worker"))
	}
	if c.LogFormat != "text" && c.LogFormat != "json" {
		errs = append(errs, fmt.Errorf("log-format %q: use text or json", c.LogFormat))
	}
	if c.RedisURL != "" && c.Roles["api"] && c.AuthSecret == "" {
		errs = append(errs, errors.New("KAIROS_AUTH_SECRET is required with an external Redis (the API verifies tokens with it); generate one with `openssl rand -base64 32`"))
	}
	if c.AuthSecret != "" && len(c.AuthSecret) < 16 {
		errs = append(errs, errors.New("KAIROS_AUTH_SECRET is too short: use at least 16 characters (32 random bytes recommended)"))
	}
	return c, errors.Join(errs...)
}

// loopbackOnly reports whether the listen address addr takes connections
// from this machine only: its host is a loopback address or localhost.
func loopbackOnly(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if strings.EqualFold(host, "localhost") {
		return true
	}
	a, err := netip.ParseAddr(host)
	return err == nil && a.IsLoopback()
}

// NewLogger is the logger of cfg's format and level, writing to w, with
// the URLs in every line redacted (internal/redact).
func NewLogger(cfg Config, w io.Writer) *slog.Logger {
	var level slog.Level
	if err := level.UnmarshalText([]byte(cfg.LogLevel)); err != nil {
		level = slog.LevelInfo
	}
	opts := &slog.HandlerOptions{Level: level}
	// Every line goes through redact: a callback URL's query or user info
	// (a token) is never written, whoever logs it.
	if cfg.LogFormat == "json" {
		return slog.New(redact.Handler(slog.NewJSONHandler(w, opts)))
	}
	return slog.New(redact.Handler(slog.NewTextHandler(w, opts)))
}

// RoleList names the roles cfg runs, such as "api,scanner,worker".
func RoleList(cfg Config) string {
	var out []string
	for _, r := range allRoles {
		if cfg.Roles[r] {
			out = append(out, r)
		}
	}
	return strings.Join(out, ",")
}

// parseBytes reads a byte count: a whole number, or one with a unit of
// KiB, MiB or GiB (1024-based) such as "64MiB".
func parseBytes(s string) (int64, error) {
	num, unit := s, int64(1)
	for suffix, u := range map[string]int64{"KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30} {
		if n, ok := strings.CutSuffix(s, suffix); ok {
			num, unit = n, u
		}
	}
	n, err := strconv.ParseInt(num, 10, 64)
	if err != nil || n < 0 || n > (1<<62)/unit {
		return 0, errors.New("not a byte count")
	}
	return n * unit, nil
}

// ParseRate reads a request rate: "N" (a second) or "N/PERIOD" with
// PERIOD a Go duration ("600/1m"); "0" is no limit.
func ParseRate(s string) (int, time.Duration, error) {
	n, per, hasPer := strings.Cut(strings.TrimSpace(s), "/")
	rate, err := strconv.Atoi(n)
	if err != nil || rate < 0 || rate > 1_000_000 {
		return 0, 0, errors.New("use N or N/PERIOD, N a whole number of requests from 0 to 1000000 and PERIOD a duration such as 1s or 1m")
	}
	if rate == 0 {
		return 0, 0, nil
	}
	period := time.Second
	if hasPer {
		if period, err = duration.Parse(per); err != nil || period < time.Millisecond || period > 24*time.Hour {
			return 0, 0, errors.New("PERIOD must be a duration from 1ms to 24h, such as 1s or 1m")
		}
	}
	return rate, period, nil
}
