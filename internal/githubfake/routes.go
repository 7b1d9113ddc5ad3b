package githubfake

import (
	"fmt"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// maxCommentChars is GitHub's limit on an issue comment body.
const maxCommentChars = 65536

func (f *Fake) routes() {
	f.mux = http.NewServeMux()
	f.mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		defer f.mu.Unlock()
		f.record(r, http.StatusNotFound)
		f.write(w, r, errorReply(http.StatusNotFound, "Not Found"), nil)
	})

	// The App (JWT).
	f.gitDataRoutes()
	f.issueRoutes()
	f.handle("GET /app", authApp, f.getApp)
	f.handle("GET /app/installations", authApp, f.listInstallations)
	f.handle("GET /app/installations/{id}", authApp, f.getInstallation)
	f.handle("POST /app/installations/{id}/access_tokens", authApp, f.createToken)
	f.handle("GET /repos/{owner}/{repo}/installation", authApp, f.repoInstallation)
	f.handle("GET /app/hook/deliveries", authApp, f.listDeliveries)
	f.handle("GET /app/hook/deliveries/{id}", authApp, f.getDelivery)
	f.handle("POST /app/hook/deliveries/{id}/attempts", authApp, f.redeliver)

	// An installation (token).
	f.handle("GET /installation/repositories", authInstallation, f.listInstallationRepos)
	f.handle("GET /repos/{owner}/{repo}", authInstallation, f.getRepo)
	f.handle("GET /repos/{owner}/{repo}/branches/{branch}", authInstallation, f.getBranch)
	f.handle("GET /repos/{owner}/{repo}/branches/{branch}/protection/required_status_checks", authInstallation, f.getRequiredChecks)
	f.handle("GET /repos/{owner}/{repo}/rules/branches/{branch}", authInstallation, f.getBranchRules)

	f.handle("POST /repos/{owner}/{repo}/check-runs", authInstallation, f.createCheckRun)
	f.handle("PATCH /repos/{owner}/{repo}/check-runs/{id}", authInstallation, f.updateCheckRun)
	f.handle("GET /repos/{owner}/{repo}/check-runs/{id}", authInstallation, f.getCheckRun)
	f.handle("GET /repos/{owner}/{repo}/check-runs/{id}/annotations", authInstallation, f.listAnnotations)
	f.handle("GET /repos/{owner}/{repo}/commits/{ref}/check-runs", authInstallation, f.listCheckRunsForRef)
	f.handle("GET /repos/{owner}/{repo}/commits/{ref}/status", authInstallation, f.combinedStatus)
	f.handle("GET /repos/{owner}/{repo}/commits/{ref}/statuses", authInstallation, f.listStatuses)
	f.handle("POST /repos/{owner}/{repo}/statuses/{sha}", authInstallation, f.createStatus)

	f.handle("GET /repos/{owner}/{repo}/pulls", authInstallation, f.listPulls)
	f.handle("GET /repos/{owner}/{repo}/pulls/{number}", authInstallation, f.getPull)
	f.handle("PUT /repos/{owner}/{repo}/pulls/{number}/merge", authInstallation, f.mergePull)
	f.handle("GET /repos/{owner}/{repo}/pulls/{number}/reviews", authInstallation, f.listReviews)
	f.handle("POST /repos/{owner}/{repo}/pulls/{number}/requested_reviewers", authInstallation, f.requestReviewers)
	f.handle("GET /repos/{owner}/{repo}/pulls/{number}/requested_reviewers", authInstallation, f.listRequestedReviewers)

	// One GET pattern for issues/{number}/comments, issues/{number}/labels and
	// issues/comments/{id}, which ServeMux cannot tell apart by pattern.
	f.handle("GET /repos/{owner}/{repo}/issues/{a}/{b}", authInstallation, f.getIssueSub)
	f.handle("POST /repos/{owner}/{repo}/issues/{number}/comments", authInstallation, f.createComment)
	f.handle("PATCH /repos/{owner}/{repo}/issues/comments/{id}", authInstallation, f.editComment)
	f.handle("DELETE /repos/{owner}/{repo}/issues/comments/{id}", authInstallation, f.deleteComment)
	f.handle("POST /repos/{owner}/{repo}/issues/{number}/labels", authInstallation, f.addLabels)
	f.handle("PUT /repos/{owner}/{repo}/issues/{number}/labels", authInstallation, f.replaceLabels)
	f.handle("DELETE /repos/{owner}/{repo}/issues/{number}/labels/{name}", authInstallation, f.removeLabel)
	f.handle("POST /repos/{owner}/{repo}/issues/comments/{id}/reactions", authInstallation, f.createReaction)
	f.handle("GET /repos/{owner}/{repo}/issues/comments", authInstallation, f.listRepoComments)
	f.handle("GET /repos/{owner}/{repo}/collaborators/{username}/permission", authInstallation, f.getPermission)

	f.handle("GET /orgs/{org}/teams/{slug}/members", authInstallation, f.listTeamMembers)
}

