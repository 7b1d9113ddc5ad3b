package ghapp

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"

	"github.com/catalogbot/catalogbot/policy"
	"github.com/google/go-github/v62/github"
)

// maxTeamPages bounds a team listing (100 members a page): a larger team is
// reported unresolved rather than half-listed.
const maxTeamPages = 50

// ErrTeamNotFound is wrapped when GitHub answers 404 for a team: it does not
// exist, or the App cannot see it (no Members read permission, or another
// organization's team).
var ErrTeamNotFound = errors.New("team not found or not visible")

type teamResolver struct {
	gh *github.Client

	mu    sync.Mutex
	cache map[string][]string // lower "org/team" → members, for the resolver's lifetime
}

// NewTeamResolver resolves teams with GitHub's API through an installation
// client. A resolver remembers the teams it listed: make one per job, so
// membership is read fresh for each pull request.
func NewTeamResolver(gh *github.Client) policy.TeamResolver {
	return &teamResolver{gh: gh, cache: map[string][]string{}}
}

// TeamMembers lists every member of @org/team (all pages). A team GitHub
// does not show is an error wrapping ErrTeamNotFound, never an empty team.
func (t *teamResolver) TeamMembers(ctx context.Context, org, team string) ([]string, error) {
	key := strings.ToLower(org + "/" + team)
	t.mu.Lock()
	m, ok := t.cache[key]
	t.mu.Unlock()
	if ok {
		return append([]string(nil), m...), nil
	}
	var members []string
	opt := &github.TeamListTeamMembersOptions{ListOptions: github.ListOptions{PerPage: 100}}
	for page := 0; ; page++ {
		if page >= maxTeamPages {
			return nil, fmt.Errorf("@%s/%s has more than %d members: too large to resolve", org, team, maxTeamPages*100)
		}
		users, resp, err := t.gh.Teams.ListTeamMembersBySlug(ctx, org, team, opt)
		if err != nil {
			var er *github.ErrorResponse
			if errors.As(err, &er) && er.Response != nil && er.Response.StatusCode == http.StatusNotFound {
				return nil, fmt.Errorf("@%s/%s: %w (does it exist, and does the App have the organization Members read permission?)", org, team, ErrTeamNotFound)
			}
			return nil, fmt.Errorf("listing members of @%s/%s: %w", org, team, err)
		}
		for _, u := range users {
			if l := u.GetLogin(); l != "" {
				members = append(members, l)
			}
		}
		if resp.NextPage == 0 {
			break
		}
		opt.Page = resp.NextPage
	}
	t.mu.Lock()
	t.cache[key] = members
	t.mu.Unlock()
	return append([]string(nil), members...), nil
}
