package rebuild

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net/http"
	"path"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-github/v62/github"
	"github.com/riverqueue/river"

	"github.com/catalogbot/catalogbot/app/ghapp"
	"github.com/catalogbot/catalogbot/app/jobs"
	"github.com/catalogbot/catalogbot/app/store"
	"github.com/catalogbot/catalogbot/catalog"
	"github.com/catalogbot/catalogbot/catalog/image"
	"github.com/catalogbot/catalogbot/catalog/load"
	"github.com/catalogbot/catalogbot/checks/verdict"
	"github.com/catalogbot/catalogbot/gitfs"
	"github.com/catalogbot/catalogbot/policy"
	"github.com/catalogbot/catalogbot/policy/gitpolicy"
	"github.com/catalogbot/catalogbot/registry"
	"github.com/catalogbot/catalogbot/sign"
)

// leaseReleaseTimeout bounds the release of a build's lease.
const leaseReleaseTimeout = 10 * time.Second

// Rebuilder is the rebuild job's handler that builds and pushes catalog images when
// the default branch moves. For each catalog of the commit's
// .catalogbot.yaml that names an image, it validates the catalog in full (a
// catalog with errors is never pushed), builds the image on the base pinned
// by digest and pushes it with the image's tag and the commit SHA as tags;
// the outcome is the check run catalogbot/catalog-image on the commit.
//
// Builds of one repository are serialised by a lease row in the App's
// database (SQLite or PostgreSQL; see rebuildSchema): a job that finds the
// lease taken is snoozed, which costs it no attempt. Holding the lease, a job
// asks GitHub for the branch's current head; when its commit is no longer the
// head it completes as superseded and makes sure a job for the head exists,
// so a burst of pushes builds the commits that were the head when a build
// started: the one running and the newest, not every push. The jobs
// themselves are durable (enqueued in the push delivery's transaction), so a
// process that dies before or during a build leaves a job that another
// process, or the restarted one, runs.
//
// The composition root builds it once (NewRebuilder, with app.WithRebuild)
// and supplies the GitHub clients, the git cache and the database in Deps.
type Rebuilder struct {
	log       *slog.Logger
	reg       *registry.Client
	baseImage string
	allowed   policy.Images
	appID     int64
	// lease is how long one grant of a repository's build lease lasts. A
	// running build renews it every renewEvery and stops (its context is
	// cancelled) once the lease is lost or cannot be confirmed before it
	// expires; it confirms the lease again right before each push. So a
	// build of any length keeps its repository, two builds of one repository
	// never push at once, and a process that died frees the repository
	// within one lease.
	lease      time.Duration
	renewEvery time.Duration
	// wait is how long a job waits when another build holds the lease.
	wait time.Duration
	// maxTries bounds the tries of one commit's build; retryWait is the first
	// pause between tries, doubled each time.
	maxTries  int
	retryWait time.Duration
	now       func() time.Time

	// Supplied by the server (attach).
	gh        ghapp.Clients
	cache     *ghapp.GitCache
	q         *store.Queue
	store     store.RebuildStore
	updates   store.UpdateStore
	limits    catalog.Limits
	imgLimits image.Limits
	metrics   JobObserver
	merges    store.MergeStore
	// signer signs each pushed image with signKey (rebuild.sign_key_file); nil: nothing is signed.
	signer  *sign.Signer
	signKey *sign.Key
	// version is the App's own version, stated in the provenance.
	version string
	// valid remembers the catalogs (by image.ContentKey) that validated, with their findings: an unchanged
	// catalog is neither read nor validated again, and its layer comes from imgLimits.Cache.
	valid validatedCatalogs
	// validations counts the catalogs read and validated (not those known valid by content).
	validations atomic.Int64
}

// validatedCatalogs are the findings of the last catalogs that validated, by content key; at most
// maxValidatedCatalogs are kept, the oldest going first. Safe for concurrent use.
type validatedCatalogs struct {
	mu    sync.Mutex
	keys  []string
	found map[string][]catalog.Finding
}

const maxValidatedCatalogs = 64

