package rebuild

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"sort"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-github/v62/github"

	"github.com/catalogbot/catalogbot/app/ghapp"
	"github.com/catalogbot/catalogbot/app/store"
	"github.com/catalogbot/catalogbot/catalog"
	"github.com/catalogbot/catalogbot/catalog/bundle"
	"github.com/catalogbot/catalogbot/catalog/template"
	"github.com/catalogbot/catalogbot/catalog/template/authoring"
	"github.com/catalogbot/catalogbot/gitfs"
	"github.com/catalogbot/catalogbot/internal/pkgtemplate"
	"github.com/catalogbot/catalogbot/policy"
)

// CatalogUpdateBranch is the branch of the catalog update pull request of a package.
func CatalogUpdateBranch(pkg string) string { return "catalogbot/catalog-update/" + pkg }

// catalogUpdateMarker ends every commit message of ours on a catalog update branch.
const catalogUpdateMarker = "Generated-by: catalogbot"

// updateResult is what the catalog update did for one package.
type updateResult struct {
	Package string
	Number  int    // the pull request, 0 when none
	Action  string // "opened", "updated", "nothing to add", "no template"
	Problem string
}

// catalogUpdate adds the bundles just pushed to their packages' templates, by digest, renders every catalog
// the templates map to, and opens — or updates — one pull request per package from the branch
// catalogbot/catalog-update/<package>. Each update is one commit of the App's on the default branch's head
// (commit), never on an earlier update: the bundles of the package's update still open are carried over
// (from the App's own records), and the branch is moved to the new commit (forced: the App owns it). So
// compared with the default branch the pull request only adds, whether the earlier update was merged,
// squashed or closed. Everything in it is derived, so the App checks it like any pull request.
func (b *rebuild) catalogUpdate(ctx context.Context, repo *gitfs.Repo, commit gitfs.Hash, pol *policy.Policy, bundles []bundleResult) ([]updateResult, error) {
	byPkg := map[string][]authoring.Addition{}
	for _, r := range bundles {
		if r.Problem != "" || r.add == nil {
			continue
		}
		byPkg[r.add.Package] = append(byPkg[r.add.Package], *r.add)
	}
	pkgs := make([]string, 0, len(byPkg))
	for p := range byPkg {
		pkgs = append(pkgs, p)
	}
	sort.Strings(pkgs)
	mainTree, err := repo.TreeFS(ctx, commit, gitfs.Limits{})
	if err != nil {
		return nil, err
	}
	var out []updateResult
	for _, pkg := range pkgs {
		res, err := b.updatePackage(ctx, repo, commit, mainTree, pol, pkg, byPkg[pkg])
		if err != nil {
			return out, fmt.Errorf("catalog update of %s: %w", pkg, err)
		}
		out = append(out, res)
	}
	return out, nil
}

// refreshUpdates builds again, on the default branch's head (commit), every package's update that is not
// settled and was built on an older commit: a pull request built on an older commit shows, compared with
// the default branch, the reverse of what the branch did since.
func (b *rebuild) refreshUpdates(ctx context.Context, repo *gitfs.Repo, commit gitfs.Hash, pol *policy.Policy) ([]updateResult, error) {
	pending, err := b.r.updates.PendingUpdates(ctx, b.a.Owner, b.a.Repo)
	if err != nil {
		return nil, fmt.Errorf("reading the open catalog updates: %w", err)
	}
	var out []updateResult
	var mainTree *gitfs.FS
	for _, u := range pending {
		if strings.EqualFold(u.Base, commit.String()) {
			continue
		}
		if mainTree == nil {
			if mainTree, err = repo.TreeFS(ctx, commit, gitfs.Limits{}); err != nil {
				return out, err
			}
		}
		res, err := b.updatePackage(ctx, repo, commit, mainTree, pol, u.Package, nil)
		if err != nil {
			return out, fmt.Errorf("catalog update of %s: %w", u.Package, err)
		}
		out = append(out, res)
	}
	return out, nil
}

