package githubfake

import (
	"encoding/base64"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/catalogbot/catalogbot/internal/githubfake/fakegit"
)

// The Git database API (blobs, trees, commits, references) and pull request creation, for a repository
// added with a GitDir: the objects are written into that bare repository with git itself, so what the App
// creates through the API is what a clone fetches afterwards, as on GitHub.

func (f *Fake) gitDataRoutes() {
	f.handle("POST /repos/{owner}/{repo}/git/blobs", authInstallation, f.createBlob)
	f.handle("POST /repos/{owner}/{repo}/git/trees", authInstallation, f.createTree)
	f.handle("POST /repos/{owner}/{repo}/git/commits", authInstallation, f.createCommit)
	f.handle("GET /repos/{owner}/{repo}/git/ref/{ref...}", authInstallation, f.getRef)
	f.handle("POST /repos/{owner}/{repo}/git/refs", authInstallation, f.createRef)
	f.handle("PATCH /repos/{owner}/{repo}/git/refs/{ref...}", authInstallation, f.updateRef)
	f.handle("POST /repos/{owner}/{repo}/pulls", authInstallation, f.createPull)
	f.handle("PATCH /repos/{owner}/{repo}/pulls/{number}", authInstallation, f.updatePull)
}

func (c *call) gitRepo() (*repo, reply, bool) {
	r, rep, ok := c.repo()
	if !ok {
		return nil, rep, false
	}
	if r.gitDir == "" {
		return nil, errorReply(http.StatusConflict, "Git Repository is empty."), false
	}
	return r, reply{}, true
}

func (f *Fake) createBlob(c *call) reply {
	r, rep, ok := c.gitRepo()
	if !ok {
		return rep
	}
	var in struct {
		Content  *string `json:"content"`
		Encoding string  `json:"encoding"`
	}
	if rep, ok := c.decode(&in); !ok {
		return rep
	}
	if in.Content == nil {
		return validationFailed("Blob", "content", "missing_field", "content is required")
	}
	data := []byte(*in.Content)
	switch in.Encoding {
	case "", "utf-8":
	case "base64":
		d, err := base64.StdEncoding.DecodeString(*in.Content)
		if err != nil {
			return validationFailed("Blob", "content", "invalid", "content is not valid base64")
		}
		data = d
	default:
		return validationFailed("Blob", "encoding", "invalid", "encoding must be utf-8 or base64")
	}
	sha, err := r.g().Git(data, nil, "hash-object", "-w", "--stdin")
	if err != nil {
		return errorReply(http.StatusInternalServerError, err.Error())
	}
	return reply{status: http.StatusCreated, body: map[string]any{"sha": sha, "url": c.absURL() + "/" + sha}}
}

