package jobs

import (
	"strings"
	"time"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"
)

// Job kinds. They are stored in the database: never rename one.
const (
	KindCheckPR   = "catalogbot_check_pr"
	KindReview    = "catalogbot_review"
	KindRebuild   = "catalogbot_rebuild"
	KindResync    = "catalogbot_resync"
	KindRedeliver = "catalogbot_redeliver"
)

// CheckPRArgs asks for the checks of one pull request head. A job is unique
// by repository, PR and head SHA while it waits or runs, so a burst of events
// about one head (pull_request, check_suite, a redelivery) runs it once; a
// finished job does not block a new one, so "Re-run" works.
type CheckPRArgs struct {
	InstallationID int64  `json:"installation_id"`
	Owner          string `json:"owner" river:"unique"`
	Repo           string `json:"repo" river:"unique"`
	Number         int    `json:"number" river:"unique"`
	HeadSHA        string `json:"head_sha" river:"unique"`
	// CloneURL is the repository's HTTPS git URL from the webhook; it
	// follows GitHub Enterprise Server's host.
	CloneURL   string `json:"clone_url"`
	DeliveryID string `json:"delivery_id,omitempty"`
	// Rerun is the delivery of an explicit re-run request; it makes the job
	// unique by that delivery instead of by head alone.
	Rerun string `json:"rerun,omitempty" river:"unique"`
	// Reason says which event asked (pull_request.synchronize, check_run.rerequested, resync...).
	Reason string `json:"reason"`
}

func (CheckPRArgs) Kind() string { return KindCheckPR }

func (CheckPRArgs) InsertOpts() river.InsertOpts {
	return river.InsertOpts{MaxAttempts: 5, UniqueOpts: river.UniqueOpts{ByArgs: true, ByState: ActiveStates()}}
}

// ReviewArgs records a pull request review; the merge evaluation plugs in
// through the server's review handler.
type ReviewArgs struct {
	InstallationID int64  `json:"installation_id"`
	Owner          string `json:"owner"`
	Repo           string `json:"repo"`
	Number         int    `json:"number"`
	HeadSHA        string `json:"head_sha"`
	ReviewID       int64  `json:"review_id" river:"unique"`
	Reviewer       string `json:"reviewer"`
	State          string `json:"state"`  // approved, changes_requested, commented, dismissed
	Action         string `json:"action"` // submitted, edited, dismissed
	DeliveryID     string `json:"delivery_id,omitempty" river:"unique"`
}

func (ReviewArgs) Kind() string { return KindReview }

func (ReviewArgs) InsertOpts() river.InsertOpts {
	return river.InsertOpts{MaxAttempts: 5, UniqueOpts: river.UniqueOpts{ByArgs: true, ByState: ActiveStates()}}
}

// RebuildArgs asks for the catalog image(s) of a default branch commit; the
// rebuild plugs in through the server's rebuild handler.
type RebuildArgs struct {
	InstallationID int64  `json:"installation_id"`
	Owner          string `json:"owner" river:"unique"`
	Repo           string `json:"repo" river:"unique"`
	Ref            string `json:"ref"`
	SHA            string `json:"sha" river:"unique"`
	CloneURL       string `json:"clone_url"`
	DeliveryID     string `json:"delivery_id,omitempty"`
	// Before is the branch's head before the push that made SHA the head: the bundle directories that
	// push added are those that differ between the two ("" for a job not made by a push).
	Before string `json:"before,omitempty"`
	// Rerun: someone pressed Re-run on the commit's image run, so it is
	// built again even when an earlier job already reported on it.
	Rerun bool `json:"rerun,omitempty"`
}

func (RebuildArgs) Kind() string { return KindRebuild }

func (RebuildArgs) InsertOpts() river.InsertOpts {
	return river.InsertOpts{MaxAttempts: 5, UniqueOpts: river.UniqueOpts{ByArgs: true, ByState: ActiveStates()}}
}

// ResyncArgs: the periodic level-triggered pass over open pull requests.
type ResyncArgs struct{}

func (ResyncArgs) Kind() string { return KindResync }

func (ResyncArgs) InsertOpts() river.InsertOpts {
	return river.InsertOpts{MaxAttempts: 1, UniqueOpts: river.UniqueOpts{ByArgs: true, ByState: ActiveStates()}}
}

