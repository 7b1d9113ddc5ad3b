package githubfake

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/catalogbot/catalogbot/internal/githubfake/fakegit"
)

type repo struct {
	id            int64
	owner, name   string
	installation  int64
	defaultBranch string
	private       bool
	mergeMethods  map[string]bool
	branches      map[string]*branch
	pulls         map[int]*pull
	nextNumber    int
	checkRuns     map[int64]*checkRun
	comments      map[int64]*comment
	statuses      map[string][]Status // by sha, in creation order
	collaborators map[string]string   // lower login → role (admin, maintain, write, triage, read)
	gitDir        string              // the bare repository, for the Git database API
}

// association is a user's author_association on the repository, as GitHub derives it for the payloads.
func (r *repo) association(login string) string {
	switch r.collaborators[strings.ToLower(login)] {
	case "admin", "maintain", "write", "triage", "read":
		return "COLLABORATOR"
	}
	if strings.EqualFold(login, r.owner) {
		return "OWNER"
	}
	return "NONE"
}

func (r *repo) fullName() string { return r.owner + "/" + r.name }

type branch struct {
	sha         string
	protection  *Protection
	rules       []RequiredCheck // required status checks from a ruleset
	rulesStrict bool
}

// Protection is the branch protection of a branch, as far as merging needs it.
type Protection struct {
	// RequiredContexts are required status check names (any source);
	// RequiredChecks name a check and, when AppID is not 0, the App that must report it.
	RequiredContexts []string
	RequiredChecks   []RequiredCheck
	// Strict requires the head to be up to date with the base branch.
	Strict bool
	// RequiredApprovals is the number of approving reviews needed;
	// DismissStaleReviews makes only approvals of the current head count.
	RequiredApprovals   int
	DismissStaleReviews bool
}

// RequiredCheck is one required check: its name and, optionally, the App that must set it.
type RequiredCheck struct {
	Context string
	AppID   int64
}

// Status is a commit status.
type Status struct {
	ID          int64
	Context     string
	State       string // error, failure, pending, success
	Description string
	TargetURL   string
	Created     time.Time
}

// PR describes a pull request to add or as it is now.
type PR struct {
	Number      int
	Title, Body string
	Author      string
	HeadRef     string
	HeadSHA     string
	// HeadRepo is "owner/name" of the head repository; "" means the base
	// repository itself, anything else is a fork.
	HeadRepo string
	BaseRef  string // defaults to the default branch
	// BaseSHA is the base commit the PR was opened against (defaults to the base branch's head).
	BaseSHA string
	Draft   bool
	Labels  []string
	// Conflicts makes GitHub report the PR as not mergeable.
	Conflicts bool
	// State is "open" or "closed"; Merged and MergeSHA are set once merged.
	State    string
	Merged   bool
	MergeSHA string
	Created  time.Time
	// Issue: an issue (opened through the API), not a pull request: no head, no base.
	Issue bool
}

// Review is a pull request review.
type Review struct {
	ID          int64
	User        string
	State       string // APPROVED, CHANGES_REQUESTED, COMMENTED, DISMISSED
	CommitID    string
	Body        string
	SubmittedAt time.Time
}

type pull struct {
	PR
	id       int64
	mergedAt time.Time
	closedAt time.Time
	updated  time.Time
	reviews  []Review
	labels   []string
	// requested and requestedTeams are the pending review requests (users, team slugs).
	requested, requestedTeams []string
}

// AddPullRequest opens a pull request and returns its number.
func (f *Fake) AddPullRequest(owner, name string, pr PR) (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	r, err := f.repoLocked(owner, name)
	if err != nil {
		return 0, err
	}
	if pr.HeadSHA == "" || pr.Author == "" {
		return 0, fmt.Errorf("githubfake: a pull request needs a head SHA and an author")
	}
	if pr.BaseRef == "" {
		pr.BaseRef = r.defaultBranch
	}
	b := r.branches[pr.BaseRef]
	if b == nil {
		return 0, fmt.Errorf("githubfake: base branch %q of %s does not exist", pr.BaseRef, r.fullName())
	}
	if pr.BaseSHA == "" {
		pr.BaseSHA = b.sha
	}
	if pr.Number == 0 {
		r.nextNumber++
		pr.Number = r.nextNumber
	} else if _, taken := r.pulls[pr.Number]; taken {
		return 0, fmt.Errorf("githubfake: %s#%d exists", r.fullName(), pr.Number)
	}
	r.nextNumber = max(r.nextNumber, pr.Number)
	if pr.HeadRef == "" {
		pr.HeadRef = fmt.Sprintf("pr-%d", pr.Number)
	}
	if pr.Title == "" {
		pr.Title = fmt.Sprintf("Pull request %d", pr.Number)
	}
	pr.State = "open"
	pr.Merged = false
	pr.MergeSHA = ""
	if pr.Created.IsZero() {
		pr.Created = f.now()
	}
	p := &pull{PR: pr, id: f.id(), updated: pr.Created, labels: dedupe(pr.Labels)}
	p.Labels = nil
	r.pulls[pr.Number] = p
	return pr.Number, nil
}

