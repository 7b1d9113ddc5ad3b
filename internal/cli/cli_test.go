package cli

import (
	"bytes"
	"context"
	"io"
	"strings"
	"testing"

	"github.com/spf13/pflag"
)

// testProgram has a command with flags and arguments, one without arguments
// and a group, as catalog-check and catalogbot have them.
func testProgram(got *[]string) Program {
	return Program{
		Name: "tool", Short: "a tool", Footer: "Exit codes: 0 ok.", Version: "v1.2.3",
		Commands: func() []Command {
			var output string
			var quiet bool
			var list []string
			record := func(name string) func(context.Context, []string, io.Writer, io.Writer) int {
				return func(_ context.Context, args []string, stdout, _ io.Writer) int {
					*got = append([]string{name, "output=" + output, "quiet=" + map[bool]string{true: "yes", false: "no"}[quiet], "list=" + strings.Join(list, "+")}, args...)
					if output == "fail" {
						return ExitFail
					}
					io.WriteString(stdout, "ran\n")
					return ExitOK
				}
			}
			return []Command{
				{
					Use: "check DIR...", Short: "check dirs", Example: "  tool check dir --output json", Args: MinArgs(1),
					Flags: func(fs *pflag.FlagSet) {
						fs.StringVar(&output, "output", "text", "format")
						fs.BoolVarP(&quiet, "quiet", "q", false, "quiet")
						fs.StringArrayVar(&list, "item", nil, "repeatable")
					},
					Run: record("check"),
				},
				{Use: "rules", Short: "list rules", Args: NoArgs, Run: record("rules")},
				{Use: "bundle", Short: "bundle commands", Commands: []Command{
					{Use: "render DIR", Short: "render a bundle", Args: ExactArgs(1), Run: record("bundle render")},
				}},
			}
		}(),
	}
}

func TestProgramRun(t *testing.T) {
	for _, tc := range []struct {
		args       string
		code       int
		got        string // what Run received
		stdout     string // a substring of stdout
		stderr     string // a substring of stderr
		noUsageOut bool
	}{
		// Flags before, between and after arguments; --flag=value; shorthands; repeatable flags.
		{args: "check a --output json b", got: "check output=json quiet=no list= a b"},
		{args: "check --output=json -q a", got: "check output=json quiet=yes list= a"},
		{args: "check a --item x --item=y", got: "check output=text quiet=no list=x+y a"},
		// The single-dash long flags Go's flag package took keep working.
		{args: "check -output json a", got: "check output=json quiet=no list= a"},
		{args: "check -output=json a -- -output", got: "check output=json quiet=no list= a -output"},
		{args: "check a --output fail", code: ExitFail, got: "check output=fail quiet=no list= a"},
		{args: "bundle render d", got: "bundle render output=text quiet=no list= d", stdout: "ran"},
		// Version, help and completion succeed.
		{args: "--version", stdout: "v1.2.3\n"},
		{args: "version", stdout: "v1.2.3\n"},
		{args: "--help", stdout: "Exit codes: 0 ok."},
		{args: "check --help", stdout: "Examples:\n  tool check dir --output json"},
		{args: "help check", stdout: "tool check DIR... [flags]"},
		{args: "completion bash", stdout: "bash completion"},
		{args: "completion zsh", stdout: "#compdef tool"},
		// Usage errors exit 2 and say why.
		{args: "", code: ExitCannotRun, stderr: "Available Commands:"},
		{args: "nope", code: ExitCannotRun, stderr: `tool: unknown command "nope" for "tool"`},
		{args: "check", code: ExitCannotRun, stderr: "tool check: requires at least 1 arg(s)"},
		{args: "check a --nope", code: ExitCannotRun, stderr: "unknown flag: --nope"},
		{args: "check a --output", code: ExitCannotRun, stderr: "flag needs an argument"},
		{args: "rules x", code: ExitCannotRun, stderr: `unknown command "x" for "tool rules"`},
		{args: "bundle", code: ExitCannotRun, stderr: "render      render a bundle"},
		{args: "bundle nope", code: ExitCannotRun, stderr: `unknown command "nope" for "tool bundle"`},
	} {
		var got []string
		var out, errb bytes.Buffer
		code := testProgram(&got).Run(context.Background(), strings.Fields(tc.args), &out, &errb)
		if code != tc.code {
			t.Errorf("%q: exit %d, want %d\nstdout: %s\nstderr: %s", tc.args, code, tc.code, out.String(), errb.String())
		}
		if g := strings.Join(got, " "); g != tc.got {
			t.Errorf("%q: ran %q, want %q", tc.args, g, tc.got)
		}
		if !strings.Contains(out.String(), tc.stdout) {
			t.Errorf("%q: stdout %q, want it to hold %q", tc.args, out.String(), tc.stdout)
		}
		if !strings.Contains(errb.String(), tc.stderr) {
			t.Errorf("%q: stderr %q, want it to hold %q", tc.args, errb.String(), tc.stderr)
		}
	}
}

// TestProgramFreshFlags: a program built twice does not share flag values.
func TestProgramFreshFlags(t *testing.T) {
	var got []string
	testProgram(&got).Run(context.Background(), []string{"check", "--output", "json", "a"}, io.Discard, io.Discard)
	testProgram(&got).Run(context.Background(), []string{"check", "a"}, io.Discard, io.Discard)
	if g := strings.Join(got, " "); g != "check output=text quiet=no list= a" {
		t.Errorf("second run got %q", g)
	}
}

func TestBuildVersion(t *testing.T) {
	if v := BuildVersion("v1.2.3"); v != "v1.2.3" {
		t.Errorf("stamped: %q", v)
	}
	// A test binary has no module version: "dev", with the commit when Go recorded one.
	if v := BuildVersion("dev"); v != "dev" && !strings.HasPrefix(v, "dev-") {
		t.Errorf("unstamped: %q", v)
	}
	if v := BuildVersion(""); v == "" {
		t.Error("empty version")
	}
}
