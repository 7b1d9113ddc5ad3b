package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"runtime/debug"
	"slices"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/catalogbot/catalogbot/catalog"
	"github.com/catalogbot/catalogbot/checks"
	"github.com/catalogbot/catalogbot/checks/gitpr"
	"github.com/catalogbot/catalogbot/gitfs"
	"github.com/catalogbot/catalogbot/internal/cli"
	"github.com/catalogbot/catalogbot/internal/summarycache"
	"github.com/catalogbot/catalogbot/policy"
)

// checkOptions are the flags of the check command (and of images --repo).
type checkOptions struct {
	repoPath, base, head, author string
	output, teamsFile, only      string
	timeout                      time.Duration
	noHints, direct              bool
	pullTemplates                bool // template check: pull bundle images even without the images check
	catalogs                     []string
	registry                     registryFlags
	cacheDir                     string
	memoryLimitMiB               int
}

// addFlags registers the pull request flags; images registers them too, for --repo.
func (o *checkOptions) addFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.repoPath, "repo", ".", "path of the git repository (bare or not); nothing is checked out")
	fs.StringVar(&o.base, "base", "", "base revision (default: the pull request's base SHA from $GITHUB_EVENT_PATH)")
	fs.StringVar(&o.head, "head", "", "head revision (default: the event's head SHA, else HEAD)")
	fs.StringVar(&o.author, "author", "", "login of the pull request's author (default: from the event)")
	fs.StringVar(&o.teamsFile, "team-members", "", `file mapping "@org/team" to member logins; without it teams are reported as "cannot verify"`)
	fs.DurationVar(&o.timeout, "timeout", 5*time.Minute, "time limit for each check")
	fs.BoolVar(&o.direct, "direct", false, "compare head with base itself instead of with their merge base")
	fs.StringArrayVar(&o.catalogs, "catalog", nil, "catalog root, used only when the base revision has no .catalogbot.yaml (repeatable; a pattern such as 'catalogs/v4.*' is resolved on the base)")
	fs.StringVar(&o.cacheDir, "cache-dir", "", `where to keep which packages each catalog file (git blob) holds, so that the next run reads only the files of the packages a pull request touches, and each bundle directory's package, version, image digest and render by its content (default: $CATALOGBOT_CACHE_DIR, else $XDG_CACHE_HOME/catalogbot, else ~/.cache/catalogbot; "off": keep nothing)`)
}

// openSummaries opens the file summary index the check reads and extends; nil when it is off.
func (o *checkOptions) openSummaries(getenv func(string) string, lim catalog.Limits, stderr io.Writer) *summarycache.Store {
	dir := o.cacheDir
	if dir == "" {
		dir = summarycache.DirFrom(getenv)
	}
	if dir == "" || dir == "off" {
		return nil
	}
	s, err := summarycache.Open(dir, summarycache.Stamp(lim))
	if err != nil {
		fmt.Fprintf(stderr, "catalog-check: not keeping file summaries: %v\n", err)
		return nil
	}
	return s
}

// checkCommand checks a pull request: the base and head revisions of a local
// git repository and the author.
func checkCommand(e env) cli.Command {
	var o checkOptions
	return cli.Command{
		Use:   "check",
		Short: "check a pull request (base and head revisions of a git repository, and its author)",
		Long: `Checks a pull request: the base and head revisions of a local git repository and the author.
Inside GitHub Actions, base, head and author default to the pull_request event's.`,
		Example: `  catalog-check check --repo . --base origin/main --head HEAD --author alice
  catalog-check check --base main --author alice --output json
  catalog-check check --output github     # in a pull_request workflow`,
		Args: cli.NoArgs,
		Complete: map[string]cli.Completion{
			"output": {Values: []string{"text", "json", "github"}},
			"checks": {Values: checkNames(), List: true},
		},
		Flags: func(fs *pflag.FlagSet) {
			o.addFlags(fs)
			fs.StringVarP(&o.output, "output", "o", "text", "output format: text, json or github (workflow commands and a step summary)")
			fs.BoolVar(&o.noHints, "no-hints", false, "text output: leave out the hint under each finding")
			fs.StringVar(&o.only, "checks", strings.Join(checkNames(), ","), "comma-separated checks to run; without images, no registry is contacted (crd-safety then compares only CRDs embedded as olm.bundle.object, templates render only bundle images already in a catalog of the base or built from a bundle directory)")
			o.registry.addFlags(fs)
			fs.IntVar(&o.memoryLimitMiB, "memory-limit-mib", defaultMemoryLimitMiB, "soft limit of the heap, in MiB: the garbage collector works harder near it, so that a run fits a small CI runner (0: none; $GOMEMLIMIT, when set, wins)")
		},
		Run: func(ctx context.Context, _ []string, stdout, stderr io.Writer) int {
			return runCheck(ctx, o, stdout, stderr, e.getenv)
		},
	}
}

// checkNames are the names --checks takes: every check of the one list.
func checkNames() []string { return checks.Names() }

// defaultMemoryLimitMiB is check's soft heap limit: the largest community pull requests replayed (sailoperator,
// 40 bundle directories of 3 MB) hold about 150 MiB live, which Go's default pacing lets grow past 300 MiB of
// memory; near the limit the collector runs sooner instead (its CPU share is capped by the runtime).
const defaultMemoryLimitMiB = 256

// withMemoryLimit sets the soft heap limit to mib MiB unless mib is 0 or $GOMEMLIMIT is set (the runtime
// read it), and returns what puts the previous limit back.
func withMemoryLimit(mib int, getenv func(string) string) (restore func()) {
	if mib <= 0 || getenv("GOMEMLIMIT") != "" {
		return func() {}
	}
	previous := debug.SetMemoryLimit(int64(mib) << 20)
	return func() { debug.SetMemoryLimit(previous) }
}

