package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/kairos-sh/kairos/bench/internal/bench"
)

// benchKairos is a kairos binary this tool runs: `kairos serve` with every
// role, API on a free loopback port, on its own key prefix, with private
// callback URLs allowed.
type benchKairos struct {
	target bench.Target
	stop   func() error
}

// redisClient is the tool's own client of the Redis kairos runs on, for
// its figures; its commands are not counted as kairos's.
func redisClient(redisURL string) (*redis.Client, error) {
	opt, err := redis.ParseURL(redisURL)
	if err != nil {
		return nil, fmt.Errorf("--redis-url: %w (want redis://host:port)", err)
	}
	opt.ClientName = bench.ClientName
	opt.ReadTimeout = time.Minute // SLOWLOG GET of a full slow log is a large reply
	return redis.NewClient(opt), nil
}

// kairosConfig is how the tool runs kairos: the binary and the KAIROS_*
// variables every process it starts shares.
type kairosConfig struct {
	bin    string
	env    []string
	logOut io.Writer // the children's stdout and stderr
}

// startKairos checks that prefix is unused, runs bin as `kairos serve`
// on it and mints a token with `kairos token`. stop stops the process
// (SIGTERM: serve's orderly shutdown) and deletes every key under prefix.
func startKairos(ctx context.Context, bin, redisURL, prefix string, shards int, logLevel string, logOut io.Writer) (*benchKairos, error) {
	if _, err := os.Stat(bin); err != nil {
		return nil, fmt.Errorf("the kairos binary: %w (make build puts it in bin/kairos; or name one with --kairos-bin)", err)
	}
	probe, err := redisClient(redisURL)
	if err != nil {
		return nil, err
	}
	if used, err := prefixInUse(ctx, probe, prefix); err != nil || used {
		probe.Close()
		if err != nil {
			return nil, fmt.Errorf("reach Redis: %w", err)
		}
		return nil, fmt.Errorf("--prefix %q is in use on this Redis; the bench deletes its prefix afterwards, so it needs an unused one", prefix)
	}
	secret := randomHex(32)
	kc := kairosConfig{bin: bin, logOut: logOut, env: []string{"KAIROS_REDIS_URL=" + redisURL, "KAIROS_PREFIX=" + prefix,
		"KAIROS_ALLOW_PRIVATE_URLS=1", "KAIROS_GRACE=5s", "KAIROS_AUTH_SECRET=" + secret, "KAIROS_LOG_LEVEL=" + logLevel}}
	if shards > 0 {
		kc.env = append(kc.env, "KAIROS_SHARDS="+strconv.Itoa(shards))
	}
	token, err := kc.token(ctx)
	if err != nil {
		probe.Close()
		return nil, err
	}
	first, err := kc.start(ctx)
	if err != nil {
		probe.Close()
		dropPrefix(probe, prefix)
		return nil, err
	}
	stop := func() error {
		first.stop()
		err := dropPrefix(probe, prefix)
		probe.Close()
		return err
	}
	shardsNote := "kairos's default shards"
	if shards > 0 {
		shardsNote = fmt.Sprintf("%d shards", shards)
	}
	return &benchKairos{stop: stop, target: bench.Target{
		URL: first.url, Token: token, Redis: benchRedis{probe},
		DropJobs: func(ctx context.Context) (int, error) {
			// A shard's hash tag is {N}, a digit first, unlike {handles}
			// and the other tags that hold topics: jobs go, topics stay.
			// The scanners' shard mutexes stay too: deleting one under its
			// holder fails the holder's next extension (a warning, and the
			// shard taken again).
			return unlinkMatching(ctx, probe, globEscape(prefix)+":{[0-9]*", func(key string) bool {
				return strings.HasSuffix(key, shardMutexSuffix)
			})
		},
		ProcessCPU: first.cpu,
		Counters:   first.counters,
		StartProcess: func(ctx context.Context) (func(), error) {
			p, err := kc.start(ctx)
			if err != nil {
				return nil, err
			}
			return p.stop, nil
		},
		// the children find the shard count recorded by the first process
		ChildEnv: kc.env,
		Name:     fmt.Sprintf("%s serve run by this tool (Redis %s, prefix %s, %s)", bin, probe.Options().Addr, prefix, shardsNote),
	}}, nil
}

