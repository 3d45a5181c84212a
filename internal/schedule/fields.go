package schedule

import (
	"fmt"
	"strconv"
	"strings"
)

// A field describes one field of a cron expression.
type field struct {
	name     string
	min, max int
	names    []string // names[i] stands for min+i (months) or i (weekdays)
	noun     string   // what a name names: "month", "day"
	allowed  string   // the values allowed, for error messages
	day      bool     // day of month or day of week: ? is allowed
}

// fields are the six cron fields, seconds first.
var fields = [6]field{
	{name: "second", min: 0, max: 59, allowed: "0-59"},
	{name: "minute", min: 0, max: 59, allowed: "0-59"},
	{name: "hour", min: 0, max: 23, allowed: "0-23"},
	{name: "day of month", min: 1, max: 31, allowed: "1-31", day: true},
	{name: "month", min: 1, max: 12, allowed: "1-12 or JAN-DEC", noun: "month",
		names: []string{"JAN", "FEB", "MAR", "APR", "MAY", "JUN", "JUL", "AUG", "SEP", "OCT", "NOV", "DEC"}},
	{name: "day of week", min: 0, max: 7, allowed: "0-7 or SUN-SAT; 0 and 7 are Sunday", day: true, noun: "day",
		names: []string{"SUN", "MON", "TUE", "WED", "THU", "FRI", "SAT"}},
}

// check reports what is wrong with text as a value of f, or "" when the
// grammar is right: a comma-separated list of terms, each *, a value or a
// range of values, optionally with /step; or ? alone in a day field. check
// leaves rules on how steps fit ranges to the cron library.
func (f field) check(text string) string {
	for _, term := range strings.Split(text, ",") {
		if term == "" {
			return "a list element is empty"
		}
		rng, step, hasStep := strings.Cut(term, "/")
		if hasStep {
			if n, err := strconv.Atoi(step); !digits(step) || err != nil || n < 1 {
				return fmt.Sprintf("step %q must be a whole number of at least 1", step)
			}
		}
		switch rng {
		case "*":
			continue
		case "?":
			if !f.day || text != "?" {
				return "? is allowed only as the whole day-of-month or day-of-week field"
			}
			continue
		}
		ends := strings.Split(rng, "-")
		if len(ends) > 2 {
			return fmt.Sprintf("%q has more than one - (a range is low-high)", rng)
		}
		for _, v := range ends {
			if msg := f.checkValue(v); msg != "" {
				return msg
			}
		}
	}
	return ""
}

// checkValue reports what is wrong with v as a single value of f.
func (f field) checkValue(v string) string {
	switch {
	case v == "":
		return "a range is missing a value"
	case digits(v):
		if n, err := strconv.Atoi(v); err != nil || n < f.min || n > f.max {
			return fmt.Sprintf("%q is out of range %s", v, f.allowed)
		}
		return ""
	case f.value(v) >= 0:
		return ""
	}
	kind := "a number"
	if f.noun != "" {
		kind = "a number or a " + f.noun + " name"
	}
	hint := ""
	if extension(v) {
		hint = "; the L, W, # and H extensions are not supported"
	}
	return fmt.Sprintf("%q is not %s (allowed: %s)%s", v, kind, f.allowed, hint)
}

// value returns the number a name stands for in f, or -1.
func (f field) value(name string) int {
	for i, n := range f.names {
		if strings.EqualFold(n, name) {
			return f.min + i
		}
	}
	return -1
}

func digits(s string) bool {
	if s == "" {
		return false
	}
	for _, r := range s {
		if r < '0' || r > '9' {
			return false
		}
	}
	return true
}

// extension reports whether v looks like a Quartz or Jenkins extension: L,
// LW, 15W, 5L, FRI#3, H or H(0-29).
func extension(v string) bool {
	v = strings.ToUpper(v)
	switch {
	case strings.Contains(v, "#"), v == "L", v == "LW", v == "H", strings.HasPrefix(v, "H("):
		return true
	case strings.HasSuffix(v, "W"), strings.HasSuffix(v, "L"):
		return digits(v[:len(v)-1])
	}
	return false
}