func (v *validatedCatalogs) get(key string) ([]catalog.Finding, bool) {
	if key == "" {
		return nil, false
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	f, ok := v.found[key]
	return f, ok
}

func (v *validatedCatalogs) put(key string, findings []catalog.Finding) {
	if key == "" {
		return
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.found == nil {
		v.found = map[string][]catalog.Finding{}
	}
	if _, ok := v.found[key]; ok {
		return
	}
	v.found[key] = findings
	v.keys = append(v.keys, key)
	if len(v.keys) > maxValidatedCatalogs {
		delete(v.found, v.keys[0])
		v.keys = v.keys[1:]
	}
}

// Deps is what the rebuild works with beside its configuration, given once by the composition root.
type Deps struct {
	GitHub ghapp.Clients
	Cache  *ghapp.GitCache
	// Queue is the open database: rebuild records, catalog updates, leases and the jobs the rebuild enqueues.
	Queue *store.Queue
	// Limits bound the catalog reads (and share the parse cache with the checks).
	Limits  catalog.Limits
	Metrics JobObserver
	Log     *slog.Logger
	// Version is the running App's version, stated in the images' provenance.
	Version string
}

// NewRebuilder builds the rebuild from the App's configuration: the default
// base image, the allowed push targets, and a registry client that reads
// bases and pushes with the push credentials (rebuild.push_auth_file, then
// registry.auth_file), behind the same address guard as the checks; and from
// what the server owns (d).
func NewRebuilder(cfg Config, d Deps) (*Rebuilder, error) {
	log := d.Log
	if log == nil {
		log = slog.Default()
	}
	reg, err := NewRegistryClient(cfg.Registry, log, cfg.PushAuthFile)
	if err != nil {
		return nil, fmt.Errorf("configuring the registry client of the rebuild: %w", err)
	}
	key, err := loadSigningKey(cfg.SignKeyFile)
	if err != nil {
		reg.Close()
		return nil, err
	}
	var signer *sign.Signer
	if key != nil {
		signer = sign.NewSigner(key, reg, log)
		log.Info("images are signed", "key", key.Fingerprint())
	}
	return &Rebuilder{
		log: log, reg: reg, baseImage: cfg.BaseImage, appID: cfg.AppID,
		allowed: policy.Images{AllowedRegistries: cfg.AllowedImages},
		lease:   2 * time.Minute, renewEvery: 30 * time.Second, wait: 5 * time.Second,
		maxTries: 3, retryWait: 15 * time.Second, now: time.Now,
		// An unchanged catalog (a push outside it, a re-run, a retry) gets
		// its layer back instead of being read and compressed again.
		imgLimits: image.Limits{Cache: image.NewLayerCache(0)},
		gh:        d.GitHub, cache: d.Cache, q: d.Queue, store: d.Queue.Rebuilds(), updates: d.Queue.Updates(),
		limits: d.Limits, metrics: d.Metrics, merges: d.Queue.Merges(),
		signer: signer, signKey: key, version: d.Version,
	}, nil
}

// HandleRebuild builds and pushes the catalog images of one default branch
// commit, or completes as superseded when the branch has moved on.
func (r *Rebuilder) HandleRebuild(ctx context.Context, a jobs.RebuildArgs, key string) error {
	start := time.Now()
	outcome, err := r.handle(ctx, a, key)
	if r.metrics != nil {
		r.metrics.ObserveJob(jobs.KindRebuild, outcome, time.Since(start))
	}
	return err
}

func (r *Rebuilder) handle(ctx context.Context, a jobs.RebuildArgs, key string) (string, error) {
	log := r.log.With("repo", a.Owner+"/"+a.Repo, "ref", a.Ref, "sha", a.SHA, "delivery", a.DeliveryID)
	branch, ok := strings.CutPrefix(a.Ref, "refs/heads/")
	if !ok || branch == "" || !jobs.IsSHA(a.SHA) {
		log.Warn("rebuild job ignored: not a commit of a branch")
		return "ignored", nil
	}
	// The lease is held in the job's name, so that a retry of a killed
	// build (same job) takes its lease over at once instead of waiting for
	// it to expire; a job without a key gets a holder of its own.
	holder := "job:" + key
	if key == "" {
		var err error
		if holder, err = leaseHolder(); err != nil {
			return "error", err
		}
	}
	now := r.now()
	got, err := r.store.AcquireRebuild(ctx, a.Owner, a.Repo, holder, now, now.Add(r.lease))
	if err != nil {
		return "error", fmt.Errorf("taking the build lease of %s/%s: %w", a.Owner, a.Repo, err)
	}
	if !got {
		log.Debug("another build of this repository is running; waiting", "for", r.wait)
		return "waiting", river.JobSnooze(r.wait)
	}
	work, lease, stop := r.keepLease(ctx, log, a.Owner, a.Repo, holder, now.Add(r.lease))
	defer func() {
		// Released even when the job's context is done, but not waited for
		// longer than leaseReleaseTimeout: the lease expires by itself.
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), leaseReleaseTimeout)
		defer cancel()
		if err := r.store.ReleaseRebuild(rctx, a.Owner, a.Repo, holder); err != nil {
			log.Warn("releasing the build lease (it expires by itself)", "err", err)
		}
	}()
	defer stop() // before the release
	gh, err := r.gh.Installation(work, a.InstallationID)
	if err != nil {
		return "error", fmt.Errorf("installation %d client: %w", a.InstallationID, err)
	}
	b := &rebuild{r: r, gh: gh, a: a, branch: branch, log: log, lease: lease}
	outcome, err := b.run(work)
	if err != nil && ctx.Err() == nil && errors.Is(context.Cause(work), errLeaseLost) {
		// Another build holds the repository now: this one stopped before
		// pushing anything more. Its turn comes again once that one is done.
		log.Warn("the build lease was lost; the build stopped and waits its turn", "err", err)
		return "waiting", river.JobSnooze(r.wait)
	}
	return outcome, err
}

// errLeaseLost: the build's lease was taken by another build, or could not
// be renewed before it expired.
var errLeaseLost = errors.New("the build lease of the repository was lost")