func (f *Fake) getIssueSub(c *call) reply {
	a, b := c.r.PathValue("a"), c.r.PathValue("b")
	switch {
	case a == "comments":
		c.r.SetPathValue("id", b)
		return f.getComment(c)
	case b == "comments":
		c.r.SetPathValue("number", a)
		return f.listComments(c)
	case b == "labels":
		c.r.SetPathValue("number", a)
		return f.listLabels(c)
	}
	return errorReply(http.StatusNotFound, "Not Found")
}

func (f *Fake) appJSON() map[string]any {
	return map[string]any{"id": f.appID, "slug": f.appSlug, "name": f.appSlug, "owner": map[string]any{"login": "catalogbot-owner"}}
}

func (f *Fake) getApp(c *call) reply { return reply{status: http.StatusOK, body: f.appJSON()} }

func (f *Fake) installationJSON(inst *installation) map[string]any {
	return map[string]any{
		"id": inst.id, "app_id": f.appID, "app_slug": f.appSlug,
		"account":              map[string]any{"login": inst.account},
		"target_type":          "Organization",
		"repository_selection": "selected",
	}
}

func (f *Fake) listInstallations(c *call) reply {
	ids := f.sortedInstallations()
	lo, hi, h := c.pageOf(len(ids))
	out := []any{}
	for _, id := range ids[lo:hi] {
		out = append(out, f.installationJSON(f.installations[id]))
	}
	return reply{status: http.StatusOK, body: out, header: h}
}

func (f *Fake) getInstallation(c *call) reply {
	inst := f.installations[pathInt(c, "id")]
	if inst == nil {
		return errorReply(http.StatusNotFound, "Not Found")
	}
	return reply{status: http.StatusOK, body: f.installationJSON(inst)}
}

func (f *Fake) createToken(c *call) reply {
	inst := f.installations[pathInt(c, "id")]
	if inst == nil {
		return errorReply(http.StatusNotFound, "Not Found")
	}
	t := f.newTokenLocked(inst.id)
	return reply{status: http.StatusCreated, body: map[string]any{
		"token":                t.value,
		"expires_at":           jsonTime(t.expires),
		"permissions":          map[string]any{"checks": "write", "pull_requests": "write", "contents": "write", "members": "read", "metadata": "read"},
		"repository_selection": "selected",
	}}
}

func (f *Fake) repoInstallation(c *call) reply {
	r := f.repos[repoKey(c.r.PathValue("owner"), c.r.PathValue("repo"))]
	if r == nil {
		return errorReply(http.StatusNotFound, "Not Found")
	}
	return reply{status: http.StatusOK, body: f.installationJSON(f.installations[r.installation])}
}

func (c *call) repoJSON(r *repo) map[string]any {
	return map[string]any{
		"id": r.id, "name": r.name, "full_name": r.fullName(),
		"owner":              map[string]any{"login": r.owner},
		"private":            r.private,
		"default_branch":     r.defaultBranch,
		"url":                c.apiBase() + "/repos/" + r.fullName(),
		"html_url":           "https://github.com/" + r.fullName(),
		"clone_url":          "https://github.com/" + r.fullName() + ".git",
		"allow_merge_commit": r.mergeMethods["merge"],
		"allow_squash_merge": r.mergeMethods["squash"],
		"allow_rebase_merge": r.mergeMethods["rebase"],
	}
}

func (f *Fake) listInstallationRepos(c *call) reply {
	var rs []*repo
	for _, r := range f.repos {
		if r.installation == c.inst.id {
			rs = append(rs, r)
		}
	}
	sort.Slice(rs, func(i, j int) bool { return rs[i].id < rs[j].id })
	lo, hi, h := c.pageOf(len(rs))
	out := []any{}
	for _, r := range rs[lo:hi] {
		out = append(out, c.repoJSON(r))
	}
	return reply{status: http.StatusOK, body: map[string]any{"total_count": len(rs), "repositories": out}, header: h}
}

func (f *Fake) getRepo(c *call) reply {
	r, rep, ok := c.repo()
	if !ok {
		return rep
	}
	return reply{status: http.StatusOK, body: c.repoJSON(r)}
}

func (f *Fake) getBranch(c *call) reply {
	r, rep, ok := c.repo()
	if !ok {
		return rep
	}
	name := c.r.PathValue("branch")
	b := r.branches[name]
	if b == nil {
		return errorReply(http.StatusNotFound, "Branch not found")
	}
	return reply{status: http.StatusOK, body: map[string]any{"name": name, "commit": map[string]any{"sha": b.sha}, "protected": b.protection != nil}}
}

