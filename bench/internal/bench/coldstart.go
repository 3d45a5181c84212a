package bench

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"slices"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/kairos-sh/kairos/client"
)

// ColdStartConfig sizes the coldstart scenario.
type ColdStartConfig struct {
	Binary string // the kairos binary to start; required
	Starts int    // starts measured; default 20
}

// ColdStartResult is the coldstart scenario: `kairos serve --roles api`
// started again and again on the target's Redis, timed from exec to its
// first 200 from /readyz, then its first job creates.
type ColdStartResult struct {
	Starts int `json:"starts"`
	// Ready is the time from exec to the first 200 from /readyz, in ms.
	ReadyMS Spread `json:"ready_ms"`
	// FirstCreateMS is the first create's round trip, SecondCreateMS the next one's.
	FirstCreateMS  Spread `json:"first_create_ms"`
	SecondCreateMS Spread `json:"second_create_ms"`
	// Commands Redis executed (INFO commandstats, scripts' commands
	// included) from exec until ready, for the first create, and for the
	// second, medians; and by command, the average over the starts.
	StartupCommands      float64        `json:"startup_commands"`
	FirstCreateCommands  float64        `json:"first_create_commands"`
	SecondCreateCommands float64        `json:"second_create_commands"`
	FirstCreateBy        []CommandCount `json:"first_create_by_command"`
	SecondCreateBy       []CommandCount `json:"second_create_by_command"`
	Checks               []Check        `json:"checks"`
}

// Spread is the median, least and most of some measurements.
type Spread struct {
	Median float64 `json:"median"`
	Min    float64 `json:"min"`
	Max    float64 `json:"max"`
}

func spread(v []float64) Spread {
	if len(v) == 0 {
		return Spread{}
	}
	s := slices.Clone(v)
	sort.Float64s(s)
	m := s[len(s)/2]
	if len(s)%2 == 0 {
		m = (s[len(s)/2-1] + s[len(s)/2]) / 2
	}
	return Spread{Median: m, Min: s[0], Max: s[len(s)-1]}
}