// leaseKeeper renews a running build's lease.
type leaseKeeper struct {
	r                   *Rebuilder
	owner, name, holder string
	cancel              context.CancelCauseFunc // the build's context

	mu    sync.Mutex
	until time.Time // the lease as last granted
}

// keepLease renews the lease held until until every renewEvery while the
// build runs. The returned context is the build's: it is cancelled, with
// errLeaseLost as its cause, when the lease is lost. stop ends the renewals.
func (r *Rebuilder) keepLease(ctx context.Context, log *slog.Logger, owner, name, holder string, until time.Time) (work context.Context, k *leaseKeeper, stop func()) {
	work, cancel := context.WithCancelCause(ctx)
	k = &leaseKeeper{r: r, owner: owner, name: name, holder: holder, cancel: cancel, until: until}
	done := make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(r.renewInterval())
		defer t.Stop()
		for {
			select {
			case <-work.Done():
				return
			case <-t.C:
			}
			if err := k.renew(work); err != nil {
				log.Warn("renewing the build lease", "err", err)
			}
		}
	}()
	return work, k, func() { cancel(nil); <-done }
}

func (r *Rebuilder) renewInterval() time.Duration {
	if r.renewEvery > 0 {
		return r.renewEvery
	}
	return max(r.lease/4, time.Second)
}

// renew extends the lease. When another holder has it, or when this renewal
// failed and the next one may come after the lease expired, the build's
// context is cancelled and the error is errLeaseLost.
func (k *leaseKeeper) renew(ctx context.Context) error {
	every := k.r.renewInterval()
	rctx, cancel := context.WithTimeout(ctx, every)
	defer cancel()
	now := k.r.now()
	ok, err := k.r.store.AcquireRebuild(rctx, k.owner, k.name, k.holder, now, now.Add(k.r.lease))
	if err == nil && ok {
		k.mu.Lock()
		k.until = now.Add(k.r.lease)
		k.mu.Unlock()
		return nil
	}
	if err == nil {
		k.cancel(errLeaseLost)
		return errLeaseLost
	}
	k.mu.Lock()
	until := k.until
	k.mu.Unlock()
	if !k.r.now().Add(every).Before(until) {
		k.cancel(errLeaseLost)
		return fmt.Errorf("%w: it expires before it can be renewed again: %v", errLeaseLost, err)
	}
	return fmt.Errorf("renewing the build lease: %w", err)
}

func leaseHolder() (string, error) {
	b := make([]byte, 12)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	return hex.EncodeToString(b), nil
}

// rebuild is the work of one job, holding the repository's lease.
type rebuild struct {
	r      *Rebuilder
	gh     *github.Client
	a      jobs.RebuildArgs
	branch string
	log    *slog.Logger
	lease  *leaseKeeper
	// merged caches what the provenance states of the pull requests merged into the commit.
	merged *mergedFacts
}

// errBranchGone: the branch no longer exists; there is nothing to build.
var errBranchGone = errors.New("the branch no longer exists")

