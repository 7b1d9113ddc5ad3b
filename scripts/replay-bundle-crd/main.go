// Command replay-bundle-crd replays the newest merged bundle pull requests of a community-layout catalog
// repository (redhat-openshift-ecosystem/community-operators-prod) through the crd-safety check, in process,
// with the catalog update previewed, and compares each upgrade it compared with crdify run with OLM v1's
// preflight configuration on the same CRD files.
//
//	go run ./scripts/replay-bundle-crd -n 150 -crdify path/to/crdify REPO > table.md
//
// REPO is a clone of the repository (bare or not); it is only read. A bundle pull request is a commit C of
// the first-parent history that adds exactly one directory operators/<package>/<version>/ and nothing else:
// base = C's parent, head = C, with the policy docs/policy.md describes for that repository (every
// catalogs/v4.* root, bundle root operators with ownersFromCIYaml and templatesFromCIYaml, the pipeline's image
// pattern). Nothing is pulled: the check runs offline.
package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"runtime/pprof"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/catalogbot/catalogbot/catalog/crd"
	"github.com/catalogbot/catalogbot/checks"
	"github.com/catalogbot/catalogbot/checks/gitpr"
	"github.com/catalogbot/catalogbot/gitfs"
	"github.com/catalogbot/catalogbot/policy"
)

// preflightConfig is operator-controller's configuration of crdify (as scripts/record-crdify-golden.sh).
const preflightConfig = `conversion: Ignore
unhandledEnforcement: Error
validations:
- name: description
  enforcement: None
- name: enum
  enforcement: Error
  configuration:
    additionPolicy: Allow
`

var (
	bundleDir = regexp.MustCompile(`^operators/([^/]+)/([^/]+)/`)
	// A compared upgrade in crd-safety's summary.
	comparedLine = regexp.MustCompile("^ *- `([^`]+)` → `([^`]+)` \\((.*); CRDs of (.+)\\): (\\*\\*unsafe\\*\\*|safe)$")
)

func main() {
	n := flag.Int("n", 150, "how many of the newest bundle pull requests to replay")
	crdifyBin := flag.String("crdify", os.Getenv("CRDIFY"), "the crdify binary (v0.6.0); empty: verdicts are not compared")
	ref := flag.String("ref", "main", "the branch whose first-parent history is replayed")
	profile := flag.String("cpuprofile", "", "write a CPU profile of the replay to this file")
	only := flag.String("only", "", "replay only this commit (any bundle pull request, however old)")
	flag.Parse()
	if *profile != "" {
		f, err := os.Create(*profile)
		if err == nil && pprof.StartCPUProfile(f) == nil {
			defer pprof.StopCPUProfile()
		}
	}
	if flag.NArg() != 1 {
		fmt.Fprintln(os.Stderr, "usage: replay-bundle-crd [-n 150] [-crdify crdify] REPO")
		os.Exit(2)
	}
	if *crdifyBin != "" {
		if st, err := os.Stat(*crdifyBin); err != nil || st.IsDir() || st.Mode()&0o111 == 0 {
			fmt.Fprintf(os.Stderr, "replay-bundle-crd: -crdify (or $CRDIFY) names %s, which is not an executable file; "+
				"give crdify v0.6.0 (scripts/build-reference-tools.sh builds it), or leave it empty to replay without comparing\n", *crdifyBin)
			os.Exit(2)
		}
	}
	if *only != "" {
		*ref = *only
		*n = 1
	}
	if err := run(flag.Arg(0), *ref, *crdifyBin, *n); err != nil {
		fmt.Fprintln(os.Stderr, "replay-bundle-crd:", err)
		pprof.StopCPUProfile()
		os.Exit(1)
	}
}

type upgrade struct {
	pr, from, to, how, source, ours, crdify, note string
}

