// Command catalogbot runs the catalogbot GitHub App.
//
// Exit codes are the same for every subcommand: 0 success, 1 the command
// ran and failed, 2 it could not run (usage, configuration, I/O).
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sort"
	"syscall"
)

// Exit codes shared by every subcommand.
const (
	exitOK        = 0
	exitFail      = 1
	exitCannotRun = 2
)

// version is set at build time: -ldflags "-X main.version=v1.2.3" (the
// Dockerfile and deploy/imagebuild do).
var version = "dev"

// command is one subcommand. run gets the arguments after the subcommand name.
type command struct {
	summary string
	run     func(ctx context.Context, args []string, stdout, stderr io.Writer) int
}

func commands() map[string]command {
	return map[string]command{
		"serve": {"run the GitHub App server (webhooks, job queue, check runs)", runServe},
		"version": {"print the version", func(_ context.Context, _ []string, stdout, _ io.Writer) int {
			fmt.Fprintln(stdout, version)
			return exitOK
		}},
		"demo": {"show the App at work on a sample pull request, against a local GitHub simulator", runDemo},
	}
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	cmds := commands()
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		usage(stderr, cmds)
		if len(args) == 0 {
			return exitCannotRun
		}
		return exitOK
	}
	c, ok := cmds[args[0]]
	if !ok {
		fmt.Fprintf(stderr, "catalogbot: unknown command %q\n\n", args[0])
		usage(stderr, cmds)
		return exitCannotRun
	}
	return c.run(ctx, args[1:], stdout, stderr)
}

func usage(w io.Writer, cmds map[string]command) {
	fmt.Fprintln(w, "usage: catalogbot COMMAND [flags]")
	fmt.Fprintln(w, "\ncommands:")
	names := make([]string, 0, len(cmds))
	for n := range cmds {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(w, "  %-10s %s\n", n, cmds[n].summary)
	}
	fmt.Fprintln(w, "\nexit codes: 0 success, 1 failure, 2 could not run. Run catalogbot COMMAND -h for its flags.")
}
