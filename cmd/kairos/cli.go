package main

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/kairos-sh/kairos/client"
	"github.com/kairos-sh/kairos/internal/duration"
)

// The commands that call a running kairos through its API (topics, jobs,
// dead, keys, stats) are built from this file's parts: a group of
// subcommands, flags common to all, a client, and output as tables or JSON.

// Exit codes of kairos, for scripts.
const (
	exitOK       = 0
	exitError    = 1 // the server refused the call (a 4xx other than 404), or another error
	exitUsage    = 2 // bad flags or arguments
	exitNotFound = 3 // the topic or job does not exist (404)
	exitNoAnswer = 4 // kairos could not be reached, or answered 5xx
)

// usageError is a mistake in a command line.
type usageError struct {
	cmd string // the command whose usage to read, "kairos jobs create"
	err error
}

func (e *usageError) Error() string { return e.err.Error() }
func (e *usageError) Unwrap() error { return e.err }

func usagef(cmd, format string, args ...any) error {
	return &usageError{cmd: cmd, err: fmt.Errorf(format, args...)}
}

// exitCode is the exit status that err calls for.
func exitCode(err error) int {
	var ue *usageError
	var ae *client.Error
	var ne *url.Error
	switch {
	case err == nil:
		return exitOK
	case errors.As(err, &ue):
		return exitUsage
	case errors.As(err, &ae) && ae.Status == http.StatusNotFound:
		return exitNotFound
	case errors.As(err, &ae) && ae.Status >= 500:
		return exitNoAnswer
	case errors.As(err, &ae):
		return exitError
	case errors.As(err, &ne):
		return exitNoAnswer
	}
	return exitError
}

// report writes err to w as a user reads it: a problem with its fields one
// a line, a server that did not answer with where it was looked for.
func report(w io.Writer, err error) {
	var ue *usageError
	var ae *client.Error
	var ne *url.Error
	switch {
	case errors.As(err, &ue):
		fmt.Fprintf(w, "kairos: %v\n", err)
		if ue.cmd != "" {
			fmt.Fprintf(w, "run '%s -h' for usage\n", ue.cmd)
		}
	case errors.As(err, &ae):
		title := ae.Title
		if title == "" {
			title = http.StatusText(ae.Status)
		}
		if len(ae.Errors) > 0 {
			fmt.Fprintf(w, "kairos: %s (%d)\n", title, ae.Status)
			for _, f := range ae.Errors {
				fmt.Fprintf(w, "  %s: %s\n", f.Field, f.Message)
			}
		} else {
			fmt.Fprintf(w, "kairos: %s (%d): %s\n", title, ae.Status, ae.Detail)
		}
		if ae.Status == http.StatusUnauthorized {
			fmt.Fprintln(w, "kairos: send a token the server accepts: KAIROS_TOKEN or --token (kairos token --tenant NAME mints one with the server's KAIROS_AUTH_SECRET)")
		}
	case errors.As(err, &ne):
		fmt.Fprintf(w, "kairos: no answer from %s: %v\n", ne.URL, ne.Err)
		fmt.Fprintln(w, "kairos: is kairos running there? Set KAIROS_URL or --url to where it listens")
	default:
		fmt.Fprintf(w, "kairos: %v\n", err)
	}
}

// stdio is what a command reads and writes.
type stdio struct {
	getenv         func(string) string
	stdin          io.Reader
	stdout, stderr io.Writer
}

// apiCommand is one subcommand, such as `jobs create`.
type apiCommand struct {
	name    string // "create"
	args    []string
	summary string
	// setup defines the command's own flags on fs and returns what runs it
	// with the positional arguments, whose number is len(args).
	setup func(fs *flag.FlagSet) runFunc
}

type runFunc func(ctx context.Context, c *client.Client, args []string, out *printer) error

// apiGroups are the groups of API commands, by name.
var apiGroups = map[string][]apiCommand{
	"topics":    topicCommands,
	"jobs":      jobCommands,
	"dead":      deadCommands,
	"keys":      keyCommands,
	"schedules": scheduleCommands,
	"tenants":   tenantCommands,
	"stats":     nil, // a command of its own, without subcommands
	// fan-out
	"subscriptions": subscriptionCommands,
	"messages":      messageCommands,
}

