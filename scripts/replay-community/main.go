// Command replay-community replays the newest merged pull requests of a
// community-layout catalog repository (redhat-openshift-ecosystem/
// community-operators-prod) through `catalog-check check`, as a maintainer of
// that repository would run it, and prints a table of verdicts per check,
// the time and the peak RSS of each run.
//
//	go run ./scripts/replay-community -n 150 REPO > table.md
//
// REPO is a clone of the repository (bare or not; a partial clone is fine:
// only trees are read here), or $COMMUNITY_REPO. It is never written to:
// the replay works in a scratch repository that reads REPO's objects through
// objects/info/alternates (or, with -objects links, through links to its
// pack files, for a catalog-check that predates alternates).
//
// Each squash-merged commit C on the first-parent history is a pull request:
// base = C's parent plus the policy below, head = C plus the policy (a child
// of base, so the pull request's diff is exactly C's), author = the first
// reviewer in the ci.yaml of the package C touches (read from the parent,
// else from C). The policy is the one docs/policy.md describes for that
// repository: every catalogs/v4.* root, bundle root operators with
// ownersFromCIYaml and templatesFromCIYaml, the pipeline's image pattern, and
// removals of pre-release versions (the repository prunes its nightly builds),
// and crd-safety's compatibility profile (-crd-profile; the catalogs are
// served by OLM v0 on OpenShift).
//
// A run that exits 2 could not verify something, and the table says why:
// "mirror" when REPO lacks blobs of the packages the pull request touches (a
// partial clone's missing blobs are never fetched here; a CI checkout of the
// pull request would hold the head's), "offline" when what was not verified
// lives only in bundle images (the default checks leave out images, so no
// registry is contacted), "unexplained" otherwise — the last is a bug.
package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"syscall"
	"time"

	"sigs.k8s.io/yaml"
)

type options struct {
	repo, checkBin, objects, roots, checks, cacheDir, jsonOut, only string
	crdProfile                                                      string
	n, skip                                                         int
	timeout                                                         time.Duration
	keep                                                            bool
}

func main() {
	var o options
	flag.IntVar(&o.n, "n", 150, "how many of the newest merged pull requests to replay")
	flag.IntVar(&o.skip, "skip", 0, "leave out this many of the newest merged pull requests first (to replay an older window)")
	flag.StringVar(&o.checkBin, "catalog-check", "", "the catalog-check binary (default: built from this source tree)")
	flag.StringVar(&o.objects, "objects", "alternates", "how the scratch repository reaches REPO's objects: alternates or links (links to its pack files)")
	flag.StringVar(&o.roots, "roots", "glob", `catalog roots in the policy: "glob" (catalogs/v4.*) or "literal" (each catalogs/v4.* directory of the base, listed)`)
	flag.StringVar(&o.crdProfile, "crd-profile", "compatibility", `the policy's crdSafety.profile: "compatibility" (the catalogs are served by OLM v0 on OpenShift: the changes only OLM v1's preflight refuses are warnings) or "preflight"`)
	flag.StringVar(&o.checks, "checks", "ownership,validation,immutability,crd-safety,templates", "checks to run")
	flag.StringVar(&o.cacheDir, "cache-dir", "off", `catalog-check --cache-dir ("off": every run reads cold)`)
	flag.StringVar(&o.jsonOut, "json", "", "also write one JSON line per pull request to this file")
	flag.StringVar(&o.only, "only", "", "replay only these commits (comma-separated, abbreviated or not)")
	flag.DurationVar(&o.timeout, "timeout", 10*time.Minute, "time limit of one catalog-check run")
	flag.BoolVar(&o.keep, "keep", false, "keep the scratch repository and print each run's command, to run it again")
	flag.Parse()
	o.repo = flag.Arg(0)
	if o.repo == "" {
		o.repo = os.Getenv("COMMUNITY_REPO")
	}
	if o.repo == "" || flag.NArg() > 1 {
		fmt.Fprintln(os.Stderr, "usage: replay-community [-n 150] [flags] REPO (or $COMMUNITY_REPO)")
		os.Exit(2)
	}
	if err := run(context.Background(), o); err != nil {
		fmt.Fprintln(os.Stderr, "replay-community:", err)
		os.Exit(1)
	}
}