// getRequiredChecks: 404 "Branch not protected" without protection, 404
// "Required status checks not enabled" when protection requires none.
func (f *Fake) getRequiredChecks(c *call) reply {
	r, rep, ok := c.repo()
	if !ok {
		return rep
	}
	if rep, ok := c.permitted("administration"); !ok {
		return rep
	}
	b := r.branches[c.r.PathValue("branch")]
	if b == nil {
		return errorReply(http.StatusNotFound, "Branch not found")
	}
	p := b.protection
	if p == nil {
		return errorReply(http.StatusNotFound, "Branch not protected")
	}
	if len(p.RequiredContexts) == 0 && len(p.RequiredChecks) == 0 {
		return errorReply(http.StatusNotFound, "Required status checks not enabled")
	}
	contexts := []string{}
	checks := []any{}
	for _, ctx := range p.RequiredContexts {
		contexts = append(contexts, ctx)
		checks = append(checks, map[string]any{"context": ctx, "app_id": nil})
	}
	for _, rc := range p.RequiredChecks {
		contexts = append(contexts, rc.Context)
		var app any
		if rc.AppID != 0 {
			app = rc.AppID
		}
		checks = append(checks, map[string]any{"context": rc.Context, "app_id": app})
	}
	url := c.apiBase() + "/repos/" + r.fullName() + "/branches/" + c.r.PathValue("branch") + "/protection/required_status_checks"
	return reply{status: http.StatusOK, body: map[string]any{"url": url, "strict": p.Strict, "contexts": contexts, "contexts_url": url + "/contexts", "checks": checks}}
}

func (f *Fake) getBranchRules(c *call) reply {
	r, rep, ok := c.repo()
	if !ok {
		return rep
	}
	out := []any{}
	if b := r.branches[c.r.PathValue("branch")]; b != nil && len(b.rules) > 0 {
		var checks []any
		for _, rc := range b.rules {
			m := map[string]any{"context": rc.Context}
			if rc.AppID != 0 {
				m["integration_id"] = rc.AppID
			}
			checks = append(checks, m)
		}
		out = append(out, map[string]any{
			"type":                "required_status_checks",
			"parameters":          map[string]any{"required_status_checks": checks, "strict_required_status_checks_policy": b.rulesStrict},
			"ruleset_source_type": "Repository",
			"ruleset_source":      r.fullName(),
			"ruleset_id":          r.id + 7,
		})
	}
	return reply{status: http.StatusOK, body: out}
}

func statusJSON(s Status) map[string]any {
	return map[string]any{"id": s.ID, "context": s.Context, "state": s.State, "description": nilIfEmpty(s.Description), "target_url": nilIfEmpty(s.TargetURL), "created_at": jsonTime(s.Created), "updated_at": jsonTime(s.Created)}
}

func (f *Fake) combinedStatus(c *call) reply {
	r, rep, ok := c.repo()
	if !ok {
		return rep
	}
	sha, ok := r.resolve(c.r.PathValue("ref"))
	if !ok {
		return errorReply(http.StatusUnprocessableEntity, "No commit found for SHA: "+c.r.PathValue("ref"))
	}
	latest := latestStatuses(r.statuses[sha])
	out := []any{}
	for _, s := range latest {
		out = append(out, statusJSON(s))
	}
	return reply{status: http.StatusOK, body: map[string]any{"state": combinedState(latest), "sha": sha, "total_count": len(latest), "statuses": out}}
}

func (f *Fake) listStatuses(c *call) reply {
	r, rep, ok := c.repo()
	if !ok {
		return rep
	}
	sha, ok := r.resolve(c.r.PathValue("ref"))
	if !ok {
		return errorReply(http.StatusUnprocessableEntity, "No commit found for SHA: "+c.r.PathValue("ref"))
	}
	all := r.statuses[sha]
	rev := make([]Status, len(all))
	for i, s := range all {
		rev[len(all)-1-i] = s
	}
	lo, hi, h := c.pageOf(len(rev))
	out := []any{}
	for _, s := range rev[lo:hi] {
		out = append(out, statusJSON(s))
	}
	return reply{status: http.StatusOK, body: out, header: h}
}

func (f *Fake) createStatus(c *call) reply {
	r, rep, ok := c.repo()
	if !ok {
		return rep
	}
	var in struct {
		State       string `json:"state"`
		Context     string `json:"context"`
		Description string `json:"description"`
		TargetURL   string `json:"target_url"`
	}
	if rep, ok := c.decode(&in); !ok {
		return rep
	}
	switch in.State {
	case "error", "failure", "pending", "success":
	default:
		return validationFailed("Status", "state", "invalid", "state must be error, failure, pending or success")
	}
	sha := c.r.PathValue("sha")
	if !shaPattern.MatchString(sha) {
		return errorReply(http.StatusUnprocessableEntity, "No commit found for SHA: "+sha)
	}
	s := f.addStatusLocked(r, sha, Status{Context: in.Context, State: in.State, Description: in.Description, TargetURL: in.TargetURL})
	return reply{status: http.StatusCreated, body: statusJSON(s)}
}

