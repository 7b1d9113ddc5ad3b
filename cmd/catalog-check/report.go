package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/catalogbot/catalogbot/catalog"
	"github.com/catalogbot/catalogbot/checks"
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
			fmt.Fprintf(w, "  %s: %s: %s: %s\n", f.Position, f.Severity, f.Rule, f.Message)
			if hints && f.Hint != "" {
				fmt.Fprintf(w, "      hint: %s\n", f.Hint)
			}
		}
	}
	fmt.Fprintf(w, "overall: %s\n", checks.Overall(results))
}

func writeJSON(w io.Writer, results []checks.Result) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(verdict{Conclusion: checks.Overall(results), Results: results})
}

// writeGitHub prints GitHub Actions workflow commands, one per finding, so that
// each shows as an annotation on its line, and appends a markdown summary to
// the file named by $GITHUB_STEP_SUMMARY when it is set.
func writeGitHub(w io.Writer, results []checks.Result, getenv func(string) string) error {
	for _, r := range results {
		for _, f := range r.Findings {
			fmt.Fprintln(w, workflowCommand(r.Check, f))
		}
		if r.Err != "" {
			fmt.Fprintf(w, "::warning title=%s::%s\n", escapeProperty(r.Check+" could not run"), escapeData(r.Err))
		}
	}
	path := getenv("GITHUB_STEP_SUMMARY")
	if path == "" {
		return nil
	}
	f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return fmt.Errorf("writing step summary: %w", err)
	}
	_, werr := io.WriteString(f, markdownSummary(results))
	if cerr := f.Close(); werr == nil {
		werr = cerr
	}
	return werr
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

func markdownSummary(results []checks.Result) string {
	var b strings.Builder
	fmt.Fprintf(&b, "## catalogbot: %s\n\n| check | conclusion | findings |\n|---|---|---|\n", checks.Overall(results))
	for _, r := range results {
		fmt.Fprintf(&b, "| %s | %s %s | %d |\n", r.Check, conclusionIcon(r.Conclusion), r.Conclusion, len(r.Findings))
	}
	for _, r := range results {
		if r.Summary == "" {
			continue
		}
		fmt.Fprintf(&b, "\n### %s\n\n%s\n", r.Check, r.Summary)
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
