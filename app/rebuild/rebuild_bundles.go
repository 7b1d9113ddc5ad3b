package rebuild

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"sort"
	"strings"

	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/riverqueue/river"

	"github.com/catalogbot/catalogbot/app/ghapp"
	"github.com/catalogbot/catalogbot/app/jobs"
	"github.com/catalogbot/catalogbot/app/store"
	"github.com/catalogbot/catalogbot/catalog/bundle"
	"github.com/catalogbot/catalogbot/catalog/image"
	"github.com/catalogbot/catalogbot/catalog/template/authoring"
	"github.com/catalogbot/catalogbot/checks/verdict"
	"github.com/catalogbot/catalogbot/gitfs"
	"github.com/catalogbot/catalogbot/policy"
	"github.com/catalogbot/catalogbot/registry"
	"github.com/catalogbot/catalogbot/sign"
)

// maxBundlesPerCommit bounds the bundle images one commit builds; more is refused, not built in part.
const maxBundlesPerCommit = 200

// bundleImageRoots are the bundle roots of the policy that name where their images go.
func bundleImageRoots(p *policy.Policy) []policy.BundleRoot {
	var out []policy.BundleRoot
	for _, b := range p.Bundles {
		if b.Image != "" {
			out = append(out, b)
		}
	}
	return out
}

// bundleResult is what happened to one bundle directory.
type bundleResult struct {
	Dir, Ref, Digest string
	// Pushed: the tag was written now; Existing: it already named this very digest.
	Pushed, Existing bool
	// Problem says why nothing was pushed ("" when it was, or was there already).
	Problem string
	// Signed says what signing did (zero: not signed).
	Signed signed
	// add is the bundle as a catalog update adds it (its image by digest), once it is on the registry.
	add *authoring.Addition
}

// changedBundleDirs lists the bundle directories (<root>/<package>/<version>/ holding
// metadata/annotations.yaml) of commit that differ from since; every one when since is zero.
func changedBundleDirs(ctx context.Context, repo *gitfs.Repo, tree fs.FS, since, commit gitfs.Hash, roots []policy.BundleRoot) ([]string, map[string]policy.BundleRoot, error) {
	rootOf := map[string]policy.BundleRoot{}
	set := map[string]bool{}
	inRoot := func(p string) (string, policy.BundleRoot, bool) {
		for _, r := range roots {
			rel, ok := strings.CutPrefix(p, r.Path+"/")
			if r.Path == "." {
				rel, ok = p, true
			}
			if !ok {
				continue
			}
			parts := strings.SplitN(rel, "/", 3)
			if len(parts) < 3 {
				return "", r, false
			}
			return path.Join(r.Path, parts[0], parts[1]), r, true
		}
		return "", policy.BundleRoot{}, false
	}
	if since.IsZero() {
		for _, r := range roots {
			pkgs, _ := fs.ReadDir(tree, r.Path)
			for _, p := range pkgs {
				vers, _ := fs.ReadDir(tree, path.Join(r.Path, p.Name()))
				for _, v := range vers {
					dir := path.Join(r.Path, p.Name(), v.Name())
					set[dir], rootOf[dir] = true, r
				}
			}
		}
	} else {
		changes, err := repo.ChangedPaths(ctx, since, commit)
		if err != nil {
			return nil, nil, err
		}
		for _, c := range changes {
			if dir, r, ok := inRoot(c.Path); ok {
				set[dir], rootOf[dir] = true, r
			}
		}
	}
	var dirs []string
	for d := range set {
		if st, err := fs.Stat(tree, path.Join(d, "metadata", "annotations.yaml")); err == nil && st.Mode().IsRegular() {
			dirs = append(dirs, d)
		}
	}
	sort.Strings(dirs)
	return dirs, rootOf, nil
}