// carriedOver are the bundles of pkg's update still open, as additions to make again on the default branch:
// the images the App's newest commit for pkg added, while a pull request from the branch is open or none was
// opened for it yet (a try that stopped before opening it) — closing the pull request declines them —, each
// as the App's build recorded it and the default branch holds it.
func (b *rebuild) carriedOver(ctx context.Context, mainTree fs.FS, pkg string, open bool) ([]authoring.Addition, error) {
	a := b.a
	last, ok, err := b.r.updates.LatestUpdateCommit(ctx, a.Owner, a.Repo, pkg)
	if err != nil || !ok || last.Settled || (!open && last.Pull != 0) {
		return nil, err
	}
	var out []authoring.Addition
	for _, img := range last.Bundles {
		rec, ok, err := b.r.updates.BundleBuild(ctx, a.Owner, a.Repo, img)
		if err != nil {
			return nil, err
		}
		if !ok || rec.Package != pkg {
			continue
		}
		sub, err := fs.Sub(mainTree, rec.Dir)
		if err != nil {
			continue
		}
		bd, _, err := bundle.Load(ctx, sub, bundle.Limits{})
		if err != nil || bd == nil || bd.CSV == nil {
			b.log.Warn("a bundle of the open catalog update no longer loads on the default branch; left out", "package", pkg, "dir", rec.Dir, "err", err)
			continue
		}
		add, err := authoring.AdditionOf(bd, img)
		if err != nil {
			continue
		}
		out = append(out, add)
	}
	return out, nil
}

