package rebuild

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"strings"
	"sync"

	"github.com/google/go-github/v62/github"

	"github.com/catalogbot/catalogbot/app/jobs"
	"github.com/catalogbot/catalogbot/app/store"
	"github.com/catalogbot/catalogbot/gitfs"
	"github.com/catalogbot/catalogbot/promote"
)

// Bounds of the provenance walks: a catalog update carries one commit of the App's, and the bundles it adds
// were built a few default-branch commits ago. More is not the App's own update (an owner decides).
const (
	maxUpdateCommits   = 32
	maxHistoryCommits  = 2000
	maxProvenanceBytes = 4 << 20  // one template
	maxHistoryBytes    = 64 << 20 // the templates read on one walk
)

// BotIdentity is the App's own login ("<slug>[bot]"), read once from GET /app.
type BotIdentity struct {
	get func(ctx context.Context) (string, error)

	mu    sync.Mutex
	login string
}

func NewBotIdentity(app func() *github.Client) *BotIdentity {
	return &BotIdentity{get: func(ctx context.Context) (string, error) {
		a, _, err := app().Apps.Get(ctx, "")
		if err != nil {
			return "", err
		}
		if a.GetSlug() == "" {
			return "", errors.New("GitHub names no slug for the App")
		}
		return a.GetSlug() + "[bot]", nil
	}}
}