func (f *Fake) createTree(c *call) reply {
	r, rep, ok := c.gitRepo()
	if !ok {
		return rep
	}
	var in struct {
		BaseTree string `json:"base_tree"`
		Tree     []struct {
			Path    string  `json:"path"`
			Mode    string  `json:"mode"`
			Type    string  `json:"type"`
			SHA     *string `json:"sha"`
			Content *string `json:"content"`
		} `json:"tree"`
	}
	if rep, ok := c.decode(&in); !ok {
		return rep
	}
	idx, err := os.CreateTemp("", "githubfake-index-")
	if err != nil {
		return errorReply(http.StatusInternalServerError, err.Error())
	}
	idx.Close()
	os.Remove(idx.Name())
	defer os.Remove(idx.Name())
	env := []string{"GIT_INDEX_FILE=" + idx.Name()}
	if in.BaseTree != "" {
		if !shaPattern.MatchString(in.BaseTree) || r.g().ObjectType(in.BaseTree) == "" {
			return validationFailed("Tree", "base_tree", "invalid", "base_tree is not a valid tree or commit")
		}
		if _, err := r.g().Git(nil, env, "read-tree", in.BaseTree); err != nil {
			return errorReply(http.StatusInternalServerError, err.Error())
		}
	} else if _, err := r.g().Git(nil, env, "read-tree", "--empty"); err != nil {
		return errorReply(http.StatusInternalServerError, err.Error())
	}
	for _, e := range in.Tree {
		clean := filepath.ToSlash(filepath.Clean(e.Path))
		if e.Path == "" || clean != e.Path || strings.HasPrefix(e.Path, "/") || strings.HasPrefix(e.Path, "../") {
			return validationFailed("Tree", "path", "invalid", fmt.Sprintf("tree.path %q is invalid", e.Path))
		}
		switch e.Mode {
		case "100644", "100755", "120000":
		default:
			return validationFailed("Tree", "mode", "invalid", fmt.Sprintf("tree.mode %q is not supported here", e.Mode))
		}
		var sha string
		switch {
		case e.SHA == nil && e.Content != nil:
			if sha, err = r.g().Git([]byte(*e.Content), nil, "hash-object", "-w", "--stdin"); err != nil {
				return errorReply(http.StatusInternalServerError, err.Error())
			}
		case e.SHA != nil && *e.SHA == "":
			return validationFailed("Tree", "sha", "invalid", "tree.sha is empty")
		case e.SHA == nil:
			// A null sha deletes the path.
			if _, err := r.g().Git(nil, env, "update-index", "--force-remove", e.Path); err != nil {
				return errorReply(http.StatusInternalServerError, err.Error())
			}
			continue
		default:
			sha = *e.SHA
			if !shaPattern.MatchString(sha) || r.g().ObjectType(sha) != "blob" {
				return validationFailed("Tree", "sha", "invalid", fmt.Sprintf("tree.sha %s is not a blob", sha))
			}
		}
		if _, err := r.g().Git(nil, env, "update-index", "--add", "--cacheinfo", e.Mode+","+sha+","+e.Path); err != nil {
			return errorReply(http.StatusInternalServerError, err.Error())
		}
	}
	tree, err := r.g().Git(nil, env, "write-tree")
	if err != nil {
		return errorReply(http.StatusInternalServerError, err.Error())
	}
	return reply{status: http.StatusCreated, body: map[string]any{"sha": tree, "url": c.absURL() + "/" + tree, "truncated": false}}
}

func (f *Fake) createCommit(c *call) reply {
	r, rep, ok := c.gitRepo()
	if !ok {
		return rep
	}
	type identity struct {
		Name  string `json:"name"`
		Email string `json:"email"`
		Date  string `json:"date"`
	}
	var in struct {
		Message   *string   `json:"message"`
		Tree      string    `json:"tree"`
		Parents   []string  `json:"parents"`
		Author    *identity `json:"author"`
		Committer *identity `json:"committer"`
	}
	if rep, ok := c.decode(&in); !ok {
		return rep
	}
	if in.Message == nil {
		return validationFailed("Commit", "message", "missing_field", "message is required")
	}
	if !shaPattern.MatchString(in.Tree) || r.g().ObjectType(in.Tree) != "tree" {
		return validationFailed("Commit", "tree", "invalid", "tree is not a valid tree")
	}
	args := []string{"commit-tree", in.Tree, "-m", *in.Message}
	for _, p := range in.Parents {
		if !shaPattern.MatchString(p) || r.g().ObjectType(p) != "commit" {
			return validationFailed("Commit", "parents", "invalid", fmt.Sprintf("parent %s is not a commit", p))
		}
		args = append(args, "-p", p)
	}
	// As GitHub documents it: the author is the authenticated user (the App's bot) and now unless given; the
	// committer is the author unless given.
	bot := f.BotLogin()
	// given, when set, replaces def; without a date it takes def's.
	pick := func(field string, given *identity, def identity) (identity, reply, bool) {
		if given == nil {
			return def, reply{}, true
		}
		if given.Name == "" || given.Email == "" {
			return identity{}, validationFailed("Commit", field, "invalid", field+" needs a name and an email"), false
		}
		id := *given
		if id.Date == "" {
			id.Date = def.Date
		}
		return id, reply{}, true
	}
	author, rep, ok := pick("author", in.Author, identity{Name: bot, Email: bot + "@users.noreply.github.com", Date: f.now().UTC().Format(time.RFC3339)})
	if !ok {
		return rep
	}
	committer, rep, ok := pick("committer", in.Committer, author)
	if !ok {
		return rep
	}
	for _, d := range []string{author.Date, committer.Date} {
		if _, err := time.Parse(time.RFC3339, d); err != nil {
			return validationFailed("Commit", "date", "invalid", "dates are ISO 8601 (YYYY-MM-DDTHH:MM:SSZ)")
		}
	}
	env := []string{"GIT_AUTHOR_NAME=" + author.Name, "GIT_AUTHOR_EMAIL=" + author.Email, "GIT_AUTHOR_DATE=" + author.Date,
		"GIT_COMMITTER_NAME=" + committer.Name, "GIT_COMMITTER_EMAIL=" + committer.Email, "GIT_COMMITTER_DATE=" + committer.Date}
	sha, err := r.g().Git(nil, env, args...)
	if err != nil {
		return errorReply(http.StatusInternalServerError, err.Error())
	}
	return reply{status: http.StatusCreated, body: map[string]any{"sha": sha, "url": c.absURL() + "/" + sha,
		"message": *in.Message, "tree": map[string]any{"sha": in.Tree}}}
}