func (b *rebuild) updatePackage(ctx context.Context, repo *gitfs.Repo, commit gitfs.Hash, mainTree *gitfs.FS, pol *policy.Policy, pkg string, adds []authoring.Addition) (updateResult, error) {
	a := b.a
	res := updateResult{Package: pkg}
	pts, err := pkgtemplate.List(mainTree, pol, pkg)
	if err != nil {
		res.Problem = "the package's template mapping cannot be read: " + err.Error()
		return res, nil
	}
	if len(pts) == 0 {
		res.Action = "no template"
		return res, nil
	}
	branch := CatalogUpdateBranch(pkg)
	open, _, err := b.gh.PullRequests.List(ctx, a.Owner, a.Repo, &github.PullRequestListOptions{State: "open", Head: a.Owner + ":" + branch})
	if err != nil {
		return res, fmt.Errorf("listing the pull requests of %s: %w", branch, err)
	}
	carried, err := b.carriedOver(ctx, mainTree, pkg, len(open) > 0)
	if err != nil {
		return res, fmt.Errorf("reading the open catalog update: %w", err)
	}
	// The bundles still open first, in the order they were added, then this push's.
	var all []authoring.Addition
	seen := map[string]bool{}
	for _, add := range append(carried, adds...) {
		if !seen[add.Image] {
			seen[add.Image] = true
			all = append(all, add)
		}
	}
	files := map[string][]byte{}
	var added, pending, images []string
	for _, pt := range pts {
		src, err := fs.ReadFile(mainTree, pt.Template)
		if err != nil {
			res.Problem = fmt.Sprintf("the template %s cannot be read: %v", pt.Template, err)
			return res, nil
		}
		original := src
		changed := false
		for _, add := range all {
			// A bundle a default-branch commit took out of the template stays out.
			if why := b.takenOut(ctx, repo, commit, pt.Template, add.Image); why != "" {
				b.log.Info("bundle left out of the catalog update", "package", pkg, "bundle", add.Name, "why", why)
				continue
			}
			next, err := authoring.AddBundle(src, add)
			if errors.Is(err, authoring.ErrAlreadyThere) {
				continue
			}
			if err != nil {
				res.Problem = fmt.Sprintf("%s cannot take %s: %v", pt.Template, add.Name, err)
				return res, nil
			}
			src, changed = next, true
			added = append(added, add.Name)
			images = append(images, add.Image)
		}
		if !changed {
			continue
		}
		files[pt.Template] = src
		// The catalogs are rendered with the bundle directories of the default branch's head and the blobs of
		// its catalogs.
		rendered, findings := pkgtemplate.Render(ctx, mainTree, pol, pt, pkg, src, b.r.limits)
		if rendered == nil {
			// Say where, in the template as committed, when it does not render as it is either.
			if out, before := pkgtemplate.Render(ctx, mainTree, pol, pt, pkg, original, b.r.limits); out == nil && len(before) > 0 {
				findings = before
			}
			msg := "the template does not render"
			if len(findings) > 0 {
				msg += ": " + findings[0].String()
			}
			res.Problem = msg
			return res, nil
		}
		for p, data := range rendered {
			files[p] = data
		}
		pending = append(pending, pendingBundles(pt.Template, original, src, rendered, b.r.limits)...)
	}
	if len(files) == 0 {
		// Everything is on the default branch already (merged), or was taken out: the update is settled, and
		// a pull request still open from the branch has nothing left to bring.
		if err := b.r.updates.SettleUpdate(ctx, a.Owner, a.Repo, pkg); err != nil {
			return res, err
		}
		res.Action = "nothing to add"
		for _, p := range open {
			if _, _, err := b.gh.PullRequests.Edit(ctx, a.Owner, a.Repo, p.GetNumber(), &github.PullRequest{State: github.String("closed")}); err != nil {
				return res, fmt.Errorf("closing #%d, which has nothing left to add: %w", p.GetNumber(), err)
			}
			res.Number, res.Action = p.GetNumber(), "closed: nothing left to add"
		}
		return res, nil
	}
	sort.Strings(added)
	added = dedupeStrings(added)
	sort.Strings(pending)
	pending = dedupeStrings(pending)
	sort.Strings(images)
	images = dedupeStrings(images)
	treeHash, err := repo.TreeHash(ctx, commit)
	if err != nil {
		return res, err
	}
	paths := make([]string, 0, len(files))
	for p := range files {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	var entries []*github.TreeEntry
	for _, p := range paths {
		entries = append(entries, &github.TreeEntry{Path: github.String(p), Mode: github.String("100644"), Type: github.String("blob"), Content: github.String(string(files[p]))})
	}
	tree, _, err := b.gh.Git.CreateTree(ctx, a.Owner, a.Repo, treeHash.String(), entries)
	if err != nil {
		return res, fmt.Errorf("creating the tree: %w", err)
	}
	// The branch as it is: when it is already the App's commit of this very content on this very commit (a
	// try that stopped after moving it), it stays.
	var branchHead string
	ref, _, err := b.gh.Git.GetRef(ctx, a.Owner, a.Repo, "heads/"+branch)
	switch {
	case err == nil:
		branchHead = ref.GetObject().GetSHA()
	case ghapp.IsStatus(err, http.StatusNotFound):
	default:
		return res, fmt.Errorf("reading the branch %s: %w", branch, err)
	}
	if branchHead != "" && b.sameUpdate(ctx, branchHead, branch, commit, tree.GetSHA()) {
		if len(pending) == 0 {
			pending = added
		}
		return b.openOrUpdatePull(ctx, res, open, branch, branchHead, pkg, pending, all, paths)
	}
	msg := fmt.Sprintf("Catalog update: add %s to %s\n\nBundle images pushed from %s.\n\n%s\n", strings.Join(added, ", "), pkg, a.SHA, catalogUpdateMarker)
	c, _, err := b.gh.Git.CreateCommit(ctx, a.Owner, a.Repo, &github.Commit{Message: github.String(msg), Tree: tree,
		Parents: []*github.Commit{{SHA: github.String(commit.String())}}}, nil)
	if err != nil {
		return res, fmt.Errorf("creating the commit: %w", err)
	}
	// Recorded before the branch moves: the check of the pull request the move updates finds it.
	if err := b.r.updates.RecordUpdateCommit(ctx, a.Owner, a.Repo, store.UpdateCommit{SHA: c.GetSHA(), Package: pkg, Base: commit.String(),
		Bundles: images, Created: b.r.now()}); err != nil {
		return res, fmt.Errorf("recording the commit: %w", err)
	}
	if branchHead == "" {
		_, _, err = b.gh.Git.CreateRef(ctx, a.Owner, a.Repo, &github.Reference{Ref: github.String("refs/heads/" + branch), Object: &github.GitObject{SHA: c.SHA}})
	} else {
		_, _, err = b.gh.Git.UpdateRef(ctx, a.Owner, a.Repo, &github.Reference{Ref: github.String("refs/heads/" + branch), Object: &github.GitObject{SHA: c.SHA}}, true)
	}
	if err != nil {
		return res, fmt.Errorf("moving the branch %s: %w", branch, err)
	}
	if len(pending) == 0 {
		pending = added
	}
	return b.openOrUpdatePull(ctx, res, open, branch, c.GetSHA(), pkg, pending, all, paths)
}

// sameUpdate says whether the branch's head is the App's own commit of tree on commit.
func (b *rebuild) sameUpdate(ctx context.Context, head, branch string, commit gitfs.Hash, tree string) bool {
	a := b.a
	rec, ok, err := b.r.updates.UpdateCommit(ctx, a.Owner, a.Repo, head)
	if err != nil || !ok || !strings.EqualFold(rec.Base, commit.String()) {
		return false
	}
	fetched, err := b.fetch(ctx, "refs/heads/"+branch)
	if err != nil {
		return false
	}
	defer fetched.Close()
	h, err := fetched.Resolve(head)
	if err != nil {
		return false
	}
	t, err := fetched.TreeHash(ctx, h)
	return err == nil && strings.EqualFold(t.String(), tree)
}

// takenOut says why image must not be added to template again: a default-branch commit since the one that
// built it took it out ("" when none did, or when the App did not build it: this push's own bundles are
// recorded before the update is made).
func (b *rebuild) takenOut(ctx context.Context, repo *gitfs.Repo, head gitfs.Hash, template, image string) string {
	rec, ok, err := b.r.updates.BundleBuild(ctx, b.a.Owner, b.a.Repo, image)
	if err != nil {
		return err.Error()
	}
	if !ok {
		return "catalogbot did not build it"
	}
	built, err := repo.Resolve(rec.Commit)
	if err != nil {
		return "the commit that built it is gone"
	}
	why, err := removedFromTemplate(ctx, repo, head, built, template, image)
	if err != nil {
		return err.Error()
	}
	return why
}

// pendingBundles names the bundles a template adds over the default branch's: the images the new template
// names and the old one does not, named by the rendered catalogs' olm.bundle blobs.
func pendingBundles(file string, mainSrc, newSrc []byte, rendered map[string][]byte, lim catalog.Limits) []string {
	mt, _ := template.Parse(file, mainSrc, lim)
	nt, _ := template.Parse(file, newSrc, lim)
	if nt == nil {
		return nil
	}
	had := map[string]bool{}
	if mt != nil {
		for _, r := range mt.Refs() {
			had[r.Image] = true
		}
	}
	want := map[string]bool{}
	for _, r := range nt.Refs() {
		if !had[r.Image] {
			want[r.Image] = true
		}
	}
	var names []string
	seen := map[string]bool{}
	for p, data := range rendered {
		docs, _ := catalog.ParseFile(p, data, lim)
		for _, d := range docs {
			if d.Schema != "olm.bundle" || seen[d.Name] {
				continue
			}
			if img := d.Value.Get("image"); img != nil && want[img.Str()] {
				seen[d.Name] = true
				names = append(names, d.Name)
			}
		}
	}
	return names
}

// openOrUpdatePull shows the branch, whose head is the App's commit head, in a pull request (the first of
// open, the branch's open pull requests, or a new one), and records which.
func (b *rebuild) openOrUpdatePull(ctx context.Context, res updateResult, open []*github.PullRequest, branch, head, pkg string, added []string, adds []authoring.Addition, paths []string) (updateResult, error) {
	a := b.a
	title := fmt.Sprintf("Catalog update: %s %s", pkg, strings.Join(added, ", "))
	body := catalogUpdateBody(pkg, added, adds, a.SHA, paths)
	if len(open) > 0 {
		pr, _, err := b.gh.PullRequests.Edit(ctx, a.Owner, a.Repo, open[0].GetNumber(), &github.PullRequest{Title: github.String(title), Body: github.String(body)})
		if err != nil {
			return res, fmt.Errorf("updating #%d: %w", open[0].GetNumber(), err)
		}
		res.Number, res.Action = pr.GetNumber(), "updated"
		return res, b.r.updates.SetUpdatePull(ctx, a.Owner, a.Repo, head, res.Number)
	}
	pr, _, err := b.gh.PullRequests.Create(ctx, a.Owner, a.Repo, &github.NewPullRequest{Title: github.String(title), Head: github.String(branch),
		Base: github.String(b.branch), Body: github.String(body)})
	if err != nil {
		return res, fmt.Errorf("opening the pull request: %w", err)
	}
	res.Number, res.Action = pr.GetNumber(), "opened"
	return res, b.r.updates.SetUpdatePull(ctx, a.Owner, a.Repo, head, res.Number)
}

func dedupeStrings(s []string) []string {
	out := s[:0]
	for i, v := range s {
		if i == 0 || v != s[i-1] {
			out = append(out, v)
		}
	}
	return out
}

func catalogUpdateBody(pkg string, added []string, adds []authoring.Addition, sha string, files []string) string {
	var sb strings.Builder
	fmt.Fprintf(&sb, "catalogbot adds the bundles merged in %s to the templates of **%s** and renders the catalogs they map to.\n\n", sha, pkg)
	sb.WriteString("| bundle | image | channels | replaces |\n|---|---|---|---|\n")
	for _, a := range adds {
		fmt.Fprintf(&sb, "| `%s` | `%s` | %s | %s |\n", ghapp.MarkdownCode(a.Name), ghapp.MarkdownCode(a.Image), ghapp.MarkdownInline(strings.Join(a.Channels, ", ")), ghapp.MarkdownInline(a.Replaces))
	}
	sb.WriteString("\nUpgrade edges added:\n\n```mermaid\ngraph LR\n")
	for _, a := range adds {
		if a.Replaces != "" {
			fmt.Fprintf(&sb, "  %q --> %q\n", a.Replaces, a.Name)
		} else {
			fmt.Fprintf(&sb, "  %q\n", a.Name)
		}
		for _, s := range a.Skips {
			fmt.Fprintf(&sb, "  %q -.skip.-> %q\n", s, a.Name)
		}
	}
	sb.WriteString("```\n\nFiles:\n\n")
	for _, f := range files {
		fmt.Fprintf(&sb, "- `%s`\n", ghapp.MarkdownCode(f))
	}
	sb.WriteString("\nEverything here is derived from the default branch: the templates gain the bundles by digest and the catalogs are what the templates render to. " +
		"catalogbot builds this branch afresh on the default branch whenever that moves or another bundle of the package merges; closing this pull request declines its bundles. " +
		"A commit by anyone else on this branch makes it an ordinary pull request, which the package's owners approve.\n")
	return sb.String()
}

// digestRef is the image reference pinned by digest: the tag's repository and the digest.
func digestRef(tagRef, digest string) (string, error) {
	t, err := name.NewTag(tagRef, name.StrictValidation)
	if err != nil {
		return "", err
	}
	return t.Context().Name() + "@" + digest, nil
}
