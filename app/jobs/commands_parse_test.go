package jobs

import (
	"reflect"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

// Where a command line counts, case by case from CommonMark's block and inline rules (the section of the
// specification each case follows is in its name) and GitHub's handling of raw HTML.
func TestCommandLinesAsRendered(t *testing.T) {
	for _, c := range []struct {
		name string
		body string
		want []string
	}{
		{"plain line", "/approve", []string{"approve"}},
		{"line of a paragraph", "Looks good.\n/approve\nthanks", []string{"approve"}},
		{"CRLF", "LGTM\r\n/Approve  \r\n", []string{"approve"}},

		// 4.5 fenced code blocks.
		{"fence closed by the same character", "```\n/approve\n```\n/hold", []string{"hold"}},
		{"backtick fence not closed by tildes", "```\n~~~\n/approve\n```", nil},
		{"tilde fence not closed by backticks", "~~~\n```\n/approve\n~~~\n/retest", []string{"retest"}},
		{"fence not closed by a shorter fence", "````\n```\n/approve\n````\n/retest", []string{"retest"}},
		{"fence closed by a longer fence", "```\n/approve\n`````\n/retest", []string{"retest"}},
		{"closing fence with an info string is content", "```\n```go\n/approve\n```", nil},
		{"fence indented three spaces", "   ```\n/approve\n   ```\n/retest", []string{"retest"}},
		{"four spaces is no fence", "    ```\n/approve\n    ```", []string{"approve"}},
		{"unclosed fence runs to the end", "```go\n/approve", nil},
		{"backtick fence info with a backtick is no fence", "``` a`b\n/approve", []string{"approve"}},
		{"fence interrupts a paragraph", "text\n```\n/approve\n```", nil},

		// 4.4 indented code blocks.
		{"indented code", "    /approve", nil},
		{"tab-indented code", "\t/approve", nil},
		{"indented line continues a paragraph, still no command", "text\n    /approve", nil},

		// 5.1 block quotes.
		{"quoted", "> /approve", nil},
		{"quoted, no space", ">/approve", nil},
		{"nested quote", "> > /approve", nil},
		{"lazy continuation of a quote", "> please\n/approve", nil},
		{"after the quote ends", "> please\n\n/approve", []string{"approve"}},
		{"a fence in a quote ends with it", "> ```\n/approve", []string{"approve"}},
		{"quoted fence does not hide what follows", "> ```\n> /hold\n\n/approve", []string{"approve"}},

		// 4.6 HTML blocks and 6.6 raw HTML.
		{"HTML comment block", "<!--\n/approve\n-->", nil},
		{"HTML comment block over blank lines", "<!-- hidden\n\n/approve\n\n-->\n/retest", []string{"retest"}},
		{"HTML comment inline", "text <!--\n/approve\n--> more", nil},
		{"unclosed inline comment is text", "text <!--\n/approve", []string{"approve"}},
		{"empty comment ends on its line", "<!-->\n/approve", []string{"approve"}},
		{"empty comment inline", "x <!---> y\n/approve", []string{"approve"}},
		{"pre block", "<pre>\n/approve\n</pre>\n\n/retest", []string{"retest"}},
		{"pre with blank lines", "<pre>\n\n/approve\n\n</pre>", nil},
		{"PRE in capitals", "<PRE class=x>\n/approve\n</PRE>", nil},
		{"pre inline", "see <pre>\n/approve\n</pre>", nil},
		{"details block", "<details>\n<summary>old</summary>\n\n/approve\n\n</details>\n\n/hold", []string{"hold"}},
		{"details never closed", "<details>\n\n/approve", nil},
		{"details inline", "x <details><summary>s</summary>\n/approve\n</details>", nil},
		{"nested details", "<details>\n\n<details>\n\n</details>\n\n/approve\n\n</details>\n\n/retest", []string{"retest"}},
		{"div block holds raw HTML", "<div>\n/approve\n</div>", nil},
		{"after a div block and a blank line", "<div>\nx\n</div>\n\n/approve", []string{"approve"}},
		{"textarea", "<textarea>\n\n/approve\n\n</textarea>", nil},
		{"script", "<script>\n/approve\n</script>", nil},
		{"a tag in a code span hides nothing", "`<details>`\n/approve", []string{"approve"}},
		{"a tag in a fence hides nothing", "```\n<details>\n```\n/approve", []string{"approve"}},
		{"an escaped tag hides nothing", "\\<details>\n/approve", []string{"approve"}},
		{"a tag in a comment hides nothing", "<!-- <details> -->\n\n/approve", []string{"approve"}},
		{"a tag in a comment block hides nothing", "<!--\n<details>\n-->\n\n/approve", []string{"approve"}},
		{"self-closing details hides nothing", "<details/>\n\n/approve", []string{"approve"}},

		// 6.1 code spans.
		{"code span over lines", "`x\n/approve\n`", nil},
		{"double backtick span", "``a ` b\n/approve``", nil},
		{"unmatched backtick is text", "it's `x\n/approve", []string{"approve"}},
		{"backticks of another length do not close", "``x\n/approve\n`", []string{"approve"}},
		{"escaped backtick opens nothing", "\\`x\n/approve\n`", []string{"approve"}},
		{"span closed before the line", "`x` y\n/approve", []string{"approve"}},
		{"a code span does not cross paragraphs", "`x\n\n/approve\n`", []string{"approve"}},

		// Other blocks.
		{"heading", "# /approve", nil},
		{"list item", "- /approve", nil},
		{"lazy line of a list item is text", "- item\n/approve", []string{"approve"}},
		{"leading space", " /approve", nil},

		// Last word wins within one comment.
		{"approve then cancel", "/approve\n/approve cancel", []string{"approve cancel"}},
		{"cancel then approve", "/approve cancel\n/approve", []string{"approve"}},
		{"hold, cancel, hold", "/hold\n/hold cancel\n/hold", []string{"hold"}},
		{"families apart", "/approve\n/hold\n/approve cancel", []string{"hold", "approve cancel"}},
		{"hidden cancel does not count", "/approve\n<!-- /approve cancel -->\n<!--\n/approve cancel\n-->", []string{"approve"}},
		{"lgtm", "/lgtm\n/lgtm cancel", []string{"lgtm cancel"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := ParseCommands(c.body); !reflect.DeepEqual(got, c.want) {
				t.Errorf("ParseCommands(%q) = %q, want %q", c.body, got, c.want)
			}
		})
	}
}

// Whatever a comment holds, parsing ends, never panics, and returns only known commands, each once, each
// from a line of the comment that starts with the slash.
func FuzzParseCommands(f *testing.F) {
	for _, s := range []string{"/approve", "```\n/approve\n```", "<!--\n/hold\n-->", "> a\n/approve", "<details>\n\n/retest\n\n</details>",
		"`x\n/approve\n`", "<pre>\n/approve\n</pre>", "\t/approve", "<div\n/approve", "<a href=\"<\n/approve", "> ```\n/approve"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, body string) {
		got := ParseCommands(body)
		if len(got) > maxCommandsPerComment {
			t.Fatalf("%d commands", len(got))
		}
		seen := map[string]bool{}
		norm := strings.ReplaceAll(strings.ReplaceAll(body, "\r\n", "\n"), "\r", "\n")
		for _, c := range got {
			if NormalCommand(c) != c || seen[commandFamily(c)] {
				t.Fatalf("command %q: unknown or twice in %q", c, got)
			}
			seen[commandFamily(c)] = true
			found := false
			for _, l := range strings.Split(norm, "\n") {
				if strings.HasPrefix(l, "/") && NormalCommand(l[1:]) == c {
					found = true
				}
			}
			if !found && utf8.ValidString(body) {
				t.Fatalf("command %q from no line of %q", c, body)
			}
		}
	})
}

// Hostile comments stay linear: a paragraph of unmatched backtick runs of every length, unclosed comments,
// unclosed tags, deep quotes, each as long as a comment may be, parse in well under a second.
func TestParseCommandsHostileInput(t *testing.T) {
	var ticks strings.Builder
	for n := 1; ticks.Len() < maxCommandBody; n++ {
		ticks.WriteString(strings.Repeat("`", n%300+1) + " x ")
	}
	for _, body := range []string{
		ticks.String(),
		strings.Repeat("<!-- ", maxCommandBody/5),
		strings.Repeat("<a b='", maxCommandBody/6),
		strings.Repeat(">", maxCommandBody-10) + " /approve",
		strings.Repeat("<details>", maxCommandBody/9),
		strings.Repeat("- a\n", maxCommandBody/4),
	} {
		start := time.Now()
		ParseCommands(body + "\n/approve")
		if d := time.Since(start); d > time.Second {
			t.Errorf("a %d-byte comment starting %q took %s", len(body), body[:20], d)
		}
	}
}