// outcome is one replayed pull request.
type outcome struct {
	Commit  string  `json:"commit"`
	Subject string  `json:"subject"`
	Kind    string  `json:"kind"`
	Package string  `json:"package"`
	Author  string  `json:"author"`
	Exit    int     `json:"exit"`
	Seconds float64 `json:"seconds"`
	// CPUSeconds is user plus system time: on a loaded machine, a steadier measure than Seconds.
	CPUSeconds float64           `json:"cpuSeconds"`
	RSSMiB     float64           `json:"rssMiB"`
	Verdicts   map[string]string `json:"verdicts"`
	// Rules counts the findings of each check by rule and severity ("check rule severity").
	Rules map[string]int `json:"rules"`
	// Examples are the first messages of each rule and severity, at most three each.
	Examples map[string][]string `json:"examples,omitempty"`
	Errors   []string            `json:"errors,omitempty"` // checks that could not run, and why
	Stderr   string              `json:"stderr,omitempty"`
	// Absent are the blobs of the touched packages (operators/<pkg>/ and catalogs/*/<pkg>/, base and head)
	// that REPO lacks ("path (blob, rev)"): a partial clone leaves out blobs nobody fetched, and a CI checkout
	// of the pull request would have those of the head, so a run that could not verify for want of them says
	// nothing about the pull request.
	Absent []string `json:"absent,omitempty"`
}

func run(ctx context.Context, o options) error {
	src, err := gitDir(ctx, o.repo)
	if err != nil {
		return err
	}
	work, err := os.MkdirTemp("", "replay-community-")
	if err != nil {
		return err
	}
	if !o.keep {
		defer os.RemoveAll(work)
	}
	if o.checkBin == "" {
		o.checkBin = filepath.Join(work, "catalog-check")
		fmt.Fprintln(os.Stderr, "building catalog-check")
		b := exec.CommandContext(ctx, "go", "build", "-o", o.checkBin, "./cmd/catalog-check")
		b.Stderr = os.Stderr
		if err := b.Run(); err != nil {
			return fmt.Errorf("building catalog-check: %w", err)
		}
	}
	scratch := filepath.Join(work, "repo.git")
	if err := makeScratch(ctx, src, scratch, o.objects); err != nil {
		return err
	}
	commits, err := mergedCommits(ctx, src, o.n, o.skip, o.only)
	if err != nil {
		return err
	}
	var jsonl io.Writer = io.Discard
	if o.jsonOut != "" {
		f, err := os.Create(o.jsonOut)
		if err != nil {
			return err
		}
		defer f.Close()
		jsonl = f
	}
	var all []outcome
	for i, c := range commits {
		out, err := replay(ctx, o, src, scratch, work, c)
		if err != nil {
			return fmt.Errorf("%s: %w", c.sha, err)
		}
		all = append(all, out)
		line, _ := json.Marshal(out)
		fmt.Fprintf(jsonl, "%s\n", line)
		fmt.Fprintf(os.Stderr, "[%d/%d] %s %-8s %-40.40s exit %d %.2fs (cpu %.2fs) %.0f MiB %v\n", i+1, len(commits), c.sha[:9], out.Kind, out.Package, out.Exit, out.Seconds, out.CPUSeconds, out.RSSMiB, verdictLine(out))
	}
	report(os.Stdout, o, all)
	return nil
}

// gitDir is the git directory of a repository path (bare or not).
func gitDir(ctx context.Context, repo string) (string, error) {
	out, err := git(ctx, repo, nil, "rev-parse", "--absolute-git-dir")
	if err != nil {
		return "", fmt.Errorf("%s is not a git repository: %w", repo, err)
	}
	return strings.TrimSpace(out), nil
}