func runCheck(ctx context.Context, o checkOptions, stdout, stderr io.Writer, getenv func(string) string) int {
	defer withMemoryLimit(o.memoryLimitMiB, getenv)()
	switch o.output {
	case "text", "json", "github":
	default:
		fmt.Fprintf(stderr, "catalog-check check: unknown output %q (want text, json or github)\n", o.output)
		return exitCannotRun
	}
	fail := func(format string, a ...any) int {
		msg := fmt.Sprintf(format, a...)
		if o.output == "github" {
			fmt.Fprintf(stdout, "::error title=catalog-check could not run::%s\n", escapeData(msg))
		}
		fmt.Fprintln(stderr, "catalog-check check: "+msg)
		return exitCannotRun
	}

	opt := gitpr.Options{Base: o.base, Head: o.head, Author: o.author, Catalogs: o.catalogs, DiffFromMergeBase: !o.direct}
	if p := getenv("GITHUB_EVENT_PATH"); p != "" {
		if err := fillFromEvent(p, &opt); err != nil {
			return fail("%v", err)
		}
	}
	if opt.Head == "" {
		opt.Head = "HEAD"
	}
	if opt.Base == "" {
		return fail("no base revision: give --base (or run inside a pull_request workflow)")
	}
	if opt.Author == "" {
		return fail("no author: give --author (or run inside a pull_request workflow)")
	}
	if !policy.ValidLogin(opt.Author) {
		return fail("--author %q is not a GitHub login", opt.Author)
	}
	if o.teamsFile != "" {
		tf, err := policy.LoadTeamsFile(o.teamsFile)
		if err != nil {
			return fail("%v", err)
		}
		opt.Teams = tf
	}
	repo, err := gitfs.Open(o.repoPath)
	if err != nil {
		return fail("%v", err)
	}
	defer repo.Close()
	summaries := o.openSummaries(getenv, opt.Limits, stderr)
	if summaries != nil {
		opt.Limits.Index = summaries.Index
		opt.BundleDirs = summaries.BundleDirs
		if summaries.Renders != nil {
			opt.BundleRenders = summaries.Renders
		}
	}
	pr, err := gitpr.Build(ctx, repo, opt)
	if err != nil {
		var pe *policy.ParseError
		if errors.As(err, &pe) {
			return fail("the base revision's %s is invalid, so nothing can be checked:\n%v", policy.FileName, err)
		}
		return fail("%v", err)
	}
	reg, err := o.registry.client()
	if err != nil {
		return fail("%v", err)
	}
	defer reg.Close()
	names := strings.Split(o.only, ",")
	for i := range names {
		names[i] = strings.TrimSpace(names[i])
	}
	// Offline means offline: registry access comes with the images check.
	// Without it crd-safety reads no bundle image (a bundle without
	// olm.bundle.object is "CRDs not embedded, not compared") and no check
	// makes a request.
	deps := checks.Deps{Images: reg}
	if slices.Contains(names, checks.Images{}.Name()) {
		deps.Bundles = reg
	}
	all := checks.Default(deps)
	if o.pullTemplates && deps.Bundles == nil {
		// template check --pull: templates pull, crd-safety still reads no image.
		for i, c := range all {
			if c.Name() == (checks.Templates{}).Name() {
				all[i], _ = checks.Make(c.Name(), checks.Deps{Bundles: reg})
			}
		}
	}
	var selected []checks.Check
	for _, name := range names {
		found := false
		for _, c := range all {
			if c.Name() == name {
				selected, found = append(selected, c), true
			}
		}
		if !found {
			return fail("unknown check %q (known: ownership, validation, immutability, crd-safety, templates, images)", name)
		}
	}
	logger := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	runner := checks.NewRunner(selected, checks.WithTimeout(o.timeout), checks.WithLogger(logger))
	if err := checks.Prepare(ctx, pr); err != nil {
		return fail("%v", err)
	}
	results := runner.Run(ctx, pr)
	if err := summaries.Save(); err != nil {
		fmt.Fprintf(stderr, "catalog-check: %v (the next run parses those files again)\n", err)
	}

	return render(stdout, stderr, o.output, results, !o.noHints, getenv, checks.UpgradeGraphs(pr))
}

// pullRequestEvent is the part of GitHub's pull_request event payload we read.
type pullRequestEvent struct {
	Number      int `json:"number"`
	PullRequest *struct {
		Number int `json:"number"`
		Base   struct {
			SHA string `json:"sha"`
		} `json:"base"`
		Head struct {
			SHA string `json:"sha"`
		} `json:"head"`
		User struct {
			Login string `json:"login"`
		} `json:"user"`
	} `json:"pull_request"`
	Repository struct {
		FullName string `json:"full_name"`
	} `json:"repository"`
}

// fillFromEvent takes base, head and author from a pull_request event file
// where the flags left them empty.
func fillFromEvent(path string, opt *gitpr.Options) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("reading the event: %w", err)
	}
	defer f.Close()
	var ev pullRequestEvent
	if err := json.NewDecoder(io.LimitReader(f, 25<<20)).Decode(&ev); err != nil {
		return fmt.Errorf("reading the event %s: %w", path, err)
	}
	if ev.PullRequest == nil {
		return nil // not a pull request event: flags must say everything
	}
	if opt.Base == "" {
		opt.Base = ev.PullRequest.Base.SHA
	}
	if opt.Head == "" {
		opt.Head = ev.PullRequest.Head.SHA
	}
	if opt.Author == "" {
		opt.Author = ev.PullRequest.User.Login
	}
	opt.Number = ev.PullRequest.Number
	opt.Repo = ev.Repository.FullName
	return nil
}
