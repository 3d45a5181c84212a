package bench

import (
	"strings"
	"testing"
)

func TestParseRates(t *testing.T) {
	testListParser(t, "ParseRates", ParseRates, []parseCase[int]{
		{in: DefaultSustainedRates, want: []int{1000, 2000, 5000, 10000}},
		{in: "5000, 1000,1000,", want: []int{1000, 5000}},
		{in: "1000,fast", wantErr: true},
		{in: "0", wantErr: true},
		{in: ",", wantErr: true},
	})
}

func TestSustainedStepVerdicts(t *testing.T) {
	ok := Delivery{Jobs: 1000, Delivered: 1000, P99MS: 3}
	tests := []struct {
		name        string
		step        SustainedStep
		verdict     string
		giveUpWords string // "" when higher steps still run
	}{
		{"passed", SustainedStep{Rate: 1000, CreatedPerSec: 1000, Delivery: ok, Passed: true}, "passed", ""},
		{"p99 over 5 ms", SustainedStep{Rate: 1000, CreatedPerSec: 1000, Delivery: Delivery{P99MS: 7}}, "FAILED: p99 > 5 ms", ""},
		{"p99 over 50 ms", SustainedStep{Rate: 1000, CreatedPerSec: 1000, Delivery: Delivery{P99MS: 400}}, "FAILED: p99 > 5 ms", "over 50 ms"},
		{"created too slowly", SustainedStep{Rate: 10000, CreatedPerSec: 7000, CreatedLate: 30, Delivery: ok}, "FAILED: 30 created late", "only 7,000/s"},
		{"missing", SustainedStep{Rate: 1000, CreatedPerSec: 1000, Delivery: Delivery{P99MS: 3, Missing: 2, Duplicated: 1}}, "FAILED: 2 missing, 1 duplicated", "never arrived"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.step.verdict(); got != tt.verdict {
				t.Errorf("verdict = %q, want %q", got, tt.verdict)
			}
			got := tt.step.giveUp()
			if (got == "") != (tt.giveUpWords == "") || !strings.Contains(got, tt.giveUpWords) {
				t.Errorf("giveUp = %q, want one saying %q", got, tt.giveUpWords)
			}
		})
	}
}

func TestSustainedTable(t *testing.T) {
	r := &SustainedResult{LeadSeconds: 0.5, StepSeconds: 20, Rates: []int{1000, 2000}, Capacity: 1000, Stopped: "stopped after 2000 jobs/s: x",
		Steps: []SustainedStep{{Rate: 1000, Jobs: 20000, CreatedPerSec: 1001, Delivery: Delivery{Jobs: 20000, Delivered: 20000, P99MS: 2}, Passed: true,
			CPU: Usage{Redis: true, RedisPct: 25, ProcessPct: 50}, RedisCPUPerJobUS: 250}}}
	var out strings.Builder
	for _, tb := range r.Tables() {
		tb.Write(&out)
	}
	for _, s := range []string{"SUSTAINED CAPACITY: 1,000 jobs/s", "20,000 / 20,000", "25%", "250.00", "passed", "higher steps not run"} {
		if !strings.Contains(out.String(), s) {
			t.Errorf("table lacks %q:\n%s", s, out.String())
		}
	}
}