func sortedPulls(r *repo) []*pull {
	out := make([]*pull, 0, len(r.pulls))
	for _, p := range r.pulls {
		if !p.Issue {
			out = append(out, p)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Number < out[j].Number })
	return out
}

func (c *call) pullJSON(r *repo, p *pull) map[string]any {
	base := c.apiBase()
	headRepo := r.fullName()
	if p.HeadRepo != "" {
		headRepo = p.HeadRepo
	}
	headOwner, _, _ := strings.Cut(headRepo, "/")
	headRepoID := r.id
	if p.HeadRepo != "" && !strings.EqualFold(p.HeadRepo, r.fullName()) {
		headRepoID = forkID(p.HeadRepo)
	}
	labels := []any{}
	for _, l := range p.labels {
		labels = append(labels, map[string]any{"name": l})
	}
	var mergeable any
	state := "clean"
	switch {
	case p.State != "open":
		state = "unknown"
	case p.Draft:
		state = "draft"
		mergeable = !p.Conflicts
	case p.Conflicts:
		state = "dirty"
		mergeable = false
	default:
		mergeable = true
		if msg := c.f.protectionBlocks(r, p); msg != "" {
			state = "blocked"
		}
	}
	return map[string]any{
		"id": p.id, "number": p.Number, "state": p.State, "title": p.Title, "body": p.Body,
		"draft": p.Draft, "merged": p.Merged, "mergeable": mergeable, "mergeable_state": state,
		"merge_commit_sha": nilIfEmpty(p.MergeSHA),
		"merged_at":        jsonTime(p.mergedAt), "closed_at": jsonTime(p.closedAt),
		"created_at": jsonTime(p.Created), "updated_at": jsonTime(p.updated),
		"user":                map[string]any{"login": p.Author, "type": userType(p.Author)},
		"labels":              labels,
		"requested_reviewers": usersJSON(p.requested), "requested_teams": teamsJSON(p.requestedTeams),
		"url":      fmt.Sprintf("%s/repos/%s/pulls/%d", base, r.fullName(), p.Number),
		"html_url": fmt.Sprintf("https://github.com/%s/pull/%d", r.fullName(), p.Number),
		"head": map[string]any{"ref": p.HeadRef, "sha": p.HeadSHA, "label": headOwner + ":" + p.HeadRef,
			"repo": map[string]any{"id": headRepoID, "full_name": headRepo, "fork": headRepo != r.fullName(), "owner": map[string]any{"login": headOwner}}},
		"base": map[string]any{"ref": p.BaseRef, "sha": p.BaseSHA, "label": r.owner + ":" + p.BaseRef,
			"repo": c.repoJSON(r)},
	}
}

// listPulls: state (open default, closed, all), base, head ("owner:ref"),
// sort by created (default, newest first) or updated; offset pagination.
func (f *Fake) listPulls(c *call) reply {
	r, rep, ok := c.repo()
	if !ok {
		return rep
	}
	q := c.r.URL.Query()
	state := q.Get("state")
	if state == "" {
		state = "open"
	}
	if state != "open" && state != "closed" && state != "all" {
		return validationFailed("PullRequest", "state", "invalid", "state must be open, closed or all")
	}
	var ps []*pull
	for _, p := range sortedPulls(r) {
		if state != "all" && p.State != state {
			continue
		}
		if b := q.Get("base"); b != "" && b != p.BaseRef {
			continue
		}
		if h := q.Get("head"); h != "" {
			owner := r.owner
			if p.HeadRepo != "" {
				owner, _, _ = strings.Cut(p.HeadRepo, "/")
			}
			if !strings.EqualFold(h, owner+":"+p.HeadRef) {
				continue
			}
		}
		ps = append(ps, p)
	}
	asc := q.Get("direction") == "asc"
	sort.SliceStable(ps, func(i, j int) bool {
		a, b := ps[i], ps[j]
		ka, kb := a.Created, b.Created
		if q.Get("sort") == "updated" {
			ka, kb = a.updated, b.updated
		}
		if ka.Equal(kb) {
			if asc {
				return a.Number < b.Number
			}
			return a.Number > b.Number
		}
		if asc {
			return ka.Before(kb)
		}
		return ka.After(kb)
	})
	lo, hi, h := c.pageOf(len(ps))
	out := []any{}
	for _, p := range ps[lo:hi] {
		out = append(out, c.pullJSON(r, p))
	}
	return reply{status: http.StatusOK, body: out, header: h}
}

