// Package cli is the subcommand dispatch shared by the catalog-check and
// catalogbot commands: one table of commands, one usage text, the same exit
// codes.
package cli

import (
	"context"
	"fmt"
	"io"
	"sort"
)

// Exit codes shared by every subcommand of every command.
const (
	ExitOK        = 0
	ExitFail      = 1
	ExitCannotRun = 2
)

// Command is one subcommand. Run gets the arguments after the subcommand name.
type Command struct {
	Summary string
	Run     func(ctx context.Context, args []string, stdout, stderr io.Writer) int
}

// Program describes a command with subcommands.
type Program struct {
	Name     string // e.g. "catalog-check"
	Synopsis string // what follows the name in the usage line, e.g. "COMMAND [flags] ARGS..."
	Footer   string // the last usage line: exit codes and where to find flags
	Commands map[string]Command
}

// Run dispatches args to a subcommand. No arguments is a usage error; help
// prints the usage and succeeds.
func (p Program) Run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		p.Usage(stderr)
		if len(args) == 0 {
			return ExitCannotRun
		}
		return ExitOK
	}
	c, ok := p.Commands[args[0]]
	if !ok {
		fmt.Fprintf(stderr, "%s: unknown command %q\n\n", p.Name, args[0])
		p.Usage(stderr)
		return ExitCannotRun
	}
	return c.Run(ctx, args[1:], stdout, stderr)
}

// Usage lists the subcommands, sorted.
func (p Program) Usage(w io.Writer) {
	fmt.Fprintf(w, "usage: %s %s\n\ncommands:\n", p.Name, p.Synopsis)
	names := make([]string, 0, len(p.Commands))
	for n := range p.Commands {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(w, "  %-10s %s\n", n, p.Commands[n].Summary)
	}
	fmt.Fprintf(w, "\n%s\n", p.Footer)
}
