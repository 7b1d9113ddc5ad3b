package cli

import (
	"bytes"
	"context"
	"io"
	"strings"
	"testing"
)

func TestProgramRun(t *testing.T) {
	var got []string
	p := Program{Name: "tool", Synopsis: "COMMAND", Footer: "exit codes: 0 ok", Commands: map[string]Command{
		"b": {"second", func(_ context.Context, args []string, _, _ io.Writer) int { got = args; return ExitFail }},
		"a": {"first", nil},
	}}
	var out, errb bytes.Buffer
	if code := p.Run(context.Background(), []string{"b", "x", "y"}, &out, &errb); code != ExitFail || strings.Join(got, ",") != "x,y" {
		t.Errorf("Run(b x y) = %d with args %q, want %d with x,y", code, got, ExitFail)
	}
	for args, want := range map[string]int{"": ExitCannotRun, "help": ExitOK, "nope": ExitCannotRun} {
		errb.Reset()
		var a []string
		if args != "" {
			a = []string{args}
		}
		if code := p.Run(context.Background(), a, &out, &errb); code != want {
			t.Errorf("Run(%q) = %d, want %d", args, code, want)
		}
		if !strings.Contains(errb.String(), "usage: tool COMMAND\n\ncommands:\n  a          first\n  b          second\n\nexit codes: 0 ok") {
			t.Errorf("Run(%q) usage:\n%s", args, errb.String())
		}
	}
}
