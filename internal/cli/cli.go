// Package cli is the command tree shared by the catalog-check and catalogbot
// commands: cobra commands and pflag flags (as opm, operator-sdk and kubectl
// have them: flags before or after arguments, --flag=value, --version, shell
// completion, examples in the help), with the same exit codes everywhere.
//
// Adding a subcommand is one Command value in the program's list: its Use,
// Short and Example, the flags it registers and its Run. A group such as
// `catalog-check bundle validate|render` is a Command whose Commands are the
// subcommands.
package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"runtime/debug"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// Exit codes shared by every subcommand of every command.
const (
	ExitOK        = 0
	ExitFail      = 1
	ExitCannotRun = 2
)

// Command is one subcommand.
type Command struct {
	// Use is the name followed by the arguments, e.g. "validate DIR...".
	Use string
	// Short is the one line shown in the parent's list of commands.
	Short string
	// Long is the help text; Short when empty.
	Long string
	// Example holds command lines shown under "Examples:", indented by two spaces.
	Example string
	// Flags registers the command's flags on fs; Run reads the variables they
	// set (declare them in the function that builds the Command).
	Flags func(fs *pflag.FlagSet)
	// Args checks the arguments left after the flags (NoArgs, MinArgs(1),
	// ExactArgs(2)); nil accepts any. A failed check exits 2.
	Args cobra.PositionalArgs
	// Run gets the arguments left after the flags and returns the exit code.
	Run func(ctx context.Context, args []string, stdout, stderr io.Writer) int
	// Commands are the subcommands of a group; a group without Run prints its
	// help (exit 2) when called without one.
	Commands []Command
	// Hidden leaves the command out of the help (it still runs).
	Hidden bool
	// Complete gives the values shell completion offers for some of the
	// command's flags (--output, --migrate-level…), by flag name.
	Complete map[string]Completion
}

// Completion is what shell completion offers for one flag's value.
type Completion struct {
	// Values are the flag's accepted values.
	Values []string
	// List: the value is a comma-separated list of Values (--checks a,b):
	// each element is completed in turn, and values already given are not
	// offered again.
	List bool
}

// complete returns the candidates for the text typed so far.
func (c Completion) complete(toComplete string) []string {
	if !c.List {
		return c.Values
	}
	prefix := ""
	given := map[string]bool{}
	if i := strings.LastIndexByte(toComplete, ','); i >= 0 {
		prefix = toComplete[:i+1]
		for _, v := range strings.Split(toComplete[:i], ",") {
			given[v] = true
		}
	}
	var out []string
	for _, v := range c.Values {
		if !given[v] {
			out = append(out, prefix+v)
		}
	}
	return out
}

// Positional argument checks for Command.Args.
var (
	NoArgs    = cobra.NoArgs
	MinArgs   = cobra.MinimumNArgs
	ExactArgs = cobra.ExactArgs
)

// Program describes a command with subcommands.
type Program struct {
	Name    string // e.g. "catalog-check"
	Short   string // one line: what the program does
	Long    string // the help text above the list of commands
	Footer  string // the last help line: exit codes
	Version string // the version to print (see BuildVersion)
	// Commands are the subcommands. Build them afresh for each Run: their
	// flags' variables belong to that run. "version" and "completion" are added.
	Commands []Command
}

// exitCode carries a subcommand's exit code through cobra.
type exitCode int

func (e exitCode) Error() string { return fmt.Sprintf("exit code %d", int(e)) }

// Run parses args (without the program name) and runs the subcommand they
// name, returning its exit code. No arguments is a usage error (exit 2); help
// and --version succeed; an unknown command or flag, or a wrong number of
// arguments, exits 2 with the reason and where to find the usage.
//
// Only the command args name is built (its flags registered, its subcommands made): a process that runs
// one command, `version` above all, does not pay for the others' flag sets at every start (issue 33.1).
// The help of the program itself, completion, and a first argument that names no command get them all.
func (p Program) Run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	root := p.tree(p.named(args))
	root.SetArgs(normalizeArgs(root, args))
	root.SetOut(stdout)
	root.SetErr(stderr)
	cmd, err := root.ExecuteContextC(ctx)
	var code exitCode
	switch {
	case err == nil:
		return ExitOK
	case errors.As(err, &code):
		return int(code)
	}
	if cmd == nil {
		cmd = root
	}
	fmt.Fprintf(stderr, "%s: %v\nRun '%s --help' for usage.\n", cmd.CommandPath(), err, cmd.CommandPath())
	return ExitCannotRun
}

