package checks

import (
	"context"
	"fmt"
	"path"
	"slices"
	"sort"
	"strings"

	"github.com/catalogbot/catalogbot/catalog"
	"github.com/catalogbot/catalogbot/checks/change"
	"github.com/catalogbot/catalogbot/checks/render"
	"github.com/catalogbot/catalogbot/internal/markdown"
	"github.com/catalogbot/catalogbot/policy"
)

// Immutability checks that released content stays as it was: a bundle present
// in the base revision is neither modified nor removed, and no entry of a
// released channel is removed. A broken bundle is fixed by a new bundle with
// an upgrade edge from it, never by editing it. Maintainers may still do it
// (to pull a dangerous release, say): for them the findings are warnings.
type Immutability struct{}

func (Immutability) Name() string { return "immutability" }

const (
	ruleBundleModified = "immutability.bundle-modified"
	ruleBundleRemoved  = "immutability.bundle-removed"
	ruleEntryRemoved   = "immutability.entry-removed"
	ruleRemovalAllowed = "immutability.removal-allowed"
)

func immutabilityRules() []catalog.Rule {
	return []catalog.Rule{
		{ID: ruleBundleModified, Severity: catalog.SeverityError, Source: "Operator Framework packaging format (bundles are immutable); production pipelines",
			Summary: "a released bundle (present on the base branch) was modified",
			Hint:    "revert the change to the released bundle and publish a new bundle version with an upgrade edge (replaces/skips) from it"},
		{ID: ruleBundleRemoved, Severity: catalog.SeverityError, Source: "Operator Framework packaging format (bundles are immutable); production pipelines",
			Summary: "a released bundle was removed from the catalog",
			Hint:    "keep the bundle; to stop new installs, deprecate it with an olm.deprecations entry or publish a fixed version that skips it"},
		{ID: ruleEntryRemoved, Severity: catalog.SeverityError, Source: "production pipelines (released channel entries are not removed)",
			Summary: "an entry of a released channel was removed, cutting the upgrade path of users on that version",
			Hint:    "keep the entry; deprecate the bundle or channel instead (olm.deprecations)"},
		{ID: ruleRemovalAllowed, Severity: catalog.SeverityWarning, Source: "catalogbot (the policy's removals: pruning nightly and pre-release builds)",
			Summary: "released content was removed as the policy's removals allow: the package's owners vouch for it by making or approving the pull request",
			Hint:    "nothing to do if the removal is intended; the ownership check asks an owner of the package to approve it when the author is not one"},
	}
}

func (Immutability) Run(ctx context.Context, pr *PullRequest) (Result, error) {
	if err := Prepare(ctx, pr); err != nil {
		return Result{}, err
	}
	sev := catalog.SeverityError
	maint, _ := pr.Policy.IsMaintainer(ctx, pr.Author, pr.Teams)
	if maint == policy.Yes {
		sev = catalog.SeverityWarning
	}
	fs := immutabilityFindings(pr, sev)
	res := Result{Findings: fs, Conclusion: Conclude(fs, false)}
	allowed := 0
	for _, f := range fs {
		if f.Rule == ruleRemovalAllowed {
			allowed++
		}
	}
	switch {
	case len(fs) > 0 && allowed == len(fs):
		res.Title = "Removals the policy allows"
		res.Summary = fmt.Sprintf("%s of released content, each allowed by the policy's removals (annotated): the package's owners make or approve them, as the ownership check asks.", markdown.Count(allowed, "removal", "removals"))
	case len(fs) == 0:
		res.Title = "Released content unchanged"
		res.Summary = "No released bundle or channel entry was modified or removed."
	case res.Conclusion == Success:
		res.Title = "Released content changed by a maintainer"
		res.Summary = fmt.Sprintf("@%s is a maintainer, so changes to released content are warnings. %s annotated.", pr.Author, markdown.Count(len(fs), "change is", "changes are"))
	default:
		res.Title = "Released content was changed"
		res.Summary = fmt.Sprintf("%s to released content annotated. Bundles on the base branch are released: fix a bundle by publishing a new version with an upgrade edge from it.", markdown.Count(len(fs), "change", "changes"))
	}
	return res, nil
}