// PushPullRequest moves a pull request's head to sha (a push to its branch).
func (f *Fake) PushPullRequest(owner, name string, number int, sha string) error {
	return f.editPull(owner, name, number, func(p *pull) { p.HeadSHA = sha })
}

// ClosePullRequest closes a pull request without merging it, as its author or a maintainer may.
func (f *Fake) ClosePullRequest(owner, name string, number int) error {
	return f.editPull(owner, name, number, func(p *pull) { p.State, p.closedAt = "closed", f.now() })
}

// SetConflicts marks a pull request as conflicting with its base (not mergeable) or not.
func (f *Fake) SetConflicts(owner, name string, number int, conflicts bool) error {
	return f.editPull(owner, name, number, func(p *pull) { p.Conflicts = conflicts })
}

// SetDraft marks a pull request as draft or ready.
func (f *Fake) SetDraft(owner, name string, number int, draft bool) error {
	return f.editPull(owner, name, number, func(p *pull) { p.Draft = draft })
}

// AddLabel puts a label on a pull request (as a user would).
func (f *Fake) AddLabel(owner, name string, number int, label string) error {
	return f.editPull(owner, name, number, func(p *pull) { p.labels = dedupe(append(p.labels, label)) })
}

// RemoveLabel takes a label off a pull request (as a user would); a label that is not on changes nothing.
func (f *Fake) RemoveLabel(owner, name string, number int, label string) error {
	return f.editPull(owner, name, number, func(p *pull) {
		p.labels = slices.DeleteFunc(p.labels, func(l string) bool { return strings.EqualFold(l, label) })
	})
}

func (f *Fake) editPull(owner, name string, number int, edit func(p *pull)) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	_, p, err := f.pullLocked(owner, name, number)
	if err != nil {
		return err
	}
	edit(p)
	p.updated = f.now()
	return nil
}

// PullRequest returns a pull request as it is now.
func (f *Fake) PullRequest(owner, name string, number int) (PR, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	r := f.repos[repoKey(owner, name)]
	if r == nil || r.pulls[number] == nil {
		return PR{}, false
	}
	p := r.pulls[number]
	out := p.PR
	out.Labels = append([]string(nil), p.labels...)
	return out, true
}

// AddReview adds a review to a pull request; an empty CommitID means the current head.
func (f *Fake) AddReview(owner, name string, number int, rv Review) (int64, error) {
	var id int64
	err := f.editPull(owner, name, number, func(p *pull) {
		id = f.id()
		rv.ID = id
		if rv.CommitID == "" {
			rv.CommitID = p.HeadSHA
		}
		if rv.SubmittedAt.IsZero() {
			rv.SubmittedAt = f.now()
		}
		rv.State = strings.ToUpper(rv.State)
		p.reviews = append(p.reviews, rv)
		if rv.State != "PENDING" { // a submitted review fulfils the request
			p.requested = slices.DeleteFunc(p.requested, func(u string) bool { return strings.EqualFold(u, rv.User) })
		}
	})
	return id, err
}

// DismissReview dismisses a review, as a maintainer does in the UI or through
// PUT .../reviews/{id}/dismissals: its state becomes DISMISSED.
func (f *Fake) DismissReview(owner, name string, number int, reviewID int64) error {
	found := false
	err := f.editPull(owner, name, number, func(p *pull) {
		for i := range p.reviews {
			if p.reviews[i].ID == reviewID {
				p.reviews[i].State = "DISMISSED"
				found = true
			}
		}
	})
	if err == nil && !found {
		err = fmt.Errorf("githubfake: review %d of %s/%s#%d does not exist", reviewID, owner, name, number)
	}
	return err
}

// SetProtection protects a branch (nil removes the protection).
func (f *Fake) SetProtection(owner, name, branchName string, p *Protection) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	r, err := f.repoLocked(owner, name)
	if err != nil {
		return err
	}
	b := r.branches[branchName]
	if b == nil {
		return fmt.Errorf("githubfake: branch %q of %s does not exist", branchName, r.fullName())
	}
	if p != nil {
		cp := *p
		cp.RequiredContexts = append([]string(nil), p.RequiredContexts...)
		cp.RequiredChecks = append([]RequiredCheck(nil), p.RequiredChecks...)
		p = &cp
	}
	b.protection = p
	return nil
}

// SetRulesetChecks makes a repository ruleset require checks on a branch
// (what GET /repos/{o}/{r}/rules/branches/{branch} reports and merges enforce).
func (f *Fake) SetRulesetChecks(owner, name, branchName string, checks []RequiredCheck, strict bool) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	r, err := f.repoLocked(owner, name)
	if err != nil {
		return err
	}
	b := r.branches[branchName]
	if b == nil {
		return fmt.Errorf("githubfake: branch %q of %s does not exist", branchName, r.fullName())
	}
	b.rules = append([]RequiredCheck(nil), checks...)
	b.rulesStrict = strict
	return nil
}