// Walk calls fn with the path ("validate", "bundle render") and the flags of every command the program
// runs, for tests that hold all commands to one convention.
func (p Program) Walk(fn func(path string, flags *pflag.FlagSet)) {
	var walk func(c *cobra.Command, path string)
	walk = func(c *cobra.Command, path string) {
		if c.Runnable() && path != "" {
			fn(path, c.Flags())
		}
		for _, sub := range c.Commands() {
			walk(sub, strings.TrimSpace(path+" "+sub.Name()))
		}
	}
	walk(p.root(), "")
}

// named is the command the first argument names, "" when it names none (a flag, help, completion, a typo).
func (p Program) named(args []string) string {
	if len(args) == 0 {
		return ""
	}
	if args[0] == "version" {
		return args[0]
	}
	for _, c := range p.Commands {
		if c.name() == args[0] {
			return args[0]
		}
	}
	return ""
}

// name is the command's name: the first word of its Use.
func (c Command) name() string {
	name, _, _ := strings.Cut(c.Use, " ")
	return name
}

func (p Program) root() *cobra.Command { return p.tree("") }

// tree builds the command tree; with only set, the root holds that command alone (and version).
func (p Program) tree(only string) *cobra.Command {
	long := p.Long
	if long == "" {
		long = p.Short
	}
	if p.Footer != "" {
		long += "\n\n" + p.Footer
	}
	root := &cobra.Command{
		Use:           p.Name,
		Short:         p.Short,
		Long:          long,
		Version:       p.Version,
		SilenceErrors: true,
		SilenceUsage:  true,
		Args:          cobra.NoArgs,
		// Without a command: the help, on stderr, and exit 2.
		RunE: func(c *cobra.Command, _ []string) error {
			c.SetOut(c.ErrOrStderr())
			_ = c.Help()
			return exitCode(ExitCannotRun)
		},
	}
	root.SetVersionTemplate("{{.Version}}\n")
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return err })
	for _, c := range p.Commands {
		if only == "" || c.name() == only {
			root.AddCommand(c.cobra())
		}
	}
	root.AddCommand(&cobra.Command{
		Use:   "version",
		Short: "print the version, the commit and the Go release the binary was built from",
		Args:  cobra.NoArgs,
		Run: func(c *cobra.Command, _ []string) {
			bi, _ := debug.ReadBuildInfo()
			fmt.Fprint(c.OutOrStdout(), versionText(p.Name, p.Version, bi))
		},
	})
	return root
}

func (c Command) cobra() *cobra.Command {
	long := c.Long
	if long == "" {
		long = c.Short
	}
	cc := &cobra.Command{
		Use:     c.Use,
		Short:   c.Short,
		Long:    long,
		Example: c.Example,
		Args:    c.Args,
		Hidden:  c.Hidden,
		// Cobra checks only the root's arguments against its commands: a
		// group does so itself.
		SilenceErrors: true,
		SilenceUsage:  true,
	}
	if c.Flags != nil {
		c.Flags(cc.Flags())
	}
	for name, comp := range c.Complete {
		if cc.Flags().Lookup(name) == nil {
			panic(fmt.Sprintf("cli: %s: completion for --%s, which the command does not define", c.Use, name))
		}
		directive := cobra.ShellCompDirectiveNoFileComp
		if comp.List {
			directive |= cobra.ShellCompDirectiveNoSpace
		}
		_ = cc.RegisterFlagCompletionFunc(name, func(_ *cobra.Command, _ []string, toComplete string) ([]string, cobra.ShellCompDirective) {
			return comp.complete(toComplete), directive
		})
	}
	switch {
	case c.Run != nil:
		run := c.Run
		cc.RunE = func(cmd *cobra.Command, args []string) error {
			if code := run(cmd.Context(), args, cmd.OutOrStdout(), cmd.ErrOrStderr()); code != ExitOK {
				return exitCode(code)
			}
			return nil
		}
	case len(c.Commands) > 0:
		cc.Args = cobra.NoArgs
		cc.RunE = func(cmd *cobra.Command, args []string) error {
			cmd.SetOut(cmd.ErrOrStderr())
			_ = cmd.Help()
			return exitCode(ExitCannotRun)
		}
	}
	if cc.Args == nil {
		cc.Args = cobra.ArbitraryArgs
	}
	for _, sub := range c.Commands {
		cc.AddCommand(sub.cobra())
	}
	return cc
}

