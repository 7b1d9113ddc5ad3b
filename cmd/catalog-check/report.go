package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/catalogbot/catalogbot/catalog"
	"github.com/catalogbot/catalogbot/checks"
	"github.com/catalogbot/catalogbot/internal/markdown"
)

// verdict is the JSON shape of `catalog-check check --output json`.
type verdict struct {
	Conclusion checks.Conclusion `json:"conclusion"`
	Results    []checks.Result   `json:"results"`
}

// exitCode maps an overall conclusion to the CLI's exit codes: a neutral
// result (something could not be verified) is not a pass.
func exitCode(c checks.Conclusion) int {
	switch c {
	case checks.Success:
		return exitPass
	case checks.Failure, checks.ActionRequired:
		return exitFail
	}
	return exitCannotRun
}

// writeFinding prints one finding in the format every subcommand uses, so that one grep or one editor's
// error format reads them all:
//
//	path:line:col: severity: rule: message
//	    hint: how to fix it
//
// (line and column left out when unknown; "-" for a finding about no file).
func writeFinding(w io.Writer, f catalog.Finding, hints bool) {
	pos := f.Position.String()
	if pos == "" {
		pos = "-"
	}
	fmt.Fprintf(w, "%s: %s: %s: %s\n", pos, f.Severity, f.Rule, f.Message)
	if hints && f.Hint != "" {
		fmt.Fprintf(w, "    hint: %s\n", f.Hint)
	}
}

func writeText(w io.Writer, results []checks.Result, hints bool) {
	for _, r := range results {
		fmt.Fprintf(w, "%s: %s", r.Check, r.Conclusion)
		if r.Title != "" {
			fmt.Fprintf(w, " (%s)", r.Title)
		}
		fmt.Fprintln(w)
		if r.Err != "" {
			fmt.Fprintf(w, "  could not run: %s\n", r.Err)
		}
		for _, f := range r.Findings {
			writeFinding(w, f, hints)
		}
	}
	fmt.Fprintf(w, "overall: %s\n", checks.Overall(results))
}

func writeJSON(w io.Writer, results []checks.Result) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(verdict{Conclusion: checks.Overall(results), Results: results})
}

// GitHub shows at most this many error and warning annotations from one step (and 50 from a job); the rest
// of a step's workflow commands are dropped without a word.
const (
	maxStepErrors   = 10
	maxStepWarnings = 10
)

// writeGitHub prints GitHub Actions workflow commands so that findings show as annotations on their lines:
// the most important within GitHub's limits (errors first, by check and position, then warnings), and a
// notice saying how many were left out. Every finding goes into the step summary ($GITHUB_STEP_SUMMARY) as a
// table, with the upgrade graphs of the changed channels when graphs is not empty.
func writeGitHub(w io.Writer, results []checks.Result, getenv func(string) string, graphs ...string) error {
	type annotated struct {
		check string
		f     catalog.Finding
	}
	var errs, warns []annotated
	for _, r := range results {
		for _, f := range r.Findings {
			switch f.Severity {
			case catalog.SeverityError:
				errs = append(errs, annotated{r.Check, f})
			case catalog.SeverityIgnore:
			default:
				warns = append(warns, annotated{r.Check, f})
			}
		}
	}
	shown := 0
	for _, list := range []struct {
		items []annotated
		max   int
	}{{errs, maxStepErrors}, {warns, maxStepWarnings}} {
		for i, a := range list.items {
			if i == list.max {
				break
			}
			fmt.Fprintln(w, workflowCommand(a.check, a.f))
			shown++
		}
	}
	for _, r := range results {
		if r.Err != "" {
			fmt.Fprintf(w, "::warning title=%s::%s\n", escapeProperty(r.Check+" could not run"), escapeData(r.Err))
		}
	}
	if left := len(errs) + len(warns) - shown; left > 0 {
		fmt.Fprintf(w, "::notice title=%s::%s\n", escapeProperty("catalogbot: more findings"), escapeData(fmt.Sprintf(
			"%s not annotated: GitHub shows at most %d errors and %d warnings of a step. The step summary lists all %d findings.",
			plural(left, "more finding"), maxStepErrors, maxStepWarnings, len(errs)+len(warns))))
	}
	path := getenv("GITHUB_STEP_SUMMARY")
	if path == "" {
		return nil
	}
	f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return fmt.Errorf("writing step summary: %w", err)
	}
	_, werr := io.WriteString(f, markdownSummary(results, strings.Join(graphs, "")))
	if cerr := f.Close(); werr == nil {
		werr = cerr
	}
	return werr
}