// bundleStage builds and pushes the bundle image of every bundle directory the commit adds or changes since
// the last commit built (else its first parent), each to its root's image pattern, through PushOnce: a
// version whose tag already names other content is refused, never overwritten. The outcome is the
// catalogbot/bundle-image run on the commit; a registry failure is tried again (the run stays in progress)
// and, after the last try, is a failure that Re-run resumes.
func (b *rebuild) bundleStage(ctx context.Context, repo *gitfs.Repo, commit gitfs.Hash, pol *policy.Policy, roots []policy.BundleRoot, head string) (done bool, outcome string, err error) {
	a := b.a
	if !a.Rerun {
		// A try that reported and was then killed runs again, and so does the job when its catalog stage is
		// tried again: the commit's bundle images have their verdict, success or the failure after the last
		// try (which Re-run resumes). Building them again here would also restart the tries of the catalog
		// stage, whose count the bundle stage's own replaces, so the two would retry each other for ever.
		runs, err := b.imageRuns(ctx, jobs.BundleImageCheckRunName, "completed")
		if err != nil {
			return false, "error", err
		}
		if len(runs) > 0 {
			return true, "", nil
		}
	}
	tree, err := repo.TreeFS(ctx, commit, gitfs.Limits{})
	if err != nil {
		return false, "error", err
	}
	// The bundles of this commit: those its push added (every push's job handles its own, superseded or not),
	// else those since the last commit built, else those of the commit itself.
	var since gitfs.Hash
	if jobs.IsSHA(a.Before) {
		if h, err := repo.Resolve(a.Before); err == nil {
			if mb, err := repo.MergeBase(ctx, h, commit); err == nil && mb == h {
				since = h
			}
		}
	}
	if st, err := b.r.store.LoadRebuild(ctx, a.Owner, a.Repo); since.IsZero() && err == nil && jobs.IsSHA(st.DoneSHA) && !strings.EqualFold(st.DoneSHA, a.SHA) {
		if h, err := repo.Resolve(st.DoneSHA); err == nil {
			if mb, err := repo.MergeBase(ctx, h, commit); err == nil && mb == h {
				since = h
			}
		}
	}
	if since.IsZero() {
		if p, err := repo.Resolve(a.SHA + "^"); err == nil {
			since = p
		}
	}
	dirs, rootOf, err := changedBundleDirs(ctx, repo, tree, since, commit, roots)
	if err != nil {
		return false, "error", err
	}
	if len(dirs) == 0 {
		return true, "", nil
	}
	runID, err := b.startRunNamed(ctx, jobs.BundleImageCheckRunName, "Building bundle images", "Building the bundle directories this commit adds or changes into their images, and pushing them.")
	if err != nil {
		return false, "error", err
	}
	var results []bundleResult
	var tryErr error
	if len(dirs) > maxBundlesPerCommit {
		results = append(results, bundleResult{Dir: fmt.Sprintf("%d directories", len(dirs)),
			Problem: fmt.Sprintf("this commit changes %d bundle directories, more than the %d one commit may build; none was built", len(dirs), maxBundlesPerCommit)})
	} else {
		for _, dir := range dirs {
			res, err := b.buildBundle(ctx, tree, dir, rootOf[dir])
			if err != nil {
				tryErr = errors.Join(tryErr, fmt.Errorf("%s: %w", dir, err))
				res.Problem = err.Error()
			}
			results = append(results, res)
		}
	}
	// What the build pushed is recorded as the App's own doing: a catalog update may add these bundles and
	// nothing else (checks.Provenance).
	for _, r := range results {
		if r.Problem != "" || r.add == nil {
			continue
		}
		if err := b.r.updates.RecordBundleBuild(ctx, a.Owner, a.Repo, store.BundleBuild{Image: r.add.Image, Package: r.add.Package, Dir: r.Dir, Commit: commit.String()}, b.r.now()); err != nil {
			tryErr = errors.Join(tryErr, fmt.Errorf("recording the bundle build of %s: %w", r.Dir, err))
		}
	}
	var updates []updateResult
	if tryErr == nil {
		// The images are there: the catalog update pull requests can name them.
		// Rendered on the branch's current head: it holds this commit's bundles and every later one's, which a
		// catalog update branch may already name.
		headCommit := commit
		if h, err := repo.Resolve(head); err == nil {
			headCommit = h
		}
		updates, tryErr = b.catalogUpdate(ctx, repo, headCommit, pol, results)
		for _, u := range updates {
			b.log.Info("catalog update", "package", u.Package, "pull_request", u.Number, "action", u.Action, "problem", u.Problem)
		}
	}
	if tryErr != nil {
		if ctx.Err() != nil {
			return false, "error", tryErr
		}
		n, err := b.r.store.FailRebuild(ctx, a.Owner, a.Repo, "bundles:"+a.SHA)
		if err != nil {
			return false, "error", errors.Join(tryErr, err)
		}
		if n < b.r.maxTries {
			wait := b.r.retryWait << (n - 1)
			b.log.Warn("bundle image push failed; trying again", "try", n, "of", b.r.maxTries, "in", wait, "err", tryErr)
			note := fmt.Sprintf("Try %d of %d failed: %s\n\ncatalogbot tries again in %s.", n, b.r.maxTries, ghapp.MarkdownInline(tryErr.Error()), wait)
			if err := b.progressNamed(ctx, runID, jobs.BundleImageCheckRunName, note); err != nil {
				b.log.Warn("updating the check run", "err", err)
			}
			return false, "retrying", river.JobSnooze(wait)
		}
		b.log.Error("bundle image push failed; giving up", "tries", n, "err", tryErr)
	}
	res := summariseBundles(a.SHA, results, tryErr, b.r.maxTries)
	nSigned := 0
	for _, r := range results {
		if r.Signed.Manifests > 0 {
			nSigned++
		}
	}
	res.Summary += b.r.signingNote(nSigned)
	res.Summary += summariseUpdates(updates)
	for _, u := range updates {
		if u.Problem != "" {
			res.Conclusion = verdict.Failure
		}
	}
	if err := b.completeNamed(ctx, runID, jobs.BundleImageCheckRunName, res); err != nil {
		return false, "error", err
	}
	b.log.Info("bundle images", "conclusion", string(res.Conclusion), "title", res.Title)
	return true, "", nil
}