func git(repo string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, "git", append([]string{"-C", repo}, args...)...).Output()
	var ee *exec.ExitError
	if errors.As(err, &ee) && len(ee.Stderr) > 0 {
		err = fmt.Errorf("%w: %s", err, strings.TrimSpace(string(ee.Stderr)))
	}
	return string(out), err
}

func run(repoPath, ref, crdifyBin string, n int) error {
	log, err := git(repoPath, "log", "--first-parent", "--format=%H %s", "-n", "3000", ref)
	if err != nil {
		return fmt.Errorf("git log: %w", err)
	}
	type pr struct{ commit, subject, dir, pkg string }
	var prs []pr
	for _, line := range strings.Split(strings.TrimSpace(log), "\n") {
		if len(prs) >= n {
			break
		}
		commit, subject, _ := strings.Cut(line, " ")
		files, err := git(repoPath, "diff-tree", "--no-commit-id", "--name-status", "-r", commit)
		if err != nil {
			continue
		}
		dir, ok := "", true
		for _, f := range strings.Split(strings.TrimSpace(files), "\n") {
			status, p, _ := strings.Cut(f, "\t")
			m := bundleDir.FindStringSubmatch(p)
			if status != "A" || m == nil || (dir != "" && dir != m[0]) {
				ok = false
				break
			}
			dir = m[0]
		}
		if ok && dir != "" {
			m := bundleDir.FindStringSubmatch(dir)
			prs = append(prs, pr{commit, subject, strings.TrimSuffix(dir, "/"), m[1]})
		}
	}
	repo, err := gitfs.Open(repoPath)
	if err != nil {
		return err
	}
	work, err := os.MkdirTemp("", "replay-bundle-crd")
	if err != nil {
		return err
	}
	defer os.RemoveAll(work)
	cfg := filepath.Join(work, "preflight.yaml")
	if err := os.WriteFile(cfg, []byte(preflightConfig), 0o644); err != nil {
		return err
	}
	findings := 0
	titles := map[string]int{}
	validation := map[string]int{}
	previewRules := map[string]int{}
	rules := map[string]int{}
	var ups []upgrade
	var slow []time.Duration
	for i, p := range prs {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		start := time.Now()
		res, basePR, err := check(ctx, repo, p.commit)
		slow = append(slow, time.Since(start))
		if err != nil {
			cancel()
			titles["error: "+err.Error()]++
			fmt.Fprintf(os.Stderr, "%d/%d %s: %v\n", i+1, len(prs), p.commit[:9], err)
			continue
		}
		titles[string(res.Conclusion)+": "+strings.SplitN(res.Title, " (", 2)[0]]++
		if vres, err := validate(ctx, basePR); err == nil {
			verdict := string(vres.Conclusion)
			for _, l := range strings.Split(vres.Summary, "\n") {
				if strings.Contains(l, "(previewed): not verified") {
					fmt.Fprintf(os.Stderr, "  preview not verified: %s\n", firstLine([]byte(l)))
				}
				if strings.Contains(l, "(previewed)") {
					_, state, _ := strings.Cut(l, "(previewed): ")
					verdict += " — preview " + strings.SplitN(strings.TrimPrefix(state, "**"), ":", 2)[0]
					verdict = strings.TrimSuffix(strings.SplitN(verdict, " (", 2)[0], "**")
				}
			}
			validation[verdict]++
			for _, f := range vres.Findings {
				if f.Severity == "error" && strings.Contains(f.Message, "the catalog update would") {
					previewRules[f.Rule]++
					fmt.Fprintf(os.Stderr, "  preview finding %s: %s\n", f.Position, firstLine([]byte(f.Message)))
				}
			}
		}
		findings += len(res.Findings)
		for _, f := range res.Findings {
			rules[f.Rule]++
		}
		fmt.Fprintf(os.Stderr, "%d/%d %s %s: %s %s (%s)\n", i+1, len(prs), p.commit[:9], p.dir, res.Conclusion, res.Title, time.Since(start).Round(time.Millisecond))
		for _, l := range strings.Split(res.Summary, "\n") {
			m := comparedLine.FindStringSubmatch(l)
			if m == nil {
				continue
			}
			u := upgrade{pr: p.commit[:9] + " " + p.dir, from: m[1], to: m[2], how: m[3], source: m[4], ours: strings.Trim(m[5], "*")}
			if crdifyBin != "" && strings.HasPrefix(u.source, "bundle directory ") {
				u.crdify, u.note = crdifyVerdict(ctx, crdifyBin, cfg, work, basePR, strings.TrimPrefix(u.source, "bundle directory "), p.dir)
			}
			ups = append(ups, u)
		}
		cancel()
	}
	// The report.
	fmt.Printf("# crd-safety on %d merged bundle pull requests, catalog update previewed\n\n", len(prs))
	fmt.Println("| crd-safety result | pull requests |\n|---|---|")
	for _, k := range sortedKeys(titles) {
		fmt.Printf("| %s | %d |\n", k, titles[k])
	}
	fmt.Println("\n| validation (catalog update previewed) | pull requests |\n|---|---|")
	for _, k := range sortedKeys(validation) {
		fmt.Printf("| %s | %d |\n", k, validation[k])
	}
	if len(previewRules) > 0 {
		fmt.Println("\n| error of a previewed catalog | findings |\n|---|---|")
		for _, k := range sortedKeys(previewRules) {
			fmt.Printf("| `%s` | %d |\n", k, previewRules[k])
		}
	}
	fmt.Printf("\n%d crd-safety findings in all\n", findings)
	fmt.Println("\n| rule | findings |\n|---|---|")
	for _, k := range sortedKeys(rules) {
		fmt.Printf("| `%s` | %d |\n", k, rules[k])
	}
	agree, disagree, notCompared := 0, 0, 0
	var lines []string
	for _, u := range ups {
		switch {
		case u.crdify == "":
			notCompared++
			if u.note != "" {
				fmt.Fprintf(os.Stderr, "not compared %s %s → %s: %s\n", u.pr, u.from, u.to, u.note)
			}
		case u.crdify == u.ours:
			agree++
		default:
			disagree++
			lines = append(lines, fmt.Sprintf("| %s | `%s` → `%s` (%s) | %s | %s | %s |", u.pr, u.from, u.to, u.how, u.ours, u.crdify, u.note))
		}
	}
	fmt.Printf("\n%d upgrades compared; against crdify (preflight configuration): %d agree, %d disagree, %d not run through crdify (predecessor not in a bundle directory, or crdify not given, or a CRD file crdify cannot take alone)\n",
		len(ups), agree, disagree, notCompared)
	if len(lines) > 0 {
		fmt.Println("\n| pull request | upgrade | catalogbot | crdify | note |\n|---|---|---|---|---|")
		fmt.Println(strings.Join(lines, "\n"))
	}
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) == nil {
		fmt.Printf("\npeak RSS of the replay process: %d MiB\n", ru.Maxrss/1024)
	}
	sort.Slice(slow, func(i, j int) bool { return slow[i] < slow[j] })
	if len(slow) > 0 {
		fmt.Printf("\ncheck time per pull request (in process, offline): median %s, p95 %s, max %s\n",
			slow[len(slow)/2].Round(time.Millisecond), slow[len(slow)*95/100].Round(time.Millisecond), slow[len(slow)-1].Round(time.Millisecond))
	}
	return nil
}