// SetStatus adds a commit status on sha (as another CI system would).
func (f *Fake) SetStatus(owner, name, sha string, s Status) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	r, err := f.repoLocked(owner, name)
	if err != nil {
		return err
	}
	f.addStatusLocked(r, sha, s)
	return nil
}

func (f *Fake) addStatusLocked(r *repo, sha string, s Status) Status {
	s.ID = f.id()
	if s.Context == "" {
		s.Context = "default"
	}
	s.Created = f.now()
	r.statuses[sha] = append(r.statuses[sha], s)
	return s
}

// latestStatuses returns the newest status of each context on sha, sorted by context.
func latestStatuses(all []Status) []Status {
	by := map[string]Status{}
	for _, s := range all {
		by[s.Context] = s
	}
	out := make([]Status, 0, len(by))
	for _, s := range by {
		out = append(out, s)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Context < out[j].Context })
	return out
}

// combinedState is GitHub's combined status: failure if any error or
// failure, pending if any pending or none at all, success otherwise.
func combinedState(latest []Status) string {
	if len(latest) == 0 {
		return "pending"
	}
	state := "success"
	for _, s := range latest {
		switch s.State {
		case "error", "failure":
			return "failure"
		case "pending":
			state = "pending"
		}
	}
	return state
}

func dedupe(xs []string) []string {
	var out []string
	seen := map[string]bool{}
	for _, x := range xs {
		k := strings.ToLower(x)
		if x == "" || seen[k] {
			continue
		}
		seen[k] = true
		out = append(out, x)
	}
	return out
}

// Comment is an issue (pull request conversation) comment.
type Comment struct {
	ID      int64
	Number  int
	User    string
	Body    string
	Created time.Time
	Updated time.Time
}

type comment struct {
	Comment
	reactions []Reaction
}

// Reaction is a reaction on a comment.
type Reaction struct {
	ID      int64
	User    string
	Content string // +1, -1, laugh, confused, heart, hooray, rocket, eyes
	Created time.Time
}

// Reactions returns the reactions on an issue comment, oldest first.
func (f *Fake) Reactions(owner, name string, commentID int64) []Reaction {
	f.mu.Lock()
	defer f.mu.Unlock()
	r := f.repos[repoKey(owner, name)]
	if r == nil || r.comments[commentID] == nil {
		return nil
	}
	return append([]Reaction(nil), r.comments[commentID].reactions...)
}

// SetCollaborator gives login a role on a repository (admin, maintain, write, triage or read; "" removes it).
func (f *Fake) SetCollaborator(owner, name, login, role string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	r, err := f.repoLocked(owner, name)
	if err != nil {
		return err
	}
	if role == "" {
		delete(r.collaborators, strings.ToLower(login))
		return nil
	}
	r.collaborators[strings.ToLower(login)] = role
	return nil
}

// SetPrivate makes a repository private or public.
func (f *Fake) SetPrivate(owner, name string, private bool) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	r, err := f.repoLocked(owner, name)
	if err != nil {
		return err
	}
	r.private = private
	return nil
}

// EditComment changes a comment's body as its author does in the UI (updated_at moves).
func (f *Fake) EditComment(owner, name string, commentID int64, body string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	r, err := f.repoLocked(owner, name)
	if err != nil {
		return err
	}
	cm := r.comments[commentID]
	if cm == nil {
		return fmt.Errorf("githubfake: comment %d of %s does not exist", commentID, r.fullName())
	}
	cm.Body, cm.Updated = body, f.now()
	return nil
}

// RemoveComment deletes a comment as its author does in the UI.
func (f *Fake) RemoveComment(owner, name string, commentID int64) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	r, err := f.repoLocked(owner, name)
	if err != nil {
		return err
	}
	delete(r.comments, commentID)
	return nil
}

// Comments returns the comments of a pull request or issue, oldest first.
func (f *Fake) Comments(owner, name string, number int) []Comment {
	f.mu.Lock()
	defer f.mu.Unlock()
	r := f.repos[repoKey(owner, name)]
	if r == nil {
		return nil
	}
	return commentsOf(r, number)
}

func commentsOf(r *repo, number int) []Comment {
	var out []Comment
	for _, c := range r.comments {
		if c.Number == number {
			out = append(out, c.Comment)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

// AddComment adds a comment by user (a human, say) to a pull request.
func (f *Fake) AddComment(owner, name string, number int, user, body string) (int64, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	r, _, err := f.pullLocked(owner, name, number)
	if err != nil {
		return 0, err
	}
	now := f.now()
	c := &comment{Comment: Comment{ID: f.id(), Number: number, User: user, Body: body, Created: now, Updated: now}}
	r.comments[c.ID] = c
	return c.ID, nil
}

// g is the repository's bare git directory (package fakegit).
func (r *repo) g() fakegit.Repo { return fakegit.Repo{Dir: r.gitDir} }
