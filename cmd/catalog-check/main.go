// Command catalog-check runs catalogbot's checks on a file-based catalog or on a
// pull request's pair of revisions, for GitHub Actions and for people.
//
// Exit codes are the same for every subcommand: 0 pass, 1 the input failed the
// check, 2 the check could not run (usage, unreadable input, I/O).
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
	exitPass      = cli.ExitOK
	exitFail      = cli.ExitFail
	exitCannotRun = cli.ExitCannotRun
)

// version is set at build time: -ldflags "-X main.version=v1.2.3"; without
// it cli.BuildVersion reads the module version or the commit Go recorded.
var version = "dev"

// env is what the commands read from the process besides their arguments
// (tests give their own).
type env struct {
	getenv func(string) string
}

// commands lists the subcommands. To add one, write a function returning its
// cli.Command (flags declared in it, see validateCommand) and list it here.
func commands(e env) []cli.Command {
	return []cli.Command{
		validateCommand(),
		crdDiffCommand(),
		imagesCommand(e),
		checkCommand(e),
		bundleCommand(e),
		templateCommand(e),
		rulesCommand(),
		initCommand(),
		policyCommand(e),
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
	return program(e).Run(ctx, args, stdout, stderr)
}

func program(e env) cli.Program {
	return cli.Program{
		Name:  "catalog-check",
		Short: "check file-based catalogs and pull requests to catalog repositories",
		Long: "catalog-check runs catalogbot's checks on a file-based catalog, on two CRD files or on a pull\n" +
			"request's base and head revisions: for GitHub Actions (--output github) and for people.",
		Footer:   "Exit codes: 0 pass, 1 fail, 2 could not run.",
		Version:  cli.BuildVersion(version),
		Commands: commands(e),
	}
}