const apiFlagsUsage = `
flags of every command that calls the API:
  --url URL         where kairos listens (KAIROS_URL; default http://127.0.0.1:8080)
  --token TOKEN     the API token (KAIROS_TOKEN; the variable keeps it out of the process list)
  --tenant NAME     with an admin token, act on this tenant
  --json            print the API's JSON instead of a table
  --http-timeout D  how long one request to kairos may take (default 30s)
`

// runGroup runs `kairos GROUP SUBCOMMAND [args] [flags]`.
func runGroup(ctx context.Context, group string, args []string, std stdio) error {
	cmds := apiGroups[group]
	if group == "stats" {
		return runAPI(ctx, "kairos stats", statsCommand, args, std)
	}
	names := make([]string, len(cmds))
	for i, c := range cmds {
		names[i] = c.name
	}
	groupUsage := func(w io.Writer) {
		fmt.Fprintf(w, "usage: kairos %s %s [flags]\n\n", group, strings.Join(names, "|"))
		for _, c := range cmds {
			fmt.Fprintf(w, "  %-40s %s\n", strings.TrimSpace(c.name+" "+strings.Join(c.args, " ")), c.summary)
		}
		fmt.Fprint(w, apiFlagsUsage)
	}
	if len(args) == 0 {
		groupUsage(std.stderr)
		return usagef("", "name a command of kairos %s: %s", group, strings.Join(names, ", "))
	}
	if isHelp(args[0]) {
		groupUsage(std.stdout)
		return nil
	}
	i := slices.IndexFunc(cmds, func(c apiCommand) bool { return c.name == args[0] })
	if i < 0 {
		groupUsage(std.stderr)
		return usagef("", "kairos %s has no command %q: use %s", group, args[0], strings.Join(names, ", "))
	}
	return runAPI(ctx, "kairos "+group+" "+cmds[i].name, cmds[i], args[1:], std)
}

func isHelp(a string) bool { return a == "-h" || a == "-help" || a == "--help" || a == "help" }

// runAPI parses a command's flags and arguments, makes the client and
// runs it.
func runAPI(ctx context.Context, name string, cmd apiCommand, args []string, std stdio) error {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	// The usage goes to stdout when asked for; after a mistake, report
	// says what is wrong and where the usage is.
	fs.SetOutput(io.Discard)
	if usageOut(args, std.stdout, std.stderr) == std.stdout {
		fs.SetOutput(std.stdout)
	}
	base := fs.String("url", "", "where kairos listens (default $KAIROS_URL, or http://127.0.0.1:8080)")
	token := fs.String("token", "", "the API token (default $KAIROS_TOKEN, which keeps it out of the process list)")
	tenant := fs.String("tenant", "", "with an admin token, act on this tenant")
	asJSON := fs.Bool("json", false, "print the API's JSON instead of a table")
	timeout := duration.Flag(fs, "http-timeout", 30*time.Second, "how long one request to kairos may take")
	run := cmd.setup(fs)
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "usage: %s %s[flags]\n\n%s\n\nflags:\n", name, strings.Join(append(cmd.args, ""), " "), cmd.summary)
		fs.PrintDefaults()
	}
	pos, err := parseInterspersed(fs, args)
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return &usageError{cmd: name, err: err}
	}
	if len(pos) != len(cmd.args) {
		if len(cmd.args) == 0 {
			return usagef(name, "%s takes no arguments, got %q", name, pos)
		}
		return usagef(name, "%s needs %s, got %d argument(s)", name, strings.Join(cmd.args, " "), len(pos))
	}
	if *base == "" {
		*base = cmp.Or(std.getenv("KAIROS_URL"), "http://127.0.0.1:8080")
	}
	if *token == "" {
		*token = std.getenv("KAIROS_TOKEN")
	}
	if *timeout <= 0 {
		return usagef(name, "--http-timeout must be positive")
	}
	opts := []client.Option{client.WithToken(*token), client.WithUserAgent("kairos-cli"),
		client.WithHTTPClient(&http.Client{Timeout: *timeout})}
	if *tenant != "" {
		opts = append(opts, client.WithTenant(*tenant))
	}
	c, err := client.New(*base, opts...)
	if err != nil {
		return usagef(name, "%v", err)
	}
	return run(ctx, c, pos, &printer{stdio: std, json: *asJSON})
}

