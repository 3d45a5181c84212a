// Command kairos is the webhook scheduler: `kairos serve` runs the API, the
// admin page, the scanner and the workers; `kairos token` mints API tokens.
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
  kairos bench --redis-url URL [flags]       measure throughput, precision and Redis cost (kairos bench -h)
`

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Getenv, os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "kairos:", err)
		os.Exit(1)
	}
}

// run runs the command args names. A subcommand's -h or --help prints its
// usage and is not an error.
func run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	if err := runCommand(ctx, args, getenv, stdout, stderr); !errors.Is(err, flag.ErrHelp) {
		return err
	}
	return nil
}

func runCommand(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return fmt.Errorf("name a command: serve or token")
	}
	switch args[0] {
	case "serve":
		return serve(ctx, args[1:], getenv, stdout, stderr)
	case "token":
		return token(args[1:], getenv, stdout, stderr)
	case "bench":
		return runBench(ctx, args[1:], getenv, stdout, stderr)
	case "-h", "--help", "help":
		fmt.Fprint(stdout, usage)
		return nil
	}
	fmt.Fprint(stderr, usage)
	return fmt.Errorf("unknown command %q", args[0])
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