func sortedKeys(m map[string]int) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// check runs crd-safety on commit against its parent with the community policy.
func check(ctx context.Context, repo *gitfs.Repo, commit string) (checks.Result, *checks.PullRequest, error) {
	parent, err := repo.Resolve(commit + "^")
	if err != nil {
		return checks.Result{}, nil, err
	}
	tree, err := repo.TreeFS(ctx, parent, gitfs.Limits{})
	if err != nil {
		return checks.Result{}, nil, err
	}
	entries, err := fs.ReadDir(tree, "catalogs")
	if err != nil {
		return checks.Result{}, nil, err
	}
	var roots []string
	for _, e := range entries {
		if e.IsDir() && strings.HasPrefix(e.Name(), "v4.") {
			roots = append(roots, "catalogs/"+e.Name())
		}
	}
	pr, err := gitpr.Build(ctx, repo, gitpr.Options{Base: parent.String(), Head: commit, Author: "replay", Catalogs: roots})
	if err != nil {
		return checks.Result{}, nil, err
	}
	pr.Policy.Bundles = []policy.BundleRoot{{Path: "operators", CIYamlOwners: true, TemplatesFromCIYaml: true,
		Image: "quay.io/community-operator-pipeline-prod/{package}:{version}"}}
	if err := checks.Prepare(ctx, pr); err != nil {
		return checks.Result{}, nil, err
	}
	res, err := checks.CRDSafety{}.Run(ctx, pr)
	return res, pr, err
}

