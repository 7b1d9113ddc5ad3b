package merge

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"path"
	"slices"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/google/go-github/v62/github"
	"sigs.k8s.io/yaml"

	"github.com/catalogbot/catalogbot/app/ghapp"
	"github.com/catalogbot/catalogbot/app/jobs"
	"github.com/catalogbot/catalogbot/gitfs"
	"github.com/catalogbot/catalogbot/policy"
)

// Review requests, as the community pipeline makes them: when a package's <bundle root>/<package>/ci.yaml
// on the base branch says addReviewers: true and the author of a pull request touching the package is not
// one of its owners, the reviewers listed there are asked for a review, once per pull request and person.

// maxCIYamlRead bounds the ci.yaml read for its reviewers.
const maxCIYamlRead = 1 << 20

// maxReviewersPerPackage bounds the reviewers taken from one ci.yaml.
const maxReviewersPerPackage = 50

// ciReviewers is what a ci.yaml says about review requests.
type ciReviewers struct {
	Reviewers    []string `json:"reviewers"`
	AddReviewers bool     `json:"addReviewers"`
}

// reviewersToAdd reads, from the base revision, the ci.yaml of each touched package in every bundle root
// of the policy and returns the reviewers of those that ask for them (addReviewers: true), by package. An
// unreadable ci.yaml asks for nothing (the checks report it).
func reviewersToAdd(ctx context.Context, repo *gitfs.Repo, base plumbing.Hash, pol *policy.Policy, touched []string) (map[string][]string, error) {
	if pol == nil {
		return nil, nil
	}
	out := map[string][]string{}
	for _, root := range pol.Bundles {
		for _, pkg := range touched {
			if pkg == "" || strings.ContainsAny(pkg, "/\\") || pkg == "." || pkg == ".." {
				continue
			}
			data, err := repo.ReadFile(ctx, base, path.Join(root.Path, pkg, "ci.yaml"), maxCIYamlRead)
			if errors.Is(err, fs.ErrNotExist) {
				continue
			}
			if err != nil {
				if ctx.Err() != nil {
					return nil, ctx.Err()
				}
				continue
			}
			var ci ciReviewers
			if yaml.Unmarshal(data, &ci) != nil || !ci.AddReviewers {
				continue
			}
			for _, r := range ci.Reviewers {
				if policy.ValidLogin(r) && len(out[pkg]) < maxReviewersPerPackage &&
					!slices.ContainsFunc(out[pkg], func(o string) bool { return policy.SameLogin(o, r) }) {
					out[pkg] = append(out[pkg], r)
				}
			}
		}
	}
	if len(out) == 0 {
		return nil, nil
	}
	return out, nil
}

// reviewersWanted are the reviewers to ask on a pull request: for each touched package whose ci.yaml asks for
// them and that the author does not own, its reviewers other than the author. Pure: tested without GitHub.
func reviewersWanted(ctx context.Context, f MergeFacts, add map[string][]string, teams policy.TeamResolver) []string {
	pol := f.Policy
	if pol == nil {
		pol = policy.Default()
	}
	var out []string
	for _, pkg := range f.Touched {
		list := add[pkg]
		if len(list) == 0 || vouches(ctx, pol, pkg, f.Author, teams) || extraOwner(f.ExtraOwners, pkg, f.Author) {
			continue
		}
		for _, r := range list {
			if !policy.SameLogin(r, f.Author) && !slices.ContainsFunc(out, func(o string) bool { return policy.SameLogin(o, r) }) {
				out = append(out, r)
			}
		}
	}
	return out
}

// requestReviewers asks GitHub for the reviews the pull request's packages want and it has not asked yet.
// GitHub refuses a whole request when one person may not be asked (not a collaborator): then each is asked
// alone, and a refusal is recorded too, so that nobody is asked twice.
func (m *Merger) requestReviewers(ctx context.Context, gh *github.Client, a jobs.MergeArgs, g *gatheredFacts) error {
	want := reviewersWanted(ctx, g.MergeFacts, g.Checked.AddReviewers, m.teams(gh))
	if len(want) == 0 {
		return nil
	}
	asked, err := m.cmds.ReviewsRequested(ctx, a.Owner, a.Repo, a.Number)
	if err != nil {
		return err
	}
	var todo []string
	for _, r := range want {
		if !slices.ContainsFunc(asked, func(o string) bool { return policy.SameLogin(o, r) }) {
			todo = append(todo, r)
		}
	}
	if len(todo) == 0 {
		return nil
	}
	log := m.log.With("repo", a.Owner+"/"+a.Repo, "pr", a.Number)
	for len(todo) > 0 {
		n := min(len(todo), 15) // GitHub takes at most 15 reviewers per request
		batch := todo[:n]
		todo = todo[n:]
		_, _, err := gh.PullRequests.RequestReviewers(ctx, a.Owner, a.Repo, a.Number, github.ReviewersRequest{Reviewers: batch})
		switch {
		case err == nil:
			log.Info("reviews requested (ci.yaml addReviewers)", "reviewers", strings.Join(batch, ","))
		case ghapp.IsStatus(err, http.StatusUnprocessableEntity) && len(batch) > 1:
			todo = append(todo, batch...)
			// Ask one at a time from now on.
			for _, r := range todo {
				if _, _, err := gh.PullRequests.RequestReviewers(ctx, a.Owner, a.Repo, a.Number, github.ReviewersRequest{Reviewers: []string{r}}); err != nil {
					if !ghapp.IsStatus(err, http.StatusUnprocessableEntity) {
						return fmt.Errorf("requesting a review of %s: %w", r, err)
					}
					log.Info("GitHub refused a review request (ci.yaml addReviewers)", "reviewer", r, "message", githubMessage(err))
				} else {
					log.Info("review requested (ci.yaml addReviewers)", "reviewer", r)
				}
				if err := m.cmds.MarkReviewRequested(ctx, a.Owner, a.Repo, a.Number, r, m.now()); err != nil {
					return err
				}
			}
			return nil
		case ghapp.IsStatus(err, http.StatusUnprocessableEntity):
			log.Info("GitHub refused a review request (ci.yaml addReviewers)", "reviewer", batch[0], "message", githubMessage(err))
		default:
			return fmt.Errorf("requesting reviews: %w", err)
		}
		for _, r := range batch {
			if err := m.cmds.MarkReviewRequested(ctx, a.Owner, a.Repo, a.Number, r, m.now()); err != nil {
				return err
			}
		}
	}
	return nil
}
