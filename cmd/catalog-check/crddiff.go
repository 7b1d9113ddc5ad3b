package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/pflag"

	"github.com/catalogbot/catalogbot/catalog"
	"github.com/catalogbot/catalogbot/catalog/crd"
	"github.com/catalogbot/catalogbot/internal/cli"
)

// overrideFlags collects repeatable --override rule=severity flags.
type overrideFlags struct{ ov crd.Overrides }

func (o *overrideFlags) String() string { return "" }

// Type names the value in the help (pflag.Value).
func (o *overrideFlags) Type() string { return "rule=severity" }

func (o *overrideFlags) Set(s string) error {
	rule, sev, err := crd.ParseOverride(s)
	if err != nil {
		return err
	}
	if o.ov == nil {
		o.ov = crd.Overrides{}
	}
	o.ov[rule] = sev
	return nil
}

// crdDiffReport is the JSON shape of `catalog-check crd-diff --output json`.
type crdDiffReport struct {
	// Verdict is "safe", "unsafe" or "error" (could not evaluate).
	Verdict  string            `json:"verdict"`
	Changes  []crdDiffChange   `json:"changes"`
	Findings []catalog.Finding `json:"findings,omitempty"`
}

type crdDiffChange struct {
	catalog.Finding
	CRD        string `json:"crd"`
	Version    string `json:"version,omitempty"`
	Path       string `json:"path,omitempty"`
	Old        string `json:"old,omitempty"`
	New        string `json:"new,omitempty"`
	OLMMessage string `json:"olmMessage,omitempty"`
}

// crdDiffCommand compares two CRD files: exit 0 safe, 1 unsafe, 2 could not evaluate.
func crdDiffCommand() cli.Command {
	var (
		output    string
		listRules bool
		profile   string
		ov        overrideFlags
	)
	return cli.Command{
		Use:   "crd-diff OLD NEW",
		Short: "compare two sets of CRDs for backward-incompatible changes",
		Long: `Compares the CRDs in OLD (the release users run) with those in NEW (the next
release) and reports changes that are unsafe for objects already stored in a cluster.
OLD and NEW are CRD files, or directories: a bundle directory (its manifests/) or a
manifests/ directory, whose CRDs are compared by name (other manifests are skipped).
The verdict is OLM v1's preflight; --profile compatibility makes the changes only the
preflight refuses warnings. Exit codes: 0 safe, 1 unsafe, 2 could not evaluate.`,
		Example: `  catalog-check crd-diff old/crds.yaml new/crds.yaml
  catalog-check crd-diff operators/etcd/0.9.4 operators/etcd/1.0.0
  catalog-check crd-diff old.yaml new.yaml --output json
  catalog-check crd-diff old.yaml new.yaml --profile compatibility
  catalog-check crd-diff old.yaml new.yaml --override crd.enum-value-removed=warning
  catalog-check crd-diff --rules`,
		Complete: map[string]cli.Completion{
			"output":  {Values: []string{"text", "json"}},
			"profile": {Values: []string{crd.ProfilePreflight, crd.ProfileCompatibility}},
		},
		Flags: func(fs *pflag.FlagSet) {
			fs.StringVarP(&output, "output", "o", "text", "output format: text or json")
			fs.BoolVar(&listRules, "rules", false, "list the rules with their default severity and exit")
			fs.Var(&ov, "override", "set a rule's severity, as rule=error|warning|ignore (repeatable)")
			fs.StringVar(&profile, "profile", crd.ProfilePreflight, "preflight (OLM v1's verdict) or compatibility (changes only the preflight refuses are warnings)")
		},
		Run: func(ctx context.Context, files []string, stdout, stderr io.Writer) int {
			if listRules {
				for _, r := range crd.Rules() {
					fmt.Fprintf(stdout, "%-34s %-7s %s (%s)\n", r.ID, r.Severity, r.Summary, r.Source)
				}
				return exitPass
			}
			if output != "text" && output != "json" {
				fmt.Fprintf(stderr, "catalog-check crd-diff: --output %q: want text or json\n", output)
				return exitCannotRun
			}
			if profile != crd.ProfilePreflight && profile != crd.ProfileCompatibility {
				fmt.Fprintf(stderr, "catalog-check crd-diff: --profile %q: want preflight or compatibility\n", profile)
				return exitCannotRun
			}
			if len(files) != 2 {
				fmt.Fprintf(stderr, "catalog-check crd-diff: want OLD and NEW (two CRD files or two bundle directories), or --rules; got %d arguments\nRun 'catalog-check crd-diff --help' for usage.\n", len(files))
				return exitCannotRun
			}
			return runCRDDiff(ctx, files[0], files[1], output, crd.Options{Overrides: ov.ov, Profile: profile}, stdout, stderr)
		},
	}
}

