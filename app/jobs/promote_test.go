package jobs

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestPromoteCommand(t *testing.T) {
	for _, c := range []struct {
		body, want string
		ok         bool
	}{
		{"/promote v4.22 v4.23", "promote v4.22 v4.23", true},
		{"Please:\n\n/Promote   V4.22\tv4.23  \n", "promote v4.22 v4.23", true},
		{"/promote", "promote", true},
		{"/promote v4.22", "promote v4.22", true},
		{"```\n/promote v4.22 v4.23\n```", "", false},
		{"> /promote v4.22 v4.23", "", false},
		{"<!--\n/promote v4.22 v4.23\n-->", "", false},
		{"/promoted v4.22 v4.23", "", false},
		{"/approve", "", false},
		{"/approve\n/promote v4.21 v4.22\n/promote v4.22 v4.23", "promote v4.21 v4.22", true},
		{"please /promote v4.22 v4.23", "", false},
	} {
		got, ok := PromoteCommand(c.body)
		if got != c.want || ok != c.ok {
			t.Errorf("PromoteCommand(%q) = %q, %v; want %q, %v", c.body, got, ok, c.want, c.ok)
		}
	}
	// /promote is not one of the commands the merge's command job reads.
	if got := ParseCommands("/promote v4.22 v4.23"); len(got) != 0 {
		t.Errorf("ParseCommands took /promote: %q", got)
	}
}

func TestParsePromote(t *testing.T) {
	for _, c := range []struct{ cmd, from, to, problem string }{
		{"promote v4.22 v4.23", "v4.22", "v4.23", ""},
		{"promote v4.9 v5.0", "v4.9", "v5.0", ""},
		{"promote", "", "", "it needs two versions, not no argument"},
		{"promote v4.22", "", "", "it needs two versions, not one argument"},
		{"promote v4.22 v4.23 v4.24", "", "", "it needs two versions, not 3 arguments"},
		{"promote 4.22 v4.23", "", "", "`4.22` is not a catalog version (vMAJOR.MINOR)"},
		{"promote v4.22 ../v4.23", "", "", "`../v4.23` is not a catalog version (vMAJOR.MINOR)"},
		{"promote v4.22 v4.22", "", "", "from and to are both v4.22"},
		{"promote v4.22 `v4.23`", "", "", "`'v4.23'` is not a catalog version (vMAJOR.MINOR)"},
		{"approve", "", "", "it is not a /promote command"},
	} {
		from, to, problem := ParsePromote(c.cmd)
		if from != c.from || to != c.to || problem != c.problem {
			t.Errorf("ParsePromote(%q) = %q, %q, %q; want %q, %q, %q", c.cmd, from, to, problem, c.from, c.to, c.problem)
		}
	}
}

// Whatever a comment holds, the /promote line found is bounded, starts with "promote", is one of the comment's
// lines that start with the slash, and ParsePromote either names two catalog versions or says why not.
func FuzzPromoteCommand(f *testing.F) {
	for _, s := range []string{"/promote v4.22 v4.23", "```\n/promote v4.22 v4.23\n```", "/PROMOTE  v4.1\tv4.2", "/promote " + strings.Repeat("v4.1 ", 100),
		"> x\n/promote a b", "<details>\n\n/promote v1.1 v1.2\n\n</details>", "/promote v4.22 v4.22"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, body string) {
		cmd, ok := PromoteCommand(body)
		if !ok {
			if cmd != "" {
				t.Fatalf("no command but %q", cmd)
			}
			return
		}
		if len(cmd) > maxPromoteLine || !strings.HasPrefix(cmd, CmdPromote) {
			t.Fatalf("command %q", cmd)
		}
		if utf8.ValidString(body) && len(cmd) < maxPromoteLine {
			found := false
			norm := strings.ReplaceAll(strings.ReplaceAll(strings.ReplaceAll(body, "\r\n", "\n"), "\r", "\n"), "\x00", "\uFFFD")
			for _, l := range strings.Split(norm, "\n") {
				if strings.HasPrefix(l, "/") && strings.Join(strings.Fields(strings.ToLower(l[1:])), " ") == cmd {
					found = true
				}
			}
			if !found {
				t.Fatalf("command %q from no line of %q", cmd, body)
			}
		}
		from, to, problem := ParsePromote(cmd)
		if (problem == "") != (from != "" && to != "") || problem == "" && (!catalogVersion.MatchString(from) || !catalogVersion.MatchString(to) || from == to) {
			t.Fatalf("ParsePromote(%q) = %q, %q, %q", cmd, from, to, problem)
		}
	})
}
