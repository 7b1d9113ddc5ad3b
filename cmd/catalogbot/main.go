// Command catalogbot runs the catalogbot GitHub App.
//
// Exit codes are the same for every subcommand: 0 success, 1 the command
// ran and failed, 2 it could not run (usage, configuration, I/O).
package main

import (
	"context"
	"fmt"
	"github.com/catalogbot/catalogbot/internal/cli"
	"io"
	"os"
	"os/signal"
	"syscall"
)

// Exit codes shared by every subcommand.
const (
	exitOK        = cli.ExitOK
	exitFail      = cli.ExitFail
	exitCannotRun = cli.ExitCannotRun
)

// version is set at build time: -ldflags "-X main.version=v1.2.3" (the
// Dockerfile and deploy/imagebuild do).
var version = "dev"

// command is one subcommand.
type command = cli.Command

func commands() map[string]command {
	return map[string]command{
		"serve": {Summary: "run the GitHub App server (webhooks, job queue, check runs)", Run: runServe},
		"version": {Summary: "print the version", Run: func(_ context.Context, _ []string, stdout, _ io.Writer) int {
			fmt.Fprintln(stdout, version)
			return exitOK
		}},
		"demo":  {Summary: "show the App at work on a sample pull request, against a local GitHub simulator", Run: runDemo},
		"build": {Summary: "validate a catalog directory, build its image on a base pinned by digest and push it", Run: runBuild},
		"audit": {Summary: "list the pull requests the App merged, from its database", Run: runAudit},
	}
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	return cli.Program{Name: "catalogbot", Synopsis: "COMMAND [flags]", Footer: "exit codes: 0 success, 1 failure, 2 could not run. Run catalogbot COMMAND -h for its flags.", Commands: commands()}.Run(ctx, args, stdout, stderr)
}
