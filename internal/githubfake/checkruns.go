package githubfake

import (
	"fmt"
	"net/http"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// GitHub's documented check-run limits.
const (
	maxAnnotationsPerRequest = 50
	maxOutputChars           = 65535
	maxActions               = 3
	maxActionLabel           = 20
	maxActionIdentifier      = 20
	maxActionDescription     = 40
	maxAnnotationTitle       = 255
	maxAnnotationBytes       = 64 << 10
)

// CheckRun is a check run as GitHub stores it.
type CheckRun struct {
	ID                        int64
	AppID                     int64
	Name, HeadSHA, ExternalID string
	DetailsURL                string
	Status, Conclusion        string
	Title, Summary, Text      string
	Annotations               []Annotation
	Actions                   []Action
	StartedAt, CompletedAt    time.Time
	// Requests counts the create and update requests that touched it.
	Requests int
}

// Annotation is a check-run annotation.
type Annotation struct {
	Path        string `json:"path"`
	StartLine   int    `json:"start_line"`
	EndLine     int    `json:"end_line"`
	StartColumn *int   `json:"start_column,omitempty"`
	EndColumn   *int   `json:"end_column,omitempty"`
	Level       string `json:"annotation_level"`
	Message     string `json:"message"`
	Title       string `json:"title,omitempty"`
	RawDetails  string `json:"raw_details,omitempty"`
}

// Action is a check-run action button.
type Action struct {
	Label       string `json:"label"`
	Description string `json:"description"`
	Identifier  string `json:"identifier"`
}

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
			out = append(out, cr.copy())
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

func (cr *checkRun) copy() CheckRun {
	out := cr.CheckRun
	out.Annotations = append([]Annotation(nil), cr.Annotations...)
	out.Actions = append([]Action(nil), cr.Actions...)
	return out
}

// checkRunInput is the body of a create or update request.
type checkRunInput struct {
	Name        *string         `json:"name"`
	HeadSHA     *string         `json:"head_sha"`
	DetailsURL  *string         `json:"details_url"`
	ExternalID  *string         `json:"external_id"`
	Status      *string         `json:"status"`
	Conclusion  *string         `json:"conclusion"`
	StartedAt   *time.Time      `json:"started_at"`
	CompletedAt *time.Time      `json:"completed_at"`
	Output      *checkRunOutput `json:"output"`
	Actions     []Action        `json:"actions"`
}

type checkRunOutput struct {
	Title       *string      `json:"title"`
	Summary     *string      `json:"summary"`
	Text        *string      `json:"text"`
	Annotations []Annotation `json:"annotations"`
}

var shaPattern = regexp.MustCompile(`^[0-9a-f]{40}$`)

var checkStatuses = map[string]bool{"queued": true, "in_progress": true, "completed": true}
var checkConclusions = map[string]bool{"action_required": true, "cancelled": true, "failure": true, "neutral": true, "success": true, "skipped": true, "stale": true, "timed_out": true}
var annotationLevels = map[string]bool{"notice": true, "warning": true, "failure": true}

// validate applies GitHub's documented limits to a create or update body.
func (in *checkRunInput) validate(create bool) (reply, bool) {
	if create {
		if in.Name == nil || strings.TrimSpace(*in.Name) == "" {
			return validationFailed("CheckRun", "name", "missing_field", "name is required"), false
		}
		if in.HeadSHA == nil || !shaPattern.MatchString(*in.HeadSHA) {
			sha := ""
			if in.HeadSHA != nil {
				sha = *in.HeadSHA
			}
			return errorReply(http.StatusUnprocessableEntity, "No commit found for SHA: "+sha), false
		}
	}
	if in.Status != nil && !checkStatuses[*in.Status] {
		return validationFailed("CheckRun", "status", "invalid", "status is not included in the list"), false
	}
	if in.Conclusion != nil && !checkConclusions[*in.Conclusion] {
		return validationFailed("CheckRun", "conclusion", "invalid", "conclusion is not included in the list"), false
	}
	if in.Status != nil && *in.Status == "completed" && in.Conclusion == nil {
		return validationFailed("CheckRun", "conclusion", "missing_field", "conclusion is required when status is completed"), false
	}
	if o := in.Output; o != nil {
		if o.Title == nil || o.Summary == nil {
			return validationFailed("CheckRun", "output", "missing_field", "output requires a title and a summary"), false
		}
		if utf8.RuneCountInString(*o.Summary) > maxOutputChars {
			return validationFailed("CheckRun", "output.summary", "invalid", fmt.Sprintf("summary is too long (maximum is %d characters)", maxOutputChars)), false
		}
		if o.Text != nil && utf8.RuneCountInString(*o.Text) > maxOutputChars {
			return validationFailed("CheckRun", "output.text", "invalid", fmt.Sprintf("text is too long (maximum is %d characters)", maxOutputChars)), false
		}
		if len(o.Annotations) > maxAnnotationsPerRequest {
			return validationFailed("CheckRun", "output.annotations", "invalid", fmt.Sprintf("only %d annotations are allowed per request", maxAnnotationsPerRequest)), false
		}
		for i, a := range o.Annotations {
			if msg := a.problem(); msg != "" {
				return validationFailed("CheckRun", fmt.Sprintf("output.annotations[%d]", i), "invalid", msg), false
			}
		}
	}
	if len(in.Actions) > maxActions {
		return validationFailed("CheckRun", "actions", "invalid", fmt.Sprintf("at most %d actions are allowed", maxActions)), false
	}
	for i, a := range in.Actions {
		switch {
		case a.Label == "" || a.Description == "" || a.Identifier == "":
			return validationFailed("CheckRun", fmt.Sprintf("actions[%d]", i), "missing_field", "label, description and identifier are required"), false
		case utf8.RuneCountInString(a.Label) > maxActionLabel:
			return validationFailed("CheckRun", fmt.Sprintf("actions[%d].label", i), "invalid", fmt.Sprintf("label is too long (maximum is %d characters)", maxActionLabel)), false
		case utf8.RuneCountInString(a.Identifier) > maxActionIdentifier:
			return validationFailed("CheckRun", fmt.Sprintf("actions[%d].identifier", i), "invalid", fmt.Sprintf("identifier is too long (maximum is %d characters)", maxActionIdentifier)), false
		case utf8.RuneCountInString(a.Description) > maxActionDescription:
			return validationFailed("CheckRun", fmt.Sprintf("actions[%d].description", i), "invalid", fmt.Sprintf("description is too long (maximum is %d characters)", maxActionDescription)), false
		}
	}
	return reply{}, true
}

func (a Annotation) problem() string {
	switch {
	case a.Path == "" || a.Message == "" || a.Level == "":
		return "path, start_line, end_line, annotation_level and message are required"
	case a.StartLine < 1 || a.EndLine < 1:
		return "start_line and end_line must be positive"
	case a.EndLine < a.StartLine:
		return "end_line must not be before start_line"
	case !annotationLevels[a.Level]:
		return "annotation_level must be notice, warning or failure"
	case (a.StartColumn != nil || a.EndColumn != nil) && a.StartLine != a.EndLine:
		return "start_column and end_column are only allowed when start_line equals end_line"
	case utf8.RuneCountInString(a.Title) > maxAnnotationTitle:
		return fmt.Sprintf("title is too long (maximum is %d characters)", maxAnnotationTitle)
	case len(a.Message) > maxAnnotationBytes || len(a.RawDetails) > maxAnnotationBytes:
		return "message and raw_details are limited to 64 kilobytes"
	}
	return ""
}

// apply updates a run with a request body: fields given replace, annotations accumulate.
func (cr *checkRun) apply(in *checkRunInput, now time.Time) {
	if in.Name != nil && *in.Name != "" {
		cr.Name = *in.Name
	}
	if in.DetailsURL != nil {
		cr.DetailsURL = *in.DetailsURL
	}
	if in.ExternalID != nil {
		cr.ExternalID = *in.ExternalID
	}
	if in.StartedAt != nil {
		cr.StartedAt = *in.StartedAt
	}
	if in.Status != nil {
		cr.Status = *in.Status
	}
	if in.Conclusion != nil {
		// Giving a conclusion completes the run.
		cr.Conclusion = *in.Conclusion
		cr.Status = "completed"
	}
	if in.CompletedAt != nil {
		cr.CompletedAt = *in.CompletedAt
	} else if cr.Status == "completed" && cr.CompletedAt.IsZero() {
		cr.CompletedAt = now
	}
	if o := in.Output; o != nil {
		cr.Title = *o.Title
		cr.Summary = *o.Summary
		if o.Text != nil {
			cr.Text = *o.Text
		}
		cr.Annotations = append(cr.Annotations, o.Annotations...)
	}
	if in.Actions != nil {
		cr.Actions = append([]Action(nil), in.Actions...)
	}
	cr.Requests++
}

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
	var in checkRunInput
	if rep, ok := c.decode(&in); !ok {
		return rep
	}
	if rep, ok := in.validate(true); !ok {
		return rep
	}
	cr := &checkRun{CheckRun{ID: f.id(), AppID: f.appID, Name: *in.Name, HeadSHA: *in.HeadSHA, Status: "queued", StartedAt: f.now()}}
	cr.apply(&in, f.now())
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
	var in checkRunInput
	if rep, ok := c.decode(&in); !ok {
		return rep
	}
	if rep, ok := in.validate(false); !ok {
		return rep
	}
	cr.apply(&in, f.now())
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
