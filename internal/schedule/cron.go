package schedule

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	cronlib "github.com/netresearch/go-cron"
)

// cronSpec is a parsed cron pattern. For each field, bit v of its set means
// value v is allowed (day of week: 0 is Sunday); no set is empty.
type cronSpec struct {
	second, minute, hour, dom, month, dow uint64

	// dayOr is set when day of month and day of week are both restricted,
	// and a day matching either one matches.
	dayOr bool

	text [6]string // the fields, upper case, seconds first ("0" when not given)
	expr string    // the normalized expression
}

// macros are the cron macros and the expressions they stand for.
var macros = map[string]string{
	"@yearly":   "0 0 1 1 *",
	"@annually": "0 0 1 1 *",
	"@monthly":  "0 0 1 * *",
	"@weekly":   "0 0 * * 0",
	"@daily":    "0 0 * * *",
	"@midnight": "0 0 * * *",
	"@hourly":   "0 * * * *",
}

const (
	maxCronLen = 256
	// starBit is the cron library's mark of a field written as * or ?.
	starBit = 1 << 63
)

// parser builds field sets from a checked 6-field expression. Zone prefixes,
// descriptors and the L, W, # and H extensions stay off.
var parser = cronlib.MustNewParser(cronlib.Second | cronlib.Minute | cronlib.Hour |
	cronlib.Dom | cronlib.Month | cronlib.Dow)

// parseCron parses a cron expression or macro into a cronSpec.
func parseCron(expr string) (*cronSpec, error) {
	const shape = "5 fields (minute hour day-of-month month day-of-week), 6 with a leading seconds field, or a macro such as @daily"
	if len(expr) > maxCronLen {
		return nil, fieldErr("cron", "the expression is longer than %d characters", maxCronLen)
	}
	if upper := strings.ToUpper(expr); strings.HasPrefix(upper, "TZ=") || strings.HasPrefix(upper, "CRON_TZ=") {
		return nil, fieldErr("cron", "zone prefixes (TZ=, CRON_TZ=) are not allowed; set the timezone field instead")
	}
	c := &cronSpec{}
	if strings.HasPrefix(expr, "@") {
		name := strings.ToLower(expr)
		switch m, ok := macros[name]; {
		case ok:
			c.expr, expr = name, m
		case strings.HasPrefix(name, "@every"):
			return nil, fieldErr("cron", "@every is not a cron macro here; set the every field instead (e.g. \"15m\")")
		default:
			return nil, fieldErr("cron", "unknown macro %q; use @yearly, @annually, @monthly, @weekly, @daily, @midnight or @hourly", truncate(expr, 32))
		}
	}
	given := strings.Fields(expr)
	if len(given) != 5 && len(given) != 6 {
		return nil, fieldErr("cron", "%d fields given; want %s", len(given), shape)
	}
	offset := 6 - len(given) // 1 when the seconds field is left out
	c.text[0] = "0"
	for i, text := range given {
		if msg := fields[i+offset].check(text); msg != "" {
			return nil, fieldErr("cron", "%s", fieldMessage(i+1, fields[i+offset], text, msg))
		}
		given[i] = strings.ToUpper(text)
		c.text[i+offset] = given[i]
	}
	if err := c.setBits(offset); err != nil {
		return nil, err
	}
	domStar := strings.HasPrefix(c.text[3], "*") || c.text[3] == "?"
	dowStar := strings.HasPrefix(c.text[5], "*") || c.text[5] == "?"
	c.dayOr = !domStar && !dowStar
	if c.expr == "" {
		c.expr = strings.Join(given, " ")
	}
	return c, nil
}

// fieldMessage words a problem with field f, given as the n-th field.
func fieldMessage(n int, f field, text, msg string) string {
	if rest, ok := strings.CutPrefix(msg, strconv.Quote(text)+" "); ok {
		return fmt.Sprintf("field %d (%s) %q %s", n, f.name, text, rest)
	}
	return fmt.Sprintf("field %d (%s) %q: %s", n, f.name, text, msg)
}

// setBits has the cron library build the field sets. When it rejects the
// expression, each field is parsed alone to name the one at fault.
func (c *cronSpec) setBits(offset int) error {
	sched, err := parser.Parse(strings.Join(c.text[:], " "))
	if err != nil {
		for i := offset; i < 6; i++ {
			probe := [6]string{"*", "*", "*", "*", "*", "*"}
			probe[i] = c.text[i]
			if _, ferr := parser.Parse(strings.Join(probe[:], " ")); ferr != nil {
				return fieldErr("cron", "%s", fieldMessage(i-offset+1, fields[i], c.text[i], ferr.Error()))
			}
		}
		return fieldErr("cron", "%v", err)
	}
	s, ok := sched.(*cronlib.SpecSchedule)
	if !ok {
		return fmt.Errorf("schedule: cron library returned %T", sched)
	}
	c.second, c.minute, c.hour = s.Second&^starBit, s.Minute&^starBit, s.Hour&^starBit
	c.dom, c.month, c.dow = s.Dom&^starBit, s.Month&^starBit, s.Dow&^starBit
	// The search for instants relies on no set being empty.
	for i, set := range [6]uint64{c.second, c.minute, c.hour, c.dom, c.month, c.dow} {
		if set == 0 {
			return fieldErr("cron", "%s", fieldMessage(i-offset+1, fields[i], c.text[i], "allows no value"))
		}
	}
	return nil
}

// neverFires explains why the pattern has no instant. With day of month and
// day of week both restricted, any weekday fires, and */n always includes day
// 1; so only the days of month the pattern's months lack can leave it empty.
func (c *cronSpec) neverFires() string {
	return fmt.Sprintf("the pattern never fires: day of month %q does not occur in month %q "+
		"(February has 29 days at most; April, June, September and November have 30)", c.text[3], c.text[4])
}

// horizonYears bounds the search for a cron instant: the longest gap of a
// pattern that fires is 8 years, from 29 February 2096 to 29 February 2104.
const horizonYears = 8

// cronAfter returns the pattern's first instant after lower.
func (p *Pattern) cronAfter(lower time.Time) (time.Time, bool) {
	from := firstNewWall(lower, p.loc)
	for {
		w, ok := p.cron.next(from, from.Year()+horizonYears)
		if !ok {
			return time.Time{}, false
		}
		// A wall time after lower's may still map to an instant at or before
		// lower only around unusual zone transitions; step past it.
		if at := instant(w, p.loc); at.After(lower) {
			return at.UTC(), true
		}
		from = w.Add(time.Second)
	}
}
