package app

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/google/go-github/v62/github"
	"github.com/riverqueue/river"
)

// onPush asks for a rebuild when the default branch moves. Pushes to other
// branches are ignored (pull requests are checked through their own events).
func onPush(ec eventContext, body []byte) (plan, error) {
	var ev github.PushEvent
	if err := json.Unmarshal(body, &ev); err != nil {
		return plan{}, fmt.Errorf("push event: %w", err)
	}
	if ec.DefaultBranch == "" || ev.GetRef() != "refs/heads/"+ec.DefaultBranch || ev.GetDeleted() ||
		!isSHA(ev.GetAfter()) || ec.InstallationID == 0 || ec.Owner == "" {
		return plan{}, nil
	}
	return plan{Jobs: []river.InsertManyParams{{Args: RebuildArgs{
		InstallationID: ec.InstallationID, Owner: ec.Owner, Repo: ec.Name,
		Ref: ev.GetRef(), SHA: ev.GetAfter(), CloneURL: ec.CloneURL, Before: beforeOf(ev.GetBefore()),
	}}}}, nil
}

// beforeOf is the push's previous head, "" when the branch was created (GitHub sends zeros).
func beforeOf(sha string) string {
	if !isSHA(sha) || strings.Trim(sha, "0") == "" {
		return ""
	}
	return sha
}