func (c *call) refJSON(ref, sha string) map[string]any {
	return map[string]any{"ref": ref, "object": map[string]any{"type": "commit", "sha": sha}}
}

// branchOfRef is the branch a refs/heads/... or heads/... reference names.
func branchOfRef(ref string) (string, bool) {
	ref = strings.TrimPrefix(ref, "refs/")
	b, ok := strings.CutPrefix(ref, "heads/")
	return b, ok && b != ""
}

func (f *Fake) getRef(c *call) reply {
	r, rep, ok := c.repo()
	if !ok {
		return rep
	}
	name, ok := branchOfRef(c.r.PathValue("ref"))
	if !ok || r.branches[name] == nil {
		return errorReply(http.StatusNotFound, "Not Found")
	}
	return reply{status: http.StatusOK, body: c.refJSON("refs/heads/"+name, r.branches[name].sha)}
}

func (f *Fake) createRef(c *call) reply {
	r, rep, ok := c.gitRepo()
	if !ok {
		return rep
	}
	var in struct {
		Ref string `json:"ref"`
		SHA string `json:"sha"`
	}
	if rep, ok := c.decode(&in); !ok {
		return rep
	}
	name, ok := branchOfRef(in.Ref)
	if !ok || !strings.HasPrefix(in.Ref, "refs/") {
		return validationFailed("Reference", "ref", "invalid", "Reference name must start with 'refs/' and have at least two slashes")
	}
	if r.branches[name] != nil {
		return validationFailed("Reference", "ref", "already_exists", "Reference already exists")
	}
	if !shaPattern.MatchString(in.SHA) || r.g().ObjectType(in.SHA) != "commit" {
		return validationFailed("Reference", "sha", "invalid", "Object does not exist")
	}
	if _, err := r.g().Git(nil, nil, "update-ref", "refs/heads/"+name, in.SHA); err != nil {
		return errorReply(http.StatusInternalServerError, err.Error())
	}
	r.branches[name] = &branch{sha: in.SHA}
	return reply{status: http.StatusCreated, body: c.refJSON("refs/heads/"+name, in.SHA)}
}

