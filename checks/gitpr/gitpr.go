// Package gitpr builds the input of the checks, a change.PullRequest, from two
// commits of a local git repository: the trees are read straight from git (no
// checkout, links never followed) and the policy from the base commit only.
//
// Layer: above checks/change, gitfs and policy; it never imports package checks. Imported by cmd/catalog-check,
// the App and tests.
package gitpr

import (
	"context"
	"errors"
	"fmt"

	"github.com/catalogbot/catalogbot/catalog"
	"github.com/catalogbot/catalogbot/catalog/template"
	"github.com/catalogbot/catalogbot/checks/change"
	"github.com/catalogbot/catalogbot/gitfs"
	"github.com/catalogbot/catalogbot/policy"
	"github.com/catalogbot/catalogbot/policy/gitpolicy"
)

// maxPolicySize bounds .catalogbot.yaml.
const maxPolicySize = gitpolicy.MaxSize

// Options say what to build.
type Options struct {
	// Base and Head are revisions (sha, branch, tag, refs/pull/N/head...).
	Base, Head string
	Author     string
	Repo       string // owner/name, for messages
	Number     int
	// DiffFromMergeBase compares head with the merge base of base and head,
	// as GitHub shows a pull request, instead of with base itself. The policy
	// is still read from Base.
	DiffFromMergeBase bool
	// Catalogs are the catalog roots used when the base revision has no
	// policy file. With a policy file they are ignored: the base decides.
	Catalogs []string
	Teams    policy.TeamResolver
	Limits   catalog.Limits
	// GitLimits bound what is read from git.
	GitLimits gitfs.Limits
	// Policies, when set, keeps parsed policies by the git blob of their
	// file, so that checking many pull requests against one base parses
	// its policy once (the App).
	Policies *PolicyCache
	// Lines, when set, keeps the changed lines of pairs of blobs across builds (see change.LineDiffCache).
	Lines *change.LineDiffCache
	// BundleDirs, when set, keeps the facts of bundle directories across pull requests (see
	// change.PullRequest.BundleDirs).
	BundleDirs *template.DirFactsCache
	// BundleRenders, when set, keeps bundle directories' renders between runs (change.PullRequest.BundleRenders).
	BundleRenders template.RenderStore
}

// PolicyCache keeps parsed policy files by git blob id (see gitpolicy.Cache).
type PolicyCache = gitpolicy.Cache

// NewPolicyCache returns an empty cache.
func NewPolicyCache() *PolicyCache { return gitpolicy.NewCache() }

// ErrNoCatalogs: the base revision has no policy and no catalog root was given.
var ErrNoCatalogs = errors.New("the base revision has no " + policy.FileName + " and no catalog root was given")

// Build reads both revisions and the base policy. A policy file that does
// not parse is an error (a *policy.ParseError): the checks cannot run
// without knowing who owns what.
func Build(ctx context.Context, repo *gitfs.Repo, opt Options) (*change.PullRequest, error) {
	base, err := repo.Resolve(opt.Base)
	if err != nil {
		return nil, fmt.Errorf("base revision %q: %w", opt.Base, err)
	}
	head, err := repo.Resolve(opt.Head)
	if err != nil {
		return nil, fmt.Errorf("head revision %q: %w", opt.Head, err)
	}
	pol, err := gitpolicy.ReadCached(ctx, repo, base, opt.Policies)
	if err != nil {
		return nil, err
	}
	if pol.File == "" {
		if len(opt.Catalogs) == 0 {
			return nil, ErrNoCatalogs
		}
		for _, c := range opt.Catalogs {
			pol.Catalogs = append(pol.Catalogs, policy.Catalog{Path: c})
		}
		// Roots given as patterns (--catalog 'catalogs/v4.*') are resolved on the base, as a policy's are.
		tree, err := repo.TreeFS(ctx, base, gitfs.Limits{MaxFileSize: maxPolicySize, MaxTotalBytes: maxPolicySize})
		if err != nil {
			return nil, err
		}
		if pol, err = pol.ResolveCatalogs(tree); err != nil {
			return nil, fmt.Errorf("catalog roots given: %w", err)
		}
	}
	from := base
	if opt.DiffFromMergeBase {
		if from, err = repo.MergeBase(ctx, base, head); err != nil {
			return nil, fmt.Errorf("merge base of %s and %s: %w", opt.Base, opt.Head, err)
		}
	}
	changes, err := repo.ChangedPaths(ctx, from, head)
	if err != nil {
		return nil, fmt.Errorf("comparing %s with %s: %w", opt.Base, opt.Head, err)
	}
	baseFS, err := repo.TreeFS(ctx, from, opt.GitLimits)
	if err != nil {
		return nil, err
	}
	headFS, err := repo.TreeFS(ctx, head, opt.GitLimits)
	if err != nil {
		return nil, err
	}
	pr := &change.PullRequest{
		Repo: opt.Repo, Number: opt.Number, Author: opt.Author,
		Base:   change.Revision{SHA: from.String(), FS: baseFS},
		Head:   change.Revision{SHA: head.String(), FS: headFS},
		Policy: pol, Teams: opt.Teams, Limits: opt.Limits, Lines: opt.Lines, BundleDirs: opt.BundleDirs, BundleRenders: opt.BundleRenders,
	}
	for _, c := range changes {
		pr.Files = append(pr.Files, change.FileChange{Path: c.Path, OldPath: c.OldPath, Status: change.FileStatus(c.Action)})
	}
	return pr, nil
}

// ReadPolicy reads and parses .catalogbot.yaml of one commit (see gitpolicy.Read).
func ReadPolicy(ctx context.Context, repo *gitfs.Repo, commit gitfs.Hash) (*policy.Policy, error) {
	return gitpolicy.Read(ctx, repo, commit)
}
