package intake

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/catalogbot/catalogbot/app/jobs"
	"github.com/google/go-github/v62/github"
	"github.com/riverqueue/river"
)

// onIssueComment turns a new comment on an open pull request into a command job when it carries commands,
// and a /promote on an open pull request or issue into a promotion job.
// Edits and deletions change nothing (a command counts as it was first written); comments by bots,
// catalogbot's own included, are never commands.
func onIssueComment(ec eventContext, body []byte) (jobs.Plan, error) {
	if ec.Action != "created" {
		return jobs.Plan{}, nil
	}
	var ev github.IssueCommentEvent
	if err := json.Unmarshal(body, &ev); err != nil {
		return jobs.Plan{}, fmt.Errorf("issue_comment event: %w", err)
	}
	issue, c := ev.GetIssue(), ev.GetComment()
	if issue == nil || c == nil || issue.GetState() != "open" || ec.InstallationID == 0 || ec.Owner == "" {
		return jobs.Plan{}, nil
	}
	var plan jobs.Plan
	// /promote is read on pull requests and issues alike (a tracking issue); the other commands only on pull
	// requests.
	if p, ok := promoteJob(ec, issue.GetNumber(), c); ok {
		plan.Jobs = append(plan.Jobs, river.InsertManyParams{Args: p})
	}
	if issue.IsPullRequest() {
		if a, ok := commandJob(ec, issue.GetNumber(), c); ok {
			plan.Jobs = append(plan.Jobs, river.InsertManyParams{Args: a})
		}
	}
	return plan, nil
}

// promoteJob is the promotion job of comment c on issue or pull request number, if it carries a person's
// /promote; who may promote is the job's to judge (it reads the default branch's policy).
func promoteJob(ec eventContext, number int, c *github.IssueComment) (jobs.PromoteArgs, bool) {
	login := c.GetUser().GetLogin()
	if number <= 0 || c.GetID() <= 0 || login == "" || isBot(c.GetUser()) {
		return jobs.PromoteArgs{}, false
	}
	cmd, ok := jobs.PromoteCommand(c.GetBody())
	if !ok {
		return jobs.PromoteArgs{}, false
	}
	return jobs.PromoteArgs{InstallationID: ec.InstallationID, Owner: ec.Owner, Repo: ec.Name, CloneURL: ec.CloneURL,
		DefaultBranch: ec.DefaultBranch, Number: number, CommentID: c.GetID(), Commenter: login, CommentedAt: c.GetCreatedAt().Time,
		Command: cmd, DeliveryID: ec.DeliveryID}, true
}

// commandJob is the job of comment c on pull request number, if it carries commands of a person.
func commandJob(ec eventContext, number int, c *github.IssueComment) (jobs.CommandArgs, bool) {
	login := c.GetUser().GetLogin()
	if number <= 0 || c.GetID() <= 0 || login == "" || isBot(c.GetUser()) {
		return jobs.CommandArgs{}, false
	}
	cmds := jobs.ParseCommands(c.GetBody())
	if len(cmds) == 0 {
		return jobs.CommandArgs{}, false
	}
	return jobs.CommandArgs{InstallationID: ec.InstallationID, Owner: ec.Owner, Repo: ec.Name, Number: number,
		CommentID: c.GetID(), Commenter: login, CommentedAt: c.GetCreatedAt().Time, Commands: cmds,
		CloneURL: ec.CloneURL, DeliveryID: ec.DeliveryID}, true
}

func isBot(u *github.User) bool {
	return strings.EqualFold(u.GetType(), "Bot") || strings.HasSuffix(strings.ToLower(u.GetLogin()), "[bot]")
}

// CommandJob is the comment command job of comment c on pull request number of repo, as a delivery of the
// comment would plan it (recovery, for a comment whose delivery never came); false when c asks for nothing.
func CommandJob(repo jobs.InstalledRepo, number int, c *github.IssueComment) (jobs.CommandArgs, bool) {
	return commandJob(eventContext{InstallationID: repo.InstallationID, Owner: repo.Owner, Name: repo.Name, CloneURL: repo.CloneURL}, number, c)
}

// PromoteJob is the promotion job of comment c on issue or pull request number of repo, as a delivery of the
// comment would plan it (recovery); false when c carries no /promote of a person.
func PromoteJob(repo jobs.InstalledRepo, number int, c *github.IssueComment) (jobs.PromoteArgs, bool) {
	return promoteJob(eventContext{InstallationID: repo.InstallationID, Owner: repo.Owner, Name: repo.Name, CloneURL: repo.CloneURL}, number, c)
}
