package githubfake

import "net/http"

// Issues: an issue shares the pull requests' numbers, comments and labels, as on GitHub, and is no pull
// request (GET …/pulls/{n} answers 404, the pull request lists leave it out, its issue_comment events carry
// no pull_request object). The App opens one to track a promotion.

func (f *Fake) issueRoutes() {
	f.handle("POST /repos/{owner}/{repo}/issues", authInstallation, f.createIssue)
}

func (f *Fake) createIssue(c *call) reply {
	r, rep, ok := c.repo()
	if !ok {
		return rep
	}
	var in struct {
		Title *string `json:"title"`
		Body  string  `json:"body"`
	}
	if rep, ok := c.decode(&in); !ok {
		return rep
	}
	if in.Title == nil || *in.Title == "" {
		return validationFailed("Issue", "title", "missing_field", "title is required")
	}
	r.nextNumber++
	p := &pull{PR: PR{Number: r.nextNumber, Title: *in.Title, Body: in.Body, Author: f.BotLogin(), State: "open", Issue: true, Created: f.now()}, id: f.id()}
	p.updated = p.Created
	r.pulls[p.Number] = p
	return reply{status: http.StatusCreated, body: map[string]any{"id": p.id, "number": p.Number, "title": p.Title, "body": p.Body, "state": p.State,
		"user": map[string]any{"login": p.Author, "type": "Bot"}}}
}