func (c *call) pull() (*repo, *pull, reply, bool) {
	r, rep, ok := c.repo()
	if !ok {
		return nil, nil, rep, false
	}
	p := r.pulls[int(pathInt(c, "number"))]
	if p == nil {
		return nil, nil, errorReply(http.StatusNotFound, "Not Found"), false
	}
	return r, p, reply{}, true
}

func (f *Fake) getPull(c *call) reply {
	r, p, rep, ok := c.pull()
	if !ok {
		return rep
	}
	if p.Issue {
		return errorReply(http.StatusNotFound, "Not Found")
	}
	return reply{status: http.StatusOK, body: c.pullJSON(r, p)}
}

// checkState is the state of a required check on sha: "success" (passing),
// "failure" or "" (missing or pending), from commit statuses and check runs.
func checkState(r *repo, sha string, rc RequiredCheck) string {
	state := ""
	if rc.AppID == 0 {
		for _, s := range latestStatuses(r.statuses[sha]) {
			if s.Context == rc.Context {
				switch s.State {
				case "success":
					state = "success"
				case "error", "failure":
					state = "failure"
				}
			}
		}
	}
	var newest *checkRun
	for _, cr := range r.checkRuns {
		if cr.HeadSHA == sha && cr.Name == rc.Context && (rc.AppID == 0 || rc.AppID == cr.AppID) && (newest == nil || cr.ID > newest.ID) {
			newest = cr
		}
	}
	if newest != nil && newest.Status == "completed" {
		switch newest.Conclusion {
		case "success", "neutral", "skipped":
			state = "success"
		default:
			state = "failure"
		}
	}
	return state
}

// protectionBlocks says what branch protection and rulesets still require
// before p may merge, or "".
func (f *Fake) protectionBlocks(r *repo, p *pull) string {
	b := r.branches[p.BaseRef]
	if b == nil {
		return ""
	}
	var required []RequiredCheck
	strict := b.rulesStrict && len(b.rules) > 0
	if pr := b.protection; pr != nil {
		for _, ctx := range pr.RequiredContexts {
			required = append(required, RequiredCheck{Context: ctx})
		}
		required = append(required, pr.RequiredChecks...)
		strict = strict || pr.Strict
	}
	prefix := ""
	for i, rc := range append(required, b.rules...) {
		if i >= len(required) {
			prefix = "Repository rule violations found\n\n"
		}
		switch checkState(r, p.HeadSHA, rc) {
		case "":
			return fmt.Sprintf("%sRequired status check %q is expected.", prefix, rc.Context)
		case "failure":
			return fmt.Sprintf("%sRequired status check %q is failing.", prefix, rc.Context)
		}
	}
	if strict && p.BaseSHA != b.sha {
		return "Head branch is not up to date with the base branch"
	}
	if pr := b.protection; pr != nil && pr.RequiredApprovals > 0 {
		latest := map[string]Review{}
		for _, rv := range p.reviews {
			if rv.State == "COMMENTED" {
				continue
			}
			latest[strings.ToLower(rv.User)] = rv
		}
		n := 0
		for _, rv := range latest {
			if rv.State == "APPROVED" && (!pr.DismissStaleReviews || rv.CommitID == p.HeadSHA) {
				n++
			}
		}
		if n < pr.RequiredApprovals {
			return fmt.Sprintf("At least %d approving review is required by reviewers with write access.", pr.RequiredApprovals)
		}
	}
	return ""
}

