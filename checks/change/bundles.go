package change

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"slices"
	"sort"
	"strings"

	"github.com/catalogbot/catalogbot/catalog"
	"github.com/catalogbot/catalogbot/catalog/bundle"
	"github.com/catalogbot/catalogbot/gitfs"
	"github.com/catalogbot/catalogbot/internal/pkgtemplate"
	"github.com/catalogbot/catalogbot/policy"
)

// BundleChange is one bundle directory (<root>/<package>/<version>/) a pull request adds, changes or
// removes.
type BundleChange struct {
	Root policy.BundleRoot
	// Dir is the bundle directory's repository path; Folder its <package> folder's name.
	Dir, Folder string
	Files       []FileChange
	// Head and Base are the bundle as read from each revision, nil where the directory is not a bundle.
	Head, Base *bundle.Bundle
	// Findings are the head bundle's, with repository paths.
	Findings []catalog.Finding
	// Package is the package the bundle's annotations declare (head, else base); "" when neither says.
	Package string
}

// PackageFileChange is a changed file of a package folder that is not in a bundle directory
// (<root>/<package>/ci.yaml, a Makefile, templates): its owner is the folder's package.
type PackageFileChange struct {
	Root    policy.BundleRoot
	Package string
	File    FileChange
}

// bundleOwners are, per package, the reviewers of <root>/<package>/ci.yaml in the base revision, for the
// bundle roots whose policy says so.
type bundleOwners map[string][]string

const MaxCIYamlBytes = 1 << 20

// prepareBundles sorts the changed files under bundle roots into bundle directories and package files,
// and reads the bundles of both revisions. It returns the files that are under no bundle root.
func prepareBundles(ctx context.Context, pr *PullRequest, cs *ChangeSet, files []FileChange) ([]FileChange, error) {
	if len(pr.Policy.Bundles) == 0 {
		return files, nil
	}
	var rest []FileChange
	byDir := map[string]*BundleChange{}
	var dirs []string
	for _, f := range files {
		p := f.Path
		root, ok := pr.Policy.BundleRootOf(p)
		if !ok && f.OldPath != "" {
			p = f.OldPath
			root, ok = pr.Policy.BundleRootOf(p)
		}
		if !ok {
			rest = append(rest, f)
			continue
		}
		rel, _ := relTo(root.Path, p)
		parts := strings.SplitN(rel, "/", 3)
		switch len(parts) {
		case 1: // a file of the root itself: no package owns it
			rest = append(rest, f)
		case 2:
			cs.PackageFiles = append(cs.PackageFiles, PackageFileChange{Root: root, Package: parts[0], File: f})
		default:
			dir := path.Join(root.Path, parts[0], parts[1])
			bc, ok := byDir[dir]
			if !ok {
				bc = &BundleChange{Root: root, Dir: dir, Folder: parts[0]}
				byDir[dir] = bc
				dirs = append(dirs, dir)
			}
			bc.Files = append(bc.Files, f)
		}
	}
	sort.Strings(dirs)
	for _, dir := range dirs {
		bc := byDir[dir]
		var err error
		if bc.Head, bc.Findings, err = ReadBundle(ctx, pr.Head.FS, dir); err != nil {
			return nil, fmt.Errorf("bundle %s in head: %w", dir, err)
		}
		if bc.Base, _, err = ReadBundle(ctx, pr.Base.FS, dir); err != nil {
			return nil, fmt.Errorf("bundle %s in base: %w", dir, err)
		}
		if bc.Head == nil && bc.Base == nil {
			// A directory of a package folder that is a bundle in neither revision (catalog-templates/, say):
			// its files are the package's other files.
			for _, f := range bc.Files {
				cs.PackageFiles = append(cs.PackageFiles, PackageFileChange{Root: bc.Root, Package: bc.Folder, File: f})
			}
			continue
		}
		switch {
		case bc.Head != nil && bc.Head.Package != "":
			bc.Package = bc.Head.Package
		case bc.Base != nil:
			bc.Package = bc.Base.Package
		}
		cs.Bundles = append(cs.Bundles, bc)
	}
	return rest, nil
}

// bundlePackages lists the packages the bundle changes concern (annotations and folders), sorted.
func (cs *ChangeSet) bundlePackages() []string {
	set := map[string]bool{}
	for _, b := range cs.Bundles {
		if b.Package != "" {
			set[b.Package] = true
		}
		set[b.Folder] = true
	}
	for _, f := range cs.PackageFiles {
		set[f.Package] = true
	}
	out := make([]string, 0, len(set))
	for p := range set {
		out = append(out, p)
	}
	sort.Strings(out)
	return out
}