// makeScratch makes an empty bare repository that reads src's objects.
func makeScratch(ctx context.Context, src, dst, how string) error {
	if _, err := git(ctx, "", nil, "init", "-q", "--bare", dst); err != nil {
		return err
	}
	switch how {
	case "alternates":
		return os.WriteFile(filepath.Join(dst, "objects", "info", "alternates"), []byte(filepath.Join(src, "objects")+"\n"), 0o644)
	case "links":
		packs, _ := filepath.Glob(filepath.Join(src, "objects", "pack", "pack-*"))
		for _, p := range packs {
			if err := os.Symlink(p, filepath.Join(dst, "objects", "pack", filepath.Base(p))); err != nil {
				return err
			}
		}
		if len(packs) == 0 {
			return fmt.Errorf("%s has no pack files to link", src)
		}
		return nil
	}
	return fmt.Errorf("-objects %q: want alternates or links", how)
}

type commit struct{ sha, parent, subject string }

var prNumber = regexp.MustCompile(`\(#[0-9]+\)$`)

// mergedCommits are the n newest first-parent commits whose subject ends in a pull request number.
func mergedCommits(ctx context.Context, src string, n, skip int, only string) ([]commit, error) {
	out, err := git(ctx, src, nil, "log", "--first-parent", "--format=%H %P%x09%s", "-n", fmt.Sprint(4*(n+skip)+100), "HEAD")
	if err != nil {
		return nil, err
	}
	var wanted []string
	if only != "" {
		wanted = strings.Split(only, ",")
	}
	var cs []commit
	for line := range strings.Lines(out) {
		head, subject, _ := strings.Cut(strings.TrimSpace(line), "\t")
		f := strings.Fields(head)
		if len(f) != 2 || !prNumber.MatchString(subject) { // merge commits of two parents and direct pushes are skipped
			continue
		}
		if wanted != nil && !slices.ContainsFunc(wanted, func(w string) bool { return strings.HasPrefix(f[0], w) }) {
			continue
		}
		if skip > 0 {
			skip--
			continue
		}
		cs = append(cs, commit{sha: f[0], parent: f[1], subject: subject})
		if len(cs) == n {
			break
		}
	}
	return cs, nil
}

// replay runs catalog-check on one merged commit.
func replay(ctx context.Context, o options, src, scratch, work string, c commit) (outcome, error) {
	out := outcome{Commit: c.sha, Subject: c.subject, Verdicts: map[string]string{}, Rules: map[string]int{}, Examples: map[string][]string{}}
	changed, err := git(ctx, src, nil, "diff-tree", "-r", "--no-renames", "--name-status", c.parent, c.sha)
	if err != nil {
		return out, err
	}
	out.Kind, out.Package = classify(changed)
	out.Author = firstReviewer(ctx, src, out.Package, c.parent, c.sha)
	if out.Absent, err = absentBlobs(ctx, src, touchedPackages(changed), c.parent, c.sha); err != nil {
		return out, err
	}
	pol, err := policyFor(ctx, src, c.parent, o.roots, o.crdProfile)
	if err != nil {
		return out, err
	}
	blob, err := git(ctx, scratch, strings.NewReader(pol), "hash-object", "-w", "--stdin")
	if err != nil {
		return out, err
	}
	blob = strings.TrimSpace(blob)
	base, err := withPolicy(ctx, scratch, c.parent, blob, c.parent)
	if err != nil {
		return out, err
	}
	head, err := withPolicy(ctx, scratch, c.sha, blob, base)
	if err != nil {
		return out, err
	}
	rctx, cancel := context.WithTimeout(ctx, o.timeout)
	defer cancel()
	resultFile := filepath.Join(work, "result.json")
	f, err := os.Create(resultFile)
	if err != nil {
		return out, err
	}
	var stderr bytes.Buffer
	cmd := exec.CommandContext(rctx, o.checkBin, "check", "--repo", scratch, "--base", base, "--head", head,
		"--author", out.Author, "--checks", o.checks, "--output", "json", "--cache-dir", o.cacheDir)
	cmd.Stdout, cmd.Stderr = f, &limitedBuffer{b: &stderr, max: 8 << 10}
	if o.keep {
		fmt.Fprintln(os.Stderr, strings.Join(cmd.Args, " "))
	}
	start := time.Now()
	runErr := cmd.Run()
	out.Seconds = time.Since(start).Seconds()
	f.Close()
	if cmd.ProcessState != nil {
		out.Exit = cmd.ProcessState.ExitCode()
		if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
			out.RSSMiB = float64(ru.Maxrss) / 1024 // kilobytes on Linux
		}
		out.CPUSeconds = (cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()).Seconds()
	} else if runErr != nil {
		return out, runErr
	}
	out.Stderr = strings.TrimSpace(stderr.String())
	readVerdicts(resultFile, &out)
	return out, nil
}

