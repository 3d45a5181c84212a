package bench

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestTableWrite(t *testing.T) {
	var b strings.Builder
	Table{Title: "t", Head: []string{"metric", "value", "target"}, Left: []int{2},
		Rows:  [][]string{{"p99", "1.25 ms", "<= 5 ms"}, {"throughput", "20,000 jobs/s", ""}},
		Notes: []string{"n"}}.Write(&b)
	want := "t\n" +
		"  metric              value  target\n" +
		"  p99               1.25 ms  <= 5 ms\n" +
		"  throughput  20,000 jobs/s\n" +
		"  note: n\n\n"
	if d := cmp.Diff(want, b.String()); d != "" {
		t.Errorf("table (-want +got):\n%s", d)
	}
}

func TestChecks(t *testing.T) {
	tests := []struct {
		name string
		c    Check
		want string
	}{
		{"at most, met", atMost("p99", 4, 5, " ms"), "met"},
		{"at most, missed", atMost("p99", 7.5, 5, " ms"), "MISSED: 50% over (x1.50)"},
		{"zero", atMost("early", 3, 0, ""), "MISSED: 3 over"},
		{"at least, met", atLeast("rate", 20000, 20000, " jobs/s"), "met"},
		{"at least, missed", atLeast("rate", 15000, 20000, " jobs/s"), "MISSED: 25% short"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.c.verdict(); got != tt.want {
				t.Errorf("verdict = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestQuantiles(t *testing.T) {
	v := []int64{5, 1, 4, 2, 3, 10, 9, 8, 7, 6}
	if d := cmp.Diff([]int64{1, 5, 9, 10, 10}, quantiles(v, 0, 0.5, 0.9, 0.99, 1)); d != "" {
		t.Errorf("quantiles (-want +got):\n%s", d)
	}
	if got := durQuantiles(nil, 0.5); got[0] != 0 {
		t.Errorf("empty: %v", got)
	}
	if got := durQuantiles([]time.Duration{1500 * time.Microsecond}, 0.5); got[0] != 1.5 {
		t.Errorf("1.5ms: %v", got)
	}
}

func TestFormat(t *testing.T) {
	for in, want := range map[int64]string{0: "0", 999: "999", 1000: "1,000", 10000000: "10,000,000", -1234: "-1,234"} {
		if got := fmtInt(in); got != want {
			t.Errorf("fmtInt(%d) = %q, want %q", in, got, want)
		}
	}
}

func TestParseCommandStats(t *testing.T) {
	in := "# Commandstats\r\ncmdstat_evalsha:calls=10,usec=94,usec_per_call=9.40,rejected_calls=0,failed_calls=0\r\n" +
		"cmdstat_config|resetstat:calls=1,usec=34,usec_per_call=34.00,rejected_calls=0,failed_calls=0\r\n" +
		"cmdstat_hset:calls=20,usec=10,usec_per_call=0.50,rejected_calls=0,failed_calls=0\r\n"
	got := parseCommandStats(in)
	if d := cmp.Diff(map[string]int64{"evalsha": 10, "config|resetstat": 1, "hset": 20}, got); d != "" {
		t.Errorf("commandstats (-want +got):\n%s", d)
	}
	if d := cmp.Diff(map[string]int64{"evalsha": 94, "config|resetstat": 34, "hset": 10}, parseCommandUsec(in)); d != "" {
		t.Errorf("commandstats usec (-want +got):\n%s", d)
	}
	rows, ex := commandTable(got, parseCommandUsec(in), 10)
	want := []CommandCount{{Command: "hset", Executed: 2, USec: 1}, {Command: "evalsha", Executed: 1, USec: 9.4}}
	if d := cmp.Diff(want, rows); d != "" || ex != 3 {
		t.Errorf("commandTable: executed %v, rows (-want +got):\n%s", ex, d)
	}
}

func TestParseScenarios(t *testing.T) {
	testListParser(t, "ParseScenarios", ParseScenarios, []parseCase[string]{
		{in: "all", want: Names},
		{in: DefaultScenarios, want: []string{"sequence"}},
		{in: "enqueue,precision,burst,cost", want: []string{"enqueue", "precision", "burst", "cost"}},
		{in: "burst,sequence", want: []string{"sequence", "burst"}},
		{in: "scale,sustained", want: []string{"sustained", "scale"}},
		{in: "burst, enqueue,burst", want: []string{"enqueue", "burst"}},
		{in: "fast", wantErr: true},
		{in: "", wantErr: true},
	})
}

// parseCase is one input of a comma-separated list's parser and what it gives.
type parseCase[T any] struct {
	in      string
	want    []T
	wantErr bool
}

// testListParser checks parse, named name, on each case.
func testListParser[T any](t *testing.T, name string, parse func(string) ([]T, error), tests []parseCase[T]) {
	t.Helper()
	for _, tt := range tests {
		got, err := parse(tt.in)
		if (err != nil) != tt.wantErr {
			t.Errorf("%s(%q): err %v", name, tt.in, err)
		}
		if d := cmp.Diff(tt.want, got); d != "" {
			t.Errorf("%s(%q) (-want +got):\n%s", name, tt.in, d)
		}
	}
}
