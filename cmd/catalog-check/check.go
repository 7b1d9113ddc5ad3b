package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/catalogbot/catalogbot/checks"
	"github.com/catalogbot/catalogbot/checks/gitpr"
	"github.com/catalogbot/catalogbot/gitfs"
	"github.com/catalogbot/catalogbot/policy"
)

// multiFlag collects a repeatable string flag.
type multiFlag []string

func (m *multiFlag) String() string     { return strings.Join(*m, ",") }
func (m *multiFlag) Set(v string) error { *m = append(*m, v); return nil }

func runCheck(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	return runCheckEnv(ctx, args, stdout, stderr, os.Getenv)
}

func runCheckEnv(ctx context.Context, args []string, stdout, stderr io.Writer, getenv func(string) string) int {
	fl := flag.NewFlagSet("check", flag.ContinueOnError)
	fl.SetOutput(stderr)
	repoPath := fl.String("repo", ".", "path of the git repository (bare or not); nothing is checked out")
	base := fl.String("base", "", "base revision (default: the pull request's base SHA from $GITHUB_EVENT_PATH)")
	head := fl.String("head", "", "head revision (default: the event's head SHA, else HEAD)")
	author := fl.String("author", "", "login of the pull request's author (default: from the event)")
	output := fl.String("output", "text", "output format: text, json or github (workflow commands and a step summary)")
	teamsFile := fl.String("team-members", "", `file mapping "@org/team" to member logins; without it teams are reported as "cannot verify"`)
	timeout := fl.Duration("timeout", 5*time.Minute, "time limit for each check")
	noHints := fl.Bool("no-hints", false, "text output: leave out the hint under each finding")
	direct := fl.Bool("direct", false, "compare head with base itself instead of with their merge base")
	only := fl.String("checks", "ownership,validation,immutability,crd-safety,images", "comma-separated checks to run; without images, no registry is contacted (crd-safety then compares only CRDs embedded as olm.bundle.object)")
	rf := addRegistryFlags(fl)
	var catalogs multiFlag
	fl.Var(&catalogs, "catalog", "catalog root, used only when the base revision has no .catalogbot.yaml (repeatable)")
	fl.Usage = func() {
		fmt.Fprintln(stderr, "usage: catalog-check check [flags]\n\nChecks a pull request: the base and head revisions of a local git repository and the author.\nInside GitHub Actions, base, head and author default to the pull_request event's.\n\nflags:")
		fl.PrintDefaults()
	}
	if err := fl.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return exitPass
		}
		return exitCannotRun
	}
	if fl.NArg() > 0 {
		fmt.Fprintf(stderr, "catalog-check check: unexpected argument %q\n", fl.Arg(0))
		return exitCannotRun
	}
	switch *output {
	case "text", "json", "github":
	default:
		fmt.Fprintf(stderr, "catalog-check check: unknown output %q (want text, json or github)\n", *output)
		return exitCannotRun
	}
	fail := func(format string, a ...any) int {
		msg := fmt.Sprintf(format, a...)
		if *output == "github" {
			fmt.Fprintf(stdout, "::error title=catalog-check could not run::%s\n", escapeData(msg))
		}
		fmt.Fprintln(stderr, "catalog-check check: "+msg)
		return exitCannotRun
	}

	opt := gitpr.Options{Base: *base, Head: *head, Author: *author, Catalogs: catalogs, DiffFromMergeBase: !*direct}
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
	if *teamsFile != "" {
		tf, err := policy.LoadTeamsFile(*teamsFile)
		if err != nil {
			return fail("%v", err)
		}
		opt.Teams = tf
	}
	repo, err := gitfs.Open(*repoPath)
	if err != nil {
		return fail("%v", err)
	}
	defer repo.Close()
	pr, err := gitpr.Build(ctx, repo, opt)
	if err != nil {
		var pe *policy.ParseError
		if errors.As(err, &pe) {
			return fail("the base revision's %s is invalid, so nothing can be checked:\n%v", policy.FileName, err)
		}
		return fail("%v", err)
	}
	reg, err := rf.client()
	if err != nil {
		return fail("%v", err)
	}
	defer reg.Close()
	names := strings.Split(*only, ",")
	for i := range names {
		names[i] = strings.TrimSpace(names[i])
	}
	// Offline means offline: registry access comes with the images check.
	// Without it crd-safety reads no bundle image (a bundle without
	// olm.bundle.object is "CRDs not embedded, not compared") and no check
	// makes a request.
	crdSafety := checks.CRDSafety{}
	if slices.Contains(names, checks.Images{}.Name()) {
		crdSafety.Manifests = checks.RegistryManifests{Client: reg}
	}
	all := []checks.Check{
		checks.Ownership{}, checks.Validation{}, checks.Immutability{}, crdSafety, checks.Images{Registry: reg},
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
			return fail("unknown check %q (known: ownership, validation, immutability, crd-safety, images)", name)
		}
	}
	logger := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	runner := checks.NewRunner(selected, checks.WithTimeout(*timeout), checks.WithLogger(logger))
	if err := checks.Prepare(ctx, pr); err != nil {
		return fail("%v", err)
	}
	results := runner.Run(ctx, pr)

	return render(stdout, stderr, *output, results, !*noHints, getenv)
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
