package main

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/spf13/pflag"

	"github.com/catalogbot/catalogbot/internal/cli"
)

// TestOutputFlagEverywhere: every catalogbot subcommand with --output takes -o too, and shell completion
// offers its values, as catalog-check's do.
func TestOutputFlagEverywhere(t *testing.T) {
	e := env{getenv: func(string) string { return "" }}
	n := 0
	cli.Program{Name: "catalogbot", Commands: commands(e)}.Walk(func(path string, flags *pflag.FlagSet) {
		f := flags.Lookup("output")
		if f == nil {
			return
		}
		n++
		if f.Shorthand != "o" {
			t.Errorf("%s: --output has no -o", path)
		}
		var out bytes.Buffer
		args := append(append([]string{"__complete"}, strings.Fields(path)...), "-o", "")
		if code := runEnv(context.Background(), args, &out, &bytes.Buffer{}, e); code != 0 || !strings.Contains(out.String(), "json\n") || !strings.Contains(out.String(), ":4\n") {
			t.Errorf("%s: completion of -o: exit %d, %q", path, code, out.String())
		}
	})
	if n < 4 {
		t.Errorf("found --output on %d commands (audit, build, build-bundle, promote); want at least 4", n)
	}
}
