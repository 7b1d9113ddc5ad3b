package intake

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/catalogbot/catalogbot/app/jobs"
	"github.com/google/go-github/v62/github"
	"github.com/riverqueue/river"
)

// onPush asks, when the default branch moves, for its rebuild, for the re-check of the open pull
// requests whose touched packages the move changed (the merge job's base move, see app/merge), and, when the
// policy may have changed, for the promotion a newly declared catalog root asks for (app/promotion). Pushes to
// other branches are ignored (pull requests are checked through their own events).
func onPush(ec eventContext, body []byte) (jobs.Plan, error) {
	var ev github.PushEvent
	if err := json.Unmarshal(body, &ev); err != nil {
		return jobs.Plan{}, fmt.Errorf("push event: %w", err)
	}
	if ec.DefaultBranch == "" || ev.GetRef() != "refs/heads/"+ec.DefaultBranch || ev.GetDeleted() ||
		!jobs.IsSHA(ev.GetAfter()) || ec.InstallationID == 0 || ec.Owner == "" {
		return jobs.Plan{}, nil
	}
	plan := jobs.Plan{Jobs: []river.InsertManyParams{{Args: jobs.RebuildArgs{
		InstallationID: ec.InstallationID, Owner: ec.Owner, Repo: ec.Name,
		Ref: ev.GetRef(), SHA: ev.GetAfter(), CloneURL: ec.CloneURL, Before: beforeOf(ev.GetBefore()),
	}}, {Args: jobs.MergeArgs{
		InstallationID: ec.InstallationID, Owner: ec.Owner, Repo: ec.Name, CloneURL: ec.CloneURL,
		Base: ev.GetAfter(), BaseRef: ec.DefaultBranch, Reason: "push",
	}}}}
	if mayChangePolicy(ev) {
		// The promotion job compares the policy before and after: a catalog root newly declared asks for one.
		plan.Jobs = append(plan.Jobs, river.InsertManyParams{Args: jobs.PromoteArgs{InstallationID: ec.InstallationID,
			Owner: ec.Owner, Repo: ec.Name, CloneURL: ec.CloneURL, DefaultBranch: ec.DefaultBranch,
			Before: beforeOf(ev.GetBefore()), After: ev.GetAfter(), DeliveryID: ec.DeliveryID}})
	}
	return plan, nil
}

// policyFile is the policy's file name (policy.FileName, which intake does not import; a test holds them equal).
const policyFile = ".catalogbot.yaml"

// maxPushCommits is how many commits GitHub lists in a push payload at most; a longer push lists none.
const maxPushCommits = 2048

// mayChangePolicy says whether the push may change the policy file: one of the commits it lists adds or
// modifies it, or it lists no commits (or as many as GitHub lists at most), so nothing is known.
func mayChangePolicy(ev github.PushEvent) bool {
	if len(ev.Commits) == 0 || len(ev.Commits) >= maxPushCommits {
		return true
	}
	for _, c := range ev.Commits {
		for _, f := range append(append([]string(nil), c.Added...), c.Modified...) {
			if f == policyFile {
				return true
			}
		}
	}
	return false
}

// beforeOf is the push's previous head, "" when the branch was created (GitHub sends zeros).
func beforeOf(sha string) string {
	if !jobs.IsSHA(sha) || strings.Trim(sha, "0") == "" {
		return ""
	}
	return sha
}
