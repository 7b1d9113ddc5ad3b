package cli

import (
	"bytes"
	"context"
	"io"
	"runtime/debug"
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
			output := "text" // also what the commands without the flag print (only the command run is built)
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

// TestProgramBuildsNamedCommandOnly: a run of one command registers no other command's flags (the start-up
// of every process, issue 33.1); the program's help still lists every command.
func TestProgramBuildsNamedCommandOnly(t *testing.T) {
	built := map[string]int{}
	prog := Program{Name: "tool", Short: "a tool", Version: "v1"}
	for _, name := range []string{"alpha", "beta"} {
		prog.Commands = append(prog.Commands, Command{
			Use: name + " DIR", Short: name + " things",
			Flags: func(fs *pflag.FlagSet) { built[name]++; fs.Bool("flag-"+name, false, "a flag") },
			Run:   func(context.Context, []string, io.Writer, io.Writer) int { return ExitOK },
		})
	}
	for _, tc := range []struct {
		args  string
		built string
	}{
		{"version", ""},
		{"alpha x --flag-alpha", "alpha"},
		{"beta --help", "beta"},
		{"--help", "alpha beta"},
		{"", "alpha beta"},
		{"gamma", "alpha beta"},
		{"help alpha", "alpha beta"},
	} {
		clear(built)
		var out, errb bytes.Buffer
		prog.Run(context.Background(), strings.Fields(tc.args), &out, &errb)
		var names []string
		for _, name := range []string{"alpha", "beta"} {
			if built[name] > 0 {
				names = append(names, name)
			}
		}
		if got := strings.Join(names, " "); got != tc.built {
			t.Errorf("%q built %q, want %q", tc.args, got, tc.built)
		}
		if tc.args == "--help" && (!strings.Contains(out.String(), "alpha things") || !strings.Contains(out.String(), "beta things")) {
			t.Errorf("help lists not every command:\n%s", out.String())
		}
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

// TestVersion: the version is the stamped one, else the module version Go recorded, else the commit;
// the version command adds the commit and the Go release, or says how to get a binary that knows them.
func TestVersion(t *testing.T) {
	settings := func(kv ...string) []debug.BuildSetting {
		var out []debug.BuildSetting
		for i := 0; i+1 < len(kv); i += 2 {
			out = append(out, debug.BuildSetting{Key: kv[i], Value: kv[i+1]})
		}
		return out
	}
	clone := &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Path: "m", Version: "v0.0.0-20261126143619-14473d11f2ba"},
		Settings: settings("GOOS", "linux", "GOARCH", "amd64", "vcs.revision", "14473d11f2baaa40f0cd1bff0e1f4a608d9a0f85", "vcs.time", "2026-11-26T14:36:19Z", "vcs.modified", "false")}
	devel := &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Path: "m", Version: "(devel)"},
		Settings: settings("vcs.revision", "14473d11f2baaa40f0cd1bff0e1f4a608d9a0f85", "vcs.modified", "true")}
	bare := &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Path: "m", Version: "(devel)"}}
	for _, tc := range []struct {
		stamped string
		bi      *debug.BuildInfo
		want    string
	}{
		{"v1.2.3", clone, "v1.2.3"},
		{"dev", clone, "v0.0.0-20261126143619-14473d11f2ba"},
		{"", &debug.BuildInfo{Main: debug.Module{Version: "v0.4.0"}}, "v0.4.0"},
		{"dev", devel, "dev-14473d11f2ba-dirty"},
		{"dev", bare, "dev"},
		{"dev", nil, "dev"},
	} {
		if got := buildVersion(tc.stamped, tc.bi); got != tc.want {
			t.Errorf("buildVersion(%q, %+v) = %q, want %q", tc.stamped, tc.bi, got, tc.want)
		}
	}
	got := versionText("tool", buildVersion("dev", clone), clone)
	for _, want := range []string{"tool v0.0.0-20261126143619-14473d11f2ba\n", "commit: 14473d11f2baaa40f0cd1bff0e1f4a608d9a0f85 (2026-11-26T14:36:19Z)\n", "built with: go1.26.8 linux/amd64\n"} {
		if !strings.Contains(got, want) {
			t.Errorf("versionText lacks %q:\n%s", want, got)
		}
	}
	if got := versionText("tool", "dev", bare); !strings.Contains(got, "tool dev\n") || !strings.Contains(got, "go build -buildvcs=true in a git clone") || !strings.Contains(got, "git worktree") {
		t.Errorf("versionText without a version does not say how to get one:\n%s", got)
	}
	var out bytes.Buffer
	var ran []string
	if code := testProgram(&ran).Run(context.Background(), []string{"version"}, &out, io.Discard); code != ExitOK || !strings.HasPrefix(out.String(), "tool v1.2.3\n") {
		t.Errorf("version: exit %d, %q", code, out.String())
	}
}

// TestFlagCompletion: shell completion offers a flag's values, and each element of a list flag in turn.
func TestFlagCompletion(t *testing.T) {
	var output, list string
	p := Program{Name: "tool", Commands: []Command{{
		Use: "check", Args: NoArgs,
		Flags: func(fs *pflag.FlagSet) {
			fs.StringVarP(&output, "output", "o", "text", "format")
			fs.StringVar(&list, "checks", "a,b,c", "list")
		},
		Complete: map[string]Completion{"output": {Values: []string{"text", "json"}}, "checks": {Values: []string{"alpha", "beta", "gamma"}, List: true}},
		Run:      func(context.Context, []string, io.Writer, io.Writer) int { return ExitOK },
	}}}
	complete := func(args ...string) string {
		var out bytes.Buffer
		p.Run(context.Background(), append([]string{"__complete"}, args...), &out, io.Discard)
		return out.String()
	}
	if got := complete("check", "-o", ""); !strings.HasPrefix(got, "text\njson\n:4\n") {
		t.Errorf("-o: %q", got)
	}
	if got := complete("check", "--checks", "beta,"); !strings.HasPrefix(got, "beta,alpha\nbeta,gamma\n:6\n") {
		t.Errorf("--checks beta,: %q", got)
	}
}
