package bench

import (
	"context"
	"errors"
	"maps"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestTallyGroupsScriptCommandsWithTheirScript(t *testing.T) {
	e := func(id, usec int64, client, name string, args ...string) SlowlogEntry {
		return SlowlogEntry{ID: id, USec: usec, Args: args, Client: client, ClientName: name}
	}
	const kairos = "127.0.0.1:5000"
	// Newest first, as SLOWLOG GET answers.
	entries := []SlowlogEntry{
		e(12, 3, scriptClient, "", "GET", "lock"), // a script whose own entry is not there
		e(11, 9, kairos, ClientName, "info", "cpu"),
		e(10, 2, kairos, "", "blmpop", "1", "1", "ready", "RIGHT"),
		e(9, 20, kairos, "", "fcall", "kairos_0123456789ab_finish", "5"),
		e(8, 4, scriptClient, "", "ZREM", "b", "m"),
		e(7, 5, scriptClient, "", "HSET", "j", "st", "d"),
		e(6, 30, kairos, "", "fcall", "kairos_0123456789ab_claim", "2"),
		e(5, 2, scriptClient, "", "ZRANGE", "b", "0", "1"),
		e(4, 1, scriptClient, "", "hset", "j", "st", "r"),
		e(3, 2, scriptClient, "", "HSET", "k", "st", "r"),
		e(2, 7, kairos, "", "evalsha", "cccc3333dddd", "1"),
		e(1, 1, kairos, "", "lpush", "ready", "j"),
	}
	scripts, commands, orphans := tally(entries)
	if orphans != 1 {
		t.Errorf("orphans = %d, want 1", orphans)
	}
	got := scriptCosts(scripts, commands, 2)
	want := []ScriptCost{
		{Name: "claim", Script: true, CallsPerJob: 0.5, USecPerCall: 30, USecPerJob: 15, CommandsPerCall: 3, CommandsUSecPerCall: 5,
			Commands: []CommandCost{{"hset", 2, 3}, {"zrange", 1, 2}}},
		{Name: "finish", Script: true, CallsPerJob: 0.5, USecPerCall: 20, USecPerJob: 10, CommandsPerCall: 2, CommandsUSecPerCall: 9,
			Commands: []CommandCost{{"hset", 1, 5}, {"zrem", 1, 4}}},
		{Name: "sha cccc3333", Script: true, CallsPerJob: 0.5, USecPerCall: 7, USecPerJob: 3.5},
		{Name: "blmpop", CallsPerJob: 0.5, USecPerCall: 2, USecPerJob: 1},
		{Name: "lpush", CallsPerJob: 0.5, USecPerCall: 1, USecPerJob: 0.5},
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("rows (-want +got):\n%s", d)
	}
	var out strings.Builder
	for _, tb := range (&ScriptCosts{Jobs: 2, Rows: got, ScriptUSecPerJob: 28.5, StatsUSecPerJob: 28.5, UnloggedUSecPerJob: 20}).tables() {
		tb.Write(&out)
	}
	for _, s := range []string{"claim (script)", "agreement", "(100.0%)", "zrem"} {
		if !strings.Contains(out.String(), s) {
			t.Errorf("tables lack %q:\n%s", s, out.String())
		}
	}
}

// fakeRedis holds settings for recordAll; refuse names a setting CONFIG SET refuses.
type fakeRedis struct {
	config map[string]string
	refuse string
	resets int
}

// TestScriptNameOfFunctionCalls: an FCALL of kairos's library is named by
// the script its function runs; another function, or an EVALSHA, by what
// the entry shows.
func TestScriptNameOfFunctionCalls(t *testing.T) {
	for _, c := range []struct {
		cmd  string
		args []string
		want string
	}{
		{"fcall", []string{"FCALL", "kairos_0123456789ab_finish", "2"}, "finish"},
		{"fcall_ro", []string{"FCALL_RO", "kairos_0123456789ab_read_job", "1"}, "read_job"},
		{"fcall", []string{"FCALL", "kairos_ab12_finish", "2"}, "function kairos_ab12_finish"},
		{"fcall", []string{"FCALL", "other_lib_fn", "0"}, "function other_lib_fn"},
		{"evalsha", []string{"EVALSHA", "AAAA1111", "2"}, "sha aaaa1111"},
		{"get", []string{"GET", "k"}, ""},
	} {
		if got, _ := scriptName(c.cmd, c.args); got != c.want {
			t.Errorf("%s %v: %q, want %q", c.cmd, c.args, got, c.want)
		}
	}
}

func (f *fakeRedis) Info(context.Context, string) (string, error)    { return "", nil }
func (f *fakeRedis) ResetStat(context.Context) error                 { return nil }
func (f *fakeRedis) Time(context.Context) (time.Time, error)         { return time.Now(), nil }
func (f *fakeRedis) Slowlog(context.Context) ([]SlowlogEntry, error) { return nil, nil }
func (f *fakeRedis) SlowlogReset(context.Context) error              { f.resets++; return nil }
func (f *fakeRedis) ConfigGet(_ context.Context, k string) (string, error) {
	return f.config[k], nil
}
func (f *fakeRedis) ConfigSet(_ context.Context, k, v string) error {
	if k == f.refuse {
		return errors.New("ERR unknown command 'CONFIG'")
	}
	f.config[k] = v
	return nil
}

func TestRecordAllRestoresTheSlowlogSettings(t *testing.T) {
	ctx := context.Background()
	defaults := map[string]string{"slowlog-log-slower-than": "10000", "slowlog-max-len": "128"}
	f := &fakeRedis{config: maps.Clone(defaults)}
	b := &Bench{t: Target{Redis: f}}
	restore, err := b.recordAll(ctx, 5000)
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(map[string]string{"slowlog-log-slower-than": "0", "slowlog-max-len": "5000"}, f.config); d != "" {
		t.Errorf("while recording (-want +got):\n%s", d)
	}
	if err := restore(ctx); err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(defaults, f.config); d != "" || f.resets != 2 {
		t.Errorf("after restore, %d resets, settings (-want +got):\n%s", f.resets, d)
	}

	// A managed Redis refuses the threshold after taking the length.
	f = &fakeRedis{config: maps.Clone(defaults), refuse: "slowlog-log-slower-than"}
	b.t.Redis = f
	if _, err := b.recordAll(ctx, 5000); !errors.Is(err, errSlowlogRefused) {
		t.Fatalf("err = %v, want errSlowlogRefused", err)
	}
	if d := cmp.Diff(defaults, f.config); d != "" {
		t.Errorf("after a refusal (-want +got):\n%s", d)
	}
}
