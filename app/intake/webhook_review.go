package intake

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/catalogbot/catalogbot/app/jobs"
	"github.com/google/go-github/v62/github"
	"github.com/riverqueue/river"
)

// onPullRequestReview records a review for the merge evaluation.
func onPullRequestReview(ec eventContext, body []byte) (jobs.Plan, error) {
	switch ec.Action {
	case "submitted", "edited", "dismissed":
	default:
		return jobs.Plan{}, nil
	}
	var ev github.PullRequestReviewEvent
	if err := json.Unmarshal(body, &ev); err != nil {
		return jobs.Plan{}, fmt.Errorf("pull_request_review event: %w", err)
	}
	pr, rv := ev.GetPullRequest(), ev.GetReview()
	if pr == nil || rv == nil || pr.GetState() != "open" || ec.InstallationID == 0 || ec.Owner == "" {
		return jobs.Plan{}, nil
	}
	batch := []river.InsertManyParams{{Args: jobs.ReviewArgs{
		InstallationID: ec.InstallationID, Owner: ec.Owner, Repo: ec.Name, Number: pr.GetNumber(),
		HeadSHA: pr.GetHead().GetSHA(), ReviewID: rv.GetID(), Reviewer: rv.GetUser().GetLogin(),
		State: rv.GetState(), Action: ec.Action,
	}}}
	// An approval given, changed or dismissed changes who vouches for the head: ownership is judged again
	// (the other checks' work comes from the parse cache). A plain comment changes nothing.
	if ec.Action == "dismissed" || !strings.EqualFold(rv.GetState(), "commented") {
		batch = append(batch, river.InsertManyParams{Args: jobs.CheckPRArgs{
			InstallationID: ec.InstallationID, Owner: ec.Owner, Repo: ec.Name, Number: pr.GetNumber(),
			HeadSHA: pr.GetHead().GetSHA(), CloneURL: ec.CloneURL, DeliveryID: ec.DeliveryID,
			Rerun: ec.DeliveryID, Reason: "pull_request_review." + ec.Action,
		}})
	}
	return jobs.Plan{Jobs: batch}, nil
}
