package intake

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/catalogbot/catalogbot/app/jobs"
	"github.com/google/go-github/v62/github"
	"github.com/riverqueue/river"
)

// onPush asks, when the default branch moves, for its rebuild and for the re-check of the open pull
// requests whose touched packages the move changed (the merge job's base move, see app/merge). Pushes to
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
	return jobs.Plan{Jobs: []river.InsertManyParams{{Args: jobs.RebuildArgs{
		InstallationID: ec.InstallationID, Owner: ec.Owner, Repo: ec.Name,
		Ref: ev.GetRef(), SHA: ev.GetAfter(), CloneURL: ec.CloneURL, Before: beforeOf(ev.GetBefore()),
	}}, {Args: jobs.MergeArgs{
		InstallationID: ec.InstallationID, Owner: ec.Owner, Repo: ec.Name, CloneURL: ec.CloneURL,
		Base: ev.GetAfter(), BaseRef: ec.DefaultBranch, Reason: "push",
	}}}}, nil
}

// beforeOf is the push's previous head, "" when the branch was created (GitHub sends zeros).
func beforeOf(sha string) string {
	if !jobs.IsSHA(sha) || strings.Trim(sha, "0") == "" {
		return ""
	}
	return sha
}
