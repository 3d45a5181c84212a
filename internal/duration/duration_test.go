package duration

import (
	"flag"
	"io"
	"testing"
	"time"
)

func TestParse(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want time.Duration
	}{
		{"90s", 90 * time.Second}, {"1.5h", 90 * time.Minute}, {"250ms", 250 * time.Millisecond}, {"0", 0}, {"-0", 0},
		{"7d", 7 * Day}, {"1d12h", 36 * time.Hour}, {"12h1d", 36 * time.Hour}, {"1.5d", 36 * time.Hour},
		{"-1d", -Day}, {"+2d30m", 2*Day + 30*time.Minute}, {"0d", 0}, {"1825d", 1825 * Day}, {".5d", 12 * time.Hour},
		{"1d1d", 2 * Day}, {"0.1d", 144 * time.Minute}, {"106751d", 106751 * Day},
	} {
		got, err := Parse(tc.in)
		if err != nil || got != tc.want {
			t.Errorf("Parse(%q) = %v, %v; want %v", tc.in, got, err, tc.want)
		}
	}
	for _, in := range []string{"", "d", "-", "+", "1", "1D", "1 d", "1day", "1days", "1ds", "d1", ".d", "1d-1h", "--1d", "1d--1h",
		"1.5.5d", "106752d", "106751d24h", "7 days", "1d ", "1dd"} {
		if got, err := Parse(in); err == nil {
			t.Errorf("Parse(%q) = %v, want an error", in, got)
		}
	}
}

func TestFormat(t *testing.T) {
	for d, want := range map[time.Duration]string{
		0: "0s", 7 * Day: "7d", 36 * time.Hour: "36h0m0s", -Day: "-1d", 1825 * Day: "1825d", 90 * time.Second: "1m30s",
	} {
		if got := Format(d); got != want {
			t.Errorf("Format(%v) = %q, want %q", time.Duration(d), got, want)
		}
	}
}

func TestFlag(t *testing.T) {
	fs := flag.NewFlagSet("x", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	d := Flag(fs, "for", time.Minute, "")
	var e time.Duration
	Var(fs, &e, "every", 2*time.Second, "")
	if *d != time.Minute || e != 2*time.Second {
		t.Fatalf("defaults %v %v", *d, e)
	}
	if err := fs.Parse([]string{"--for", "1d12h", "--every", "90s"}); err != nil {
		t.Fatal(err)
	}
	if *d != 36*time.Hour || e != 90*time.Second {
		t.Errorf("parsed %v %v", *d, e)
	}
	if err := fs.Parse([]string{"--for", "soon"}); err == nil {
		t.Error("--for soon accepted")
	}
}

// FuzzParse holds Parse to time.ParseDuration where that one reads the
// input, and checks that whatever Parse reads round-trips through Format
// and Go's syntax.
func FuzzParse(f *testing.F) {
	for _, s := range []string{"90s", "1.5h", "250ms", "0", "7d", "1d12h", "-1.5d", "+0d", ".5d", "1d1d", "d", "1d-1h",
		"106751d23h47m16.854775807s", "-9223372036854775808ns", "9223372036854775807ns", "1µs", "2562047h", "1e3d", "0x1d"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		d, err := Parse(s)
		if want, gerr := time.ParseDuration(s); gerr == nil && (err != nil || d != want) {
			t.Fatalf("Parse(%q) = %v, %v; time.ParseDuration reads %v", s, d, err, want)
		}
		if err != nil {
			return
		}
		for _, text := range []string{Format(d), d.String()} {
			if back, err := Parse(text); err != nil || back != d {
				t.Fatalf("Parse(%q) = %v; written as %q it reads %v, %v", s, d, text, back, err)
			}
		}
	})
}
