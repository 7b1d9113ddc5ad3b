package githubfake

import (
	"fmt"
	"net/http"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/catalogbot/catalogbot/internal/githubfake/checkrun"
)

// The check-run model lives in package checkrun; these names keep the simulator's API.
type (
	// CheckRun is a check run as GitHub stores it.
	CheckRun = checkrun.CheckRun
	// Annotation is a check-run annotation.
	Annotation = checkrun.Annotation
	// Action is a check-run action button.
	Action = checkrun.Action
)

type checkRun struct{ CheckRun }

// CheckRuns returns the check runs on sha in a repository, oldest first.
func (f *Fake) CheckRuns(owner, name, sha string) []CheckRun {
	f.mu.Lock()
	defer f.mu.Unlock()
	r := f.repos[repoKey(owner, name)]
	if r == nil {
		return nil
	}
	var out []CheckRun
	for _, cr := range r.checkRuns {
		if cr.HeadSHA == sha {
			out = append(out, cr.Copy())
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

// AddCheckRun adds a check run as another App (AppID) would, e.g. an external
// CI that branch protection requires. It returns the run's id.
func (f *Fake) AddCheckRun(owner, name string, cr CheckRun) (int64, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	r, err := f.repoLocked(owner, name)
	if err != nil {
		return 0, err
	}
	cr.ID = f.id()
	if cr.Status == "" {
		cr.Status = "queued"
		if cr.Conclusion != "" {
			cr.Status = "completed"
		}
	}
	if cr.StartedAt.IsZero() {
		cr.StartedAt = f.now()
	}
	if cr.Status == "completed" && cr.CompletedAt.IsZero() {
		cr.CompletedAt = f.now()
	}
	r.checkRuns[cr.ID] = &checkRun{cr}
	return cr.ID, nil
}

var shaPattern = regexp.MustCompile(`^[0-9a-f]{40}$`)

func (c *call) checkRunJSON(r *repo, cr *checkRun) map[string]any {
	base := c.apiBase()
	url := fmt.Sprintf("%s/repos/%s/check-runs/%d", base, r.fullName(), cr.ID)
	prs := []any{}
	for _, p := range sortedPulls(r) {
		// GitHub lists only PRs whose head is in the same repository: for
		// fork PRs pull_requests is empty.
		if p.State == "open" && p.HeadSHA == cr.HeadSHA && (p.HeadRepo == "" || strings.EqualFold(p.HeadRepo, r.fullName())) {
			prs = append(prs, map[string]any{
				"id": p.id, "number": p.Number,
				"url":  fmt.Sprintf("%s/repos/%s/pulls/%d", base, r.fullName(), p.Number),
				"head": map[string]any{"ref": p.HeadRef, "sha": p.HeadSHA, "repo": map[string]any{"id": r.id, "name": r.name, "url": base + "/repos/" + r.fullName()}},
				"base": map[string]any{"ref": p.BaseRef, "sha": p.BaseSHA, "repo": map[string]any{"id": r.id, "name": r.name, "url": base + "/repos/" + r.fullName()}},
			})
		}
	}
	out := map[string]any{
		"id":           cr.ID,
		"name":         cr.Name,
		"head_sha":     cr.HeadSHA,
		"external_id":  cr.ExternalID,
		"url":          url,
		"html_url":     fmt.Sprintf("https://github.com/%s/runs/%d", r.fullName(), cr.ID),
		"details_url":  cr.DetailsURL,
		"status":       cr.Status,
		"conclusion":   nilIfEmpty(cr.Conclusion),
		"started_at":   jsonTime(cr.StartedAt),
		"completed_at": jsonTime(cr.CompletedAt),
		"output": map[string]any{
			"title":             nilIfEmpty(cr.Title),
			"summary":           nilIfEmpty(cr.Summary),
			"text":              nilIfEmpty(cr.Text),
			"annotations_count": len(cr.Annotations),
			"annotations_url":   url + "/annotations",
		},
		"check_suite":   map[string]any{"id": cr.ID + 1_000_000},
		"app":           map[string]any{"id": cr.AppID, "slug": c.f.slugFor(cr.AppID)},
		"pull_requests": prs,
	}
	return out
}

func (f *Fake) slugFor(appID int64) string {
	if appID == f.appID {
		return f.appSlug
	}
	return "app-" + strconv.FormatInt(appID, 10)
}

func nilIfEmpty(s string) any {
	if s == "" {
		return nil
	}
	return s
}

func (f *Fake) createCheckRun(c *call) reply {
	r, rep, ok := c.repo()
	if !ok {
		return rep
	}
	var in checkrun.Input
	if rep, ok := c.decode(&in); !ok {
		return rep
	}
	if bad := in.Validate(true); bad != nil {
		return invalidCheckRun(bad)
	}
	cr := &checkRun{CheckRun{ID: f.id(), AppID: f.appID, Name: *in.Name, HeadSHA: *in.HeadSHA, Status: "queued", StartedAt: f.now()}}
	cr.Apply(&in, f.now())
	r.checkRuns[cr.ID] = cr
	return reply{status: http.StatusCreated, body: c.checkRunJSON(r, cr)}
}

func (f *Fake) updateCheckRun(c *call) reply {
	r, rep, ok := c.repo()
	if !ok {
		return rep
	}
	cr := r.checkRuns[pathInt(c, "id")]
	if cr == nil {
		return errorReply(http.StatusNotFound, "Not Found")
	}
	if cr.AppID != f.appID {
		return errorReply(http.StatusForbidden, "Invalid app_id `"+strconv.FormatInt(f.appID, 10)+"` - check run can only be modified by the GitHub App that created it.")
	}
	var in checkrun.Input
	if rep, ok := c.decode(&in); !ok {
		return rep
	}
	if bad := in.Validate(false); bad != nil {
		return invalidCheckRun(bad)
	}
	cr.Apply(&in, f.now())
	return reply{status: http.StatusOK, body: c.checkRunJSON(r, cr)}
}

func (f *Fake) getCheckRun(c *call) reply {
	r, rep, ok := c.repo()
	if !ok {
		return rep
	}
	cr := r.checkRuns[pathInt(c, "id")]
	if cr == nil {
		return errorReply(http.StatusNotFound, "Not Found")
	}
	return reply{status: http.StatusOK, body: c.checkRunJSON(r, cr)}
}

func (f *Fake) listAnnotations(c *call) reply {
	r, rep, ok := c.repo()
	if !ok {
		return rep
	}
	cr := r.checkRuns[pathInt(c, "id")]
	if cr == nil {
		return errorReply(http.StatusNotFound, "Not Found")
	}
	lo, hi, h := c.pageOf(len(cr.Annotations))
	out := []any{}
	for _, a := range cr.Annotations[lo:hi] {
		out = append(out, map[string]any{
			"path": a.Path, "start_line": a.StartLine, "end_line": a.EndLine,
			"start_column": a.StartColumn, "end_column": a.EndColumn,
			"annotation_level": a.Level, "message": a.Message, "title": nilIfEmpty(a.Title), "raw_details": nilIfEmpty(a.RawDetails),
		})
	}
	return reply{status: http.StatusOK, body: out, header: h}
}

// listCheckRunsForRef answers GET /repos/{o}/{r}/commits/{ref}/check-runs:
// check_name, status, app_id and filter (latest: the newest run of each name
// and App, the default; all) narrow the list; the newest come first.
func (f *Fake) listCheckRunsForRef(c *call) reply {
	r, rep, ok := c.repo()
	if !ok {
		return rep
	}
	sha, ok := r.resolve(c.r.PathValue("ref"))
	if !ok {
		return errorReply(http.StatusUnprocessableEntity, "No commit found for SHA: "+c.r.PathValue("ref"))
	}
	q := c.r.URL.Query()
	filter := q.Get("filter")
	if filter == "" {
		filter = "latest"
	}
	if filter != "latest" && filter != "all" {
		return validationFailed("CheckRun", "filter", "invalid", "filter must be latest or all")
	}
	var runs []*checkRun
	for _, cr := range r.checkRuns {
		if cr.HeadSHA != sha {
			continue
		}
		if n := q.Get("check_name"); n != "" && n != cr.Name {
			continue
		}
		if s := q.Get("status"); s != "" && s != cr.Status {
			continue
		}
		if a := q.Get("app_id"); a != "" && a != strconv.FormatInt(cr.AppID, 10) {
			continue
		}
		runs = append(runs, cr)
	}
	sort.Slice(runs, func(i, j int) bool { return runs[i].ID > runs[j].ID })
	if filter == "latest" {
		seen := map[string]bool{}
		kept := runs[:0]
		for _, cr := range runs {
			k := cr.Name + "\x00" + strconv.FormatInt(cr.AppID, 10)
			if !seen[k] {
				seen[k] = true
				kept = append(kept, cr)
			}
		}
		runs = kept
	}
	lo, hi, h := c.pageOf(len(runs))
	out := []any{}
	for _, cr := range runs[lo:hi] {
		out = append(out, c.checkRunJSON(r, cr))
	}
	return reply{status: http.StatusOK, body: map[string]any{"total_count": len(runs), "check_runs": out}, header: h}
}

// resolve turns a ref (a SHA, a branch name or refs/heads/name) into a SHA.
func (r *repo) resolve(ref string) (string, bool) {
	if shaPattern.MatchString(ref) {
		return ref, true
	}
	if b := r.branches[strings.TrimPrefix(ref, "refs/heads/")]; b != nil {
		return b.sha, true
	}
	return "", false
}

func pathInt(c *call, name string) int64 {
	n, err := strconv.ParseInt(c.r.PathValue(name), 10, 64)
	if err != nil {
		return -1
	}
	return n
}

// invalidCheckRun is GitHub's 422 for a check-run body the model refuses.
func invalidCheckRun(bad *checkrun.Invalid) reply {
	if bad.Field == "" {
		return errorReply(http.StatusUnprocessableEntity, bad.Message)
	}
	return validationFailed("CheckRun", bad.Field, bad.Code, bad.Message)
}
