// Command kairos is the webhook scheduler: `kairos serve` runs the API, the
// admin page, the scanner and the workers; `kairos token` mints API tokens;
// `kairos topics|jobs|schedules|subscriptions|messages|dead|keys|tenants|stats` call a
// running kairos through its API, with the client package.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
)

const usage = `kairos: a webhook scheduler on Redis

usage:
  kairos serve [flags]                       run the API, scanner and workers (kairos serve -h for flags)
  kairos token --tenant NAME [--admin] [--ttl D]  print an API token signed with KAIROS_AUTH_SECRET (default expiry 24h; --ttl 0: none)
  kairos token --url URL --tenant NAME [...]  mint it through a running kairos with an admin token (KAIROS_TOKEN)
  kairos tick [--for D] [serve flags]        run the scanner and workers for at most D (default 55s), deliver
                                             what is due, print a JSON summary: for a scheduled trigger
  kairos migrate [serve flags]               move the data under KAIROS_PREFIX to this version's layout, in place
                                             (stop every kairos first; docs/operations.md#upgrading)

calling a running kairos (KAIROS_URL, KAIROS_TOKEN; each command's -h for its flags):
  kairos topics list|put|get|delete          topics and their callback settings
  kairos jobs create|get|list|cancel|reschedule|retry|bulk
  kairos operations get ID                   a bulk operation's progress
  kairos schedules put|get|list|delete|pause|resume|trigger   recurring schedules
  kairos subscriptions list|put|get|delete|pause|resume|keys|rotate-key   a topic's fan-out endpoints
  kairos messages publish|get                publish to a topic's subscriptions; a message's deliveries
  kairos dead list|replay                    dead letters
  kairos keys list|rotate                    callback signing secrets
  kairos tenants quota|set-quota|reset-quota|revoke   tenants' quotas and token revocation (admin)
  kairos stats                               jobs by state and recent deliveries, per topic

exit codes: 0 ok, 1 refused by the server (or another error), 2 usage error,
3 not found, 4 kairos unreachable or answering 5xx
`

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := runMain(ctx, os.Args[1:], os.Getenv, os.Stdin, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// runMain runs the command args names, reports its error on stderr and
// returns the exit code.
func runMain(ctx context.Context, args []string, getenv func(string) string, stdin io.Reader, stdout, stderr io.Writer) int {
	err := run(ctx, args, getenv, stdin, stdout, stderr)
	if err != nil {
		report(stderr, err)
	}
	return exitCode(err)
}

// run runs the command args names. A subcommand's -h or --help prints its
// usage and is not an error.
func run(ctx context.Context, args []string, getenv func(string) string, stdin io.Reader, stdout, stderr io.Writer) error {
	if err := runCommand(ctx, args, stdio{getenv: getenv, stdin: stdin, stdout: stdout, stderr: stderr}); !errors.Is(err, flag.ErrHelp) {
		return err
	}
	return nil
}

func runCommand(ctx context.Context, args []string, std stdio) error {
	if len(args) == 0 {
		fmt.Fprint(std.stderr, usage)
		return usagef("", "name a command: serve, token, tick, migrate, topics, jobs, schedules, subscriptions, messages, dead, keys, tenants, operations or stats")
	}
	switch args[0] {
	case "serve":
		return serve(ctx, args[1:], std.getenv, std.stdout, std.stderr)
	case "token":
		return token(ctx, args[1:], std.getenv, std.stdout, std.stderr)
	case "tick":
		return tick(ctx, args[1:], std.getenv, std.stdout, std.stderr)
	case "migrate":
		return migrate(ctx, args[1:], std.getenv, std.stdout, std.stderr)
	case "-h", "--help", "help":
		fmt.Fprint(std.stdout, usage)
		return nil
	}
	if _, ok := apiGroups[args[0]]; ok {
		return runGroup(ctx, args[0], args[1:], std)
	}
	fmt.Fprint(std.stderr, usage)
	return usagef("", "unknown command %q", args[0])
}

// usageOut is where a subcommand's flag set writes its usage: stdout when
// the user asked for it with -h or --help, stderr when it follows a mistake.
func usageOut(args []string, stdout, stderr io.Writer) io.Writer {
	for _, a := range args {
		switch a {
		case "-h", "-help", "--help", "--h":
			return stdout
		case "--":
			return stderr
		}
	}
	return stderr
}
