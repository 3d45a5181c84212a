// Package schedule owns the recurrence patterns of recurring schedules: it
// parses and validates a schedule's cron or every field, its timezone and its
// start and end bounds, and tells the instants the schedule fires at. It knows
// nothing of Redis or HTTP; the API validates requests with Parse and the
// storage asks Next for the instants to enqueue.
//
// # Cron expressions
//
// A cron expression has 5 fields (minute hour day-of-month month day-of-week,
// second 0) or 6 with a leading seconds field, or is one of the macros
// @yearly (@annually), @monthly, @weekly, @daily (@midnight) and @hourly.
// Fields take numbers, *, lists (1,15), ranges (MON-FRI, 22-2 wraps around),
// and steps (*/15, 5/10, 0-30/5); months and days of the week also take the
// names JAN-DEC and SUN-SAT (case-insensitive; 0 and 7 are Sunday), and the
// two day fields take ? for "any". Zone prefixes (TZ=, CRON_TZ=) and the
// L, W, # and H extensions are rejected.
//
// Day of month and day of week combine as in Vixie cron and cronie: when both
// are restricted a day matches if either matches ("0 0 13 * FRI" fires on
// every 13th and on every Friday); when either field starts with * (including
// */n) or is ?, a day must match both ("0 0 */2 * MON" fires on the Mondays
// with an odd day of month).
//
// # Time zones and daylight saving
//
// Cron fields name wall-clock times in the schedule's time zone. Each wall
// time the pattern names fires at most once:
//
//   - a wall time that does not exist (clocks spring forward over it) fires at
//     the first instant after the gap, and all the wall times of one gap that
//     the pattern names fire once, together, at that instant (Europe/Berlin,
//     2026-03-29: "30 2 * * *" fires at 03:00 CEST);
//   - a wall time that occurs twice (clocks fall back) fires at its first
//     occurrence only (Europe/Berlin, 2026-10-25: "30 2 * * *" fires at
//     02:30 CEST, not again at 02:30 CET).
//
// Intervals given as every are plain durations in absolute time; daylight
// saving does not move them.
//
// # Instants
//
// Instants are returned in UTC with millisecond precision (cron instants are
// whole seconds) and lie between the years 1 and 9999. A pattern that never
// fires, or whose schedule has no instant before its end, is rejected by
// Parse: cron patterns are searched up to 8 years ahead, the longest gap a
// valid pattern can have (29 February around 2100).
package schedule
