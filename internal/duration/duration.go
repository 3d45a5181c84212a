// Package duration is the one parser of the durations kairos accepts: Go's
// syntax ("90s", "1.5h", "250ms") plus days, "d", of 24 hours ("7d",
// "1d12h", "1.5d"), in the API, the CLI's flags and the KAIROS_*
// configuration alike. It imports the standard library only, so that the
// client package can use it.
package duration

import (
	"errors"
	"flag"
	"math"
	"strconv"
	"strings"
	"time"
)

// Day is the unit "d": 24 hours (a time zone's day of 23 or 25 hours is a
// schedule's business, not a duration's).
const Day = 24 * time.Hour

// Parse parses a duration: what time.ParseDuration accepts, and the unit
// "d" (24h) in any of its components, such as "7d", "1d12h" or "-1.5d".
func Parse(s string) (time.Duration, error) {
	if !strings.Contains(s, "d") {
		d, err := time.ParseDuration(s)
		if err != nil {
			return 0, syntaxError(s)
		}
		return d, nil
	}
	rest := s
	neg := false
	if rest != "" && (rest[0] == '-' || rest[0] == '+') {
		neg, rest = rest[0] == '-', rest[1:]
	}
	// The components in days are summed here; the others are handed to
	// time.ParseDuration, in their order, without the sign.
	var days time.Duration
	var others strings.Builder
	for rest != "" {
		i := 0
		for i < len(rest) && (rest[i] == '.' || '0' <= rest[i] && rest[i] <= '9') {
			i++
		}
		j := i
		for j < len(rest) && rest[j] != '.' && (rest[j] < '0' || rest[j] > '9') {
			j++
		}
		num, unit := rest[:i], rest[i:j]
		rest = rest[j:]
		if unit != "d" {
			others.WriteString(num + unit)
			continue
		}
		// n days are n*24 hours: read as hours, exact to the nanosecond as
		// Go's own fractions of an hour are, then scaled.
		h, err := time.ParseDuration(num + "h")
		if err != nil || h > math.MaxInt64/24 || days > math.MaxInt64-h*24 {
			return 0, syntaxError(s)
		}
		days += h * 24
	}
	var other time.Duration
	if others.Len() > 0 {
		var err error
		if other, err = time.ParseDuration(others.String()); err != nil || other < 0 || days > math.MaxInt64-other {
			return 0, syntaxError(s) // other < 0: a second sign ("--1d1h")
		}
	}
	if neg {
		return -(days + other), nil
	}
	return days + other, nil
}

func syntaxError(s string) error {
	return errors.New(strconv.Quote(s) + " is not a duration: use Go syntax such as \"90s\", \"1.5h\" or \"250ms\", or days such as \"7d\" or \"1d12h\"")
}

// Format writes d in the shortest form Parse reads back: whole days as
// "7d", anything else in Go's syntax ("1h30m0s").
func Format(d time.Duration) string {
	if d != 0 && d%Day == 0 {
		return strconv.FormatInt(int64(d/Day), 10) + "d"
	}
	return d.String()
}

// Value is a time.Duration as a flag.Value that Parse reads, so that a
// flag takes days as well.
type Value time.Duration

// Set parses s with Parse.
func (v *Value) Set(s string) error {
	d, err := Parse(s)
	if err != nil {
		return err
	}
	*v = Value(d)
	return nil
}

// String writes the duration as time.Duration does (a flag's default).
func (v *Value) String() string { return time.Duration(*v).String() }

// Var defines a duration flag on fs, as fs.DurationVar does, that takes
// days as well.
func Var(fs *flag.FlagSet, p *time.Duration, name string, value time.Duration, usage string) {
	*p = value
	fs.Var((*Value)(p), name, usage)
}

// Flag defines a duration flag on fs, as fs.Duration does, that takes days
// as well.
func Flag(fs *flag.FlagSet, name string, value time.Duration, usage string) *time.Duration {
	p := new(time.Duration)
	Var(fs, p, name, value, usage)
	return p
}