// ReadBundle reads the bundle directory dir of a revision; nil when the revision has none there.
func ReadBundle(ctx context.Context, fsys fs.FS, dir string) (*bundle.Bundle, []catalog.Finding, error) {
	if info, err := fs.Stat(fsys, dir); err != nil || !info.IsDir() {
		return nil, nil, nil
	}
	sub, err := subFS(fsys, dir)
	if err != nil {
		return nil, nil, err
	}
	b, found, err := bundle.Load(ctx, sub, bundle.Limits{})
	if errors.Is(err, bundle.ErrNotABundle) {
		return nil, nil, nil
	}
	if err != nil {
		return nil, nil, err
	}
	for i := range found {
		found[i].File = path.Join(dir, found[i].File)
		if found[i].Package == "" {
			found[i].Package = b.Package
		}
	}
	return b, found, nil
}

// readCIOwners reads, from the base revision only, the reviewers of <root>/<pkg>/ci.yaml of every bundle
// root whose policy says ownersFromCIYaml, for each of pkgs.
func readCIOwners(pr *PullRequest, pkgs []string) (bundleOwners, error) {
	out := bundleOwners{}
	for _, root := range pr.Policy.Bundles {
		if !root.CIYamlOwners {
			continue
		}
		for _, pkg := range pkgs {
			if !pkgtemplate.ValidFolder(pkg) {
				continue
			}
			reviewers, err := ciReviewers(pr, path.Join(root.Path, pkg, "ci.yaml"))
			if err != nil {
				return nil, fmt.Errorf("could not verify who owns package %q: %w", pkg, err)
			}
			for _, r := range reviewers {
				if !slices.ContainsFunc(out[pkg], func(o string) bool { return policy.SameLogin(o, r) }) {
					out[pkg] = append(out[pkg], r)
				}
			}
		}
	}
	return out, nil
}

// ciReviewers reads the reviewers of the ci.yaml at ci in the base revision (none when it is absent or not
// readable as YAML; an error when a partial clone lacks it).
func ciReviewers(pr *PullRequest, ci string) ([]string, error) {
	data, err := pkgtemplate.ReadFileCapped(pr.Base.FS, ci, MaxCIYamlBytes)
	if errors.Is(err, gitfs.ErrObjectMissing) {
		return nil, fmt.Errorf("%s of the base revision: %w", ci, err)
	}
	if err != nil || data == nil {
		return nil, nil
	}
	docs, _ := catalog.ParseDocuments("ci.yaml", data, pr.Limits)
	if len(docs) == 0 {
		return nil, nil
	}
	var out []string
	if list := docs[0].Value.Get("reviewers"); list != nil {
		for _, it := range list.Items() {
			if it.Kind == catalog.KindString && policy.ValidLogin(it.Str()) {
				out = append(out, it.Str())
			}
		}
	}
	return out, nil
}

// maxFolderBundles bounds the bundle directories of one package folder read for the packages they declare.
const maxFolderBundles = 2000

// addFolderOwners adds to owners, for each of pkgs that has none yet, the ci.yaml reviewers of every touched package folder
// that is not named after it but whose bundle directories declare it on the base revision (the community's
// operators/konflux holds package konflux-operator): a folder's reviewers own the packages its bundles
// are, whatever its name. Only the base revision is read, so a pull request cannot make a folder declare a
// package it did not.
func addFolderOwners(ctx context.Context, pr *PullRequest, owners bundleOwners, pkgs, folders []string) error {
	// Only packages no folder of their own name gives reviewers: reading a folder's bundle directories is
	// left out for the usual layout.
	want := map[string]bool{}
	for _, p := range pkgs {
		if len(owners[p]) == 0 {
			want[p] = true
		}
	}
	if len(want) == 0 {
		return nil
	}
	for _, root := range pr.Policy.Bundles {
		if !root.CIYamlOwners {
			continue
		}
		for _, folder := range folders {
			if !pkgtemplate.ValidFolder(folder) {
				continue
			}
			reviewers, err := ciReviewers(pr, path.Join(root.Path, folder, "ci.yaml"))
			if err != nil {
				return fmt.Errorf("could not verify who owns package folder %q: %w", folder, err)
			}
			if len(reviewers) == 0 {
				continue
			}
			declared, err := folderPackages(ctx, pr.Base.FS, path.Join(root.Path, folder), pr.Limits)
			if err != nil {
				return err
			}
			for pkg := range declared {
				if !want[pkg] || pkg == folder {
					continue
				}
				for _, r := range reviewers {
					if !slices.ContainsFunc(owners[pkg], func(o string) bool { return policy.SameLogin(o, r) }) {
						owners[pkg] = append(owners[pkg], r)
					}
				}
			}
		}
	}
	return nil
}

