// Command catalogbot runs the catalogbot GitHub App.
//
// Exit codes are the same for every subcommand: 0 success, 1 the command
// ran and failed, 2 it could not run (usage, configuration, I/O).
package main

import (
	"context"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/catalogbot/catalogbot/internal/cli"
)

// Exit codes shared by every subcommand.
const (
	exitOK        = cli.ExitOK
	exitFail      = cli.ExitFail
	exitCannotRun = cli.ExitCannotRun
)

// version and revision are set at build time: -ldflags "-X main.version=v1.2.3
// -X main.revision=<commit>" (the Dockerfile does; deploy/imagebuild's guide
// does too). Without them cli.BuildVersion reads what Go recorded.
var (
	version  = "dev"
	revision = ""
)

// env is what the commands read from the process besides their arguments
// (tests give their own).
type env struct {
	getenv func(string) string
	// ready, when set, receives the server's listening address (tests).
	ready chan<- string
}

// commands lists the subcommands. To add one, write a function returning its
// cli.Command (flags declared in it, see auditCommand) and list it here.
func commands(e env) []cli.Command {
	return []cli.Command{
		serveCommand(e),
		demoCommand(),
		buildCommand(),
		buildBundleCommand(),
		auditCommand(e),
		promoteCommand(),
	}
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	return runEnv(ctx, args, stdout, stderr, env{getenv: os.Getenv})
}

func runEnv(ctx context.Context, args []string, stdout, stderr io.Writer, e env) int {
	return cli.Program{
		Name:     "catalogbot",
		Short:    "the catalogbot GitHub App: checks and merges pull requests to OLM catalog repositories",
		Footer:   "Exit codes: 0 success, 1 failure, 2 could not run.",
		Version:  buildVersion(),
		Commands: commands(e),
	}.Run(ctx, args, stdout, stderr)
}

// buildVersion is the version stamped at build time, else what Go recorded.
func buildVersion() string { return cli.BuildVersion(version) }