// token mints a token for the bench's tenant with `kairos token`, signed
// with the secret the processes share.
func (kc kairosConfig) token(ctx context.Context) (string, error) {
	cmd := exec.CommandContext(ctx, kc.bin, "token", "--tenant", "bench", "--ttl", "0")
	cmd.Env = append(os.Environ(), kc.env...)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("%s token: %w: %s", kc.bin, err, strings.TrimSpace(errOut.String()))
	}
	return strings.TrimSpace(out.String()), nil
}

// kairosProc is one `kairos serve` child process.
type kairosProc struct {
	url  string
	cmd  *exec.Cmd
	done chan struct{}
}

// start runs `kairos serve` on a free loopback port and waits until its
// /readyz answers 200.
func (kc kairosConfig) start(ctx context.Context) (*kairosProc, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	addr := ln.Addr().String()
	ln.Close()
	p := &kairosProc{url: "http://" + addr, done: make(chan struct{})}
	p.cmd = exec.Command(kc.bin, "serve", "--addr", addr)
	p.cmd.Env = append(os.Environ(), kc.env...)
	p.cmd.Stdout, p.cmd.Stderr = kc.logOut, kc.logOut
	// its own process group: a Ctrl-C reaches the tool alone, which then
	// stops kairos in order and cleans up
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := p.cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s serve: %w", kc.bin, err)
	}
	go func() { p.cmd.Wait(); close(p.done) }()
	hc := &http.Client{Timeout: time.Second}
	deadline := time.Now().Add(30 * time.Second)
	for {
		resp, err := hc.Get(p.url + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return p, nil
			}
		}
		select {
		case <-p.done:
			return nil, fmt.Errorf("%s serve exited before it was ready: %v (its log is above)", kc.bin, p.cmd.ProcessState)
		default:
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			p.stop()
			return nil, fmt.Errorf("%s serve was not ready within 30s: %v", kc.bin, cmpErr(ctx.Err(), err))
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func cmpErr(a, b error) error {
	if a != nil {
		return a
	}
	return b
}

// stop sends SIGTERM, which `kairos serve` answers with its orderly
// shutdown, and waits for the process (SIGKILL after 30s).
func (p *kairosProc) stop() {
	select {
	case <-p.done:
		return
	default:
	}
	p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(30 * time.Second):
		p.cmd.Process.Kill()
		<-p.done
	}
}

// cpu is the process's CPU time so far (user and system, from
// /proc/PID/stat); 0 where unknown.
func (p *kairosProc) cpu() time.Duration {
	raw, err := os.ReadFile("/proc/" + strconv.Itoa(p.cmd.Process.Pid) + "/stat")
	if err != nil {
		return 0
	}
	return statCPU(string(raw))
}

// clockTicks is Linux's USER_HZ, the unit of /proc/PID/stat's times: 100
// on every architecture Go runs on.
const clockTicks = 100

// statCPU reads utime and stime, the 14th and 15th fields of
// /proc/PID/stat; the command name, field 2, may hold spaces, so fields
// are counted after its closing parenthesis.
func statCPU(stat string) time.Duration {
	i := strings.LastIndexByte(stat, ')')
	if i < 0 {
		return 0
	}
	f := strings.Fields(stat[i+1:]) // f[0] is field 3
	if len(f) < 13 {
		return 0
	}
	ut, err1 := strconv.ParseInt(f[11], 10, 64)
	st, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0
	}
	return time.Duration(ut+st) * time.Second / clockTicks
}

// counters reads the process's garbage collections from its /metrics (on
// the API's loopback listener), for the Go collector's figures.
func (p *kairosProc) counters() map[string]int64 {
	hc := &http.Client{Timeout: 2 * time.Second}
	resp, err := hc.Get(p.url + "/metrics")
	if err != nil {
		return nil
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil
	}
	return metricCounters(resp.Body)
}

