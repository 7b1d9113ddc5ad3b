package intake

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/catalogbot/catalogbot/app/jobs"
	"github.com/google/go-github/v62/github"
)

// onInstallation records the repositories of a new installation and forgets
// those of a removed or suspended one.
func onInstallation(ec eventContext, body []byte) (jobs.Plan, error) {
	var ev github.InstallationEvent
	if err := json.Unmarshal(body, &ev); err != nil {
		return jobs.Plan{}, fmt.Errorf("installation event: %w", err)
	}
	if ec.InstallationID == 0 {
		return jobs.Plan{}, nil
	}
	switch ec.Action {
	case "deleted", "suspend":
		return jobs.Plan{RemoveInstID: ec.InstallationID}, nil
	case "created", "unsuspend", "new_permissions_accepted":
		return jobs.Plan{UpsertRepos: installedRepos(ec.InstallationID, ev.Repositories)}, nil
	}
	return jobs.Plan{}, nil
}

// onInstallationRepositories follows repositories added to or removed from
// an installation.
func onInstallationRepositories(ec eventContext, body []byte) (jobs.Plan, error) {
	var ev github.InstallationRepositoriesEvent
	if err := json.Unmarshal(body, &ev); err != nil {
		return jobs.Plan{}, fmt.Errorf("installation_repositories event: %w", err)
	}
	if ec.InstallationID == 0 {
		return jobs.Plan{}, nil
	}
	return jobs.Plan{
		UpsertRepos: installedRepos(ec.InstallationID, ev.RepositoriesAdded),
		RemoveRepos: installedRepos(ec.InstallationID, ev.RepositoriesRemoved),
	}, nil
}

// installedRepos reads owner/name from full_name (installation payloads
// carry no clone URL; the first event of the repository fills it in).
func installedRepos(inst int64, rs []*github.Repository) []jobs.InstalledRepo {
	var out []jobs.InstalledRepo
	for _, r := range rs {
		owner, name, ok := strings.Cut(r.GetFullName(), "/")
		if !ok || owner == "" || name == "" {
			continue
		}
		out = append(out, jobs.InstalledRepo{InstallationID: inst, Owner: owner, Name: name, CloneURL: r.GetCloneURL()})
	}
	return out
}