// mergePull: 405 for a closed or draft PR, a disallowed method, conflicts or
// unmet protection; 409 when sha is given and is not the head; 422 for an
// unknown merge_method; 200 with the merge commit otherwise.
func (f *Fake) mergePull(c *call) reply {
	r, p, rep, ok := c.pull()
	if !ok {
		return rep
	}
	var in struct {
		CommitTitle   string  `json:"commit_title"`
		CommitMessage *string `json:"commit_message"`
		SHA           string  `json:"sha"`
		MergeMethod   string  `json:"merge_method"`
	}
	if rep, ok := c.decode(&in); !ok {
		return rep
	}
	method := in.MergeMethod
	if method == "" {
		method = "merge"
	}
	if method != "merge" && method != "squash" && method != "rebase" {
		return validationFailed("PullRequest", "merge_method", "invalid", "merge_method must be merge, squash or rebase")
	}
	switch {
	case p.State != "open":
		return errorReply(http.StatusMethodNotAllowed, "Pull Request is not mergeable")
	case in.SHA != "" && in.SHA != p.HeadSHA:
		return errorReply(http.StatusConflict, "Head branch was modified. Review and try the merge again.")
	case p.Draft:
		return errorReply(http.StatusMethodNotAllowed, "Pull Request is still a draft")
	case !r.mergeMethods[method]:
		return errorReply(http.StatusMethodNotAllowed, map[string]string{
			"merge": "Merge commits are not allowed on this repository.", "squash": "Squash merges are not allowed on this repository.", "rebase": "Rebase merges are not allowed on this repository.",
		}[method])
	case p.Conflicts:
		return errorReply(http.StatusMethodNotAllowed, "Pull Request is not mergeable")
	}
	if msg := f.protectionBlocks(r, p); msg != "" {
		return errorReply(http.StatusMethodNotAllowed, msg)
	}
	now := f.now()
	b := r.branches[p.BaseRef]
	mergeSHA := MakeSHA(fmt.Sprintf("merge %s %s %d %s", b.sha, p.HeadSHA, p.Number, method))
	if r.hasCommit(b.sha) && r.hasCommit(p.HeadSHA) {
		// A repository with its git objects merges for real, as GitHub does.
		sha, conflict, err := f.gitMerge(r, p, b.sha, method, in.CommitTitle, in.CommitMessage)
		switch {
		case conflict:
			return errorReply(http.StatusMethodNotAllowed, "Pull Request is not mergeable")
		case err != nil:
			return errorReply(http.StatusInternalServerError, err.Error())
		}
		if _, err := r.g().Git(nil, nil, "update-ref", "refs/heads/"+p.BaseRef, sha); err != nil {
			return errorReply(http.StatusInternalServerError, err.Error())
		}
		mergeSHA = sha
	}
	b.sha = mergeSHA
	p.State, p.Merged, p.MergeSHA = "closed", true, mergeSHA
	p.mergedAt, p.closedAt, p.updated = now, now, now
	f.merges = append(f.merges, Merge{Owner: r.owner, Repo: r.name, Number: p.Number, HeadSHA: p.HeadSHA, MergeSHA: mergeSHA, Method: method, CommitTitle: in.CommitTitle, RequestSHA: in.SHA, At: now})
	return reply{status: http.StatusOK, body: map[string]any{"sha": mergeSHA, "merged": true, "message": "Pull Request successfully merged"}}
}

func (f *Fake) listReviews(c *call) reply {
	_, p, rep, ok := c.pull()
	if !ok {
		return rep
	}
	lo, hi, h := c.pageOf(len(p.reviews))
	out := []any{}
	for _, rv := range p.reviews[lo:hi] {
		out = append(out, map[string]any{"id": rv.ID, "user": map[string]any{"login": rv.User}, "state": rv.State, "commit_id": rv.CommitID, "body": rv.Body, "submitted_at": jsonTime(rv.SubmittedAt)})
	}
	return reply{status: http.StatusOK, body: out, header: h}
}

func (c *call) commentJSON(r *repo, cm *comment) map[string]any {
	return map[string]any{
		"id": cm.ID, "body": cm.Body, "user": map[string]any{"login": cm.User, "type": userType(cm.User)},
		"author_association": r.association(cm.User),
		"created_at":         jsonTime(cm.Created), "updated_at": jsonTime(cm.Updated),
		"url":       fmt.Sprintf("%s/repos/%s/issues/comments/%d", c.apiBase(), r.fullName(), cm.ID),
		"issue_url": fmt.Sprintf("%s/repos/%s/issues/%d", c.apiBase(), r.fullName(), cm.Number),
	}
}

func (f *Fake) listComments(c *call) reply {
	r, p, rep, ok := c.pull()
	if !ok {
		return rep
	}
	cs, rep, ok := c.commentsSince(commentsOf(r, p.Number))
	if !ok {
		return rep
	}
	lo, hi, h := c.pageOf(len(cs))
	out := []any{}
	for _, cm := range cs[lo:hi] {
		out = append(out, c.commentJSON(r, &comment{Comment: cm}))
	}
	return reply{status: http.StatusOK, body: out, header: h}
}

// commentsSince keeps the comments updated at or after the since parameter (ISO 8601), when there is one.
func (c *call) commentsSince(cs []Comment) ([]Comment, reply, bool) {
	v := c.r.URL.Query().Get("since")
	if v == "" {
		return cs, reply{}, true
	}
	t, err := time.Parse(time.RFC3339, v)
	if err != nil {
		return nil, validationFailed("IssueComment", "since", "invalid", "since must be an ISO 8601 time"), false
	}
	var kept []Comment
	for _, cm := range cs {
		if !cm.Updated.Before(t.Truncate(time.Second)) {
			kept = append(kept, cm)
		}
	}
	return kept, reply{}, true
}