// metricCounters picks the collector's figures out of Prometheus's text
// format: collections, and their pauses in microseconds.
func metricCounters(r io.Reader) map[string]int64 {
	out := map[string]int64{}
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		name, v, ok := strings.Cut(sc.Text(), " ")
		if !ok {
			continue
		}
		f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
		if err != nil {
			continue
		}
		switch name {
		case "go_gc_duration_seconds_count":
			out["kairos_gc_cycles"] = int64(f)
		case "go_gc_duration_seconds_sum":
			out["kairos_gc_pause_us"] = int64(f * 1e6)
		}
	}
	return out
}

// prefixInUse reports whether any key lives under prefix.
func prefixInUse(ctx context.Context, c *redis.Client, prefix string) (bool, error) {
	var cursor uint64
	for {
		page, next, err := c.Scan(ctx, cursor, globEscape(prefix)+":*", 10000).Result()
		if err != nil || len(page) > 0 {
			return len(page) > 0, err
		}
		if cursor = next; cursor == 0 {
			return false, nil
		}
	}
}

// dropPrefix deletes every key under prefix, whatever the context: it is
// the clean-up after the run.
func dropPrefix(c *redis.Client, prefix string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	_, err := unlinkMatching(ctx, c, globEscape(prefix)+":*", nil)
	return err
}

// shardMutexSuffix ends the name of a scanner's shard mutex
// (internal/rdb/keys.go).
const shardMutexSuffix = "}:lock"

// unlinkMatching deletes every key matching pattern but those keep
// reports (nil: none) with SCAN and UNLINK (Redis frees them in the
// background) and returns how many it deleted.
func unlinkMatching(ctx context.Context, c *redis.Client, pattern string, keep func(string) bool) (int, error) {
	var cursor uint64
	n := 0
	for {
		page, next, err := c.Scan(ctx, cursor, pattern, 10000).Result()
		if err != nil {
			return n, fmt.Errorf("scan %s: %w", pattern, err)
		}
		if keep != nil {
			page = slices.DeleteFunc(page, keep)
		}
		if len(page) > 0 {
			if err := c.Unlink(ctx, page...).Err(); err != nil {
				return n, fmt.Errorf("unlink: %w", err)
			}
			n += len(page)
		}
		if cursor = next; cursor == 0 {
			return n, nil
		}
	}
}

// globEscape quotes the characters SCAN's MATCH treats as special.
func globEscape(s string) string {
	var b strings.Builder
	for _, r := range s {
		if strings.ContainsRune(`*?[]\`, r) {
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}

func randomHex(n int) string {
	b := make([]byte, n)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// benchRedis gives the bench its reads of Redis, on a client of its own.
type benchRedis struct{ c *redis.Client }

func (r benchRedis) Info(ctx context.Context, section string) (string, error) {
	return r.c.Info(ctx, section).Result()
}
func (r benchRedis) ResetStat(ctx context.Context) error { return r.c.ConfigResetStat(ctx).Err() }
func (r benchRedis) Time(ctx context.Context) (time.Time, error) {
	return r.c.Time(ctx).Result()
}
func (r benchRedis) ConfigGet(ctx context.Context, name string) (string, error) {
	m, err := r.c.ConfigGet(ctx, name).Result()
	if err != nil {
		return "", err
	}
	v, ok := m[name]
	if !ok {
		return "", fmt.Errorf("CONFIG GET %s: no such setting", name)
	}
	return v, nil
}
func (r benchRedis) ConfigSet(ctx context.Context, name, value string) error {
	return r.c.ConfigSet(ctx, name, value).Err()
}
func (r benchRedis) SlowlogReset(ctx context.Context) error { return r.c.SlowLogReset(ctx).Err() }
func (r benchRedis) Slowlog(ctx context.Context) ([]bench.SlowlogEntry, error) {
	logs, err := r.c.SlowLogGet(ctx, -1).Result()
	if err != nil {
		return nil, fmt.Errorf("SLOWLOG GET: %w", err)
	}
	out := make([]bench.SlowlogEntry, len(logs))
	for i, l := range logs {
		out[i] = bench.SlowlogEntry{ID: l.ID, USec: l.Duration.Microseconds(), Args: l.Args, Client: l.ClientAddr, ClientName: l.ClientName}
	}
	return out, nil
}