// runCRDDiff compares the CRDs of two files or directories and writes the report.
func runCRDDiff(ctx context.Context, oldFile, newFile, output string, opt crd.Options, stdout, stderr io.Writer) int {
	files := []string{oldFile, newFile}
	var findings []catalog.Finding
	sets := make([][]*crd.CRD, 2)
	for i, name := range files {
		if err := ctx.Err(); err != nil {
			fmt.Fprintf(stderr, "catalog-check crd-diff: %v\n", err)
			return exitCannotRun
		}
		crds, fsub := readCRDSide(ctx, name)
		findings = append(findings, fsub...)
		sets[i] = crds
	}
	broken := false
	for _, f := range findings {
		broken = broken || f.Severity == catalog.SeverityError
	}
	rep := crdDiffReport{Verdict: "error", Changes: []crdDiffChange{}, Findings: findings}
	code := exitCannotRun
	if !broken {
		changes, err := crd.DiffContext(ctx, sets[0], sets[1], opt)
		if err != nil {
			fmt.Fprintf(stderr, "catalog-check crd-diff: %v\n", err)
			return exitCannotRun
		}
		for _, c := range changes {
			rep.Changes = append(rep.Changes, crdDiffChange{Finding: c.Finding, CRD: c.CRD, Version: c.Version,
				Path: c.Path, Old: c.Old, New: c.New, OLMMessage: c.OLMMessage()})
		}
		rep.Verdict, code = "safe", exitPass
		if crd.Unsafe(changes) {
			rep.Verdict, code = "unsafe", exitFail
		}
	}
	if output == "json" {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(rep); err != nil {
			fmt.Fprintf(stderr, "catalog-check crd-diff: %v\n", err)
			return exitCannotRun
		}
		return code
	}
	printFindings(stderr, findings)
	if broken {
		fmt.Fprintln(stderr, "catalog-check crd-diff: could not evaluate the upgrade")
		return code
	}
	var nErr, nWarn int
	for i, c := range rep.Changes {
		if c.Severity == catalog.SeverityError {
			nErr++
		} else {
			nWarn++
		}
		if i >= maxPrintedChanges {
			continue
		}
		fmt.Fprintf(stdout, "%s: %s: %s: %s\n", c.Position, c.Severity, c.Rule, c.Message)
		if c.OLMMessage != "" {
			fmt.Fprintf(stdout, "    olm: %s\n", c.OLMMessage)
		}
		if c.Hint != "" {
			fmt.Fprintf(stdout, "    hint: %s\n", c.Hint)
		}
	}
	if n := len(rep.Changes); n > maxPrintedChanges {
		fmt.Fprintf(stdout, "… %d more changes not printed (%d in all; --output json lists every one)\n", n-maxPrintedChanges, n)
	}
	fmt.Fprintf(stdout, "%s: %s, %s\n", rep.Verdict, plural(nErr, "error"), plural(nWarn, "warning"))
	return code
}

func plural(n int, word string) string {
	if n == 1 {
		return "1 " + word
	}
	return fmt.Sprintf("%d %ss", n, word)
}