// validate runs the validation check (the previewed catalogs included) on the same pull request.
func validate(ctx context.Context, pr *checks.PullRequest) (checks.Result, error) {
	return checks.Validation{}.Run(ctx, pr)
}

// crdifyVerdict runs crdify on every CRD the two bundle directories share (by name) and returns "unsafe"
// when it refuses any, "safe" otherwise; "" (with why) when it could not be run.
func crdifyVerdict(ctx context.Context, bin, cfg, work string, pr *checks.PullRequest, oldDir, newDir string) (string, string) {
	olds, err := crdFiles(pr.Base.FS, oldDir)
	if err != nil {
		return "", err.Error()
	}
	news, err := crdFiles(pr.Head.FS, newDir)
	if err != nil {
		return "", err.Error()
	}
	verdict, shared := "safe", 0
	for name, nd := range news {
		od, ok := olds[name]
		if !ok {
			continue
		}
		shared++
		dir, err := os.MkdirTemp(work, "pair")
		if err != nil {
			return "", err.Error()
		}
		o, nw := filepath.Join(dir, "old.yaml"), filepath.Join(dir, "new.yaml")
		if os.WriteFile(o, od, 0o644) != nil || os.WriteFile(nw, nd, 0o644) != nil {
			return "", "cannot write the pair"
		}
		cctx, cancel := context.WithTimeout(ctx, time.Minute)
		out, err := exec.CommandContext(cctx, bin, "--config", cfg, "file://"+o, "file://"+nw).CombinedOutput()
		cancel()
		var exit *exec.ExitError
		switch {
		case err == nil:
		case errors.As(err, &exit) && exit.ExitCode() == 1 && len(bytes.TrimSpace(out)) > 0:
			verdict = "unsafe"
		default:
			return "", fmt.Sprintf("crdify on %s: %v: %s", name, err, firstLine(out))
		}
	}
	if shared == 0 {
		return "safe", "no CRD in common"
	}
	return verdict, ""
}

func firstLine(b []byte) string {
	s, _, _ := strings.Cut(strings.TrimSpace(string(b)), "\n")
	return s
}

// crdFiles maps each CRD of a bundle directory's manifests/ to the bytes of its file (files holding one
// document that is a CRD; others are left out).
func crdFiles(fsys fs.FS, dir string) (map[string][]byte, error) {
	entries, err := fs.ReadDir(fsys, path.Join(dir, "manifests"))
	if err != nil {
		return nil, err
	}
	out := map[string][]byte{}
	for _, e := range entries {
		if e.IsDir() {
			continue
		}
		data, err := fs.ReadFile(fsys, path.Join(dir, "manifests", e.Name()))
		if err != nil {
			return nil, err
		}
		crds, _, err := crd.ParseManifests(e.Name(), data)
		if err != nil || len(crds) != 1 {
			continue
		}
		out[crds[0].Name] = data
	}
	return out, nil
}
