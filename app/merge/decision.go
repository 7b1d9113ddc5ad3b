package merge

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/catalogbot/catalogbot/app/jobs"
	"github.com/catalogbot/catalogbot/policy"
)

// MergeFacts is everything the merge decision looks at, gathered from GitHub
// and from the result of our own checks. The decision is a pure function of
// them, so it is re-derived from the current state every time an input
// changes (level-triggered), and tested without GitHub.
type MergeFacts struct {
	Open, Draft, Merged bool
	// HeadSHA is the pull request's head now; CheckedSHA the head our checks ran on.
	HeadSHA, CheckedSHA string
	Author              string
	Labels              []string
	// OurChecks maps each of our check runs on HeadSHA to its conclusion; a
	// run not completed (or absent) maps to "".
	OurChecks map[string]string
	// Required are the checks and statuses branch protection and rulesets
	// require on the base branch, with their state on HeadSHA.
	Required []RequiredCheck
	// Touched are the packages the pull request touches; NewPackages those of
	// them the base does not have (from our change set).
	Touched []string
	// ExtraOwners are owners of packages beyond the policy's (a bundle root's ci.yaml reviewers, read from
	// the base when the check ran).
	ExtraOwners map[string][]string
	// Derived, when set, says the checked head was a catalog update derived from bundles the base branch holds
	// (their own pull requests authorized them): it needs no owner of its own.
	Derived string
	// Removals are the removals of released content the checked head makes that the policy's removals allow;
	// whoever vouches for the packages vouches for them, and the audit log says so.
	Removals []string
	// Reviews are the latest review of each reviewer.
	Reviews []Review
	// Automerge is the base branch policy's automerge section; Policy the
	// whole base policy (owners, maintainers).
	Policy *policy.Policy
	// BaseHeadSHA is the base branch's head the merge would land on, read under the repository's merge
	// lease; CheckedBaseSHA the base the check judged against; Result the judgement of the merge result on
	// BaseHeadSHA. BaseHeadSHA empty is the decision before the lease, on the pull request alone: the base
	// rules are left to the decision under the lease.
	BaseHeadSHA, CheckedBaseSHA string
	Result                      *ResultJudgement
}

// RequiredCheck is one required status check and its state on the head.
type RequiredCheck struct {
	Name string
	// State is success, pending, failure or missing (never reported).
	State string
}

// Review is a reviewer's latest stand: a review, or an /approve (or /approve cancel) comment.
type Review struct {
	ID       int64 // the review's id; 0 for a comment command
	User     string
	State    string // APPROVED, CHANGES_REQUESTED, COMMENTED, DISMISSED
	CommitID string // the head the review was made on
	// At is when it was given; CommentID the comment of an /approve (0 for a review).
	At        time.Time
	CommentID int64
}

// MergeDecision says whether to merge, and if not, every reason why not.
type MergeDecision struct {
	Merge bool
	// Blocking lists, in plain words, every condition that is not met.
	Blocking []string
	// AuthorizedBy says who vouched for the change: "author <login>" when the
	// author owns every touched package, else the approving reviewers.
	AuthorizedBy string
	// ApprovalIDs are the reviews that authorized the merge; ApprovalComments the /approve comments.
	ApprovalIDs      []int64
	ApprovalComments []int64
	// Approvers are the logins whose approval of the head counted.
	Approvers []string
}