// readBounded reads a regular file of at most max bytes.
func readBounded(name string, max int64) ([]byte, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("%s is not a regular file", name)
	}
	data, err := io.ReadAll(io.LimitReader(f, max+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > max {
		return nil, fmt.Errorf("%s is larger than %d bytes", name, max)
	}
	if len(strings.TrimSpace(string(data))) == 0 {
		return nil, fmt.Errorf("%s is empty", name)
	}
	return data, nil
}

// maxPrintedChanges bounds the changes the text output prints; the total is stated.
const maxPrintedChanges = 1000

// Bounds of a directory given to crd-diff.
const (
	maxCRDDirFiles = 1000
	maxCRDDirBytes = 256 << 20
)

// readCRDSide reads the CRDs of one side of crd-diff: a file (every document must be a CRD), or a
// directory — a bundle directory (its manifests/), or a manifests directory — whose YAML and JSON files
// are read and whose documents that are not CRDs are skipped.
func readCRDSide(ctx context.Context, name string) ([]*crd.CRD, []catalog.Finding) {
	bad := func(line int, rule, msg, hint string) []catalog.Finding {
		return []catalog.Finding{{Rule: rule, Severity: catalog.SeverityError, Position: catalog.Position{File: name, Line: line}, Message: msg, Hint: hint}}
	}
	st, err := os.Stat(name)
	if err != nil {
		return nil, bad(0, crd.RuleInvalidDocument, err.Error(), "")
	}
	if !st.IsDir() {
		data, err := readBounded(name, crd.MaxFileSize)
		if err != nil {
			return nil, bad(0, crd.RuleInvalidDocument, err.Error(), "")
		}
		crds, fsub, _ := crd.Parse(name, data)
		if len(crds) == 0 && len(fsub) == 0 {
			return nil, bad(1, crd.RuleNotACRD, "file holds no CustomResourceDefinition", "pass files that hold the CRDs of a bundle, or a bundle directory")
		}
		return crds, fsub
	}
	dir := name
	if m := filepath.Join(name, "manifests"); isDir(m) {
		dir = m
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, bad(0, crd.RuleInvalidDocument, err.Error(), "")
	}
	var crds []*crd.CRD
	var findings []catalog.Finding
	files, total := 0, int64(0)
	for _, e := range entries {
		ext := strings.ToLower(filepath.Ext(e.Name()))
		if e.IsDir() || strings.HasPrefix(e.Name(), ".") || (ext != ".yaml" && ext != ".yml" && ext != ".json") {
			continue
		}
		if files++; files > maxCRDDirFiles {
			return nil, bad(0, crd.RuleInvalidDocument, fmt.Sprintf("%s holds more than %d manifest files", dir, maxCRDDirFiles), "pass a bundle directory or the CRD files themselves")
		}
		file := filepath.Join(dir, e.Name())
		data, err := readBounded(file, crd.MaxFileSize)
		if err != nil {
			findings = append(findings, catalog.Finding{Rule: crd.RuleInvalidDocument, Severity: catalog.SeverityError, Position: catalog.Position{File: file}, Message: err.Error()})
			continue
		}
		if total += int64(len(data)); total > maxCRDDirBytes {
			return nil, bad(0, crd.RuleInvalidDocument, fmt.Sprintf("the manifests of %s are larger than %d bytes in all", dir, maxCRDDirBytes), "pass the CRD files themselves")
		}
		found, fsub, err := crd.ParseManifestsContext(ctx, file, data)
		if ctxErr := ctx.Err(); ctxErr != nil && err != nil {
			return nil, bad(0, crd.RuleInvalidDocument, ctxErr.Error(), "")
		}
		crds = append(crds, found...)
		findings = append(findings, fsub...)
	}
	if len(crds) == 0 && len(findings) == 0 {
		return nil, bad(0, crd.RuleNotACRD, dir+" holds no CustomResourceDefinition", "pass a bundle directory (or its manifests/) that ships CRDs")
	}
	return crds, findings
}

func isDir(p string) bool {
	st, err := os.Stat(p)
	return err == nil && st.IsDir()
}
