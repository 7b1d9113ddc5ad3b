package githubfake

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
)

// Webhook payload builders: each returns the JSON GitHub would send for the
// fake's current state, ready for Deliver. Payloads carry installation,
// repository and sender as GitHub's do; URLs point at host
// "github.example" under /api/v3.

// eventCall is a call that renders objects for payloads.
func (f *Fake) eventCall() *call {
	return &call{f: f, r: &http.Request{Host: "github.example", URL: &url.URL{Path: "/"}}, path: "/api/v3"}
}

func (f *Fake) envelope(c *call, r *repo, action, sender string) map[string]any {
	m := map[string]any{
		"repository":   c.repoJSON(r),
		"installation": map[string]any{"id": r.installation},
		"sender":       map[string]any{"login": sender, "type": "User"},
	}
	if action != "" {
		m["action"] = action
	}
	return m
}

// PullRequestEvent is a pull_request event (opened, synchronize, reopened,
// closed, labeled, ready_for_review, edited, …) for a pull request as it is now.
func (f *Fake) PullRequestEvent(owner, name string, number int, action string) ([]byte, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	r, p, err := f.pullLocked(owner, name, number)
	if err != nil {
		return nil, err
	}
	c := f.eventCall()
	m := f.envelope(c, r, action, p.Author)
	m["number"] = p.Number
	m["pull_request"] = c.pullJSON(r, p)
	return json.Marshal(m)
}

// PullRequestReviewEvent is a pull_request_review event for a review added with AddReview.
func (f *Fake) PullRequestReviewEvent(owner, name string, number int, reviewID int64, action string) ([]byte, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	r, p, err := f.pullLocked(owner, name, number)
	if err != nil {
		return nil, err
	}
	for _, rv := range p.reviews {
		if rv.ID != reviewID {
			continue
		}
		c := f.eventCall()
		m := f.envelope(c, r, action, rv.User)
		m["pull_request"] = c.pullJSON(r, p)
		m["review"] = map[string]any{"id": rv.ID, "user": map[string]any{"login": rv.User}, "state": rv.State, "commit_id": rv.CommitID, "body": rv.Body, "submitted_at": jsonTime(rv.SubmittedAt)}
		return json.Marshal(m)
	}
	return nil, fmt.Errorf("githubfake: review %d of %s#%d does not exist", reviewID, r.fullName(), number)
}

// CheckRunEvent is a check_run event for a run (created, completed,
// rerequested, requested_action); requestedAction is the button's
// identifier for requested_action and ignored otherwise.
func (f *Fake) CheckRunEvent(owner, name string, runID int64, action, requestedAction, sender string) ([]byte, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	r, err := f.repoLocked(owner, name)
	if err != nil {
		return nil, err
	}
	cr := r.checkRuns[runID]
	if cr == nil {
		return nil, fmt.Errorf("githubfake: check run %d of %s does not exist", runID, r.fullName())
	}
	c := f.eventCall()
	m := f.envelope(c, r, action, sender)
	m["check_run"] = c.checkRunJSON(r, cr)
	if action == "requested_action" {
		m["requested_action"] = map[string]any{"identifier": requestedAction}
	}
	return json.Marshal(m)
}

// CheckSuiteEvent is a check_suite event (requested, rerequested, completed)
// on headSHA of branch; pull_requests lists same-repository open PRs with that head.
func (f *Fake) CheckSuiteEvent(owner, name, branchName, headSHA, action string) ([]byte, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	r, err := f.repoLocked(owner, name)
	if err != nil {
		return nil, err
	}
	c := f.eventCall()
	prs := []any{}
	for _, p := range sortedPulls(r) {
		if p.State == "open" && p.HeadSHA == headSHA && p.HeadRepo == "" {
			prs = append(prs, map[string]any{"number": p.Number, "head": map[string]any{"ref": p.HeadRef, "sha": p.HeadSHA}, "base": map[string]any{"ref": p.BaseRef, "sha": p.BaseSHA}})
		}
	}
	m := f.envelope(c, r, action, f.BotLogin())
	m["check_suite"] = map[string]any{"id": f.id(), "head_branch": branchName, "head_sha": headSHA, "status": "queued", "pull_requests": prs, "app": map[string]any{"id": f.appID, "slug": f.appSlug}}
	return json.Marshal(m)
}

// PushEvent is a push event moving ref refs/heads/branchName from before to after.
func (f *Fake) PushEvent(owner, name, branchName, before, after, pusher string) ([]byte, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	r, err := f.repoLocked(owner, name)
	if err != nil {
		return nil, err
	}
	c := f.eventCall()
	m := f.envelope(c, r, "", pusher)
	m["ref"] = "refs/heads/" + branchName
	m["before"] = before
	m["after"] = after
	m["pusher"] = map[string]any{"name": pusher}
	m["head_commit"] = map[string]any{"id": after}
	return json.Marshal(m)
}

// IssueCommentEvent is an issue_comment event (created, edited, deleted) for a comment on a pull request
// added with AddComment (or written by the App). As GitHub's, the issue carries a pull_request object, and
// an edit carries the body before it in changes; deleted works on a comment the fake still holds.
func (f *Fake) IssueCommentEvent(owner, name string, commentID int64, action, previousBody string) ([]byte, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	r, err := f.repoLocked(owner, name)
	if err != nil {
		return nil, err
	}
	cm := r.comments[commentID]
	if cm == nil {
		return nil, fmt.Errorf("githubfake: comment %d of %s does not exist", commentID, r.fullName())
	}
	p := r.pulls[cm.Number]
	if p == nil {
		return nil, fmt.Errorf("githubfake: comment %d is not on a pull request or an issue", commentID)
	}
	c := f.eventCall()
	m := f.envelope(c, r, action, cm.User)
	if cm.User == f.BotLogin() {
		m["sender"] = map[string]any{"login": cm.User, "type": "Bot"}
	}
	labels := []any{}
	for _, l := range p.labels {
		labels = append(labels, map[string]any{"name": l})
	}
	base := c.apiBase() + "/repos/" + r.fullName()
	m["issue"] = map[string]any{
		"number": p.Number, "title": p.Title, "state": p.State, "user": map[string]any{"login": p.Author, "type": "User"},
		"labels": labels, "url": fmt.Sprintf("%s/issues/%d", base, p.Number),
		"pull_request": map[string]any{"url": fmt.Sprintf("%s/pulls/%d", base, p.Number), "merged_at": jsonTime(p.mergedAt)},
	}
	if p.Issue {
		delete(m["issue"].(map[string]any), "pull_request")
	}
	m["comment"] = c.commentJSON(r, cm)
	if action == "edited" {
		m["changes"] = map[string]any{"body": map[string]any{"from": previousBody}}
	}
	return json.Marshal(m)
}
