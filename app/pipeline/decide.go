package pipeline

import (
	"errors"
	"strings"

	"github.com/google/go-github/v62/github"
)

// errPermanent marks a failure that a retry cannot fix (the base's policy
// file is invalid, no catalog is configured).
type errPermanent struct{ err error }

func (e errPermanent) Error() string { return e.err.Error() }
func (e errPermanent) Unwrap() error { return e.err }

// runOutcome is what a check job does once its checks ran, or could not.
type runOutcome int

const (
	// runReport: the head is still the pull request's and the checks ran: complete the runs with the results.
	runReport runOutcome = iota
	// runSuperseded: the pull request moved on (another head, closed): complete the runs as superseded.
	runSuperseded
	// runRetry: the checks could not run and another attempt is left: note it on the runs, fail the attempt.
	runRetry
	// runFailed: the checks could not run, for good: complete the runs as "could not run" (neutral).
	runFailed
)

// runDecision is decideRun's answer: the outcome, and for runSuperseded why and the head that replaced it.
type runDecision struct {
	outcome runOutcome
	why     string
	newHead string
}

// decideRun decides what a check job of head does after its checks, from what it observed: runErr (nil
// when the checks ran), the pull request as read after them (cur; nil when it could not be read, which
// counts as still the head), and the attempt. A head that is no longer the pull request's is superseded
// whether or not its checks ran; an error no retry can mend (errPermanent) or the last attempt fails.
func decideRun(runErr error, cur *github.PullRequest, head string, attempt, maxAttempts int) runDecision {
	if cur != nil {
		if drop := whyDrop(cur, head); drop != "" {
			return runDecision{outcome: runSuperseded, why: drop, newHead: cur.GetHead().GetSHA()}
		}
	}
	if runErr == nil {
		return runDecision{outcome: runReport}
	}
	var perm errPermanent
	if !errors.As(runErr, &perm) && attempt < maxAttempts {
		return runDecision{outcome: runRetry}
	}
	return runDecision{outcome: runFailed}
}

// whyDrop says why work for sha on pr must not be reported, or "".
func whyDrop(pr *github.PullRequest, sha string) string {
	switch {
	case pr.GetState() != "open":
		return "the pull request is " + pr.GetState()
	case !strings.EqualFold(pr.GetHead().GetSHA(), sha):
		return "superseded by " + pr.GetHead().GetSHA()
	}
	return ""
}