// buildBundle builds one bundle directory's image and pushes it once. The error is worth another try (the
// registry); what another try cannot change is a Problem.
func (b *rebuild) buildBundle(ctx context.Context, tree fs.FS, dir string, root policy.BundleRoot) (bundleResult, error) {
	started := b.r.now()
	res := bundleResult{Dir: dir}
	sub, err := fs.Sub(tree, dir)
	if err != nil {
		res.Problem = err.Error()
		return res, nil
	}
	bd, findings, err := bundle.Load(ctx, sub, bundle.Limits{})
	if err != nil || bd == nil || bd.CSV == nil {
		res.Problem = "the directory is not a bundle that loads"
		if err != nil {
			res.Problem += ": " + err.Error()
		} else if len(findings) > 0 {
			res.Problem += ": " + findings[0].String()
		}
		return res, nil
	}
	version := ""
	if v := bd.CSV.Value.Get("spec"); v != nil {
		if s := v.Get("version"); s != nil {
			version = s.Str()
		}
	}
	if bd.Package == "" || version == "" {
		res.Problem = "the bundle names no package or its CSV no spec.version, so its image reference cannot be made"
		return res, nil
	}
	res.Ref = strings.NewReplacer("{package}", bd.Package, "{version}", version).Replace(root.Image)
	if !b.r.allowed.RegistryAllowed(res.Ref) {
		res.Problem = fmt.Sprintf("%s is not among the images this App may push (rebuild.allowed_images: %s)", res.Ref, strings.Join(b.r.allowed.AllowedRegistries, ", "))
		return res, nil
	}
	img, err := image.BundleImage(ctx, sub, bd.Annotations, b.r.imgLimits)
	if err != nil {
		if permanentBuildError(err) {
			res.Problem = err.Error()
			return res, nil
		}
		return res, err
	}
	d, err := img.Digest()
	if err != nil {
		return res, err
	}
	res.Digest = d.String()
	if err := b.lease.renew(ctx); err != nil {
		return res, err
	}
	ctx = registry.WithTokenHosts(ctx, b.r.allowed.RegistryHosts()...)
	if _, err := b.r.reg.Reference(res.Ref); err != nil {
		res.Problem = err.Error()
		return res, nil
	}
	// A tag that names other content is refused before anything is written or signed; then the content by
	// digest, its signature, and only then the tag: the tag never names unsigned content.
	var pushed bool
	sres, err := b.publish(ctx, sign.Publication{
		Digest: res.Digest, Tags: []string{res.Ref}, WriteOnce: true,
		WriteContent: func(ctx context.Context, ref string) error {
			r, err := b.r.reg.Reference(ref)
			if err != nil {
				return err
			}
			if err := remote.Write(r, img, b.r.reg.RemoteOptions(ctx)...); err != nil {
				return fmt.Errorf("pushing %s: %w", ref, err)
			}
			return nil
		},
		Provenance: func(ctx context.Context) *sign.Provenance {
			return b.provenance(ctx, sign.BuildTypeBundle, dir, "", started)
		},
		WriteTag: func(ctx context.Context, ref string) (err error) {
			pushed, err = b.r.reg.PushOnce(ctx, ref, img)
			return err
		},
	})
	res.Signed = sres
	var taken *registry.TagTakenError
	switch {
	case errors.As(err, &taken):
		res.Problem = taken.Error()
		return res, nil
	case err != nil:
		return res, err
	}
	res.Pushed, res.Existing = pushed, !pushed
	if byDigest, err := digestRef(res.Ref, res.Digest); err == nil {
		if add, err := authoring.AdditionOf(bd, byDigest); err == nil {
			res.add = &add
		}
	}
	return res, nil
}

