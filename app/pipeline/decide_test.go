package pipeline

import (
	"errors"
	"fmt"
	"testing"

	"github.com/google/go-github/v62/github"
)

// What a check job does after its checks is a function of what it observed, decided without GitHub.
func TestDecideRun(t *testing.T) {
	const head, next = "1111111111111111111111111111111111111111", "2222222222222222222222222222222222222222"
	pr := func(state, sha string) *github.PullRequest {
		return &github.PullRequest{State: github.String(state), Head: &github.PullRequestBranch{SHA: github.String(sha)}}
	}
	boom := errors.New("fetching: connection reset")
	perm := fmt.Errorf("policy: %w", errPermanent{errors.New("does not parse")})
	for _, c := range []struct {
		name          string
		runErr        error
		cur           *github.PullRequest
		attempt, max  int
		want          runOutcome
		wantNewHead   string
		wantWhyPrefix string
	}{
		{"ran, still the head", nil, pr("open", head), 1, 5, runReport, "", ""},
		{"ran, pull request unreadable", nil, nil, 1, 5, runReport, "", ""},
		{"ran, head moved", nil, pr("open", next), 1, 5, runSuperseded, next, "superseded by " + next},
		{"ran, closed", nil, pr("closed", head), 1, 5, runSuperseded, head, "the pull request is closed"},
		{"failed, head moved", boom, pr("open", next), 1, 5, runSuperseded, next, "superseded by"},
		{"failed, attempts left", boom, pr("open", head), 2, 5, runRetry, "", ""},
		{"failed, pull request unreadable", boom, nil, 2, 5, runRetry, "", ""},
		{"failed, last attempt", boom, pr("open", head), 5, 5, runFailed, "", ""},
		{"failed for good", perm, pr("open", head), 1, 5, runFailed, "", ""},
	} {
		d := decideRun(c.runErr, c.cur, head, c.attempt, c.max)
		if d.outcome != c.want || d.newHead != c.wantNewHead || len(d.why) < len(c.wantWhyPrefix) || d.why[:len(c.wantWhyPrefix)] != c.wantWhyPrefix {
			t.Errorf("%s: %+v, want outcome %d, new head %q, why %q…", c.name, d, c.want, c.wantNewHead, c.wantWhyPrefix)
		}
	}
}
