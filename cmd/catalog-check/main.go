// Command catalog-check runs catalogbot's checks on a file-based catalog or on a
// pull request's pair of revisions, for GitHub Actions and for people.
//
// Exit codes are the same for every subcommand: 0 pass, 1 the input failed the
// check, 2 the check could not run (usage, unreadable input, I/O).
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
	exitPass      = 0
	exitFail      = 1
	exitCannotRun = 2
)

// command is one subcommand. run gets the arguments after the subcommand name.
type command struct {
	summary string
	run     func(ctx context.Context, args []string, stdout, stderr io.Writer) int
}

func commands() map[string]command {
	return map[string]command{
		"validate": {"validate file-based catalogs as opm validate does, with file:line for every finding", runValidate},
		"crd-diff": {"compare two sets of CRDs for backward-incompatible changes", runCRDDiff},
		"images":   {"check that bundle and related images exist, are allowed and pinned", runImages},
		"check":    {"check a pull request (base and head revisions of a git repository, and its author)", runCheck},
		"rules":    {"list every rule with its default severity, meaning and fix (markdown or json)", runRules},
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
		return exitPass
	}
	c, ok := cmds[args[0]]
	if !ok {
		fmt.Fprintf(stderr, "catalog-check: unknown command %q\n\n", args[0])
		usage(stderr, cmds)
		return exitCannotRun
	}
	return c.run(ctx, args[1:], stdout, stderr)
}

func usage(w io.Writer, cmds map[string]command) {
	fmt.Fprintln(w, "usage: catalog-check COMMAND [flags] ARGS...")
	fmt.Fprintln(w, "\ncommands:")
	names := make([]string, 0, len(cmds))
	for n := range cmds {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(w, "  %-10s %s\n", n, cmds[n].summary)
	}
	fmt.Fprintln(w, "\nexit codes: 0 pass, 1 fail, 2 could not run. Run catalog-check COMMAND -h for its flags.")
}
