package githubfake

import (
	"fmt"
	"net/http"
	"slices"
	"strings"
)

// Review requests, as GitHub's REST API serves them ("Request reviewers for a pull request"): POST
// /repos/{owner}/{repo}/pulls/{number}/requested_reviewers adds users (and teams) to the pull request's
// requested reviewers and answers 201 with the pull request. GitHub refuses the whole request with 422 when
// one of them is the pull request's author ("Review cannot be requested from pull request author.") or
// not a collaborator of the repository ("Reviews may only be requested from collaborators…"), and for a
// pull request that is not open. A review submitted by a requested reviewer fulfils the request (the user
// leaves requested_reviewers). GET lists them as {"users": [...], "teams": [...]}.

// maxRequestedReviewers is GitHub's bound on the reviewers of one request (15 users and teams in all).
const maxRequestedReviewers = 15

// reviewersBody is the request's JSON.
type reviewersBody struct {
	Reviewers     []string `json:"reviewers"`
	TeamReviewers []string `json:"team_reviewers"`
}

func (f *Fake) requestReviewers(c *call) reply {
	r, p, rep, ok := c.pull()
	if !ok {
		return rep
	}
	var in reviewersBody
	if rep, ok := c.decode(&in); !ok {
		return rep
	}
	if len(in.Reviewers)+len(in.TeamReviewers) == 0 {
		return validationFailed("PullRequest", "reviewers", "missing_field", "reviewers or team_reviewers is required")
	}
	if len(in.Reviewers)+len(in.TeamReviewers) > maxRequestedReviewers {
		return validationFailed("PullRequest", "reviewers", "invalid", fmt.Sprintf("at most %d reviewers may be requested at once", maxRequestedReviewers))
	}
	if p.State != "open" {
		return validationFailed("PullRequest", "reviewers", "invalid", "Reviews may only be requested on an open pull request.")
	}
	for _, u := range in.Reviewers {
		if strings.EqualFold(u, p.Author) {
			return validationFailed("PullRequest", "reviewers", "invalid", "Review cannot be requested from pull request author.")
		}
		if !r.isCollaborator(u) {
			return validationFailed("PullRequest", "reviewers", "invalid", fmt.Sprintf(
				"Reviews may only be requested from collaborators. One or more of the users or teams you specified is not a collaborator of the %s repository.", r.fullName()))
		}
	}
	for _, t := range in.TeamReviewers {
		if f.teams[strings.ToLower(r.owner+"/"+t)] == nil {
			return validationFailed("PullRequest", "team_reviewers", "invalid", fmt.Sprintf(
				"Reviews may only be requested from collaborators. One or more of the users or teams you specified is not a collaborator of the %s repository.", r.fullName()))
		}
	}
	for _, u := range in.Reviewers {
		if !slices.ContainsFunc(p.requested, func(o string) bool { return strings.EqualFold(o, u) }) {
			p.requested = append(p.requested, u)
		}
	}
	for _, t := range in.TeamReviewers {
		if !slices.ContainsFunc(p.requestedTeams, func(o string) bool { return strings.EqualFold(o, t) }) {
			p.requestedTeams = append(p.requestedTeams, t)
		}
	}
	p.updated = f.now()
	return reply{status: http.StatusCreated, body: c.pullJSON(r, p)}
}

func (f *Fake) listRequestedReviewers(c *call) reply {
	_, p, rep, ok := c.pull()
	if !ok {
		return rep
	}
	return reply{status: http.StatusOK, body: map[string]any{"users": usersJSON(p.requested), "teams": teamsJSON(p.requestedTeams)}}
}

func usersJSON(logins []string) []any {
	out := []any{}
	for _, l := range logins {
		out = append(out, map[string]any{"login": l, "type": "User"})
	}
	return out
}

func teamsJSON(slugs []string) []any {
	out := []any{}
	for _, s := range slugs {
		out = append(out, map[string]any{"slug": s, "name": s})
	}
	return out
}

// isCollaborator: a user with a role on the repository, or its owner.
func (r *repo) isCollaborator(login string) bool {
	return r.collaborators[strings.ToLower(login)] != "" || strings.EqualFold(login, r.owner)
}

// RequestedReviewers lists the users whose review is requested on a pull request, in request order.
func (f *Fake) RequestedReviewers(owner, name string, number int) ([]string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	_, p, err := f.pullLocked(owner, name, number)
	if err != nil {
		return nil, err
	}
	return append([]string(nil), p.requested...), nil
}