// classify says what kind of pull request the changed paths make, and the package it concerns.
func classify(nameStatus string) (kind, pkg string) {
	var bundles, catalogs, other, added, deleted int
	pkgs := map[string]int{}
	for line := range strings.Lines(nameStatus) {
		status, p, ok := strings.Cut(strings.TrimSpace(line), "\t")
		if !ok {
			continue
		}
		switch status {
		case "A":
			added++
		case "D":
			deleted++
		}
		parts := strings.Split(p, "/")
		switch {
		case parts[0] == "operators" && len(parts) >= 3:
			pkgs[parts[1]]++
			if len(parts) >= 4 && parts[2] != "catalog-templates" {
				bundles++
			} else {
				catalogs++ // ci.yaml, Makefile, templates
			}
		case parts[0] == "catalogs" && len(parts) >= 4:
			pkgs[parts[2]]++
			catalogs++
		default:
			other++
		}
	}
	for p, n := range pkgs {
		if pkg == "" || n > pkgs[pkg] || n == pkgs[pkg] && p < pkg {
			pkg = p
		}
	}
	switch {
	case added == 0 && deleted > 0:
		kind = "removal"
	case other > 0 || (bundles == 0 && catalogs == 0):
		kind = "other"
	case bundles > 0 && catalogs > 0:
		kind = "mixed"
	case bundles > 0:
		kind = "bundle"
	default:
		kind = "catalog"
	}
	return kind, pkg
}

// touchedPackages are the package folders the changed paths are under (operators/<pkg>/...,
// catalogs/<version>/<pkg>/...), sorted.
func touchedPackages(nameStatus string) []string {
	set := map[string]bool{}
	for line := range strings.Lines(nameStatus) {
		_, p, ok := strings.Cut(strings.TrimSpace(line), "\t")
		if !ok {
			continue
		}
		parts := strings.Split(p, "/")
		switch {
		case parts[0] == "operators" && len(parts) >= 3:
			set[parts[1]] = true
		case parts[0] == "catalogs" && len(parts) >= 4:
			set[parts[2]] = true
		}
	}
	return sortedKeys(set)
}

// maxAbsentListed bounds the absent blobs listed for one pull request.
const maxAbsentListed = 20

// absentBlobs lists the blobs of the packages pkgs in revs that src does not have, as "path (blob, rev)".
func absentBlobs(ctx context.Context, src string, pkgs []string, revs ...string) ([]string, error) {
	if len(pkgs) == 0 {
		return nil, nil
	}
	var out []string
	seen := map[string]bool{}
	for _, rev := range revs {
		versions, err := git(ctx, src, nil, "ls-tree", "--name-only", rev, "catalogs/")
		if err != nil {
			return nil, err
		}
		args := []string{"ls-tree", "-r", rev, "--"}
		for _, p := range pkgs {
			args = append(args, "operators/"+p)
			for v := range strings.Lines(versions) {
				args = append(args, strings.TrimSpace(v)+"/"+p)
			}
		}
		listing, err := git(ctx, src, nil, args...)
		if err != nil {
			return nil, err
		}
		var ids []string
		pathOf := map[string][]string{}
		for line := range strings.Lines(listing) {
			meta, p, ok := strings.Cut(strings.TrimRight(line, "\n"), "\t")
			f := strings.Fields(meta)
			if !ok || len(f) != 3 || f[1] != "blob" {
				continue
			}
			if _, ok := pathOf[f[2]]; !ok {
				ids = append(ids, f[2])
			}
			pathOf[f[2]] = append(pathOf[f[2]], p)
		}
		if len(ids) == 0 {
			continue
		}
		check, err := git(ctx, src, strings.NewReader(strings.Join(ids, "\n")+"\n"), "cat-file", "--batch-check=%(objectname) %(objecttype)")
		if err != nil {
			return nil, err
		}
		for line := range strings.Lines(check) {
			f := strings.Fields(line)
			if len(f) != 2 || f[1] != "missing" {
				continue
			}
			for _, p := range pathOf[f[0]] {
				if seen[p+f[0]] {
					continue
				}
				seen[p+f[0]] = true
				if len(out) < maxAbsentListed {
					out = append(out, fmt.Sprintf("%s (%s, %s)", p, f[0][:12], rev[:min(9, len(rev))]))
				}
			}
		}
	}
	return out, nil
}

