package intake

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/catalogbot/catalogbot/app/jobs"
	"github.com/google/go-github/v62/github"
	"github.com/riverqueue/river"
)

// onCheckSuite runs the checks again when GitHub requests a suite (a push)
// or someone presses "Re-run all checks". The suite lists its pull requests
// only when they come from the same repository; fork PRs are covered by the
// pull_request event and by the resync job.
func onCheckSuite(ec eventContext, body []byte) (jobs.Plan, error) {
	if ec.Action != "requested" && ec.Action != "rerequested" && ec.Action != "completed" {
		return jobs.Plan{}, nil
	}
	var ev github.CheckSuiteEvent
	if err := json.Unmarshal(body, &ev); err != nil {
		return jobs.Plan{}, fmt.Errorf("check_suite event: %w", err)
	}
	suite := ev.GetCheckSuite()
	if suite == nil || ec.InstallationID == 0 || ec.Owner == "" {
		return jobs.Plan{}, nil
	}
	if ec.Action == "completed" {
		// Another App's suite finished: a required check may have turned green.
		return externalCheckPlan(ec, suite.GetHeadSHA(), suite.PullRequests, "check_suite.completed: "+suite.GetApp().GetSlug()), nil
	}
	var p jobs.Plan
	for _, pr := range suite.PullRequests {
		p.Jobs = append(p.Jobs, checkPlan(ec, pr.GetNumber(), suite.GetHeadSHA(), "check_suite."+ec.Action, ec.Action == "rerequested").Jobs...)
	}
	return p, nil
}

// onCheckRun runs the checks again when someone presses "Re-run" on one of
// our check runs or one of its buttons. The PR number comes from the run's
// external_id (set when the run was created; fork PRs have no
// pull_requests in the event); the first pull request listed is the fallback.
func onCheckRun(ec eventContext, body []byte) (jobs.Plan, error) {
	if ec.Action != "rerequested" && ec.Action != "requested_action" && ec.Action != "completed" {
		return jobs.Plan{}, nil
	}
	var ev github.CheckRunEvent
	if err := json.Unmarshal(body, &ev); err != nil {
		return jobs.Plan{}, fmt.Errorf("check_run event: %w", err)
	}
	run := ev.GetCheckRun()
	if run == nil || ec.InstallationID == 0 || ec.Owner == "" {
		return jobs.Plan{}, nil
	}
	ours := strings.HasPrefix(run.GetName(), "catalogbot/")
	if ec.Action == "completed" {
		if ours {
			return jobs.Plan{}, nil // our own runs ask for the evaluation when they complete
		}
		return externalCheckPlan(ec, run.GetHeadSHA(), run.PullRequests, "check_run.completed: "+run.GetName()), nil
	}
	if !ours {
		return jobs.Plan{}, nil
	}
	if run.GetName() == jobs.RebuildCheckRunName || run.GetName() == jobs.BundleImageCheckRunName {
		return rebuildRerun(ec, run.GetHeadSHA()), nil
	}
	number, ok := jobs.ParseCheckRunExternalID(run.GetExternalID())
	if !ok && len(run.PullRequests) > 0 {
		number, ok = run.PullRequests[0].GetNumber(), true
	}
	if !ok {
		return jobs.Plan{}, nil
	}
	reason := "check_run." + ec.Action
	if ec.Action == "requested_action" {
		reason += ":" + ev.GetRequestedAction().Identifier
	}
	return checkPlan(ec, number, run.GetHeadSHA(), reason, true), nil
}

// rebuildRerun asks again for the images of the commit whose
// catalogbot/catalog-image or catalogbot/bundle-image run someone re-ran. The rebuild itself decides
// whether that commit is still the default branch's head; an older one is
// reported superseded, never pushed over a newer image.
func rebuildRerun(ec eventContext, sha string) jobs.Plan {
	if ec.DefaultBranch == "" || !jobs.IsSHA(sha) {
		return jobs.Plan{}
	}
	return jobs.Plan{Jobs: []river.InsertManyParams{{Args: jobs.RebuildArgs{
		InstallationID: ec.InstallationID, Owner: ec.Owner, Repo: ec.Name,
		Ref: "refs/heads/" + ec.DefaultBranch, SHA: sha, CloneURL: ec.CloneURL, DeliveryID: ec.DeliveryID, Rerun: true,
	}}}}
}

// EnqueueCheck is the check job of one explicit head (recovery's resync), as a delivery would plan it.
func EnqueueCheck(r jobs.InstalledRepo, number int, sha, reason string) []river.InsertManyParams {
	return checkPlan(eventContext{InstallationID: r.InstallationID, Owner: r.Owner, Name: r.Name, CloneURL: r.CloneURL}, number, sha, reason, false).Jobs
}

// externalCheckPlan asks for the merge evaluation of the pull requests a check of another App (or a commit
// status) concerns, so that a pull request merges when a required external check turns green rather than at
// the next resync. Same-repository pull requests are named by the event; for the rest (forks) the job looks
// up the open pull requests whose head is sha.
func externalCheckPlan(ec eventContext, sha string, prs []*github.PullRequest, reason string) jobs.Plan {
	if !jobs.IsSHA(sha) {
		return jobs.Plan{}
	}
	var p jobs.Plan
	for _, pr := range prs {
		if pr.GetNumber() > 0 {
			p.Jobs = append(p.Jobs, river.InsertManyParams{Args: jobs.MergeArgs{InstallationID: ec.InstallationID, Owner: ec.Owner,
				Repo: ec.Name, Number: pr.GetNumber(), CloneURL: ec.CloneURL, Reason: reason, After: "external:" + sha}})
		}
	}
	if len(p.Jobs) == 0 {
		p.Jobs = append(p.Jobs, river.InsertManyParams{Args: jobs.MergeArgs{InstallationID: ec.InstallationID, Owner: ec.Owner,
			Repo: ec.Name, HeadSHA: strings.ToLower(sha), CloneURL: ec.CloneURL, Reason: reason}})
	}
	return p
}

// onStatus: a commit status (the older API many CI systems use) changed; a required one may now pass.
func onStatus(ec eventContext, body []byte) (jobs.Plan, error) {
	var ev github.StatusEvent
	if err := json.Unmarshal(body, &ev); err != nil {
		return jobs.Plan{}, fmt.Errorf("status event: %w", err)
	}
	if ec.InstallationID == 0 || ec.Owner == "" || ev.GetState() == "pending" {
		return jobs.Plan{}, nil
	}
	return externalCheckPlan(ec, ev.GetSHA(), nil, "status: "+ev.GetContext()), nil
}
