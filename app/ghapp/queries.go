package ghapp

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/google/go-github/v62/github"
)

// Bounds of the recovery sweeps.
const (
	maxPullPages     = 100 // 10,000 open pull requests
	maxCheckRunPages = 10
	maxDeliveryPages = 100
	// maxRedeliveriesPerSweep keeps one sweep from flooding the webhook.
	maxRedeliveriesPerSweep = 200
	// maxAttemptsPerDelivery: a delivery that failed this many times is left alone.
	maxAttemptsPerDelivery = 5
	// redeliveryWindow: GitHub redelivers deliveries of the past 3 days; keep a margin.
	redeliveryWindow = 71 * time.Hour
)

// PullRequestRef is what the resync needs to know about an open pull request.
type PullRequestRef struct {
	Number           int
	HeadSHA          string
	BaseRef          string
	BaseSHA          string
	Author           string
	Draft            bool
	HeadRepoFullName string
}

// OpenPullRequests lists every open pull request of a repository (all pages).
func OpenPullRequests(ctx context.Context, gh *github.Client, owner, repo string) ([]PullRequestRef, error) {
	var out []PullRequestRef
	more, err := EachOpenPullRequest(ctx, gh, owner, repo, "", maxPullPages*100, func(p *github.PullRequest) {
		out = append(out, PullRequestRef{
			Number:           p.GetNumber(),
			HeadSHA:          p.GetHead().GetSHA(),
			BaseRef:          p.GetBase().GetRef(),
			BaseSHA:          p.GetBase().GetSHA(),
			Author:           p.GetUser().GetLogin(),
			Draft:            p.GetDraft(),
			HeadRepoFullName: p.GetHead().GetRepo().GetFullName(),
		})
	})
	if err == nil && more {
		err = fmt.Errorf("%s/%s has more than %d open pull requests: listed the first %d", owner, repo, maxPullPages*100, len(out))
	}
	return out, err
}

// EachOpenPullRequest calls each for the open pull requests of a repository whose base is base ("": any), a
// page of 100 at a time, until max have been listed; more reports that pages were left unread. On an error,
// each has seen what was listed before it.
func EachOpenPullRequest(ctx context.Context, gh *github.Client, owner, repo, base string, max int, each func(*github.PullRequest)) (more bool, err error) {
	opt := &github.PullRequestListOptions{State: "open", Base: base, ListOptions: github.ListOptions{PerPage: 100}}
	for listed := 0; ; {
		if listed >= max {
			return true, nil
		}
		prs, resp, err := gh.PullRequests.List(ctx, owner, repo, opt)
		if err != nil {
			return false, fmt.Errorf("listing open pull requests of %s/%s: %w", owner, repo, err)
		}
		for _, p := range prs {
			if base == "" || (p.GetState() == "open" && p.GetBase().GetRef() == base) {
				each(p)
			}
		}
		listed += len(prs)
		if resp.NextPage == 0 {
			return false, nil
		}
		opt.Page = resp.NextPage
	}
}

// HasCompletedChecks tells whether the newest run of every name is completed
// on sha. Runs are matched by name (check_name), which our App owns.
func HasCompletedChecks(ctx context.Context, gh *github.Client, owner, repo, sha string, names []string) (bool, error) {
	if len(names) == 0 {
		return true, nil
	}
	completed := map[string]bool{}
	seen := map[string]bool{}
	opt := github.ListCheckRunsOptions{Filter: github.String("latest")}
	if len(names) == 1 {
		opt.CheckName = github.String(names[0])
	}
	err := ListRuns(ctx, gh, owner, repo, sha, opt, maxCheckRunPages, func(cr *github.CheckRun) {
		n := cr.GetName()
		if seen[n] {
			return // filter=latest lists the newest first
		}
		seen[n] = true
		completed[n] = cr.GetStatus() == "completed"
	})
	if err != nil {
		return false, err
	}
	for _, n := range names {
		if !completed[n] {
			return false, nil
		}
	}
	return true, nil
}