// DecideMerge applies the merge rules: the pull request is open and not a
// draft; its head is the commit our checks ran on; all our check runs passed
// on it; every required check is green; no hold label; automerge is enabled
// in the base policy; and the author owns every touched package — or, for
// each package the author does not own (and for every package when the
// policy demands owner approval), an owner or a maintainer approved this
// exact head. An approval of an older commit does not count.
func DecideMerge(ctx context.Context, f MergeFacts, ourChecks []string, teams policy.TeamResolver) MergeDecision {
	var d MergeDecision
	block := func(format string, a ...any) { d.Blocking = append(d.Blocking, fmt.Sprintf(format, a...)) }
	pol := f.Policy
	if pol == nil {
		pol = policy.Default()
	}
	switch {
	case f.Merged:
		block("the pull request is already merged")
	case !f.Open:
		block("the pull request is closed")
	}
	if f.Draft {
		block("the pull request is a draft")
	}
	if !pol.Automerge.Enabled {
		block("automerge is not enabled in the base branch's %s (automerge.enabled)", policy.FileName)
	}
	if f.CheckedSHA == "" {
		block("catalogbot has not checked this pull request yet")
	} else if f.HeadSHA != f.CheckedSHA {
		block("the head moved to %s after the check of %s; the new head is being checked", jobs.Short(f.HeadSHA), jobs.Short(f.CheckedSHA))
	}
	for _, name := range ourChecks {
		switch c := f.OurChecks[name]; c {
		case "success":
		case "":
			block("check %s has not completed on %s", name, jobs.Short(f.HeadSHA))
		default:
			block("check %s concluded %s", name, c)
		}
	}
	for _, r := range f.Required {
		if r.State != "success" {
			block("required check %q is %s", r.Name, r.State)
		}
	}
	if f.BaseHeadSHA != "" {
		// What merges is what was judged: the pull request's change on this base head.
		switch r := f.Result; {
		case r == nil || r.BaseSHA != f.BaseHeadSHA:
			block("the merge result on the base head %s has not been judged", jobs.Short(f.BaseHeadSHA))
		default:
			if r.Recheck != "" {
				block("%s; the pull request is being checked again against it", r.Recheck)
			}
			if r.Unjudged != "" {
				block("%s", r.Unjudged)
			}
			for _, c := range r.Conflicts {
				block("%s", c)
			}
		}
	}
	for _, l := range f.Labels {
		for _, h := range pol.Automerge.HoldLabels {
			if strings.EqualFold(l, h) {
				block("the hold label %q is set", l)
			}
		}
	}

	// Who vouches for the change.
	if f.Derived != "" {
		d.AuthorizedBy = "derived from merged bundles (" + f.Derived + ")"
		if strings.Contains(f.Derived, ": promoted from ") {
			d.AuthorizedBy = "derived promotion from the default branch (" + f.Derived + ")"
		}
		d.Merge = len(d.Blocking) == 0
		return d
	}
	approvals := currentApprovals(f.Reviews, f.HeadSHA, f.Author)
	var approvers []string
	used := map[string]bool{}
	authorOwnsAll := true
	for _, pkg := range f.Touched {
		owns := false
		if !pol.Automerge.RequireOwnerApproval {
			owns = vouches(ctx, pol, pkg, f.Author, teams) || extraOwner(f.ExtraOwners, pkg, f.Author)
		}
		if owns {
			continue
		}
		authorOwnsAll = false
		var by *Review
		for i := range approvals {
			if vouches(ctx, pol, pkg, approvals[i].User, teams) || extraOwner(f.ExtraOwners, pkg, approvals[i].User) {
				by = &approvals[i]
				break
			}
		}
		if by == nil {
			if pol.Automerge.RequireOwnerApproval {
				block("package %q needs an approving review from one of its owners on %s", pkg, jobs.Short(f.HeadSHA))
			} else {
				block("@%s does not own package %q: an owner must approve %s", f.Author, pkg, jobs.Short(f.HeadSHA))
			}
			continue
		}
		if key := strings.ToLower(by.User); !used[key] {
			used[key] = true
			approvers = append(approvers, by.User)
			if by.ID != 0 {
				d.ApprovalIDs = append(d.ApprovalIDs, by.ID)
			} else {
				d.ApprovalComments = append(d.ApprovalComments, by.CommentID)
			}
		}
	}
	if len(f.Touched) == 0 && !vouchesAsMaintainer(ctx, pol, f.Author, teams) {
		block("the pull request touches no package, so only a maintainer's pull request merges by itself")
		authorOwnsAll = false
	}
	switch {
	case authorOwnsAll:
		d.AuthorizedBy = "author " + f.Author
	case len(approvers) > 0:
		sort.Strings(approvers)
		d.AuthorizedBy = "approved by " + strings.Join(approvers, ", ")
		d.Approvers = approvers
	}
	if d.AuthorizedBy != "" && len(f.Removals) > 0 {
		d.AuthorizedBy += "; removals the policy allows: " + strings.Join(f.Removals, "; ")
	}
	d.Merge = len(d.Blocking) == 0
	return d
}

// currentApprovals keeps the approving reviews made on head by someone other
// than the author.
func currentApprovals(reviews []Review, head, author string) []Review {
	var out []Review
	for _, r := range reviews {
		if r.State == "APPROVED" && r.CommitID == head && !policy.SameLogin(r.User, author) {
			out = append(out, r)
		}
	}
	sort.SliceStable(out, func(i, j int) bool {
		if !out[i].At.Equal(out[j].At) {
			return out[i].At.Before(out[j].At)
		}
		return out[i].ID < out[j].ID
	})
	return out
}

// vouches reports whether login may vouch for pkg: an owner or a maintainer.
// An unresolved team counts as no: merging needs a yes.
func vouches(ctx context.Context, pol *policy.Policy, pkg, login string, teams policy.TeamResolver) bool {
	if d, _ := pol.IsOwner(ctx, pkg, login, teams); d == policy.Yes {
		return true
	}
	return vouchesAsMaintainer(ctx, pol, login, teams)
}

func vouchesAsMaintainer(ctx context.Context, pol *policy.Policy, login string, teams policy.TeamResolver) bool {
	d, _ := pol.IsMaintainer(ctx, login, teams)
	return d == policy.Yes
}

// extraOwner reports whether login is among the owners of pkg beyond the policy's.
func extraOwner(extra map[string][]string, pkg, login string) bool {
	for _, o := range extra[pkg] {
		if policy.SameLogin(o, login) {
			return true
		}
	}
	return false
}