// ColdStart runs the coldstart scenario. It needs a kairos this tool
// started (its Redis, prefix and secret for the children: Target.ChildEnv).
func (b *Bench) ColdStart(ctx context.Context, c ColdStartConfig) (*ColdStartResult, error) {
	if b.t.ChildEnv == nil || b.t.Redis == nil {
		return nil, errors.New("coldstart: needs a kairos this tool starts (--redis-url without --url)")
	}
	if c.Binary == "" {
		return nil, errors.New("coldstart: name the kairos binary with --kairos-bin (make build puts it in bin/kairos)")
	}
	if _, err := os.Stat(c.Binary); err != nil {
		return nil, fmt.Errorf("coldstart: %w (make build puts it in bin/kairos)", err)
	}
	if c.Starts <= 0 {
		c.Starts = 20
	}
	r := &ColdStartResult{Starts: c.Starts}
	var ready, first, second, startup, firstN, secondN []float64
	firstBy, secondBy := map[string]int64{}, map[string]int64{}
	for i := range c.Starts {
		s, err := b.coldStart(ctx, c.Binary)
		if err != nil {
			return r, fmt.Errorf("coldstart: start %d: %w", i+1, err)
		}
		ready = append(ready, ms(s.ready))
		first = append(first, ms(s.first))
		second = append(second, ms(s.second))
		startup, firstN, secondN = append(startup, total(s.startupCmds)), append(firstN, total(s.firstCmds)), append(secondN, total(s.secondCmds))
		for k, v := range s.firstCmds {
			firstBy[k] += v
		}
		for k, v := range s.secondCmds {
			secondBy[k] += v
		}
		b.progressf("coldstart: %d of %d: ready after %.1f ms", i+1, c.Starts, ms(s.ready))
	}
	r.ReadyMS, r.FirstCreateMS, r.SecondCreateMS = spread(ready), spread(first), spread(second)
	r.StartupCommands, r.FirstCreateCommands, r.SecondCreateCommands = spread(startup).Median, spread(firstN).Median, spread(secondN).Median
	r.FirstCreateBy, _ = commandTable(firstBy, nil, float64(c.Starts))
	r.SecondCreateBy, _ = commandTable(secondBy, nil, float64(c.Starts))
	r.Checks = []Check{atMost("median time from exec to ready", r.ReadyMS.Median, 100, " ms")}
	return r, nil
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

func total(m map[string]int64) float64 {
	var n int64
	for k, v := range m {
		if !ownCommands[k] {
			n += v
		}
	}
	return float64(n)
}

type coldStart struct {
	ready, first, second               time.Duration
	startupCmds, firstCmds, secondCmds map[string]int64
}

// coldStart starts `kairos serve --roles api` once, waits for /readyz,
// creates two jobs, stops it by its PID and cancels the jobs.
func (b *Bench) coldStart(ctx context.Context, bin string) (coldStart, error) {
	var s coldStart
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return s, err
	}
	addr := ln.Addr().String()
	ln.Close()
	stats := func() map[string]int64 {
		ex, _, _ := b.commandStats(ctx)
		return ex
	}
	cmd := exec.Command(bin, "serve", "--roles", "api", "--addr", addr)
	cmd.Env = append(os.Environ(), b.t.ChildEnv...)
	cmd.Env = append(cmd.Env, "KAIROS_LOG_LEVEL=warn")
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	before := stats()
	began := time.Now()
	if err := cmd.Start(); err != nil {
		return s, err
	}
	defer func() {
		cmd.Process.Signal(syscall.SIGTERM)
		cmd.Wait()
	}()
	hc := &http.Client{Timeout: time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	for {
		resp, err := hc.Get("http://" + addr + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				break
			}
		}
		if time.Since(began) > 30*time.Second || ctx.Err() != nil {
			return s, fmt.Errorf("not ready within 30s: %v\n%s", err, out.String())
		}
		time.Sleep(500 * time.Microsecond)
	}
	s.ready = time.Since(began)
	mid := stats()
	s.startupCmds = diff(mid, before)
	api, err := client.New("http://"+addr, client.WithToken(b.t.Token), client.WithRetryPolicy(client.RetryPolicy{Attempts: 1}))
	if err != nil {
		return s, err
	}
	var ids []string
	create := func() (time.Duration, error) {
		t0 := time.Now()
		j, err := api.CreateJob(ctx, b.topic, client.JobRequest{Delay: client.Duration(time.Hour), Payload: []byte(`{"coldstart": true}`)})
		if err != nil {
			return 0, err
		}
		ids = append(ids, j.ID)
		return time.Since(t0), nil
	}
	defer func() {
		for _, id := range ids {
			b.api.CancelJob(context.WithoutCancel(ctx), b.topic, id)
		}
	}()
	if s.first, err = create(); err != nil {
		return s, fmt.Errorf("first create: %w", err)
	}
	after1 := stats()
	if s.second, err = create(); err != nil {
		return s, fmt.Errorf("second create: %w", err)
	}
	s.firstCmds, s.secondCmds = diff(after1, mid), diff(stats(), after1)
	return s, nil
}

// Tables prints the result.
func (r *ColdStartResult) Tables() []Table {
	t := Table{
		Title: fmt.Sprintf("coldstart: kairos serve --roles api started %d times", r.Starts),
		Head:  []string{"", "median", "min", "max"},
	}
	row := func(name string, s Spread) []string {
		return []string{name, f2(s.Median) + " ms", f2(s.Min) + " ms", f2(s.Max) + " ms"}
	}
	t.Rows = [][]string{row("exec to /readyz 200", r.ReadyMS), row("first create", r.FirstCreateMS), row("second create", r.SecondCreateMS)}
	var verdict string
	if len(r.Checks) > 0 {
		verdict = r.Checks[0].verdict()
	}
	cmds := func(by []CommandCount) string {
		var parts []string
		for _, c := range by {
			parts = append(parts, c.Command+" "+strconv.FormatFloat(c.Executed, 'f', -1, 64))
		}
		return strings.Join(parts, ", ")
	}
	t.Notes = []string{
		fmt.Sprintf("target: ready within 100 ms of exec (median): %s", verdict),
		fmt.Sprintf("Redis commands executed (medians): %s from exec to ready; %s for the first create, %s for the second",
			num(r.StartupCommands), num(r.FirstCreateCommands), num(r.SecondCreateCommands)),
		"first create, per start: " + cmds(r.FirstCreateBy),
		"second create, per start: " + cmds(r.SecondCreateBy),
		"each process is stopped by its PID (SIGTERM) before the next start; jobs are created an hour ahead and cancelled",
	}
	return []Table{t}
}