func (f *Fake) updateRef(c *call) reply {
	r, rep, ok := c.gitRepo()
	if !ok {
		return rep
	}
	name, ok := branchOfRef(c.r.PathValue("ref"))
	if !ok || r.branches[name] == nil {
		return validationFailed("Reference", "ref", "invalid", "Reference does not exist")
	}
	var in struct {
		SHA   string `json:"sha"`
		Force bool   `json:"force"`
	}
	if rep, ok := c.decode(&in); !ok {
		return rep
	}
	if !shaPattern.MatchString(in.SHA) || r.g().ObjectType(in.SHA) != "commit" {
		return validationFailed("Reference", "sha", "invalid", "Object does not exist")
	}
	old := r.branches[name].sha
	if !in.Force && old != in.SHA {
		if _, err := r.g().Git(nil, nil, "merge-base", "--is-ancestor", old, in.SHA); err != nil {
			return validationFailed("Reference", "sha", "invalid", "Update is not a fast forward")
		}
	}
	if _, err := r.g().Git(nil, nil, "update-ref", "refs/heads/"+name, in.SHA); err != nil {
		return errorReply(http.StatusInternalServerError, err.Error())
	}
	r.branches[name].sha = in.SHA
	// A push to a pull request's branch moves the pull request.
	for _, p := range r.pulls {
		if p.State == "open" && p.HeadRepo == "" && p.HeadRef == name {
			p.HeadSHA, p.updated = in.SHA, f.now()
			if _, err := r.g().Git(nil, nil, "update-ref", fmt.Sprintf("refs/pull/%d/head", p.Number), in.SHA); err != nil {
				return errorReply(http.StatusInternalServerError, err.Error())
			}
		}
	}
	return reply{status: http.StatusOK, body: c.refJSON("refs/heads/"+name, in.SHA)}
}

func (f *Fake) createPull(c *call) reply {
	r, rep, ok := c.gitRepo()
	if !ok {
		return rep
	}
	var in struct {
		Title *string `json:"title"`
		Head  string  `json:"head"`
		Base  string  `json:"base"`
		Body  string  `json:"body"`
		Draft bool    `json:"draft"`
	}
	if rep, ok := c.decode(&in); !ok {
		return rep
	}
	head := in.Head
	if owner, b, ok := strings.Cut(head, ":"); ok {
		if !strings.EqualFold(owner, r.owner) {
			return validationFailed("PullRequest", "head", "invalid", "forks are not supported by this fake")
		}
		head = b
	}
	if in.Title == nil || *in.Title == "" {
		return validationFailed("PullRequest", "title", "missing_field", "title is required")
	}
	if r.branches[head] == nil {
		return validationFailed("PullRequest", "head", "invalid", "head does not exist")
	}
	if r.branches[in.Base] == nil {
		return validationFailed("PullRequest", "base", "invalid", "base does not exist")
	}
	if r.branches[head].sha == r.branches[in.Base].sha {
		return validationFailed("PullRequest", "", "custom", "No commits between "+in.Base+" and "+head)
	}
	for _, p := range r.pulls {
		if p.State == "open" && p.HeadRepo == "" && p.HeadRef == head && p.BaseRef == in.Base {
			return validationFailed("PullRequest", "", "custom", fmt.Sprintf("A pull request already exists for %s:%s.", r.owner, head))
		}
	}
	r.nextNumber++
	pr := PR{Number: r.nextNumber, Title: *in.Title, Body: in.Body, Author: f.BotLogin(), HeadRef: head, HeadSHA: r.branches[head].sha,
		BaseRef: in.Base, BaseSHA: r.branches[in.Base].sha, Draft: in.Draft, State: "open", Created: f.now()}
	if _, err := r.g().Git(nil, nil, "update-ref", fmt.Sprintf("refs/pull/%d/head", pr.Number), pr.HeadSHA); err != nil {
		return errorReply(http.StatusInternalServerError, err.Error())
	}
	p := &pull{PR: pr, id: f.id(), updated: pr.Created}
	r.pulls[pr.Number] = p
	return reply{status: http.StatusCreated, body: c.pullJSON(r, p)}
}

func (f *Fake) updatePull(c *call) reply {
	r, p, rep, ok := c.pull()
	if !ok {
		return rep
	}
	var in struct {
		Title *string `json:"title"`
		Body  *string `json:"body"`
		State *string `json:"state"`
	}
	if rep, ok := c.decode(&in); !ok {
		return rep
	}
	if in.Title != nil {
		if *in.Title == "" {
			return validationFailed("PullRequest", "title", "missing_field", "title cannot be blank")
		}
		p.Title = *in.Title
	}
	if in.Body != nil {
		p.Body = *in.Body
	}
	if in.State != nil {
		switch *in.State {
		case "open", "closed":
			if p.Merged {
				return validationFailed("PullRequest", "state", "invalid", "a merged pull request cannot change state")
			}
			p.State = *in.State
			if p.State == "closed" {
				p.closedAt = f.now()
			}
		default:
			return validationFailed("PullRequest", "state", "invalid", "state must be open or closed")
		}
	}
	p.updated = f.now()
	return reply{status: http.StatusOK, body: c.pullJSON(r, p)}
}