// summariseBundles is the bundle-image run's result: success when every image was pushed or was there
// already with the same digest.
func summariseBundles(sha string, results []bundleResult, tryErr error, tries int) verdict.Result {
	res := verdict.Result{Check: jobs.BundleImageCheckRunName, Conclusion: verdict.Success}
	var sb strings.Builder
	fmt.Fprintf(&sb, "Bundle images of `%s`:\n\n| bundle directory | image | digest | |\n|---|---|---|---|\n", sha)
	ok, bad := 0, 0
	for _, r := range results {
		status := "pushed"
		switch {
		case r.Problem != "":
			status, bad = "**not pushed**", bad+1
			res.Conclusion = verdict.Failure
		case r.Existing:
			status, ok = "already there (same digest)", ok+1
		default:
			ok++
		}
		if r.Problem == "" && r.Signed.Manifests > 0 {
			status += ", signed" + attestedWord(r.Signed.Attested)
		}
		digest := "—"
		if r.Digest != "" {
			digest = "`" + r.Digest + "`"
		}
		ref := "—"
		if r.Ref != "" {
			ref = "`" + ghapp.MarkdownCode(r.Ref) + "`"
		}
		fmt.Fprintf(&sb, "| `%s` | %s | %s | %s |\n", ghapp.MarkdownCode(r.Dir), ref, digest, status)
	}
	for _, r := range results {
		if r.Problem != "" {
			fmt.Fprintf(&sb, "\n**`%s` was not pushed:** %s\n", ghapp.MarkdownCode(r.Dir), ghapp.MarkdownInline(r.Problem))
		}
	}
	if tryErr != nil {
		res.Conclusion = verdict.Failure
		fmt.Fprintf(&sb, "\nThe push failed %d times; the last error: %s\nRe-run this check to try again.\n", tries, ghapp.MarkdownInline(tryErr.Error()))
	}
	res.Summary = sb.String()
	switch {
	case bad == 0:
		res.Title = fmt.Sprintf("%d bundle %s pushed", ok, ghapp.Plural(ok, "image", "images"))
	case ok == 0:
		res.Title = fmt.Sprintf("Not pushed: %d bundle %s", bad, ghapp.Plural(bad, "image", "images"))
	default:
		res.Title = fmt.Sprintf("%d bundle %s pushed, %d not", ok, ghapp.Plural(ok, "image", "images"), bad)
	}
	return res
}

// summariseUpdates lists the catalog update pull requests.
func summariseUpdates(updates []updateResult) string {
	if len(updates) == 0 {
		return ""
	}
	var sb strings.Builder
	sb.WriteString("\nCatalog updates:\n\n")
	for _, u := range updates {
		switch {
		case u.Problem != "":
			fmt.Fprintf(&sb, "- **%s**: no catalog update: %s\n", ghapp.MarkdownCode(u.Package), ghapp.MarkdownInline(u.Problem))
		case u.Number != 0:
			fmt.Fprintf(&sb, "- **%s**: #%d %s\n", ghapp.MarkdownCode(u.Package), u.Number, u.Action)
		default:
			fmt.Fprintf(&sb, "- **%s**: %s\n", ghapp.MarkdownCode(u.Package), u.Action)
		}
	}
	return sb.String()
}