func (b *rebuild) run(ctx context.Context) (string, error) {
	a := b.a
	br, _, err := b.gh.Repositories.GetBranch(ctx, a.Owner, a.Repo, b.branch, 1)
	if ghapp.IsStatus(err, http.StatusNotFound) {
		b.log.Info("nothing to build", "why", errBranchGone)
		return "ignored", nil
	}
	if err != nil {
		return "error", fmt.Errorf("reading branch %s of %s/%s: %w", b.branch, a.Owner, a.Repo, err)
	}
	head := br.GetCommit().GetSHA()
	if !a.Rerun {
		// A job that reported and was then killed before the queue stored
		// it as done runs again: its commit already has its verdict.
		switch settled, err := b.settled(ctx); {
		case err != nil:
			return "error", err
		case settled != "":
			b.log.Info("the commit's image run is already complete; nothing to do", "conclusion", settled)
			return "done-before", nil
		}
	}
	repo, err := b.fetch(ctx)
	if err != nil {
		return "error", err
	}
	defer repo.Close()
	if !strings.EqualFold(head, a.SHA) {
		// The commit's bundles are pushed all the same (its push added them); its catalog images are not built.
		if commit, err := repo.Resolve(a.SHA); err == nil {
			if pol, err := gitpolicy.Read(ctx, repo, commit); err == nil {
				if roots := bundleImageRoots(pol); len(roots) > 0 {
					if done, outcome, err := b.bundleStage(ctx, repo, commit, pol, roots, head); !done {
						return outcome, err
					}
				}
			}
		}
		return b.superseded(ctx, repo, head)
	}
	commit, err := repo.Resolve(a.SHA)
	if err != nil {
		return "error", fmt.Errorf("%s is the head of %s, but the fetch did not bring it: %w", jobs.Short(a.SHA), b.branch, err)
	}
	pol, err := gitpolicy.Read(ctx, repo, commit)
	if err != nil {
		if ctx.Err() != nil || !policyUnusable(ctx, repo, commit, err) {
			return "error", err
		}
		// Another try reads the same commit: report it once, push nothing.
		b.log.Warn("the policy file cannot be used; nothing is built", "err", err)
		if err := b.report(ctx, policyFailure(err)); err != nil {
			return "error", err
		}
		return "failed", b.r.store.FinishRebuild(ctx, a.Owner, a.Repo, a.SHA)
	}
	targets := imageTargets(pol)
	roots := bundleImageRoots(pol)
	if len(targets) == 0 && len(roots) == 0 {
		b.log.Info("no image configured: no catalog or bundle root of " + policy.FileName + " names an image; nothing to build")
		return "no-image", b.r.store.FinishRebuild(ctx, a.Owner, a.Repo, a.SHA)
	}
	if len(roots) > 0 {
		// Bundle images first: a catalog that names a bundle by digest is only useful once the bundle is there.
		if done, outcome, err := b.bundleStage(ctx, repo, commit, pol, roots, a.SHA); !done {
			return outcome, err
		}
		// The catalog updates still open follow the branch.
		updates, err := b.refreshUpdates(ctx, repo, commit, pol)
		for _, u := range updates {
			b.log.Info("catalog update rebuilt on the branch's head", "package", u.Package, "pull_request", u.Number, "action", u.Action, "problem", u.Problem)
		}
		if err != nil {
			if ctx.Err() != nil {
				return "error", err
			}
			b.log.Warn("rebuilding the open catalog updates on the branch's head (the next push tries again)", "err", err)
		}
	}
	if len(targets) == 0 {
		return "bundles", b.r.store.FinishRebuild(ctx, a.Owner, a.Repo, a.SHA)
	}
	runID, err := b.startRun(ctx)
	if err != nil {
		return "error", err
	}
	results, tryErr := b.buildAll(ctx, repo, commit, targets)
	if tryErr != nil {
		if ctx.Err() != nil {
			// Shut down or timed out: River tries again, and the next try
			// takes the run that is still in progress over.
			return "error", tryErr
		}
		n, err := b.r.store.FailRebuild(ctx, a.Owner, a.Repo, a.SHA)
		if err != nil {
			return "error", errors.Join(tryErr, err)
		}
		if n < b.r.maxTries {
			wait := b.r.retryWait << (n - 1)
			b.log.Warn("build failed; trying again", "try", n, "of", b.r.maxTries, "in", wait, "err", tryErr)
			note := fmt.Sprintf("Try %d of %d failed: %s\n\ncatalogbot tries again in %s.", n, b.r.maxTries, ghapp.MarkdownInline(tryErr.Error()), wait)
			if err := b.progress(ctx, runID, note); err != nil {
				b.log.Warn("updating the check run", "err", err)
			}
			return "retrying", river.JobSnooze(wait)
		}
		b.log.Error("build failed; giving up", "tries", n, "err", tryErr)
	}
	res := summarise(a.SHA, results, tryErr, b.r.maxTries)
	res.Summary += b.r.signingNote(countSigned(results))
	if err := b.complete(ctx, runID, res); err != nil {
		return "error", err
	}
	b.log.Info("catalog images built", "conclusion", string(res.Conclusion), "title", res.Title)
	if err := b.r.store.FinishRebuild(ctx, a.Owner, a.Repo, a.SHA); err != nil {
		return "error", err
	}
	if res.Conclusion == verdict.Success {
		return "pushed", nil
	}
	return "failed", nil
}

// fetch brings the branch, and the other references given, into the git cache.
func (b *rebuild) fetch(ctx context.Context, refs ...string) (*gitfs.Repo, error) {
	a := b.a
	clone := a.CloneURL
	if clone == "" {
		rp, _, err := b.gh.Repositories.Get(ctx, a.Owner, a.Repo)
		if err != nil {
			return nil, fmt.Errorf("reading %s/%s: %w", a.Owner, a.Repo, err)
		}
		clone = rp.GetCloneURL()
	}
	return ghapp.FetchRepo(ctx, b.r.gh, b.r.cache, a.InstallationID, a.Owner, a.Repo, clone, append([]string{a.Ref}, refs...))
}

// superseded completes a job whose commit is no longer the branch's head.
func (b *rebuild) superseded(ctx context.Context, repo *gitfs.Repo, head string) (string, error) {
	a := b.a
	mine, mineErr := repo.Resolve(a.SHA)
	if mineErr == nil {
		if h, err := repo.Resolve(head); err == nil && h != mine {
			if base, err := repo.MergeBase(ctx, mine, h); err == nil && base == h {
				// GitHub shows an ancestor of the pushed commit: its view of the
				// branch lags the push (or the branch went back). Ask again a few
				// times before taking GitHub's word for it; these waits are
				// counted apart from the build's failures.
				n, err := b.r.store.FailRebuild(ctx, a.Owner, a.Repo, "behind:"+a.SHA)
				if err != nil {
					return "error", err
				}
				if n < b.r.maxTries {
					b.log.Info("GitHub shows an older head than the pushed commit; asking again", "head", head)
					return "waiting", river.JobSnooze(b.r.wait)
				}
			}
		}
	}
	b.log.Info("superseded: the branch has moved on", "head", head)
	st, err := b.r.store.LoadRebuild(ctx, a.Owner, a.Repo)
	if err != nil {
		return "error", err
	}
	if !strings.EqualFold(st.DoneSHA, head) {
		// The push of head enqueued its job already unless its delivery was
		// lost; a job that waits or runs makes this insert a no-op.
		next := a
		next.SHA, next.DeliveryID = head, ""
		if err := b.r.q.Insert(ctx, []river.InsertManyParams{{Args: next}}); err != nil {
			return "error", fmt.Errorf("asking for the build of %s: %w", jobs.Short(head), err)
		}
	}
	if mineErr != nil {
		return "superseded", nil // the commit left the branch (force push): nothing to report on
	}
	pol, err := gitpolicy.Read(ctx, repo, mine)
	if err != nil || len(imageTargets(pol)) == 0 {
		return "superseded", nil
	}
	res := verdict.Result{Conclusion: verdict.Neutral, Title: "Superseded by " + jobs.Short(head),
		Summary: fmt.Sprintf("The branch %s moved on to %s before this commit's images were built; the images are built from %s instead.", b.branch, head, head)}
	if err := b.report(ctx, res); err != nil {
		return "error", err
	}
	return "superseded", nil
}

