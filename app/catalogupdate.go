package app

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

	"github.com/catalogbot/catalogbot/catalog"
	"github.com/catalogbot/catalogbot/catalog/template"
	"github.com/catalogbot/catalogbot/checks"
	"github.com/catalogbot/catalogbot/gitfs"
	"github.com/catalogbot/catalogbot/policy"
)

// catalogUpdateBranch is the branch of the catalog update pull request of a package.
func catalogUpdateBranch(pkg string) string { return "catalogbot/catalog-update/" + pkg }

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
// catalogbot/catalog-update/<package>: a new commit on the branch when it exists (the bundles merged while
// its pull request is open collect there), else on the commit just built. Everything in it is derived, so
// the App checks it like any pull request.
func (b *rebuild) catalogUpdate(ctx context.Context, repo *gitfs.Repo, commit gitfs.Hash, pol *policy.Policy, bundles []bundleResult) ([]updateResult, error) {
	byPkg := map[string][]template.Addition{}
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

func (b *rebuild) updatePackage(ctx context.Context, repo *gitfs.Repo, commit gitfs.Hash, mainTree *gitfs.FS, pol *policy.Policy, pkg string, adds []template.Addition) (updateResult, error) {
	a := b.a
	res := updateResult{Package: pkg}
	pts, err := checks.PackageTemplates(mainTree, pol, pkg)
	if err != nil {
		res.Problem = "the package's template mapping cannot be read: " + err.Error()
		return res, nil
	}
	if len(pts) == 0 {
		res.Action = "no template"
		return res, nil
	}
	branch := catalogUpdateBranch(pkg)
	parent := commit
	parentSHA := commit.String()
	ref, _, err := b.gh.Git.GetRef(ctx, a.Owner, a.Repo, "heads/"+branch)
	switch {
	case err == nil:
		parentSHA = ref.GetObject().GetSHA()
		fetched, err := b.fetch(ctx, "refs/heads/"+branch)
		if err != nil {
			return res, err
		}
		defer fetched.Close()
		if parent, err = fetched.Resolve(parentSHA); err != nil {
			return res, fmt.Errorf("the branch %s: %w", branch, err)
		}
		repo = fetched
	case isStatus(err, http.StatusNotFound):
	default:
		return res, fmt.Errorf("reading the branch %s: %w", branch, err)
	}
	files := map[string][]byte{}
	var added, pending []string
	for _, pt := range pts {
		src, err := repo.ReadFile(ctx, parent, pt.Template, maxTemplateFileBytes)
		if err != nil {
			res.Problem = fmt.Sprintf("the template %s cannot be read: %v", pt.Template, err)
			return res, nil
		}
		original := src
		changed := false
		for _, add := range adds {
			next, err := template.AddBundle(src, add)
			if errors.Is(err, template.ErrAlreadyThere) {
				continue
			}
			if err != nil {
				res.Problem = fmt.Sprintf("%s cannot take %s: %v", pt.Template, add.Name, err)
				return res, nil
			}
			src, changed = next, true
			added = append(added, add.Name)
		}
		if !changed {
			continue
		}
		files[pt.Template] = src
		// The catalogs are rendered with the bundle directories of the commit just built (the new bundles are
		// there) and the blobs of its catalogs.
		rendered, findings := checks.RenderPackageTemplate(ctx, mainTree, pol, pt, pkg, src, b.r.limits)
		if rendered == nil {
			// Say where, in the template as committed, when it does not render as it is either.
			if out, before := checks.RenderPackageTemplate(ctx, mainTree, pol, pt, pkg, original, b.r.limits); out == nil && len(before) > 0 {
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
		// Every bundle the branch adds over the default branch (earlier updates still open included), for the
		// pull request's title and body.
		if mainSrc, err := fs.ReadFile(mainTree, pt.Template); err == nil {
			pending = append(pending, pendingBundles(pt.Template, mainSrc, src, rendered, b.r.limits)...)
		}
	}
	if len(files) == 0 {
		if parentSHA == commit.String() {
			res.Action = "nothing to add"
			return res, nil
		}
		// The branch holds the bundles already (a try that stopped after moving it, or a pull request closed
		// by hand): make sure a pull request shows it.
		return b.ensurePull(ctx, res, branch, pkg, adds)
	}
	sort.Strings(added)
	added = dedupeStrings(added)
	sort.Strings(pending)
	pending = dedupeStrings(pending)
	treeHash, err := repo.TreeHash(ctx, parent)
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
	msg := fmt.Sprintf("Catalog update: add %s to %s\n\nBundle images pushed from %s.\n\n%s\n", strings.Join(added, ", "), pkg, a.SHA, catalogUpdateMarker)
	c, _, err := b.gh.Git.CreateCommit(ctx, a.Owner, a.Repo, &github.Commit{Message: github.String(msg), Tree: tree,
		Parents: []*github.Commit{{SHA: github.String(parentSHA)}}}, nil)
	if err != nil {
		return res, fmt.Errorf("creating the commit: %w", err)
	}
	if parentSHA == commit.String() {
		_, _, err = b.gh.Git.CreateRef(ctx, a.Owner, a.Repo, &github.Reference{Ref: github.String("refs/heads/" + branch), Object: &github.GitObject{SHA: c.SHA}})
	} else {
		_, _, err = b.gh.Git.UpdateRef(ctx, a.Owner, a.Repo, &github.Reference{Ref: github.String("refs/heads/" + branch), Object: &github.GitObject{SHA: c.SHA}}, false)
	}
	if err != nil {
		return res, fmt.Errorf("moving the branch %s: %w", branch, err)
	}
	if len(pending) == 0 {
		pending = added
	}
	return b.openOrUpdatePull(ctx, res, branch, pkg, pending, adds, paths)
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

// ensurePull opens the pull request of a branch that has none open.
func (b *rebuild) ensurePull(ctx context.Context, res updateResult, branch, pkg string, adds []template.Addition) (updateResult, error) {
	a := b.a
	open, _, err := b.gh.PullRequests.List(ctx, a.Owner, a.Repo, &github.PullRequestListOptions{State: "open", Head: a.Owner + ":" + branch})
	if err != nil {
		return res, fmt.Errorf("listing the pull requests of %s: %w", branch, err)
	}
	if len(open) > 0 {
		res.Number, res.Action = open[0].GetNumber(), "already open"
		return res, nil
	}
	var names []string
	for _, add := range adds {
		names = append(names, add.Name)
	}
	return b.openOrUpdatePull(ctx, res, branch, pkg, names, adds, nil)
}

func (b *rebuild) openOrUpdatePull(ctx context.Context, res updateResult, branch, pkg string, added []string, adds []template.Addition, paths []string) (updateResult, error) {
	a := b.a
	title := fmt.Sprintf("Catalog update: %s %s", pkg, strings.Join(added, ", "))
	body := catalogUpdateBody(pkg, added, adds, a.SHA, paths)
	open, _, err := b.gh.PullRequests.List(ctx, a.Owner, a.Repo, &github.PullRequestListOptions{State: "open", Head: a.Owner + ":" + branch})
	if err != nil {
		return res, fmt.Errorf("listing the pull requests of %s: %w", branch, err)
	}
	if len(open) > 0 {
		pr, _, err := b.gh.PullRequests.Edit(ctx, a.Owner, a.Repo, open[0].GetNumber(), &github.PullRequest{Title: github.String(title), Body: github.String(body)})
		if err != nil {
			return res, fmt.Errorf("updating #%d: %w", open[0].GetNumber(), err)
		}
		res.Number, res.Action = pr.GetNumber(), "updated"
		return res, nil
	}
	pr, _, err := b.gh.PullRequests.Create(ctx, a.Owner, a.Repo, &github.NewPullRequest{Title: github.String(title), Head: github.String(branch),
		Base: github.String(b.branch), Body: github.String(body)})
	if err != nil {
		return res, fmt.Errorf("opening the pull request: %w", err)
	}
	res.Number, res.Action = pr.GetNumber(), "opened"
	return res, nil
}

// maxTemplateFileBytes bounds a template read for a catalog update.
const maxTemplateFileBytes = 4 << 20

func dedupeStrings(s []string) []string {
	out := s[:0]
	for i, v := range s {
		if i == 0 || v != s[i-1] {
			out = append(out, v)
		}
	}
	return out
}

func catalogUpdateBody(pkg string, added []string, adds []template.Addition, sha string, files []string) string {
	var sb strings.Builder
	fmt.Fprintf(&sb, "catalogbot adds the bundles merged in %s to the templates of **%s** and renders the catalogs they map to.\n\n", sha, pkg)
	sb.WriteString("| bundle | image | channels | replaces |\n|---|---|---|---|\n")
	for _, a := range adds {
		fmt.Fprintf(&sb, "| `%s` | `%s` | %s | %s |\n", markdownCode(a.Name), markdownCode(a.Image), markdownInline(strings.Join(a.Channels, ", ")), markdownInline(a.Replaces))
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
		fmt.Fprintf(&sb, "- `%s`\n", markdownCode(f))
	}
	sb.WriteString("\nEverything here is derived from the default branch: the templates gain the bundles by digest and the catalogs are what the templates render to. A commit by anyone else on this branch makes it an ordinary pull request.\n")
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