// listRepoComments: the issue and pull request comments of a repository, since, sort (created, the default,
// or updated) and direction (asc, the default, or desc); offset pagination.
func (f *Fake) listRepoComments(c *call) reply {
	r, rep, ok := c.repo()
	if !ok {
		return rep
	}
	var all []Comment
	for _, cm := range r.comments {
		all = append(all, cm.Comment)
	}
	sort.Slice(all, func(i, j int) bool { return all[i].ID < all[j].ID })
	cs, rep, ok := c.commentsSince(all)
	if !ok {
		return rep
	}
	q := c.r.URL.Query()
	key := func(cm Comment) time.Time { return cm.Created }
	if q.Get("sort") == "updated" {
		key = func(cm Comment) time.Time { return cm.Updated }
	}
	desc := q.Get("direction") == "desc"
	sort.SliceStable(cs, func(i, j int) bool {
		a, b := key(cs[i]), key(cs[j])
		if a.Equal(b) {
			return (cs[i].ID < cs[j].ID) != desc
		}
		return a.Before(b) != desc
	})
	lo, hi, h := c.pageOf(len(cs))
	out := []any{}
	for _, cm := range cs[lo:hi] {
		out = append(out, c.commentJSON(r, &comment{Comment: cm}))
	}
	return reply{status: http.StatusOK, body: out, header: h}
}

func commentBodyProblem(body *string) (reply, bool) {
	if body == nil || *body == "" {
		return validationFailed("IssueComment", "body", "missing_field", "body wasn't supplied"), false
	}
	if utf8.RuneCountInString(*body) > maxCommentChars {
		return validationFailed("IssueComment", "body", "custom", fmt.Sprintf("Body is too long (maximum is %d characters)", maxCommentChars)), false
	}
	return reply{}, true
}

func (f *Fake) createComment(c *call) reply {
	r, p, rep, ok := c.pull()
	if !ok {
		return rep
	}
	var in struct {
		Body *string `json:"body"`
	}
	if rep, ok := c.decode(&in); !ok {
		return rep
	}
	if rep, ok := commentBodyProblem(in.Body); !ok {
		return rep
	}
	cm := &comment{Comment: Comment{ID: f.id(), Number: p.Number, User: f.BotLogin(), Body: *in.Body, Created: f.now(), Updated: f.now()}}
	r.comments[cm.ID] = cm
	return reply{status: http.StatusCreated, body: c.commentJSON(r, cm)}
}

func (c *call) comment() (*repo, *comment, reply, bool) {
	r, rep, ok := c.repo()
	if !ok {
		return nil, nil, rep, false
	}
	cm := r.comments[pathInt(c, "id")]
	if cm == nil {
		return nil, nil, errorReply(http.StatusNotFound, "Not Found"), false
	}
	return r, cm, reply{}, true
}

func (f *Fake) getComment(c *call) reply {
	r, cm, rep, ok := c.comment()
	if !ok {
		return rep
	}
	return reply{status: http.StatusOK, body: c.commentJSON(r, cm)}
}

func (f *Fake) editComment(c *call) reply {
	r, cm, rep, ok := c.comment()
	if !ok {
		return rep
	}
	var in struct {
		Body *string `json:"body"`
	}
	if rep, ok := c.decode(&in); !ok {
		return rep
	}
	if rep, ok := commentBodyProblem(in.Body); !ok {
		return rep
	}
	if cm.User != f.BotLogin() {
		return errorReply(http.StatusForbidden, "Resource not accessible by integration")
	}
	cm.Body, cm.Updated = *in.Body, f.now()
	return reply{status: http.StatusOK, body: c.commentJSON(r, cm)}
}

func (f *Fake) deleteComment(c *call) reply {
	r, cm, rep, ok := c.comment()
	if !ok {
		return rep
	}
	if cm.User != f.BotLogin() {
		return errorReply(http.StatusForbidden, "Resource not accessible by integration")
	}
	delete(r.comments, cm.ID)
	return reply{status: http.StatusNoContent}
}

func labelsJSON(ls []string) []any {
	out := []any{}
	for i, l := range ls {
		out = append(out, map[string]any{"id": i + 1, "name": l, "color": "ededed", "default": false})
	}
	return out
}

func (f *Fake) listLabels(c *call) reply {
	_, p, rep, ok := c.pull()
	if !ok {
		return rep
	}
	lo, hi, h := c.pageOf(len(p.labels))
	return reply{status: http.StatusOK, body: labelsJSON(p.labels[lo:hi]), header: h}
}

// labelsBody accepts both forms GitHub takes: ["a","b"] and {"labels":["a","b"]}.
func (c *call) labelsBody() ([]string, reply, bool) {
	var raw any
	if rep, ok := c.decode(&raw); !ok {
		return nil, rep, false
	}
	var list []any
	switch v := raw.(type) {
	case []any:
		list = v
	case map[string]any:
		l, _ := v["labels"].([]any)
		list = l
	}
	var out []string
	for _, x := range list {
		s, ok := x.(string)
		if !ok {
			if m, isMap := x.(map[string]any); isMap {
				s, ok = m["name"].(string)
			}
		}
		if !ok || s == "" {
			return nil, validationFailed("Label", "labels", "invalid", "labels must be names"), false
		}
		out = append(out, s)
	}
	return out, reply{}, true
}

