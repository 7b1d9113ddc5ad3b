// Command catalog-check runs catalogbot's checks on a file-based catalog or on a
// pull request's pair of revisions, for GitHub Actions and for people.
//
// Exit codes are the same for every subcommand: 0 pass, 1 the input failed the
// check, 2 the check could not run (usage, unreadable input, I/O).
package main

import (
	"context"
	"github.com/catalogbot/catalogbot/internal/cli"
	"io"
	"os"
	"os/signal"
	"syscall"
)

// Exit codes shared by every subcommand.
const (
	exitPass      = cli.ExitOK
	exitFail      = cli.ExitFail
	exitCannotRun = cli.ExitCannotRun
)

// command is one subcommand.
type command = cli.Command

func commands() map[string]command {
	return map[string]command{
		"validate": {Summary: "validate file-based catalogs as opm validate does, with file:line for every finding", Run: runValidate},
		"crd-diff": {Summary: "compare two sets of CRDs for backward-incompatible changes", Run: runCRDDiff},
		"images":   {Summary: "check that bundle and related images exist, are allowed and pinned", Run: runImages},
		"check":    {Summary: "check a pull request (base and head revisions of a git repository, and its author)", Run: runCheck},
		"rules":    {Summary: "list every rule with its default severity, meaning and fix (markdown or json)", Run: runRules},
	}
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	return cli.Program{Name: "catalog-check", Synopsis: "COMMAND [flags] ARGS...", Footer: "exit codes: 0 pass, 1 fail, 2 could not run. Run catalog-check COMMAND -h for its flags.", Commands: commands()}.Run(ctx, args, stdout, stderr)
}