// AllowedRemovals describes the removals of released content that the pull request makes and the policy's
// removals allow, for the audit log of a merge (nil when there are none). Prepare must have run.
func AllowedRemovals(pr *PullRequest) []string {
	if pr.Changes == nil {
		return nil
	}
	var out []string
	for _, f := range immutabilityFindings(pr, catalog.SeverityError) {
		if f.Rule == ruleRemovalAllowed {
			out = append(out, f.Message)
		}
	}
	return out
}

// immutabilityFindings are the changes to released content, removals the policy allows included, with sev
// for those it does not allow.
func immutabilityFindings(pr *PullRequest, sev catalog.Severity) []catalog.Finding {
	var fs []catalog.Finding
	add := func(rule, pkg string, pos catalog.Position, msg string) {
		fs = append(fs, catalog.Finding{Rule: rule, Severity: sev, Position: pos, Package: pkg, Message: msg, Hint: ruleHint(rule)})
	}
	// A removal the policy's removals allow is the owners' to make: ownership asks for them.
	removal := func(rule, pkg, version string, channels []string, pos catalog.Position, msg string) {
		if r, ok := pr.Policy.RemovalAllowed(pkg, version, channels); ok {
			fs = append(fs, catalog.Finding{Rule: ruleRemovalAllowed, Severity: catalog.SeverityWarning, Position: pos, Package: pkg,
				Message: msg + "; " + policy.FileName + " allows it (" + r.String() + "), so it is the package owners' to make", Hint: ruleHint(ruleRemovalAllowed)})
			return
		}
		add(rule, pkg, pos, msg)
	}
	for _, cc := range pr.Changes.Catalogs {
		for _, d := range cc.Docs {
			switch d.Key.Schema {
			case catalog.SchemaBundle:
				switch d.Kind {
				case change.Modified:
					add(ruleBundleModified, d.Key.Package, headPos(cc, d),
						fmt.Sprintf("released bundle %q of package %q was modified (changed: %s)", d.Key.Name, d.Key.Package, strings.Join(changedKeys(&d.Base.Value, &d.Head.Value), ", ")))
				case change.Removed:
					removal(ruleBundleRemoved, d.Key.Package, docVersion(d.Base), baseChannelsOf(cc, d.Key.Package, d.Key.Name), basePos(cc, d),
						fmt.Sprintf("released bundle %q of package %q was removed", d.Key.Name, d.Key.Package)+causeNote(cc, d))
				}
			case catalog.SchemaChannel:
				if d.Base == nil {
					continue
				}
				var kept map[string]bool
				if d.Head != nil {
					kept = map[string]bool{}
					for _, n := range change.EntryNames(&d.Head.Value) {
						kept[n] = true
					}
				}
				var gone []string
				for _, n := range change.EntryNames(&d.Base.Value) {
					if !kept[n] {
						gone = append(gone, n)
					}
				}
				if len(gone) == 0 {
					continue
				}
				pos := basePos(cc, d)
				if d.Head != nil {
					pos = headPos(cc, d)
				}
				for _, n := range gone {
					removal(ruleEntryRemoved, d.Key.Package, entryVersion(cc, d.Key.Package, n), []string{d.Key.Name}, pos,
						fmt.Sprintf("entry %q was removed from released channel %q of package %q", n, d.Key.Name, d.Key.Package)+causeNote(cc, d))
				}
			}
		}
	}
	// A bundle directory on the base branch is a released bundle: its files do not change.
	for _, b := range pr.Changes.Bundles {
		if b.Base == nil {
			continue
		}
		name := b.Dir
		if b.Base.CSV != nil {
			name = b.Base.CSV.Name
		}
		if b.Head == nil {
			version := path.Base(b.Dir)
			if b.Base.CSV != nil {
				if ver := render.CSVString(b.Base, "spec", "version"); ver != nil {
					version = ver.Str()
				}
			}
			removal(ruleBundleRemoved, b.Package, version, b.Base.Channels, catalog.Position{File: b.Files[0].Path},
				fmt.Sprintf("released bundle %s (directory %s) was removed", name, b.Dir))
			continue
		}
		for _, f := range b.Files {
			pos := catalog.Position{File: f.Path, Line: 1}
			if f.Status == FileDeleted {
				pos.Line = 0
			}
			add(ruleBundleModified, b.Package, pos, fmt.Sprintf("%s of released bundle %s was %s; a released bundle directory does not change", f.Path, name, f.Status))
		}
	}
	return fs
}