// Login is the App's bot login.
func (b *BotIdentity) Login(ctx context.Context) (string, error) {
	if b == nil {
		return "", errors.New("the App's own login is not known here")
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.login != "" {
		return b.login, nil
	}
	if b.get == nil {
		return "", errors.New("the App's own login is not known here")
	}
	l, err := b.get(ctx)
	if err != nil {
		return "", fmt.Errorf("reading the App's own login: %w", err)
	}
	b.login = l
	return l, nil
}

// UpdateProvenance answers checks.Provenance for one pull request from what the App did itself: its bot
// login, the commits it created on its catalog update branches and the bundle images its post-merge build
// pushed (store.UpdateStore). What the pull request says of itself (branch name aside, which GitHub sets) counts
// for nothing.
type UpdateProvenance struct {
	store       store.UpdateStore
	promotions  store.PromotionStore // nil: no pull request is the App's promotion
	bot         *BotIdentity
	repo        *gitfs.Repo
	owner, name string
	pr          *github.PullRequest
	// defaultHead is the default branch's head as fetched; mergeBase is what the pull request is compared with.
	defaultHead, mergeBase, head gitfs.Hash
}

func (p *UpdateProvenance) MadeUpdate(ctx context.Context, pkg string) (bool, string) {
	if ok, why := p.openedByTheApp(ctx); !ok {
		return false, why
	}
	if ref := p.pr.GetHead().GetRef(); ref != CatalogUpdateBranch(pkg) {
		return false, fmt.Sprintf("its branch %q is not %q", ref, CatalogUpdateBranch(pkg))
	}
	// Every commit of the pull request (reachable from its head, not from what it is compared with) is one the
	// App created for this package.
	return p.everyCommit(ctx, func(h gitfs.Hash) (bool, error) {
		c, ok, err := p.store.UpdateCommit(ctx, p.owner, p.name, h.String())
		return ok && c.Package == pkg, err
	}, "for "+pkg)
}

// Promotion (what checks.PromotionProvenance asks, in the pipeline's words): the pull request is the App's promotion of a package when the
// App's bot opened it from catalogbot/promote/<to>/<package> of this repository into the default branch and
// every commit on it is one the App recorded for that promotion (store.PromotionStore). Its content is
// judged by the checks (promote.Verify), never here.
func (p *UpdateProvenance) Promotion(ctx context.Context) (rec PromotionMade, made bool, why string) {
	if p.promotions == nil {
		return rec, false, "catalogbot keeps no promotion records here"
	}
	to, pkg, ok := promote.ParseBranch(p.pr.GetHead().GetRef())
	if !ok {
		return rec, false, fmt.Sprintf("its branch %q is not a promotion branch", p.pr.GetHead().GetRef())
	}
	if ok, why := p.openedByTheApp(ctx); !ok {
		return rec, false, why
	}
	from := ""
	ok, why = p.everyCommit(ctx, func(h gitfs.Hash) (bool, error) {
		c, found, err := p.promotions.PromotionCommit(ctx, p.owner, p.name, h.String())
		if err != nil || !found || c.Package != pkg || c.To != to || (from != "" && c.From != from) {
			return false, err
		}
		from = c.From
		return true, nil
	}, "to promote "+pkg+" to "+to)
	if !ok || from == "" {
		return rec, false, why
	}
	return PromotionMade{From: from, To: to, Package: pkg}, true, ""
}

// PromotionMade is a promotion the App made: a package's catalog from From into To.
type PromotionMade struct{ From, To, Package string }

// openedByTheApp: the App's bot opened the pull request from a branch of this repository into its default
// branch.
func (p *UpdateProvenance) openedByTheApp(ctx context.Context) (bool, string) {
	bot, err := p.bot.Login(ctx)
	if err != nil {
		return false, err.Error()
	}
	user := p.pr.GetUser()
	if !strings.EqualFold(user.GetLogin(), bot) || !strings.EqualFold(user.GetType(), "Bot") {
		return false, fmt.Sprintf("the pull request was opened by @%s, not by catalogbot (@%s)", user.GetLogin(), bot)
	}
	headRepo, baseRepo := p.pr.GetHead().GetRepo(), p.pr.GetBase().GetRepo()
	full := p.owner + "/" + p.name
	if headRepo == nil || !strings.EqualFold(headRepo.GetFullName(), full) || !strings.EqualFold(baseRepo.GetFullName(), full) ||
		headRepo.GetID() != baseRepo.GetID() {
		return false, fmt.Sprintf("its branch is in %s, not in %s", headRepo.GetFullName(), full)
	}
	if def := baseRepo.GetDefaultBranch(); def == "" || p.pr.GetBase().GetRef() != def {
		return false, fmt.Sprintf("it goes into %q, not into the default branch", p.pr.GetBase().GetRef())
	}
	return true, ""
}

// everyCommit says whether mine holds for every commit of the pull request (reachable from its head, not
// from what it is compared with), at most maxUpdateCommits of them; what names what the App made them for.
func (p *UpdateProvenance) everyCommit(ctx context.Context, mine func(gitfs.Hash) (bool, error), what string) (bool, string) {
	seen := map[gitfs.Hash]bool{}
	todo := []gitfs.Hash{p.head}
	for len(todo) > 0 {
		h := todo[len(todo)-1]
		todo = todo[:len(todo)-1]
		if h == p.mergeBase || seen[h] {
			continue
		}
		seen[h] = true
		if len(seen) > maxUpdateCommits {
			return false, fmt.Sprintf("it has more than %d commits", maxUpdateCommits)
		}
		ok, err := mine(h)
		if err != nil {
			return false, "reading the App's commits: " + err.Error()
		}
		if !ok {
			return false, fmt.Sprintf("commit %s was not made by catalogbot %s", jobs.Short(h.String()), what)
		}
		parents, err := p.repo.Parents(ctx, h)
		if err != nil {
			return false, err.Error()
		}
		todo = append(todo, parents...)
	}
	return true, ""
}

func (p *UpdateProvenance) BundleRecorded(ctx context.Context, pkg, template, image, dir string) (bool, string) {
	b, ok, err := p.store.BundleBuild(ctx, p.owner, p.name, image)
	if err != nil {
		return false, "reading the App's bundle builds: " + err.Error()
	}
	if !ok {
		return false, image + " is not a bundle image catalogbot built after a merge"
	}
	if b.Package != pkg || b.Dir != dir {
		return false, fmt.Sprintf("catalogbot built %s from %s (%s), not from %s", image, b.Dir, b.Package, dir)
	}
	built, err := p.repo.Resolve(b.Commit)
	if err != nil {
		return false, fmt.Sprintf("the commit %s that built %s is gone", jobs.Short(b.Commit), image)
	}
	removed, err := removedFromTemplate(ctx, p.repo, p.defaultHead, built, template, image)
	if err != nil {
		return false, err.Error()
	}
	if removed != "" {
		return false, removed
	}
	return true, ""
}

// removedFromTemplate walks the default branch (first parents) from head back to built, the commit whose
// build pushed image, and says when a commit on the way took image out of template ("" when none did). A
// built that is not on that line within maxHistoryCommits is an error: the bundle is not known to come from
// the default branch.
func removedFromTemplate(ctx context.Context, repo *gitfs.Repo, head, built gitfs.Hash, template, image string) (string, error) {
	lim := gitfs.Limits{MaxFileSize: maxProvenanceBytes, MaxTotalBytes: maxProvenanceBytes}
	// holds says whether the template at commit names image; by blob, read once.
	holdsByBlob := map[string]bool{}
	var read int64
	holds := func(commit gitfs.Hash) (bool, error) {
		tree, err := repo.TreeFS(ctx, commit, lim)
		if err != nil {
			return false, err
		}
		key, ok := tree.ContentKey(template)
		if !ok {
			return false, nil
		}
		if v, ok := holdsByBlob[key]; ok {
			return v, nil
		}
		data, err := tree.ReadFile(template)
		if errors.Is(err, fs.ErrNotExist) {
			return false, nil
		}
		if err != nil {
			return false, err
		}
		if read += int64(len(data)); read > maxHistoryBytes {
			return false, fmt.Errorf("the versions of %s since the bundle was built are more than %d bytes", template, maxHistoryBytes)
		}
		v := bytes.Contains(data, []byte(image))
		holdsByBlob[key] = v
		return v, nil
	}
	now, err := holds(head)
	if err != nil {
		return "", err
	}
	prev := head // the newer neighbour of c on the walk
	for c, n := head, 0; ; n++ {
		if n > maxHistoryCommits {
			return "", fmt.Errorf("the commit %s that built the bundle is more than %d commits behind the default branch", jobs.Short(built.String()), maxHistoryCommits)
		}
		has, err := holds(c)
		if err != nil {
			return "", err
		}
		if has && !now {
			return fmt.Sprintf("%s was in %s at %s, and the default-branch commit %s took it out", image, template, jobs.Short(c.String()), jobs.Short(prev.String())), nil
		}
		if c == built {
			return "", nil
		}
		parents, err := repo.Parents(ctx, c)
		if err != nil {
			return "", err
		}
		if len(parents) == 0 {
			return "", fmt.Errorf("the commit %s that built the bundle is not on the default branch", jobs.Short(built.String()))
		}
		prev, c = c, parents[0]
	}
}

// NewUpdateProvenance is the provenance of one pull request: what the App did itself in owner/name (updates
// records, bot login), read against the fetched repository's default head, merge base and pull request head.
func NewUpdateProvenance(updates store.UpdateStore, promotions store.PromotionStore, bot *BotIdentity, repo *gitfs.Repo, owner, name string, pr *github.PullRequest, defaultHead, mergeBase, head gitfs.Hash) *UpdateProvenance {
	return &UpdateProvenance{store: updates, promotions: promotions, bot: bot, repo: repo, owner: owner, name: name, pr: pr,
		defaultHead: defaultHead, mergeBase: mergeBase, head: head}
}
