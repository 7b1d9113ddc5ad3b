package app

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/google/go-github/v62/github"
	"github.com/riverqueue/river"
)

// KindCommand is the comment commands' job kind (stored: never rename).
const KindCommand = "catalogbot_comment_command"

// CommandArgs carries the commands of one pull request comment. Unique by comment while it waits or
// runs; the command table makes a comment's commands count once for ever (a redelivery, the resync).
type CommandArgs struct {
	InstallationID int64  `json:"installation_id"`
	Owner          string `json:"owner" river:"unique"`
	Repo           string `json:"repo" river:"unique"`
	Number         int    `json:"number" river:"unique"`
	CommentID      int64  `json:"comment_id" river:"unique"`
	// Commenter is the comment's author; CommentedAt when GitHub says it was written.
	Commenter   string    `json:"commenter"`
	CommentedAt time.Time `json:"commented_at"`
	Commands    []string  `json:"commands"`
	CloneURL    string    `json:"clone_url,omitempty"`
	DeliveryID  string    `json:"delivery_id,omitempty"`
	// Recovered marks a comment found by the resync rather than delivered.
	Recovered bool `json:"recovered,omitempty"`
}

func (CommandArgs) Kind() string { return KindCommand }
func (CommandArgs) InsertOpts() river.InsertOpts {
	return river.InsertOpts{MaxAttempts: 10, UniqueOpts: river.UniqueOpts{ByArgs: true, ByState: activeJobStates()}}
}

// onIssueComment turns a new comment on an open pull request into a command job when it carries commands.
// Edits and deletions change nothing (a command counts as it was first written); comments by bots,
// catalogbot's own included, are never commands.
func onIssueComment(ec eventContext, body []byte) (plan, error) {
	if ec.Action != "created" {
		return plan{}, nil
	}
	var ev github.IssueCommentEvent
	if err := json.Unmarshal(body, &ev); err != nil {
		return plan{}, fmt.Errorf("issue_comment event: %w", err)
	}
	issue, c := ev.GetIssue(), ev.GetComment()
	if issue == nil || c == nil || !issue.IsPullRequest() || issue.GetState() != "open" || ec.InstallationID == 0 || ec.Owner == "" {
		return plan{}, nil
	}
	a, ok := commandJob(ec, issue.GetNumber(), c)
	if !ok {
		return plan{}, nil
	}
	return plan{Jobs: []river.InsertManyParams{{Args: a}}}, nil
}

// commandJob is the job of comment c on pull request number, if it carries commands of a person.
func commandJob(ec eventContext, number int, c *github.IssueComment) (CommandArgs, bool) {
	login := c.GetUser().GetLogin()
	if number <= 0 || c.GetID() <= 0 || login == "" || isBot(c.GetUser()) {
		return CommandArgs{}, false
	}
	cmds := parseCommands(c.GetBody())
	if len(cmds) == 0 {
		return CommandArgs{}, false
	}
	return CommandArgs{InstallationID: ec.InstallationID, Owner: ec.Owner, Repo: ec.Name, Number: number,
		CommentID: c.GetID(), Commenter: login, CommentedAt: c.GetCreatedAt().Time, Commands: cmds,
		CloneURL: ec.CloneURL, DeliveryID: ec.DeliveryID}, true
}

func isBot(u *github.User) bool {
	return strings.EqualFold(u.GetType(), "Bot") || strings.HasSuffix(strings.ToLower(u.GetLogin()), "[bot]")
}