// RedeliverFailed asks GitHub to redeliver the App's failed webhook
// deliveries since since (at most three days back, GitHub's limit): a
// delivery counts as failed when no attempt with its GUID succeeded. The
// newest failed attempt of each GUID is redelivered, unless it has failed
// maxAttemptsPerDelivery times already. It returns how many redeliveries
// GitHub accepted (202, which go-github v62 reports as *github.AcceptedError).
// Attempts are counted among the deliveries listed, so since should span
// GitHub's window (time.Now().Add(-72*time.Hour) is clamped to it) rather
// than the time of the last sweep.
func RedeliverFailed(ctx context.Context, app *github.Client, since time.Time) (int, error) {
	if floor := time.Now().Add(-redeliveryWindow); since.Before(floor) {
		since = floor
	}
	type guidState struct {
		ok       bool
		failures int
		newest   int64 // id of the newest failed attempt
	}
	states := map[string]*guidState{}
	var order []string
	opt := &github.ListCursorOptions{PerPage: 100}
	done := false
	for page := 0; !done && page < maxDeliveryPages; page++ {
		ds, resp, err := app.Apps.ListHookDeliveries(ctx, opt)
		if err != nil {
			return 0, fmt.Errorf("listing webhook deliveries: %w", err)
		}
		for _, d := range ds {
			if d.GetDeliveredAt().Time.Before(since) {
				done = true // newest first: the rest are older
				break
			}
			g := d.GetGUID()
			st := states[g]
			if st == nil {
				st = &guidState{}
				states[g] = st
				order = append(order, g)
			}
			if deliveryOK(d) {
				st.ok = true
				continue
			}
			st.failures++
			if st.newest == 0 {
				st.newest = d.GetID()
			}
		}
		if resp.Cursor == "" {
			break
		}
		opt.Cursor = resp.Cursor
	}

	var n int
	var errs []error
	for _, g := range order {
		st := states[g]
		if st.ok || st.newest == 0 || st.failures >= maxAttemptsPerDelivery {
			continue
		}
		if n >= maxRedeliveriesPerSweep {
			break
		}
		_, _, err := app.Apps.RedeliverHookDelivery(ctx, st.newest)
		var accepted *github.AcceptedError
		if err != nil && !errors.As(err, &accepted) {
			errs = append(errs, fmt.Errorf("redelivering %d (guid %s): %w", st.newest, g, err))
			if ctx.Err() != nil {
				break
			}
			continue
		}
		n++
	}
	return n, errors.Join(errs...)
}

func deliveryOK(d *github.HookDelivery) bool {
	if c := d.GetStatusCode(); c >= 200 && c < 300 {
		return true
	}
	return d.GetStatus() == "OK"
}

// maxCommentPages bounds the comments the resync reads of one repository (newest first).
const maxCommentPages = 20

// RepositoryComments lists the issue and pull request comments of a repository updated since since, newest
// first (bounded).
func RepositoryComments(ctx context.Context, gh *github.Client, owner, repo string, since time.Time) ([]*github.IssueComment, error) {
	var out []*github.IssueComment
	opt := &github.IssueListCommentsOptions{Since: &since, Sort: github.String("created"), Direction: github.String("desc"),
		ListOptions: github.ListOptions{PerPage: 100}}
	for page := 0; page < maxCommentPages; page++ {
		cs, resp, err := gh.Issues.ListComments(ctx, owner, repo, 0, opt)
		if err != nil {
			return out, fmt.Errorf("listing the comments of %s/%s: %w", owner, repo, err)
		}
		out = append(out, cs...)
		if resp.NextPage == 0 {
			break
		}
		opt.Page = resp.NextPage
	}
	return out, nil
}

// CommentOnce posts a comment on issue or pull request number whose body begins with marker, unless one
// posted since since already does (a retried job finds its earlier comment; at most maxCommentPages pages are
// read). marker is an HTML comment unique to what is answered.
func CommentOnce(ctx context.Context, gh *github.Client, owner, repo string, number int, since time.Time, marker, text string) error {
	opt := &github.IssueListCommentsOptions{Since: &since, ListOptions: github.ListOptions{PerPage: 100}}
	for page := 0; page < maxCommentPages; page++ {
		cs, resp, err := gh.Issues.ListComments(ctx, owner, repo, number, opt)
		if err != nil {
			return fmt.Errorf("listing comments of #%d: %w", number, err)
		}
		for _, c := range cs {
			if strings.HasPrefix(c.GetBody(), marker) {
				return nil
			}
		}
		if resp.NextPage == 0 {
			break
		}
		opt.Page = resp.NextPage
	}
	if _, _, err := gh.Issues.CreateComment(ctx, owner, repo, number, &github.IssueComment{Body: github.String(marker + "\n" + text)}); err != nil {
		return fmt.Errorf("commenting on #%d: %w", number, err)
	}
	return nil
}

// IsStatus reports whether err is a GitHub error response with that status.
func IsStatus(err error, status int) bool {
	var er *github.ErrorResponse
	return errors.As(err, &er) && er.Response != nil && er.Response.StatusCode == status
}