func (f *Fake) addLabels(c *call) reply {
	_, p, rep, ok := c.pull()
	if !ok {
		return rep
	}
	ls, rep, ok := c.labelsBody()
	if !ok {
		return rep
	}
	p.labels = dedupe(append(p.labels, ls...))
	p.updated = f.now()
	return reply{status: http.StatusOK, body: labelsJSON(p.labels)}
}

func (f *Fake) replaceLabels(c *call) reply {
	_, p, rep, ok := c.pull()
	if !ok {
		return rep
	}
	ls, rep, ok := c.labelsBody()
	if !ok {
		return rep
	}
	p.labels = dedupe(ls)
	p.updated = f.now()
	return reply{status: http.StatusOK, body: labelsJSON(p.labels)}
}

func (f *Fake) removeLabel(c *call) reply {
	_, p, rep, ok := c.pull()
	if !ok {
		return rep
	}
	name := c.r.PathValue("name")
	for i, l := range p.labels {
		if strings.EqualFold(l, name) {
			p.labels = append(p.labels[:i:i], p.labels[i+1:]...)
			p.updated = f.now()
			return reply{status: http.StatusOK, body: labelsJSON(p.labels)}
		}
	}
	return errorReply(http.StatusNotFound, "Label does not exist")
}

// listTeamMembers: a team is visible to an installation on its organization
// only; an unknown or invisible team is 404.
func (f *Fake) listTeamMembers(c *call) reply {
	org, slug := c.r.PathValue("org"), c.r.PathValue("slug")
	if rep, ok := c.permitted("members"); !ok {
		return rep
	}
	t := f.teams[strings.ToLower(org+"/"+slug)]
	if t == nil || !strings.EqualFold(c.inst.account, org) {
		return errorReply(http.StatusNotFound, "Not Found")
	}
	lo, hi, h := c.pageOf(len(t.members))
	out := []any{}
	for i, m := range t.members[lo:hi] {
		out = append(out, map[string]any{"login": m, "id": lo + i + 1, "type": "User"})
	}
	return reply{status: http.StatusOK, body: out, header: h}
}

var _ = strconv.Itoa

// reactionContents are the reactions GitHub knows.
var reactionContents = map[string]bool{"+1": true, "-1": true, "laugh": true, "confused": true, "heart": true, "hooray": true, "rocket": true, "eyes": true}

// createReaction: 201 for a new reaction, 200 with the existing one when the same user already reacted so
// on that comment, 422 for an unknown content.
func (f *Fake) createReaction(c *call) reply {
	r, cm, rep, ok := c.comment()
	if !ok {
		return rep
	}
	if rep, ok := c.permitted("pull_requests"); !ok {
		return rep
	}
	var in struct {
		Content string `json:"content"`
	}
	if rep, ok := c.decode(&in); !ok {
		return rep
	}
	if !reactionContents[in.Content] {
		return validationFailed("Reaction", "content", "invalid", "content is not a valid reaction")
	}
	user := f.BotLogin()
	for _, x := range cm.reactions {
		if x.User == user && x.Content == in.Content {
			return reply{status: http.StatusOK, body: reactionJSON(x)}
		}
	}
	x := Reaction{ID: f.id(), User: user, Content: in.Content, Created: f.now()}
	cm.reactions = append(cm.reactions, x)
	_ = r
	return reply{status: http.StatusCreated, body: reactionJSON(x)}
}

func reactionJSON(x Reaction) map[string]any {
	return map[string]any{"id": x.ID, "user": map[string]any{"login": x.User}, "content": x.Content, "created_at": jsonTime(x.Created)}
}

// getPermission: a collaborator's permission (admin, write, read or none; maintain counts as write and
// triage as read, as GitHub maps its roles); anyone else has read on a public repository and none on a
// private one.
func (f *Fake) getPermission(c *call) reply {
	r, rep, ok := c.repo()
	if !ok {
		return rep
	}
	login := c.r.PathValue("username")
	role, ok := r.collaborators[strings.ToLower(login)]
	perm := role
	switch {
	case !ok && r.private:
		role, perm = "", "none"
	case !ok:
		role, perm = "read", "read"
	case role == "maintain":
		perm = "write"
	case role == "triage":
		perm = "read"
	}
	return reply{status: http.StatusOK, body: map[string]any{"permission": perm, "role_name": role, "user": map[string]any{"login": login, "type": "User"}}}
}