// policyUnusable tells a policy file that no try can read (it does not
// parse, is too large, is a link, a submodule or a directory) from a failure
// to read it (git, context).
func policyUnusable(ctx context.Context, repo *gitfs.Repo, commit gitfs.Hash, err error) bool {
	var pe *policy.ParseError
	if errors.As(err, &pe) {
		return true
	}
	for _, e := range []error{gitfs.ErrTooLarge, gitfs.ErrSymlink, gitfs.ErrSubmodule} {
		if errors.Is(err, e) {
			return true
		}
	}
	tree, terr := repo.TreeFS(ctx, commit, gitfs.Limits{})
	if terr != nil {
		return false
	}
	st, serr := fs.Stat(tree, policy.FileName)
	return serr == nil && !st.Mode().IsRegular()
}

// policyFailure is the check run of a commit whose policy file cannot be
// used: a failure (the branch's images are not built), with the problems of
// a file that does not parse annotated on their lines.
func policyFailure(err error) verdict.Result {
	res := verdict.Result{Check: jobs.RebuildCheckRunName, Conclusion: verdict.Failure}
	var sb strings.Builder
	var pe *policy.ParseError
	if errors.As(err, &pe) {
		res.Title = "No image built: " + policy.FileName + " does not parse"
		fmt.Fprintf(&sb, "The %s of this commit does not parse, so catalogbot cannot tell which images to build; nothing was pushed.\n\n", policy.FileName)
		for _, p := range pe.Problems {
			fmt.Fprintf(&sb, "- %s\n", ghapp.MarkdownInline(p.String()))
			res.Findings = append(res.Findings, catalog.Finding{Rule: "policy", Severity: catalog.SeverityError,
				Position: catalog.Position{File: policy.FileName, Line: p.Line, Column: p.Column}, Message: p.Message, Hint: p.Hint})
		}
	} else {
		res.Title = "No image built: " + policy.FileName + " cannot be read"
		fmt.Fprintf(&sb, "The %s of this commit cannot be read, so catalogbot cannot tell which images to build; nothing was pushed.\n\n%s\n", policy.FileName, ghapp.MarkdownInline(err.Error()))
	}
	res.Summary = sb.String()
	return res
}

// imageTargets are the catalogs of the policy that name an image.
func imageTargets(p *policy.Policy) []policy.Catalog {
	var out []policy.Catalog
	for _, c := range p.Catalogs {
		if c.Image != "" {
			out = append(out, c)
		}
	}
	return out
}

// targetResult is what happened to one catalog.
type targetResult struct {
	Catalog   string
	Image     string
	Base      string
	Pushed    []string // tag references
	Digest    string
	Platforms []string
	// Findings of the validation, with repository-relative paths.
	Findings []catalog.Finding
	// Problem says why the image was not pushed ("" when it was).
	Problem string
	// Absent: the catalog's directory is not on this commit (a new catalog root its promotion fills): no
	// image, and no failure.
	Absent bool
	// Signed says what signing did (zero: not signed).
	Signed signed
}

// buildAll validates, builds and pushes each target. The error is a failure
// worth another try (registry, network); what another try cannot change (no
// base image, a target not allowed, validation errors) is a Problem.
func (b *rebuild) buildAll(ctx context.Context, repo *gitfs.Repo, commit gitfs.Hash, targets []policy.Catalog) ([]targetResult, error) {
	tree, err := repo.TreeFS(ctx, commit, gitfs.Limits{})
	if err != nil {
		return nil, err
	}
	var out []targetResult
	var errs []error
	for _, c := range targets {
		res, err := b.buildOne(ctx, tree, c)
		if err != nil {
			res.Problem = err.Error()
			errs = append(errs, fmt.Errorf("%s: %w", c.Path, err))
		}
		out = append(out, res)
	}
	return out, errors.Join(errs...)
}