// firstReviewer is the first reviewer of operators/<pkg>/ci.yaml at the first of revs that has one.
func firstReviewer(ctx context.Context, src, pkg string, revs ...string) string {
	const nobody = "community-contributor"
	if pkg == "" {
		return nobody
	}
	for _, rev := range revs {
		data, err := git(ctx, src, nil, "cat-file", "blob", rev+":operators/"+pkg+"/ci.yaml")
		if err != nil {
			continue
		}
		var ci struct {
			Reviewers []any `json:"reviewers"`
		}
		if yaml.Unmarshal([]byte(data), &ci) != nil {
			continue
		}
		for _, r := range ci.Reviewers {
			if s, ok := r.(string); ok && s != "" {
				return s
			}
		}
	}
	return nobody
}

// policyFor is the maintainer's .catalogbot.yaml for the community repository at base.
func policyFor(ctx context.Context, src, base, roots, crdProfile string) (string, error) {
	var b strings.Builder
	b.WriteString("version: 1\ncatalogs:\n")
	switch roots {
	case "glob":
		b.WriteString("  - path: \"catalogs/v4.*\"\n")
	case "literal":
		out, err := git(ctx, src, nil, "ls-tree", "--name-only", base, "catalogs/")
		if err != nil {
			return "", err
		}
		n := 0
		for line := range strings.Lines(out) {
			p := strings.TrimSpace(line)
			if ok, _ := filepath.Match("catalogs/v4.*", p); ok {
				fmt.Fprintf(&b, "  - path: %s\n", p)
				n++
			}
		}
		if n == 0 {
			return "", fmt.Errorf("%s has no catalogs/v4.* directory", base)
		}
	default:
		return "", fmt.Errorf("-roots %q: want glob or literal", roots)
	}
	b.WriteString(`maintainers: [community-maintainer]
bundles:
  - path: operators
    ownersFromCIYaml: true
    templatesFromCIYaml: true
    image: "quay.io/community-operator-pipeline-prod/{package}:{version}"
removals:
  - versions: [prerelease]
`)
	if crdProfile != "" {
		fmt.Fprintf(&b, "crdSafety:\n  profile: %s\n", crdProfile)
	}
	return b.String(), nil
}

// withPolicy writes a commit whose tree is rev's with .catalogbot.yaml added, whose parent is parent.
func withPolicy(ctx context.Context, scratch, rev, blob, parent string) (string, error) {
	top, err := git(ctx, scratch, nil, "ls-tree", rev)
	if err != nil {
		return "", err
	}
	var entries []string
	for line := range strings.Lines(top) {
		if !strings.HasSuffix(strings.TrimRight(line, "\n"), "\t.catalogbot.yaml") {
			entries = append(entries, strings.TrimRight(line, "\n"))
		}
	}
	entries = append(entries, "100644 blob "+blob+"\t.catalogbot.yaml")
	tree, err := git(ctx, scratch, strings.NewReader(strings.Join(entries, "\n")+"\n"), "mktree", "--missing")
	if err != nil {
		return "", err
	}
	c, err := git(ctx, scratch, strings.NewReader("replay of "+rev+"\n"), "commit-tree", strings.TrimSpace(tree), "-p", parent)
	return strings.TrimSpace(c), err
}