// folderPackages are the packages the bundle directories of a package folder declare in their
// metadata/annotations.yaml (at most maxFolderBundles directories are read).
func folderPackages(ctx context.Context, fsys fs.FS, folder string, lim catalog.Limits) (map[string]bool, error) {
	entries, err := fs.ReadDir(fsys, folder)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, nil
		}
		return nil, fmt.Errorf("reading %s: %w", folder, err)
	}
	out := map[string]bool{}
	n := 0
	for _, e := range entries {
		if !e.IsDir() || n >= maxFolderBundles {
			continue
		}
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		n++
		name := path.Join(folder, e.Name(), "metadata", "annotations.yaml")
		data, err := pkgtemplate.ReadFileCapped(fsys, name, MaxCIYamlBytes)
		if errors.Is(err, gitfs.ErrObjectMissing) {
			return nil, fmt.Errorf("could not verify which packages %s holds: %s of the base revision: %w", folder, name, err)
		}
		if err != nil || data == nil {
			continue
		}
		docs, _ := catalog.ParseDocuments(name, data, lim)
		if len(docs) == 0 {
			continue
		}
		if ann := docs[0].Value.Get("annotations"); ann != nil {
			if p := ann.Get(bundle.AnnotationPackage); p != nil && p.Kind == catalog.KindString && p.Str() != "" {
				out[strings.TrimSpace(p.Str())] = true
			}
		}
	}
	return out, nil
}

// OwnsBundlePackage reports whether login owns package pkg: a policy owner or, for bundle roots with
// ownersFromCIYaml, a reviewer in its ci.yaml of the base revision. Such an owner owns all of the package:
// its bundle directories, the other files of its package folders (ci.yaml and templates included) and its
// blobs in every catalog.
func OwnsBundlePackage(ctx context.Context, pr *PullRequest, pkg, login string) (policy.Decision, error) {
	d, err := pr.Policy.IsOwner(ctx, pkg, login, pr.Teams)
	if d == policy.Yes {
		return d, err
	}
	for _, r := range pr.Changes.ciOwners[pkg] {
		if policy.SameLogin(r, login) {
			return policy.Yes, nil
		}
	}
	return d, err
}

// PackageOwnerNames are the owners of pkg as @names: the policy's, then its ci.yaml reviewers.
func PackageOwnerNames(pr *PullRequest, pkg string) []string {
	owners, _ := pr.Policy.Owners(pkg)
	var names []string
	for _, o := range owners {
		names = append(names, "@"+strings.TrimPrefix(o.String(), "@"))
	}
	for _, r := range pr.Changes.ciOwners[pkg] {
		names = append(names, "@"+r)
	}
	return names
}

// BundleOwnersText names who owns pkg, for messages.
func BundleOwnersText(pr *PullRequest, pkg string) string {
	names := PackageOwnerNames(pr, pkg)
	if len(names) == 0 {
		return "it has no owners, so only maintainers may change it"
	}
	return "its owners are " + strings.Join(names, ", ")
}

// FirstFile is where a finding about a whole bundle directory goes: its first changed file present in head.
func (b *BundleChange) FirstFile() catalog.Position {
	for _, f := range b.Files {
		if f.Status != FileDeleted {
			return catalog.Position{File: f.Path, Line: 1}
		}
	}
	return catalog.Position{File: b.Files[0].Path}
}

// BundleOwners are the owners of packages that the base's ci.yaml files add to the policy's, by package.
func (cs *ChangeSet) BundleOwners() map[string][]string {
	out := make(map[string][]string, len(cs.ciOwners))
	for k, v := range cs.ciOwners {
		out[k] = append([]string(nil), v...)
	}
	return out
}

// CIOwners are the reviewers the ci.yaml of pkg names in base (empty when it names none).
func (cs *ChangeSet) CIOwners(pkg string) []string { return cs.ciOwners[pkg] }