// headPos is where a changed blob starts in head, as a repository path.
func headPos(cc *change.CatalogChange, d change.DocChange) catalog.Position {
	p := d.Head.Pos
	p.File = cc.RepoPath(p.File)
	return p
}

// basePos names the file a removed blob was in; base lines do not exist in
// head, so only the file is given. When the file did not change but stopped
// being loaded, the position is the changed line of the file that caused it.
func basePos(cc *change.CatalogChange, d change.DocChange) catalog.Position {
	if c, ok := cc.Causes[d.Base.Pos.File]; ok && c.File != "" {
		return c.Position()
	}
	return catalog.Position{File: cc.RepoPath(d.Base.Pos.File)}
}

// causeNote explains, for a message, content that left the loaded catalog without its file changing.
func causeNote(cc *change.CatalogChange, d change.DocChange) string {
	if d.Base == nil {
		return ""
	}
	if c, ok := cc.Causes[d.Base.Pos.File]; ok {
		return " (" + c.Describe(cc.RepoPath(d.Base.Pos.File)) + ")"
	}
	return ""
}

// changedKeys lists the top-level keys whose values differ, sorted.
func changedKeys(a, b *catalog.Value) []string {
	seen := map[string]bool{}
	var out []string
	for _, v := range []*catalog.Value{a, b} {
		for _, f := range v.Fields() {
			if seen[f.Key] {
				continue
			}
			seen[f.Key] = true
			av, bv := a.Get(f.Key), b.Get(f.Key)
			if av == nil || bv == nil || !change.SameValue(av, bv) {
				out = append(out, f.Key)
			}
		}
	}
	sort.Strings(out)
	return out
}

// docVersion is the version of a bundle blob: its olm.package property's version ("" when it has none).
func docVersion(d *catalog.Doc) string {
	props := d.Value.Get("properties")
	if props == nil || props.Kind != catalog.KindArray {
		return ""
	}
	for _, p := range props.Items() {
		if t := p.Get("type"); t == nil || t.Kind != catalog.KindString || t.Str() != "olm.package" {
			continue
		}
		if v := p.Get("value"); v != nil {
			if ver := v.Get("version"); ver != nil && ver.Kind == catalog.KindString {
				return ver.Str()
			}
		}
	}
	return ""
}

// baseChannelsOf lists the channels of the base revision that had an entry for bundle, among the changed
// channel blobs of the package (a removed bundle leaves the channels that held it, so they changed).
func baseChannelsOf(cc *change.CatalogChange, pkg, bundle string) []string {
	var out []string
	for _, d := range cc.Docs {
		if d.Key.Schema != catalog.SchemaChannel || d.Key.Package != pkg || d.Base == nil {
			continue
		}
		for _, n := range change.EntryNames(&d.Base.Value) {
			if n == bundle && !slices.Contains(out, d.Key.Name) {
				out = append(out, d.Key.Name)
			}
		}
	}
	return out
}

// entryVersion is the version of the bundle an entry names, from its blob on either side; else "".
func entryVersion(cc *change.CatalogChange, pkg, name string) string {
	for _, d := range cc.Docs {
		if d.Key.Schema == catalog.SchemaBundle && d.Key.Package == pkg && d.Key.Name == name {
			for _, doc := range []*catalog.Doc{d.Base, d.Head} {
				if doc != nil {
					if v := docVersion(doc); v != "" {
						return v
					}
				}
			}
		}
	}
	if cc.Head != nil {
		for _, doc := range cc.Head.Docs() {
			if doc.Schema == catalog.SchemaBundle && doc.Package == pkg && doc.Name == name {
				return docVersion(&doc)
			}
		}
	}
	return ""
}
