// Package pulls opens a promotion's pull requests on GitHub, as the App does: one per promoted package, from
// the App's own branch catalogbot/promote/<to>/<package> of the repository, each one commit on the default
// branch's head made through the Git database API, labelled with the package's strategy
// (catalog-promotion/always or catalog-promotion/review-needed). Each commit is recorded (Recorder) before
// the branch moves to it, so that the App's check of the pull request finds it: a promotion is trusted as
// derived only because the App's records say the App made it, never because of what it holds.
//
// It imports promote and go-github only; the App supplies the client, the records and the trigger.
package pulls

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sort"

	"github.com/google/go-github/v62/github"

	"github.com/catalogbot/catalogbot/promote"
)

// Marker ends the message of every commit the App makes for a promotion.
const Marker = "Generated-by: catalogbot"

// Record is one commit the App made for a promotion.
type Record struct {
	Owner, Repo       string
	SHA               string
	From, To, Package string
	Strategy          promote.Strategy
	// Base is the default branch commit it was made on, Tree its tree.
	Base, Tree string
	Files      []string
}

// Recorder keeps the App's records of its promotion commits, durably: the check of the pull request (in
// another process, perhaps) asks them whether the App made a commit.
type Recorder interface {
	RecordCommit(ctx context.Context, r Record) error
	// Commit is the record of the commit sha of the repository, if the App made it.
	Commit(ctx context.Context, owner, repo, sha string) (Record, bool, error)
}

// Opener opens the pull requests of a plan in one repository.
type Opener struct {
	GH            *github.Client
	Owner, Repo   string
	DefaultBranch string
	Records       Recorder
}

// Result is what Open did for one package.
type Result struct {
	Package  string
	Strategy promote.Strategy
	Branch   string
	Number   int
	// Action: opened, updated (the branch moved to a new commit), unchanged (the branch already holds this
	// promotion on this base), or skipped (the plan does not promote the package).
	Action string
}

// Open makes, for each package the plan promotes, the branch's commit on base (the default branch's head,
// whose tree is baseTree) and opens its pull request, or updates the open one. Packages the plan does not
// promote are reported as skipped.
func (o *Opener) Open(ctx context.Context, plan *promote.Plan, base, baseTree string) ([]Result, error) {
	if o.Records == nil {
		return nil, errors.New("no records: a promotion the App does not record cannot be trusted")
	}
	var out []Result
	for i := range plan.Packages {
		pk := &plan.Packages[i]
		res := Result{Package: pk.Name, Strategy: pk.Strategy, Branch: promote.Branch(plan.To, pk.Name)}
		if pk.Outcome != promote.Promoted || len(pk.Files) == 0 {
			res.Action = "skipped"
			out = append(out, res)
			continue
		}
		r, err := o.openOne(ctx, plan, pk, base, baseTree, res)
		if err != nil {
			return out, fmt.Errorf("%s: %w", pk.Name, err)
		}
		out = append(out, r)
	}
	return out, nil
}