// parseInterspersed parses flags that come before, between or after the
// positional arguments, which it returns; after "--" everything is
// positional.
func parseInterspersed(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		rest := fs.Args()
		if used := len(args) - len(rest); used > 0 && args[used-1] == "--" {
			return append(pos, rest...), nil
		}
		if len(rest) == 0 {
			return pos, nil
		}
		pos, args = append(pos, rest[0]), rest[1:]
	}
}

// printer writes a command's answer: JSON with --json, else what the human
// form writes on a tabwriter.
type printer struct {
	stdio
	json bool
}

// print writes v as JSON, or calls human with a tabwriter on stdout.
func (p *printer) print(v any, human func(w io.Writer)) error {
	if p.json {
		if v == nil {
			return nil
		}
		enc := json.NewEncoder(p.stdout)
		enc.SetEscapeHTML(false)
		enc.SetIndent("", "  ")
		return enc.Encode(v)
	}
	tw := tabwriter.NewWriter(p.stdout, 0, 0, 2, ' ', 0)
	human(tw)
	return tw.Flush()
}

// note writes a line for the human reader to stderr, so that stdout holds
// only the answer.
func (p *printer) note(format string, args ...any) {
	fmt.Fprintf(p.stderr, format+"\n", args...)
}

// headerFlag collects repeated --header NAME=VALUE flags.
type headerFlag map[string]string

func (h headerFlag) String() string { return "" }

func (h headerFlag) Set(v string) error {
	name, value, ok := strings.Cut(v, "=")
	if !ok || strings.TrimSpace(name) == "" {
		return fmt.Errorf("%q: want NAME=VALUE", v)
	}
	h[strings.TrimSpace(name)] = value
	return nil
}

// timeFlag is an RFC 3339 time flag.
type timeFlag struct{ t time.Time }

func (f *timeFlag) String() string {
	if f.t.IsZero() {
		return ""
	}
	return f.t.Format(time.RFC3339Nano)
}

func (f *timeFlag) Set(v string) error {
	t, err := time.Parse(time.RFC3339Nano, v)
	if err != nil {
		return fmt.Errorf("%q is not an RFC 3339 time such as 2026-11-21T10:30:00.250Z", v)
	}
	f.t = t
	return nil
}

// settingFlags are the callback settings a topic gives its jobs and a job
// may set for itself: --callback-url, --method, --header, --timeout,
// --max-attempts, --backoff-initial and --backoff-max.
type settingFlags struct {
	callbackURL, method string
	headers             headerFlag
	timeout             time.Duration
	maxAttempts         int
	backoffInitial      time.Duration
	backoffMax          time.Duration
}

// define defines the flags on fs; inherit says what a flag left out means.
func (s *settingFlags) define(fs *flag.FlagSet, callbackURL, inherit string) {
	s.headers = headerFlag{}
	fs.StringVar(&s.callbackURL, "callback-url", "", callbackURL)
	fs.StringVar(&s.method, "method", "", "the callbacks' HTTP method: POST, PUT, PATCH, DELETE or GET"+inherit)
	fs.Var(s.headers, "header", "a callback header NAME=VALUE; repeat for more")
	duration.Var(fs, &s.timeout, "timeout", 0, "how long one callback attempt may take"+inherit)
	fs.IntVar(&s.maxAttempts, "max-attempts", 0, "attempts before the job is dead, 1 to 100"+inherit)
	duration.Var(fs, &s.backoffInitial, "backoff-initial", 0, "bound of the first retry's wait, doubling up to --backoff-max"+inherit)
	duration.Var(fs, &s.backoffMax, "backoff-max", 0, "cap of the wait between attempts"+inherit)
}

// callbackSettings are the settings given but the callback URL; zero
// where a flag was left out.
func (s *settingFlags) callbackSettings() client.CallbackSettings {
	cs := client.CallbackSettings{Method: s.method, Timeout: client.Duration(s.timeout), MaxAttempts: s.maxAttempts}
	if len(s.headers) > 0 {
		cs.Headers = s.headers
	}
	if s.backoffInitial != 0 || s.backoffMax != 0 {
		cs.Backoff = &client.Backoff{Initial: client.Duration(s.backoffInitial), Max: client.Duration(s.backoffMax)}
	}
	return cs
}

// formatTime shows a time of an answer as the API does, in UTC to the
// millisecond; the zero time as "-".
func formatTime(t client.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.UTC().Format("2006-01-02T15:04:05.000Z07:00")
}

// orDash shows an empty value as "-".
func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