func (b *rebuild) buildOne(ctx context.Context, tree fs.FS, c policy.Catalog) (targetResult, error) {
	started := b.r.now()
	res := targetResult{Catalog: c.Path, Image: c.Image}
	if !b.r.allowed.RegistryAllowed(c.Image) {
		res.Problem = fmt.Sprintf("%s is not among the images this App may push (rebuild.allowed_images: %s)", c.Image, strings.Join(b.r.allowed.AllowedRegistries, ", "))
		return res, nil
	}
	tag, err := name.NewTag(c.Image, name.StrictValidation)
	if err != nil {
		res.Problem = fmt.Sprintf("%s is not an image reference with a tag: %v", c.Image, err)
		return res, nil
	}
	res.Base = c.BaseImage
	if res.Base == "" {
		res.Base = b.r.baseImage
	}
	if res.Base == "" {
		res.Problem = "no base image: set baseImage on this catalog in " + policy.FileName + ", or rebuild.base_image in the App's configuration"
		return res, nil
	}
	fsys, err := catalogRoot(tree, c.Path)
	if errors.Is(err, fs.ErrNotExist) {
		res.Absent = true
		return res, nil
	}
	if err != nil {
		res.Problem = fmt.Sprintf("the catalog directory %s: %v", c.Path, err)
		return res, nil
	}
	// The same files (names and blob ids) validated before: not read again. Otherwise validated package by
	// package (catalog.ValidateFS), never holding the whole parsed catalog nor filling the checks' parse cache
	// with it.
	key, err := image.ContentKey(ctx, fsys, b.r.imgLimits)
	if err != nil {
		key = "" // the build reports it
	}
	findings, validated := b.r.valid.get(key)
	if !validated {
		b.r.validations.Add(1)
		v, err := catalog.ValidateFS(ctx, fsys, b.r.limits)
		if err != nil {
			if ctx.Err() != nil {
				return res, err
			}
			res.Problem = fmt.Sprintf("reading the catalog: %v", err)
			return res, nil
		}
		findings = v.Findings
	}
	for _, f := range findings {
		if f.File != "" && c.Path != "." {
			f.File = path.Join(c.Path, f.File)
		}
		res.Findings = append(res.Findings, f)
	}
	if catalog.HasErrors(findings) {
		n := 0
		for _, f := range findings {
			if f.Severity == catalog.SeverityError {
				n++
			}
		}
		res.Problem = fmt.Sprintf("the catalog does not validate (%d %s, annotated on their lines); a catalog that does not validate is never pushed", n, ghapp.Plural(n, "error", "errors"))
		return res, nil
	}
	b.r.valid.put(key, findings)
	// The push target's token service must be on a host the App may push to.
	opts := b.r.reg.RemoteOptions(registry.WithTokenHosts(ctx, b.r.allowed.RegistryHosts()...))
	built, err := image.Build(ctx, res.Base, fsys, b.r.imgLimits, opts...)
	if err != nil {
		if permanentBuildError(err) {
			res.Problem = err.Error()
			return res, nil
		}
		return res, err
	}
	d, err := built.Digest()
	if err != nil {
		return res, err
	}
	res.Digest, res.Platforms = d.String(), built.Platforms
	tags := pushTags(tag.TagStr(), b.a.SHA)
	refs := make([]string, len(tags))
	for i, t := range tags {
		refs[i] = tag.Context().Name() + ":" + t
	}
	sres, err := b.publish(ctx, sign.Publication{
		Digest: res.Digest, Tags: refs,
		WriteContent: func(ctx context.Context, ref string) error {
			_, err := built.Push(ctx, ref, opts...)
			return err
		},
		Provenance: func(ctx context.Context) *sign.Provenance {
			return b.provenance(ctx, sign.BuildTypeCatalog, c.Path, res.Base, started)
		},
		WriteTag: func(ctx context.Context, ref string) error {
			// Only the lease's holder pushes: a build that lost it must not
			// move a tag after the build that took it over.
			if err := b.lease.renew(ctx); err != nil {
				return err
			}
			if _, err := built.Push(ctx, ref, opts...); err != nil {
				return err
			}
			res.Pushed = append(res.Pushed, ref)
			return nil
		},
	})
	res.Signed = sres
	if err != nil {
		return res, err
	}
	return res, nil
}

// pushTags are the configured tag and the commit SHA.
func pushTags(configured, sha string) []string {
	if strings.EqualFold(configured, sha) {
		return []string{configured}
	}
	return []string{configured, sha}
}