// readVerdicts reads catalog-check's JSON verdict, field by field, so that a very large one is not held whole.
func readVerdicts(file string, out *outcome) {
	f, err := os.Open(file)
	if err != nil {
		return
	}
	defer f.Close()
	var v struct {
		Results []struct {
			Check      string `json:"check"`
			Conclusion string `json:"conclusion"`
			Error      string `json:"error"`
			Findings   []struct {
				Rule     string `json:"rule"`
				Severity string `json:"severity"`
				File     string `json:"file"`
				Line     int    `json:"line"`
				Message  string `json:"message"`
			} `json:"findings"`
		} `json:"results"`
	}
	if err := json.NewDecoder(bufio.NewReaderSize(f, 1<<20)).Decode(&v); err != nil {
		if !errors.Is(err, io.EOF) {
			out.Errors = append(out.Errors, "reading the JSON verdict: "+err.Error())
		}
		return
	}
	for _, r := range v.Results {
		out.Verdicts[r.Check] = r.Conclusion
		if r.Error != "" {
			out.Errors = append(out.Errors, r.Check+": "+r.Error)
		}
		for _, fd := range r.Findings {
			k := r.Check + " " + fd.Rule + " " + fd.Severity
			out.Rules[k]++
			if len(out.Examples[k]) < 3 {
				msg := fmt.Sprintf("%s:%d: %s", fd.File, fd.Line, fd.Message)
				if len(msg) > 400 {
					msg = msg[:400] + "…"
				}
				out.Examples[k] = append(out.Examples[k], msg)
			}
		}
	}
}