// normalizeArgs rewrites the single-dash long flags of Go's flag package
// (-output json, -repo=.) that the commands accepted before pflag into their
// double-dash form, so command lines written for the earlier versions keep
// working. Only names the command defines as long flags are rewritten; "-q"
// and other shorthands stay as they are, and nothing after "--" is touched.
func normalizeArgs(root *cobra.Command, args []string) []string {
	cmd, _, err := root.Find(args)
	if err != nil || cmd == nil {
		return args
	}
	out := make([]string, 0, len(args))
	for i, a := range args {
		if a == "--" {
			return append(out, args[i:]...)
		}
		if len(a) > 2 && a[0] == '-' && a[1] != '-' {
			name, _, _ := strings.Cut(a[1:], "=")
			if len(name) > 1 && (cmd.Flags().Lookup(name) != nil || cmd.InheritedFlags().Lookup(name) != nil) {
				a = "-" + a
			}
		}
		out = append(out, a)
	}
	return out
}

// BuildVersion is the version to print: the one stamped at build time
// (-ldflags "-X main.version=v1.2.3", as the Dockerfile and deploy/imagebuild
// do), else the module version Go recorded (`go install mod@version` records
// the release; `go build` in a git clone a pseudo-version with the commit,
// +dirty when the tree had changes), else "dev-" and the commit, else "dev".
func BuildVersion(stamped string) string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		bi = nil
	}
	return buildVersion(stamped, bi)
}

func buildVersion(stamped string, bi *debug.BuildInfo) string {
	if stamped != "" && stamped != "dev" {
		return stamped
	}
	if bi == nil {
		return "dev"
	}
	if v := bi.Main.Version; v != "" && v != "(devel)" {
		return v
	}
	rev, _, modified := vcsInfo(bi)
	if rev == "" {
		return "dev"
	}
	if len(rev) > 12 {
		rev = rev[:12]
	}
	if modified {
		return "dev-" + rev + "-dirty"
	}
	return "dev-" + rev
}

func vcsInfo(bi *debug.BuildInfo) (rev, when string, modified bool) {
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.time":
			when = s.Value
		case "vcs.modified":
			modified = s.Value == "true"
		}
	}
	return rev, when, modified
}

// versionText is what the version command prints: the version, then the commit and the Go release the
// binary was built from, or how to build one that knows its version.
func versionText(name, version string, bi *debug.BuildInfo) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s\n", name, version)
	if bi == nil {
		return b.String()
	}
	rev, when, modified := vcsInfo(bi)
	switch {
	case rev != "":
		fmt.Fprintf(&b, "commit: %s", rev)
		if when != "" {
			fmt.Fprintf(&b, " (%s)", when)
		}
		if modified {
			b.WriteString(", with uncommitted changes")
		}
		b.WriteString("\n")
	case version == "dev":
		b.WriteString("no version or commit was recorded in this binary (go run; a build with -buildvcs=false, given or in " +
			"GOFLAGS (go env GOFLAGS); or a build in a git worktree, whose .git file Go does not take for a checkout): " +
			"build it with go build -buildvcs=true in a git clone, or go install MODULE@VERSION, or stamp one with -ldflags \"-X main.version=…\"\n")
	}
	var goos, goarch string
	for _, s := range bi.Settings {
		switch s.Key {
		case "GOOS":
			goos = s.Value
		case "GOARCH":
			goarch = s.Value
		}
	}
	fmt.Fprintf(&b, "built with: %s", bi.GoVersion)
	if goos != "" {
		fmt.Fprintf(&b, " %s/%s", goos, goarch)
	}
	b.WriteString("\n")
	return b.String()
}