// RedeliverArgs: the periodic request to redeliver failed webhook deliveries.
type RedeliverArgs struct{}

func (RedeliverArgs) Kind() string { return KindRedeliver }

func (RedeliverArgs) InsertOpts() river.InsertOpts {
	return river.InsertOpts{MaxAttempts: 1, UniqueOpts: river.UniqueOpts{ByArgs: true, ByState: ActiveStates()}}
}

// KindMergeGroup is the merge group check's job kind (stored: never rename).
const KindMergeGroup = "catalogbot_merge_group"

// MergeGroupArgs asks for the checks of one merge group head. Unique by head while it waits or runs.
type MergeGroupArgs struct {
	InstallationID int64  `json:"installation_id"`
	Owner          string `json:"owner" river:"unique"`
	Repo           string `json:"repo" river:"unique"`
	HeadSHA        string `json:"head_sha" river:"unique"`
	HeadRef        string `json:"head_ref"`
	BaseSHA        string `json:"base_sha"`
	BaseRef        string `json:"base_ref"`
	CloneURL       string `json:"clone_url,omitempty"`
	DeliveryID     string `json:"delivery_id,omitempty"`
}

func (MergeGroupArgs) Kind() string { return KindMergeGroup }

func (MergeGroupArgs) InsertOpts() river.InsertOpts {
	return river.InsertOpts{MaxAttempts: 5, UniqueOpts: river.UniqueOpts{ByArgs: true, ByState: ActiveStates()}}
}

// KindMerge is the merge evaluation's job kind (stored: never rename).
const KindMerge = "catalogbot_merge"

// MergeArgs asks to re-derive the merge decision of one pull request from
// its current state. Unique by pull request while it waits or runs: a burst
// of events evaluates once, and the periodic resync catches an event that
// arrived while an evaluation was running.
type MergeArgs struct {
	InstallationID int64  `json:"installation_id"`
	Owner          string `json:"owner" river:"unique"`
	Repo           string `json:"repo" river:"unique"`
	Number         int    `json:"number" river:"unique"`
	CloneURL       string `json:"clone_url,omitempty"`
	Reason         string `json:"reason"`
	// HeadSHA, with Number 0, asks for the open pull requests whose head is that commit (a commit status or
	// another App's check, which name no pull request for forks): each is evaluated.
	HeadSHA string `json:"head_sha,omitempty" river:"unique"`
	// After names the check that asked (its head and re-run delivery): an evaluation asked for by a check
	// that completed while an earlier evaluation was running is not folded into that one, which read the
	// facts before the check's verdict.
	After string `json:"after,omitempty" river:"unique"`
	// Base, with Number 0, says a push moved branch BaseRef to this commit: the open pull requests into it
	// whose touched packages the move changed are checked again, the others keep their check runs.
	Base    string `json:"base,omitempty" river:"unique"`
	BaseRef string `json:"base_ref,omitempty"`
}

// BaseRecheckKey is the Rerun of a check asked for because the base branch moved to base: a check of its own
// (a check of the same head still running read the older base), and one per base head whoever asks for it
// (the push, the merge evaluation).
func BaseRecheckKey(base string) string { return "base:" + base }

// RecheckedBase is the base head a BaseRecheckKey names ("", false for any other key).
func RecheckedBase(key string) (string, bool) {
	b, ok := strings.CutPrefix(key, "base:")
	if !ok || !IsSHA(b) {
		return "", false
	}
	return b, true
}

func (MergeArgs) Kind() string { return KindMerge }

func (MergeArgs) InsertOpts() river.InsertOpts {
	return river.InsertOpts{MaxAttempts: 5, UniqueOpts: river.UniqueOpts{ByArgs: true, ByState: ActiveStates()}}
}

// ActiveStates are the states in which a job blocks a duplicate of
// itself: while it waits or runs. A finished job does not, so that a
// re-requested check runs again.
func ActiveStates() []rivertype.JobState {
	return []rivertype.JobState{rivertype.JobStateAvailable, rivertype.JobStatePending, rivertype.JobStateRunning,
		rivertype.JobStateScheduled, rivertype.JobStateRetryable}
}

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
	return river.InsertOpts{MaxAttempts: 10, UniqueOpts: river.UniqueOpts{ByArgs: true, ByState: ActiveStates()}}
}