func verdictLine(o outcome) string {
	var s []string
	for _, c := range sortedKeys(o.Verdicts) {
		if v := o.Verdicts[c]; v != "success" && v != "skipped" {
			s = append(s, c+"="+v)
		}
	}
	if len(s) == 0 && o.Exit != 0 {
		return "exit " + fmt.Sprint(o.Exit) + ": " + firstLine(o.Stderr)
	}
	return strings.Join(s, " ")
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func firstLine(s string) string {
	l, _, _ := strings.Cut(s, "\n")
	return l
}

// report prints the tables: check × verdict, exits, kinds, times and RSS, and every pull request that did not pass.
func report(w io.Writer, o options, all []outcome) {
	fmt.Fprintf(w, "Replayed %d merged pull requests (--checks %s, roots %s, cache %s).\n\n", len(all), o.checks, o.roots, o.cacheDir)
	checkNames := strings.Split(o.checks, ",")
	verdicts := []string{"success", "failure", "action_required", "neutral", "skipped", "(absent)"}
	fmt.Fprintf(w, "| check | %s |\n|---|%s\n", strings.Join(verdicts, " | "), strings.Repeat("---|", len(verdicts)))
	for _, c := range checkNames {
		counts := map[string]int{}
		for _, a := range all {
			v, ok := a.Verdicts[c]
			if !ok {
				v = "(absent)"
			}
			counts[v]++
		}
		fmt.Fprintf(w, "| %s |", c)
		for _, v := range verdicts {
			fmt.Fprintf(w, " %d |", counts[v])
		}
		fmt.Fprintln(w)
	}
	exits := map[int]int{}
	kinds := map[string]int{}
	var secs, cpu, rss []float64
	for _, a := range all {
		exits[a.Exit]++
		kinds[a.Kind]++
		secs = append(secs, a.Seconds)
		cpu = append(cpu, a.CPUSeconds)
		rss = append(rss, a.RSSMiB)
	}
	fmt.Fprintf(w, "\nExit codes: %v. Kinds: %v.\n", exits, kinds)
	causes := map[string]int{}
	for _, a := range all {
		if a.Exit == 2 {
			c, _, _ := strings.Cut(exit2Cause(a), ":")
			causes[c]++
		}
	}
	if len(causes) > 0 {
		fmt.Fprintf(w, "Runs that could not verify (exit 2), by cause: %v.\n", causes)
	}
	sort.Float64s(secs)
	sort.Float64s(cpu)
	sort.Float64s(rss)
	fmt.Fprintf(w, "Time per pull request: median %.2f s, p95 %.2f s, max %.2f s (CPU: median %.2f s, p95 %.2f s, max %.2f s). Peak RSS: median %.0f MiB, p95 %.0f MiB, max %.0f MiB.\n",
		pct(secs, 50), pct(secs, 95), pct(secs, 100), pct(cpu, 50), pct(cpu, 95), pct(cpu, 100), pct(rss, 50), pct(rss, 95), pct(rss, 100))
	fmt.Fprintf(w, "\nPull requests with a verdict other than success:\n\n| commit | kind | package | subject | exit | s | MiB | verdicts | rules | why not verified |\n|---|---|---|---|---|---|---|---|---|---|\n")
	for _, a := range all {
		line := verdictLine(a)
		if line == "" && a.Exit == 0 {
			continue
		}
		var rules []string
		for _, k := range sortedKeys(a.Rules) {
			if !strings.HasSuffix(k, " error") {
				continue
			}
			rules = append(rules, fmt.Sprintf("%s×%d", strings.TrimSuffix(k, " error"), a.Rules[k]))
		}
		if len(rules) > 6 {
			rules = append(rules[:6], fmt.Sprintf("… %d more", len(rules)-6))
		}
		extra := ""
		if len(a.Errors) > 0 {
			extra = "; " + firstLine(a.Errors[0])
		}
		if len(extra) > 200 {
			extra = extra[:200] + "…"
		}
		why := ""
		if a.Exit == 2 {
			why = exit2Cause(a)
		}
		fmt.Fprintf(w, "| %s | %s | %s | %s | %d | %.2f | %.0f | %s | %s%s | %s |\n", a.Commit[:9], a.Kind, a.Package,
			strings.ReplaceAll(a.Subject, "|", "/"), a.Exit, a.Seconds, a.RSSMiB, line, strings.Join(rules, ", "), strings.ReplaceAll(extra, "|", "/"), strings.ReplaceAll(why, "|", "/"))
	}
}

// exit2Cause says why a run could not verify: "mirror: ..." when REPO lacks blobs of the touched packages
// (a CI checkout of the pull request would have the head's), "offline: ..." when what was not verified are
// bundle images the run does not read (no images check), "unexplained: ..." otherwise.
func exit2Cause(a outcome) string {
	if len(a.Absent) > 0 {
		return fmt.Sprintf("mirror: REPO lacks %d blobs of the touched packages, e.g. %s", len(a.Absent), a.Absent[0])
	}
	offline := false
	for k, msgs := range a.Examples {
		if !strings.HasSuffix(k, " warning") {
			continue
		}
		for _, m := range msgs {
			if strings.Contains(m, "reading bundle images is off") || strings.Contains(m, "registry access is off") {
				offline = true
			}
		}
	}
	if offline {
		return "offline: bundle images are not read without the images check (CRDs or template bundles only in images)"
	}
	return "unexplained: " + firstLine(a.Stderr)
}

func pct(sorted []float64, p int) float64 {
	if len(sorted) == 0 {
		return 0
	}
	i := (len(sorted)*p + 99) / 100
	return sorted[max(0, min(len(sorted)-1, i-1))]
}

// git runs git in dir (a git directory; "" for none) and returns its standard output.
func git(ctx context.Context, dir string, stdin io.Reader, args ...string) (string, error) {
	if dir != "" {
		args = append([]string{"--git-dir", dir}, args...)
	}
	cmd := exec.CommandContext(ctx, "git", args...)
	cmd.Stdin = stdin
	// A partial clone's missing blobs are never fetched: this replay reads what is there.
	cmd.Env = append(os.Environ(), "GIT_NO_LAZY_FETCH=1")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &limitedBuffer{b: &stderr, max: 4 << 10}
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("git %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return stdout.String(), nil
}

// limitedBuffer keeps the first max bytes written to it.
type limitedBuffer struct {
	b   *bytes.Buffer
	max int
}

func (l *limitedBuffer) Write(p []byte) (int, error) {
	if room := l.max - l.b.Len(); room > 0 {
		l.b.Write(p[:min(len(p), room)])
	}
	return len(p), nil
}
