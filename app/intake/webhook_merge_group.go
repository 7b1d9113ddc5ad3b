package intake

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/riverqueue/river"

	"github.com/catalogbot/catalogbot/app/jobs"
)

// GitHub's merge queue asks, with a merge_group event (action checks_requested), for the required checks on
// the group's head; app/pipeline (CheckGroup) answers with the same check runs as on a pull request.

// onMergeGroup turns merge_group.checks_requested into the check of the group's head; destroyed (the group
// merged, or left the queue) needs nothing.
func onMergeGroup(ec eventContext, body []byte) (jobs.Plan, error) {
	if ec.Action != "checks_requested" {
		return jobs.Plan{}, nil
	}
	var ev struct {
		MergeGroup struct {
			HeadSHA string `json:"head_sha"`
			HeadRef string `json:"head_ref"`
			BaseSHA string `json:"base_sha"`
			BaseRef string `json:"base_ref"`
		} `json:"merge_group"`
	}
	if err := json.Unmarshal(body, &ev); err != nil {
		return jobs.Plan{}, fmt.Errorf("merge_group event: %w", err)
	}
	g := ev.MergeGroup
	if ec.InstallationID == 0 || ec.Owner == "" || !jobs.IsSHA(g.HeadSHA) || !jobs.IsSHA(g.BaseSHA) ||
		!strings.HasPrefix(g.HeadRef, "refs/heads/") || !strings.HasPrefix(g.BaseRef, "refs/heads/") || !validRef(g.HeadRef) || !validRef(g.BaseRef) {
		return jobs.Plan{}, nil
	}
	return jobs.Plan{Jobs: []river.InsertManyParams{{Args: jobs.MergeGroupArgs{InstallationID: ec.InstallationID, Owner: ec.Owner, Repo: ec.Name,
		HeadSHA: g.HeadSHA, HeadRef: g.HeadRef, BaseSHA: g.BaseSHA, BaseRef: g.BaseRef, CloneURL: ec.CloneURL, DeliveryID: ec.DeliveryID}}}}, nil
}

// validRef: a ref name git accepts for a fetch, bounded, with nothing that could read as an option.
func validRef(r string) bool {
	if len(r) > 255 || strings.Contains(r, "..") || strings.HasSuffix(r, "/") || strings.HasSuffix(r, ".lock") {
		return false
	}
	for i := 0; i < len(r); i++ {
		c := r[i]
		if c <= ' ' || c >= 0x7f || strings.IndexByte("~^:?*[\\", c) >= 0 {
			return false
		}
	}
	return true
}