// permanentBuildError tells errors another try cannot fix (what the catalog
// holds) from registry and network failures.
func permanentBuildError(err error) bool {
	for _, e := range []error{image.ErrLink, gitfs.ErrSymlink, gitfs.ErrSubmodule, gitfs.ErrTooLarge, gitfs.ErrBudget} {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}

// catalogRoot is the catalog directory of a commit's tree, keeping the
// tree's content keys so that the loader reuses parses by blob.
func catalogRoot(tree fs.FS, root string) (fs.FS, error) {
	st, err := fs.Stat(tree, root)
	if err != nil {
		return nil, err
	}
	if !st.IsDir() {
		return nil, errors.New("not a directory")
	}
	if root == "." {
		return tree, nil
	}
	sub, err := fs.Sub(tree, root)
	if err != nil {
		return nil, err
	}
	keys, ok := tree.(load.ContentKeyer)
	if !ok {
		return sub, nil
	}
	return rootedFS{FS: sub, keys: keys, root: root}, nil
}

type rootedFS struct {
	fs.FS
	keys load.ContentKeyer
	root string
}

func (f rootedFS) ContentKey(name string) (string, bool) {
	return f.keys.ContentKey(path.Join(f.root, name))
}
func (f rootedFS) ReadDir(name string) ([]fs.DirEntry, error) {
	return fs.ReadDir(f.FS, name)
}
func (f rootedFS) ReadFile(name string) ([]byte, error)  { return fs.ReadFile(f.FS, name) }
func (f rootedFS) Stat(name string) (fs.FileInfo, error) { return fs.Stat(f.FS, name) }

// summarise makes the check run's result: success when every image was
// pushed, failure otherwise; the summary lists the pushed digests.
func summarise(sha string, results []targetResult, tryErr error, tries int) verdict.Result {
	res := verdict.Result{Check: jobs.RebuildCheckRunName, Conclusion: verdict.Success}
	var pushed, refused int
	var absent []string
	var sb strings.Builder
	fmt.Fprintf(&sb, "Catalog images of `%s`:\n\n| catalog | image | digest | platforms |\n|---|---|---|---|\n", sha)
	for _, t := range results {
		if t.Absent {
			absent = append(absent, t.Catalog)
			fmt.Fprintf(&sb, "| `%s` | `%s` | no catalog yet | |\n", ghapp.MarkdownCode(t.Catalog), ghapp.MarkdownCode(t.Image))
			continue
		}
		refs := make([]string, len(t.Pushed))
		for i, p := range t.Pushed {
			refs[i] = "`" + ghapp.MarkdownCode(p) + "`"
		}
		img := "`" + ghapp.MarkdownCode(t.Image) + "`"
		if len(refs) > 0 {
			img = strings.Join(refs, "<br>")
		}
		digest := "not pushed"
		if t.Problem == "" {
			pushed++
			digest = "`" + t.Digest + "`"
			if t.Signed.Manifests > 0 {
				digest += fmt.Sprintf(" (signed: %d %s%s)", t.Signed.Manifests, ghapp.Plural(t.Signed.Manifests, "manifest", "manifests"), attestedWord(t.Signed.Attested))
			}
		} else {
			refused++
			res.Conclusion = verdict.Failure
		}
		fmt.Fprintf(&sb, "| `%s` | %s | %s | %s |\n", ghapp.MarkdownCode(t.Catalog), img, digest, strings.Join(t.Platforms, ", "))
		res.Findings = append(res.Findings, t.Findings...)
	}
	for _, t := range results {
		if t.Absent {
			fmt.Fprintf(&sb, "\n`%s` is not on this commit: a catalog root the policy declares before any catalog is in it (a new OpenShift version, which its promotion's pull requests fill). Its image is built once it holds a catalog.\n", ghapp.MarkdownCode(t.Catalog))
		}
		if t.Problem != "" {
			fmt.Fprintf(&sb, "\n**`%s` was not pushed:** %s\n", ghapp.MarkdownCode(t.Catalog), ghapp.MarkdownInline(t.Problem))
		}
		if t.Base != "" {
			fmt.Fprintf(&sb, "\n`%s` is built on `%s`.\n", ghapp.MarkdownCode(t.Catalog), ghapp.MarkdownCode(t.Base))
		}
	}
	if tryErr != nil {
		res.Conclusion = verdict.Failure
		fmt.Fprintf(&sb, "\nThe build failed %d times; the last error: %s\n", tries, ghapp.MarkdownInline(tryErr.Error()))
	}
	res.Summary = sb.String()
	switch {
	case refused == 0:
		res.Title = fmt.Sprintf("Pushed %d %s", pushed, ghapp.Plural(pushed, "image", "images"))
	case pushed == 0:
		res.Title = fmt.Sprintf("Not pushed: %d %s failed", refused, ghapp.Plural(refused, "catalog", "catalogs"))
	default:
		res.Title = fmt.Sprintf("Pushed %d, not pushed %d", pushed, refused)
	}
	if len(absent) > 0 {
		res.Title += fmt.Sprintf("; no catalog yet in %s", strings.Join(absent, ", "))
	}
	return res
}

// --- the check run ------------------------------------------------------------

// startRun takes over a run of ours still in progress on the commit (a try
// that died or was snoozed) or creates one.
func (b *rebuild) startRun(ctx context.Context) (int64, error) {
	return b.startRunNamed(ctx, jobs.RebuildCheckRunName, "Building", "Validating the catalogs, then building and pushing their images.")
}

// startRunNamed is startRun for the run called name.
func (b *rebuild) startRunNamed(ctx context.Context, name, title, summary string) (int64, error) {
	if id, err := b.openRun(ctx, name); err != nil || id != 0 {
		return id, err
	}
	now := github.Timestamp{Time: time.Now()}
	cr, _, err := b.gh.Checks.CreateCheckRun(ctx, b.a.Owner, b.a.Repo, github.CreateCheckRunOptions{
		Name: name, HeadSHA: b.a.SHA, Status: github.String("in_progress"), StartedAt: &now,
		ExternalID: github.String(jobs.RebuildExternalID),
		Output:     &github.CheckRunOutput{Title: github.String(title), Summary: github.String(summary)},
	})
	if err != nil {
		return 0, fmt.Errorf("creating check run %s on %s: %w", name, jobs.Short(b.a.SHA), err)
	}
	return cr.GetID(), nil
}

// openRun is the newest run of ours called name on the commit still in
// progress, or 0.
func (b *rebuild) openRun(ctx context.Context, name string) (int64, error) {
	runs, err := b.imageRuns(ctx, name, "in_progress")
	var id int64
	for _, cr := range runs {
		id = max(id, cr.GetID())
	}
	return id, err
}

// settled returns the conclusion of a completed image run of ours on the
// commit that is a verdict to keep (success: pushed; neutral: superseded or
// nothing to push), or "". A failure is not kept: the build is tried again.
func (b *rebuild) settled(ctx context.Context) (string, error) {
	runs, err := b.imageRuns(ctx, jobs.RebuildCheckRunName, "completed")
	for _, cr := range runs {
		if c := cr.GetConclusion(); c == "success" || c == "neutral" {
			return c, nil
		}
	}
	return "", err
}

// imageRuns lists our runs called name on the commit with status (one page:
// the query names the run and the App).
func (b *rebuild) imageRuns(ctx context.Context, name, status string) ([]*github.CheckRun, error) {
	opt := github.ListCheckRunsOptions{CheckName: github.String(name), Status: github.String(status), Filter: github.String("all")}
	if b.r.appID != 0 {
		opt.AppID = github.Int64(b.r.appID)
	}
	var out []*github.CheckRun
	err := ghapp.ListRuns(ctx, b.gh, b.a.Owner, b.a.Repo, b.a.SHA, opt, 1, func(cr *github.CheckRun) {
		if cr.GetExternalID() == jobs.RebuildExternalID {
			out = append(out, cr)
		}
	})
	return out, err
}

// progress shows a note on a run that stays in progress.
func (b *rebuild) progress(ctx context.Context, runID int64, note string) error {
	return b.progressNamed(ctx, runID, jobs.RebuildCheckRunName, note)
}

func (b *rebuild) progressNamed(ctx context.Context, runID int64, name, note string) error {
	_, _, err := b.gh.Checks.UpdateCheckRun(ctx, b.a.Owner, b.a.Repo, runID, github.UpdateCheckRunOptions{
		Name: name, Status: github.String("in_progress"),
		Output: &github.CheckRunOutput{Title: github.String("Building (retrying)"), Summary: github.String(ghapp.TruncateOutput(note))},
	})
	return err
}

// report completes a run (the one in progress, or a new one) with res.
func (b *rebuild) report(ctx context.Context, res verdict.Result) error {
	id, err := b.startRun(ctx)
	if err != nil {
		return err
	}
	return b.complete(ctx, id, res)
}

// complete concludes a run; annotations beyond the first 50 follow in
// further updates, as GitHub takes them.
func (b *rebuild) complete(ctx context.Context, runID int64, res verdict.Result) error {
	return b.completeNamed(ctx, runID, jobs.RebuildCheckRunName, res)
}

func (b *rebuild) completeNamed(ctx context.Context, runID int64, name string, res verdict.Result) error {
	return ghapp.CompleteRun(ctx, b.gh, b.a.Owner, b.a.Repo, runID, name, ghapp.RenderCheckRun(res, ""), nil)
}

// LayerCache is the cache of catalog image layers (for the server's metrics).
func (r *Rebuilder) LayerCache() *image.LayerCache { return r.imgLimits.Cache }

// Tuning is the rebuild's timing, tries and log, which tests of the whole
// server shorten or watch (see Tune).
type Tuning struct {
	// Wait is how long a job waits for GitHub or a held lease before asking again.
	Wait time.Duration
	// RetryWait is the first wait before a failed push is tried again.
	RetryWait time.Duration
	// MaxTries bounds the tries of one build.
	MaxTries int
	// Lease is how long a build holds its repository; RenewEvery how often it renews it.
	Lease, RenewEvery time.Duration
	// Now is the lease clock.
	Now func() time.Time
	// Log is where the rebuild logs.
	Log *slog.Logger
}

// Tune changes the rebuild's timing before the server starts its workers.
func (r *Rebuilder) Tune(f func(*Tuning)) {
	t := Tuning{Wait: r.wait, RetryWait: r.retryWait, MaxTries: r.maxTries, Lease: r.lease, RenewEvery: r.renewEvery, Now: r.now, Log: r.log}
	f(&t)
	r.wait, r.retryWait, r.maxTries, r.lease, r.renewEvery, r.now, r.log = t.Wait, t.RetryWait, t.MaxTries, t.Lease, t.RenewEvery, t.Now, t.Log
}

// Validations is how many catalogs the rebuild has read and validated (not
// those known valid by their content).
func (r *Rebuilder) Validations() int64 { return r.validations.Load() }