// repoRelative rewrites the paths of findings about files named from the working directory (the DIR
// arguments of bundle validate and images) to be relative to the repository's root, which is what GitHub
// places annotations by: the root is $GITHUB_WORKSPACE in Actions, else the nearest directory up from the
// working directory that holds .git. Paths outside it, and paths inside an image ("[ref] file"), are kept.
func repoRelative(results []checks.Result, getenv func(string) string) []checks.Result {
	cwd, err := os.Getwd()
	if err != nil {
		return results
	}
	root := getenv("GITHUB_WORKSPACE")
	if root == "" {
		for d := cwd; ; d = filepath.Dir(d) {
			if _, err := os.Stat(filepath.Join(d, ".git")); err == nil {
				root = d
				break
			}
			if filepath.Dir(d) == d {
				return results
			}
		}
	}
	out := make([]checks.Result, len(results))
	for i, r := range results {
		fs := make([]catalog.Finding, len(r.Findings))
		for j, f := range r.Findings {
			if f.File != "" && !strings.HasPrefix(f.File, "[") {
				p := f.File
				if !filepath.IsAbs(p) {
					p = filepath.Join(cwd, p)
				}
				if rel, err := filepath.Rel(root, p); err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
					f.File = filepath.ToSlash(rel)
				}
			}
			fs[j] = f
		}
		r.Findings = fs
		out[i] = r
	}
	return out
}

func workflowCommand(check string, f catalog.Finding) string {
	level := "error"
	if f.Severity != catalog.SeverityError {
		level = "warning"
	}
	var props []string
	if f.File != "" {
		props = append(props, "file="+escapeProperty(f.File))
		if f.Line > 0 {
			props = append(props, fmt.Sprintf("line=%d", f.Line))
		}
		if f.Column > 0 {
			props = append(props, fmt.Sprintf("col=%d", f.Column))
		}
	}
	props = append(props, "title="+escapeProperty(check+": "+f.Rule))
	msg := f.Message
	if f.Hint != "" {
		msg += "\n" + f.Hint
	}
	return fmt.Sprintf("::%s %s::%s", level, strings.Join(props, ","), escapeData(msg))
}

// escapeData and escapeProperty follow the escaping the Actions runner
// expects in workflow commands.
func escapeData(s string) string {
	return strings.NewReplacer("%", "%25", "\r", "%0D", "\n", "%0A").Replace(s)
}

func escapeProperty(s string) string {
	return strings.NewReplacer("%", "%25", "\r", "%0D", "\n", "%0A", ":", "%3A", ",", "%2C").Replace(s)
}

// maxSummaryRows bounds the findings table of the step summary (GitHub takes 1 MiB of summary per step).
const maxSummaryRows = 2000

func markdownSummary(results []checks.Result, graphs string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "## catalogbot: %s\n\n| check | conclusion | findings |\n|---|---|---|\n", checks.Overall(results))
	for _, r := range results {
		fmt.Fprintf(&b, "| %s | %s %s | %d |\n", r.Check, conclusionIcon(r.Conclusion), r.Conclusion, len(r.Findings))
	}
	for _, r := range results {
		if r.Summary == "" && len(r.Findings) == 0 {
			continue
		}
		fmt.Fprintf(&b, "\n### %s\n\n%s\n", r.Check, r.Summary)
		if len(r.Findings) == 0 {
			continue
		}
		b.WriteString("\n| where | severity | rule | finding |\n|---|---|---|---|\n")
		for i, f := range r.Findings {
			if i == maxSummaryRows {
				fmt.Fprintf(&b, "\n%d more findings are not listed here; run `catalog-check check --output json` for all.\n", len(r.Findings)-i)
				break
			}
			msg := strings.NewReplacer("\n", " ", "|", `\|`).Replace(f.Message)
			if f.Hint != "" {
				msg += "<br>Fix: " + strings.NewReplacer("\n", " ", "|", `\|`).Replace(f.Hint)
			}
			fmt.Fprintf(&b, "| `%s` | %s | `%s` | %s |\n", markdown.Code(f.Position.String()), f.Severity, markdown.Code(f.Rule), msg)
		}
	}
	if graphs != "" {
		b.WriteString("\n")
		b.WriteString(graphs)
		b.WriteString("\n")
	}
	return b.String()
}

func conclusionIcon(c checks.Conclusion) string {
	switch c {
	case checks.Success:
		return "✅"
	case checks.Failure, checks.ActionRequired:
		return "❌"
	case checks.Skipped:
		return "⏭️"
	}
	return "⚠️"
}