func (o *Opener) openOne(ctx context.Context, plan *promote.Plan, pk *promote.Package, base, baseTree string, res Result) (Result, error) {
	branch := res.Branch
	entries := make([]*github.TreeEntry, 0, len(pk.Files))
	paths := make([]string, 0, len(pk.Files))
	for _, f := range pk.Files {
		entries = append(entries, &github.TreeEntry{Path: github.String(f.Path), Mode: github.String("100644"), Type: github.String("blob"), Content: github.String(string(f.Data))})
		paths = append(paths, f.Path)
	}
	sort.Strings(paths)
	tree, _, err := o.GH.Git.CreateTree(ctx, o.Owner, o.Repo, baseTree, entries)
	if err != nil {
		return res, fmt.Errorf("creating the tree: %w", err)
	}
	var branchHead string
	ref, _, err := o.GH.Git.GetRef(ctx, o.Owner, o.Repo, "heads/"+branch)
	switch {
	case err == nil:
		branchHead = ref.GetObject().GetSHA()
	case isStatus(err, http.StatusNotFound):
	default:
		return res, fmt.Errorf("reading the branch %s: %w", branch, err)
	}
	open, _, err := o.GH.PullRequests.List(ctx, o.Owner, o.Repo, &github.PullRequestListOptions{State: "open", Head: o.Owner + ":" + branch})
	if err != nil {
		return res, fmt.Errorf("listing the pull requests of %s: %w", branch, err)
	}
	res.Action = "unchanged"
	if !o.same(ctx, branchHead, pk.Name, plan.To, base, tree.GetSHA()) {
		msg := fmt.Sprintf("Promote %s to the %s catalog\n\n%s of %s, version_promotion_strategy %s.\n\n%s\n", pk.Name, plan.To, methodText(pk), plan.From, pk.Strategy, Marker)
		c, _, err := o.GH.Git.CreateCommit(ctx, o.Owner, o.Repo, &github.Commit{Message: github.String(msg), Tree: tree,
			Parents: []*github.Commit{{SHA: github.String(base)}}}, nil)
		if err != nil {
			return res, fmt.Errorf("creating the commit: %w", err)
		}
		// Recorded before the branch moves: the check of the pull request the move updates finds it.
		if err := o.Records.RecordCommit(ctx, Record{Owner: o.Owner, Repo: o.Repo, SHA: c.GetSHA(), From: plan.From, To: plan.To, Package: pk.Name,
			Strategy: pk.Strategy, Base: base, Tree: tree.GetSHA(), Files: paths}); err != nil {
			return res, fmt.Errorf("recording the commit: %w", err)
		}
		newRef := &github.Reference{Ref: github.String("refs/heads/" + branch), Object: &github.GitObject{SHA: c.SHA}}
		if branchHead == "" {
			_, _, err = o.GH.Git.CreateRef(ctx, o.Owner, o.Repo, newRef)
		} else {
			_, _, err = o.GH.Git.UpdateRef(ctx, o.Owner, o.Repo, newRef, true)
		}
		if err != nil {
			return res, fmt.Errorf("moving the branch %s: %w", branch, err)
		}
		res.Action = "updated"
	}
	title, body := promote.Title(plan, pk), promote.Body(plan, pk)
	if len(open) > 0 {
		res.Number = open[0].GetNumber()
		if res.Action == "updated" {
			if _, _, err := o.GH.PullRequests.Edit(ctx, o.Owner, o.Repo, res.Number, &github.PullRequest{Title: github.String(title), Body: github.String(body)}); err != nil {
				return res, fmt.Errorf("updating #%d: %w", res.Number, err)
			}
		}
	} else {
		pr, _, err := o.GH.PullRequests.Create(ctx, o.Owner, o.Repo, &github.NewPullRequest{Title: github.String(title), Head: github.String(branch),
			Base: github.String(o.DefaultBranch), Body: github.String(body)})
		if err != nil {
			return res, fmt.Errorf("opening the pull request: %w", err)
		}
		res.Number, res.Action = pr.GetNumber(), "opened"
	}
	if _, _, err := o.GH.Issues.AddLabelsToIssue(ctx, o.Owner, o.Repo, res.Number, []string{promote.Label(pk.Strategy)}); err != nil {
		return res, fmt.Errorf("labelling #%d: %w", res.Number, err)
	}
	return res, nil
}

// same says whether the branch's head is already this promotion: a commit the App recorded for this package
// and version, on base, holding tree.
func (o *Opener) same(ctx context.Context, head, pkg, to, base, tree string) bool {
	if head == "" {
		return false
	}
	r, ok, err := o.Records.Commit(ctx, o.Owner, o.Repo, head)
	return err == nil && ok && r.Package == pkg && r.To == to && r.Base == base && r.Tree == tree
}

func methodText(pk *promote.Package) string {
	if pk.Method == promote.Rendered {
		return "The catalog rendered from its template"
	}
	return "The catalog files copied"
}

func isStatus(err error, code int) bool {
	var er *github.ErrorResponse
	return errors.As(err, &er) && er.Response != nil && er.Response.StatusCode == code
}
