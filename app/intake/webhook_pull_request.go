package intake

import (
	"encoding/json"
	"fmt"

	"github.com/catalogbot/catalogbot/app/jobs"
	"github.com/google/go-github/v62/github"
	"github.com/riverqueue/river"
)

// onPullRequest checks the head of an open pull request when its head or base may have changed. Drafts are
// checked too (their authors get the verdict early) and never merged: marking one ready for review, or
// turning it back into a draft, changes the merge decision only.
func onPullRequest(ec eventContext, body []byte) (jobs.Plan, error) {
	switch ec.Action {
	case "opened", "synchronize", "reopened", "ready_for_review", "converted_to_draft", "edited", "labeled", "unlabeled":
	default:
		return jobs.Plan{}, nil
	}
	var ev github.PullRequestEvent
	if err := json.Unmarshal(body, &ev); err != nil {
		return jobs.Plan{}, fmt.Errorf("pull_request event: %w", err)
	}
	pr := ev.GetPullRequest()
	var heads []jobs.HeadSeen
	if pr.GetState() == "open" && ec.Owner != "" && jobs.IsSHA(pr.GetHead().GetSHA()) {
		// What the pull request's head is as this delivery arrives: /approve binds to it.
		heads = []jobs.HeadSeen{{Owner: ec.Owner, Repo: ec.Name, Number: pr.GetNumber(), HeadSHA: pr.GetHead().GetSHA()}}
	}
	if ec.Action == "labeled" || ec.Action == "unlabeled" || ec.Action == "ready_for_review" || ec.Action == "converted_to_draft" {
		p := mergePlan(ec, pr, "pull_request."+ec.Action) // the merge decision only: the head was checked as it came
		p.Heads = heads
		return p, nil
	}
	if ec.Action == "edited" && ev.GetChanges().GetBase() == nil {
		return jobs.Plan{}, nil // a title or body edit changes nothing we check
	}
	if pr == nil || pr.GetState() != "open" || ec.InstallationID == 0 || ec.Owner == "" {
		return jobs.Plan{Heads: heads}, nil
	}
	p := checkPlan(ec, pr.GetNumber(), pr.GetHead().GetSHA(), "pull_request."+ec.Action, false)
	p.Heads = heads
	return p, nil
}

// checkPlan enqueues the check of one head. A rerun (someone pressed
// "Re-run") is unique by its delivery, so that it runs even while a check of
// the same head is still finishing.
func checkPlan(ec eventContext, number int, sha, reason string, rerun bool) jobs.Plan {
	if number <= 0 || !jobs.IsSHA(sha) {
		return jobs.Plan{}
	}
	a := jobs.CheckPRArgs{
		InstallationID: ec.InstallationID, Owner: ec.Owner, Repo: ec.Name, Number: number,
		HeadSHA: sha, CloneURL: ec.CloneURL, Reason: reason, DeliveryID: ec.DeliveryID,
	}
	if rerun {
		a.Rerun = ec.DeliveryID
	}
	return jobs.Plan{Jobs: []river.InsertManyParams{{Args: a}}}
}

// mergePlan enqueues a merge evaluation of an open pull request.
func mergePlan(ec eventContext, pr *github.PullRequest, reason string) jobs.Plan {
	if pr == nil || pr.GetState() != "open" || pr.GetNumber() <= 0 || ec.InstallationID == 0 || ec.Owner == "" {
		return jobs.Plan{}
	}
	return jobs.Plan{Jobs: []river.InsertManyParams{{Args: jobs.MergeArgs{InstallationID: ec.InstallationID, Owner: ec.Owner,
		Repo: ec.Name, Number: pr.GetNumber(), CloneURL: ec.CloneURL, Reason: reason}}}}
}