// userType is the type GitHub gives an account: an App's bot account ("<slug>[bot]"; no person's login can
// hold brackets) is a Bot.
func userType(login string) string {
	if strings.HasSuffix(login, "[bot]") {
		return "Bot"
	}
	return "User"
}

// forkID is a made-up repository id for a fork the fake does not hold.
func forkID(fullName string) int64 {
	var h int64 = 7
	for _, c := range strings.ToLower(fullName) {
		h = (h*31 + int64(c)) % (1 << 40)
	}
	return 1<<41 + h
}

// hasCommit says whether the repository's git directory holds sha as a commit.
func (r *repo) hasCommit(sha string) bool {
	return r.gitDir != "" && shaPattern.MatchString(sha) && r.g().ObjectType(sha) == "commit"
}

// gitMerge merges p into the base branch's head base by method, as GitHub does, and returns the new head of
// the base branch: "merge" makes a merge commit of both; "squash" one commit on base with the merged tree,
// authored by the pull request's author; "rebase" replays each commit of the pull request on base. The
// committer is GitHub. conflict reports changes that do not merge cleanly.
func (f *Fake) gitMerge(r *repo, p *pull, base, method, title string, message *string) (sha string, conflict bool, err error) {
	when := f.now().UTC().Format(time.RFC3339)
	committer := fakegit.GitHubCommitter(when)
	author := fakegit.UserAuthor(p.Author, when)
	body := ""
	if message != nil {
		body = *message
	}
	switch method {
	case "merge":
		tree, conflict, err := r.g().MergedTree(base, p.HeadSHA)
		if err != nil || conflict {
			return "", conflict, err
		}
		if title == "" {
			title = fmt.Sprintf("Merge pull request #%d from %s", p.Number, p.HeadRef)
			if body == "" {
				body = p.Title
			}
		}
		sha, err := r.g().Git(nil, append(author, committer...), "commit-tree", tree, "-p", base, "-p", p.HeadSHA, "-m", title, "-m", body+"\n")
		return sha, false, err
	case "squash":
		tree, conflict, err := r.g().MergedTree(base, p.HeadSHA)
		if err != nil || conflict {
			return "", conflict, err
		}
		if title == "" {
			title = fmt.Sprintf("%s (#%d)", p.Title, p.Number)
		}
		args := []string{"commit-tree", tree, "-p", base, "-m", title}
		if body != "" {
			args = append(args, "-m", body)
		}
		sha, err := r.g().Git(nil, append(author, committer...), args...)
		return sha, false, err
	default: // rebase: each commit of the pull request, oldest first, applied on the new base
		list, err := r.g().Git(nil, nil, "rev-list", "--reverse", "--topo-order", "--no-merges", base+".."+p.HeadSHA)
		if err != nil {
			return "", false, err
		}
		cur := base
		for _, c := range strings.Fields(list) {
			parent, err := r.g().Git(nil, nil, "rev-parse", c+"^")
			if err != nil {
				return "", false, err
			}
			tree, conflict, err := r.g().ApplyCommit(cur, parent, c)
			if err != nil || conflict {
				return "", conflict, err
			}
			info, err := r.g().Git(nil, nil, "log", "-1", "--format=%an%x00%ae%x00%aI%x00%B", c)
			if err != nil {
				return "", false, err
			}
			parts := strings.SplitN(info, "\x00", 4)
			if len(parts) != 4 {
				return "", false, fmt.Errorf("reading commit %s", c)
			}
			env := append([]string{"GIT_AUTHOR_NAME=" + parts[0], "GIT_AUTHOR_EMAIL=" + parts[1], "GIT_AUTHOR_DATE=" + parts[2]}, committer...)
			if cur, err = r.g().Git(nil, env, "commit-tree", tree, "-p", cur, "-m", parts[3]); err != nil {
				return "", false, err
			}
		}
		return cur, false, nil
	}
}
