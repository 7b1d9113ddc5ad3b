package app

import (
	"context"
	"log/slog"
	"net/http"

	"github.com/google/go-github/v62/github"

	"github.com/catalogbot/catalogbot/app/ghapp"
	"github.com/catalogbot/catalogbot/app/pipeline"
	"github.com/catalogbot/catalogbot/app/rebuild"
	"github.com/catalogbot/catalogbot/app/recovery"
	"github.com/catalogbot/catalogbot/policy"
)

// githubDeps is everything the server takes from the GitHub side.
type githubDeps struct {
	clients  ghapp.Clients
	reporter pipeline.Reporter
	teams    func(*github.Client) policy.TeamResolver
	recovery recovery.GitHub
	// bot is the App's own login, for the provenance of its catalog updates (nil: unknown, nothing is derived).
	bot *rebuild.BotIdentity
}

// newGitHubDeps wires the GitHub side: the App's clients, the check-run
// reporter, the team resolver and the recovery calls.
func newGitHubDeps(cfg *Config, hc *http.Client, m *Metrics, log *slog.Logger) (*githubDeps, error) {
	gh, err := ghapp.NewGitHub(ghapp.GitHubConfig{AppID: cfg.AppID, PrivateKeyPEM: cfg.PrivateKey.Reveal(), BaseURL: cfg.GitHubAPIURL, HTTPClient: hc}, m)
	if err != nil {
		return nil, err
	}
	return &githubDeps{
		clients:  gh,
		reporter: ghapp.NewCheckRunReporter(log),
		teams:    func(c *github.Client) policy.TeamResolver { return ghapp.NewTeamResolver(c) },
		bot:      rebuild.NewBotIdentity(gh.App),
		recovery: recovery.GitHub{
			Installation: gh.Installation,
			App:          gh.App,
			OpenPRs: func(ctx context.Context, c *github.Client, owner, repo string) ([]recovery.OpenPR, error) {
				prs, err := ghapp.OpenPullRequests(ctx, c, owner, repo)
				if err != nil {
					return nil, err
				}
				out := make([]recovery.OpenPR, 0, len(prs))
				for _, p := range prs {
					out = append(out, recovery.OpenPR{Number: p.Number, HeadSHA: p.HeadSHA, Draft: p.Draft})
				}
				return out, nil
			},
			HasCompleted: ghapp.HasCompletedChecks,
			Redeliver:    ghapp.RedeliverFailed,
			Comments:     ghapp.RepositoryComments,
		},
	}, nil
}
