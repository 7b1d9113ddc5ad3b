package checks

import (
	"context"
	"fmt"
	"path"
	"sort"
	"strings"

	"github.com/catalogbot/catalogbot/catalog"
	"github.com/catalogbot/catalogbot/catalog/template"
	"github.com/catalogbot/catalogbot/checks/change"
	"github.com/catalogbot/catalogbot/checks/render"
	"github.com/catalogbot/catalogbot/internal/markdown"
	"github.com/catalogbot/catalogbot/internal/pkgtemplate"
	"github.com/catalogbot/catalogbot/policy"
	"github.com/catalogbot/catalogbot/registry"
)

// ImageRegistry answers whether image references exist, by HEAD requests
// behind a host guard and a request budget. *registry.Client implements it.
type ImageRegistry interface {
	CheckAll(ctx context.Context, refs []string) map[string]registry.Result
}

// Images checks every image reference of the bundles a pull request adds or
// changes (the bundle image and every related image): it must parse, be in an
// allowed registry (others are never contacted), be pinned by digest when the
// policy says so, and exist.
type Images struct {
	// Registry checks existence. Nil: nothing can be verified (neutral).
	Registry ImageRegistry
}

func (Images) Name() string { return "images" }

// Costly: every reference is a registry request.
func (Images) Costly() bool { return true }

const (
	ruleImageInvalid      = "images.invalid-reference"
	ruleImageNotAllowed   = "images.registry-not-allowed"
	ruleImageNotPinned    = "images.not-pinned"
	ruleImageMissing      = "images.missing"
	ruleImageInaccessible = "images.inaccessible"
	ruleImageUnverified   = "images.unverified"
)

func imagesRules() []catalog.Rule {
	return []catalog.Rule{
		{ID: ruleImageInvalid, Severity: catalog.SeverityError, Source: "opm v1.64+ (image references must parse)",
			Summary: "an image reference does not parse",
			Hint:    "write it in full: registry/repository:tag or registry/repository@sha256:<64 hex digits>"},
		{ID: ruleImageNotAllowed, Severity: catalog.SeverityError, Source: "policy images.allowedRegistries",
			Summary: "an image reference a pull request adds (a bundle's image or related image, a bundle directory's CSV, a template entry) points outside the registries the policy allows; reported by the validation check, without a registry, and never contacted",
			Hint:    "push the image to an allowed registry (images.allowedRegistries in the base branch's .catalogbot.yaml)"},
		{ID: ruleImageNotPinned, Severity: catalog.SeverityError, Source: "policy images.requireDigest; OpenShift disconnected-install guidance",
			Summary: "an image reference a pull request adds is a tag, and the policy requires digests; reported by the validation check, without a registry",
			Hint:    "reference the image by digest (@sha256:…), e.g. from `skopeo inspect` or `crane digest`"},
		{ID: ruleImageMissing, Severity: catalog.SeverityError, Source: "catalogbot",
			Summary: "the registry says the image does not exist (404)",
			Hint:    "push the image first, or fix the reference"},
		{ID: ruleImageInaccessible, Severity: catalog.SeverityError, Source: "catalogbot",
			Summary: "the registry refused access (401/403): the image does not exist or is not accessible",
			Hint:    "make the repository public, or give catalogbot credentials for it; check the reference for typos"},
		{ID: ruleImageUnverified, Severity: catalog.SeverityWarning, Source: "catalogbot",
			Summary: "the image could not be verified (rate limit, registry error, timeout, refused address): not a pass",
			Hint:    "re-run the check later; if it persists, check that the registry is reachable and allowed"},
	}
}

// ImageRef is one image reference in a catalog, with where it is written.
type ImageRef struct {
	Ref     string
	Pos     catalog.Position
	Package string
	Bundle  string
	// Field is "image" or "relatedImages[<name>]".
	Field string
}

// BundleImageRefs lists a bundle's image and related images, with positions
// relative to the catalog root.
func BundleImageRefs(b *catalog.Bundle) []ImageRef {
	var out []ImageRef
	if b.Image != "" {
		out = append(out, ImageRef{Ref: b.Image, Pos: b.ImagePos, Package: b.Package, Bundle: b.Name, Field: "image"})
	}
	for _, ri := range b.RelatedImages {
		if ri.Image == "" || ri.Image == b.Image {
			continue
		}
		out = append(out, ImageRef{Ref: ri.Image, Pos: ri.ImagePos, Package: b.Package, Bundle: b.Name, Field: fmt.Sprintf("relatedImages[%s]", ri.Name)})
	}
	return out
}

// ImageTextFindings applies the policy's rules about the text of image references, which need no
// registry: a reference outside images.allowedRegistries (images.registry-not-allowed) and, under
// images.requireDigest, a reference by tag (images.not-pinned). It returns the findings and the references
// that break neither rule (references that do not parse are among them: they are the images check's).
func ImageTextFindings(rules policy.Images, refs []ImageRef) (fs []catalog.Finding, rest []ImageRef) {
	for _, r := range refs {
		ref, err := registry.ParseRef(r.Ref)
		switch {
		case err != nil:
			rest = append(rest, r)
		case !rules.RegistryAllowed(r.Ref):
			fs = append(fs, imageFinding(r, ruleImageNotAllowed, catalog.SeverityError,
				fmt.Sprintf("%s is not in an allowed registry (%s); it was not contacted", r.Ref, strings.Join(rules.AllowedRegistries, ", "))))
		case rules.RequireDigest && !strings.HasPrefix(ref.Identifier(), "sha256:"):
			fs = append(fs, imageFinding(r, ruleImageNotPinned, catalog.SeverityError, fmt.Sprintf("%s is referenced by tag %q, not by digest", r.Ref, ref.Identifier())))
		default:
			rest = append(rest, r)
		}
	}
	return fs, rest
}

func imageFinding(r ImageRef, rule string, sev catalog.Severity, msg string) catalog.Finding {
	what := fmt.Sprintf("bundle %q %s", r.Bundle, r.Field)
	if r.Bundle == "" {
		what = r.Field
	}
	return catalog.Finding{Rule: rule, Severity: sev, Position: r.Pos, Package: r.Package,
		Message: what + ": " + msg, Hint: ruleHint(rule)}
}

// CheckImageRefs judges image references against the policy and the
// registry. It returns the findings and whether some could not be verified.
// Each distinct reference is asked once; references that are invalid, not
// allowed or (under requireDigest) not pinned are never sent to a registry.
func CheckImageRefs(ctx context.Context, reg ImageRegistry, rules policy.Images, refs []ImageRef) (fs []catalog.Finding, unverified bool, asked int) {
	fs, refs = ImageTextFindings(rules, refs)
	return checkImageRefs(ctx, reg, rules, refs, fs)
}

func checkImageRefs(ctx context.Context, reg ImageRegistry, rules policy.Images, refs []ImageRef, fs []catalog.Finding) ([]catalog.Finding, bool, int) {
	add := func(r ImageRef, rule string, sev catalog.Severity, msg string) {
		fs = append(fs, imageFinding(r, rule, sev, msg))
	}
	unverified := false
	var contact []ImageRef
	for _, r := range refs {
		if _, err := registry.ParseRef(r.Ref); err != nil {
			add(r, ruleImageInvalid, catalog.SeverityError, err.Error())
			continue
		}
		contact = append(contact, r)
	}
	if len(contact) == 0 {
		return fs, false, 0
	}
	distinct := map[string]bool{}
	var list []string
	for _, r := range contact {
		if !distinct[r.Ref] {
			distinct[r.Ref] = true
			list = append(list, r.Ref)
		}
	}
	sort.Strings(list)
	var results map[string]registry.Result
	if reg != nil {
		results = reg.CheckAll(registry.WithTokenHosts(ctx, rules.RegistryHosts()...), list)
	}
	for _, r := range contact {
		res, ok := results[r.Ref]
		if !ok {
			res = registry.Result{Kind: registry.Unverified, Reason: "no registry client is configured"}
		}
		switch res.Kind {
		case registry.Exists:
		case registry.Missing:
			add(r, ruleImageMissing, catalog.SeverityError, fmt.Sprintf("%s does not exist (%s)", r.Ref, res.Reason))
		case registry.Inaccessible:
			add(r, ruleImageInaccessible, catalog.SeverityError, fmt.Sprintf("%s does not exist or is not accessible (%s)", r.Ref, res.Reason))
		case registry.Invalid:
			add(r, ruleImageInvalid, catalog.SeverityError, fmt.Sprintf("%s: %s", r.Ref, res.Reason))
		default:
			unverified = true
			add(r, ruleImageUnverified, catalog.SeverityWarning, fmt.Sprintf("could not verify %s: %s", r.Ref, res.Reason))
		}
	}
	return fs, unverified, len(list)
}

// changedImageRefs lists the image references of the bundles a pull request adds or changes: the image and
// related images of every olm.bundle blob of a changed catalog file, and the images a changed bundle
// directory's CSV names.
func changedImageRefs(pr *PullRequest) []ImageRef {
	var refs []ImageRef
	for _, cc := range pr.Changes.Catalogs {
		for _, d := range cc.Docs {
			if d.Key.Schema != catalog.SchemaBundle || d.Head == nil {
				continue
			}
			p := cc.Head.Package(d.Key.Package)
			if p == nil {
				continue
			}
			// Every blob of that name in a changed file (duplicates are
			// validation's business, but each is checked).
			for _, b := range p.Bundles {
				if b.Name != d.Key.Name || b.Pos.File != d.Head.Pos.File || b.Pos.Line != d.Head.Pos.Line {
					continue
				}
				for _, r := range BundleImageRefs(b) {
					r.Pos.File = cc.RepoPath(r.Pos.File)
					refs = append(refs, r)
				}
			}
		}
	}
	for _, b := range pr.Changes.Bundles {
		refs = append(refs, bundleDirImageRefs(b)...)
	}
	return refs
}

func (c Images) Run(ctx context.Context, pr *PullRequest) (Result, error) {
	if err := Prepare(ctx, pr); err != nil {
		return Result{}, err
	}
	refs := changedImageRefs(pr)
	// The policy's rules about the text of references are the validation check's (they need no registry);
	// the references they refuse are not contacted here.
	_, contact := ImageTextFindings(pr.Policy.Images, refs)
	fs, unverified, asked := checkImageRefs(ctx, c.Registry, pr.Policy.Images, contact, nil)
	res := Result{Findings: fs, Conclusion: Conclude(fs, unverified)}
	switch {
	case len(refs) == 0:
		res.Title = "No image added or changed"
		res.Summary = "This pull request adds or changes no bundle, so there is no image to check."
		return res, nil
	case len(contact) == 0:
		res.Title = "No image to look up"
	case res.Conclusion == Success:
		res.Title = "Every image exists"
	case res.Conclusion == Neutral:
		res.Title = "Some images could not be verified"
	default:
		res.Title = "Image problems"
	}
	res.Summary = fmt.Sprintf("%s in the bundles this pull request adds or changes; %s looked up by HEAD request (no pulls). References outside the allowed registries are never contacted.",
		markdown.Count(len(refs), "image reference", "image references"), markdown.Count(asked, "distinct reference was", "distinct references were"))
	if n := len(refs) - len(contact); n > 0 {
		res.Summary += fmt.Sprintf(" %s not looked up: outside images.allowedRegistries or, under images.requireDigest, not pinned by digest (the validation check reports %s).",
			markdown.Count(n, "reference was", "references were"), map[bool]string{true: "it", false: "them"}[n == 1])
	}
	return res, nil
}

// templateImageRefs lists the bundle images that the templates a pull request touches name in the head and
// did not name in the base, each at its line in the template.
func templateImageRefs(pr *PullRequest) []ImageRef {
	maps := render.TemplateFiles(pr)
	var out []ImageRef
	seen := map[string]bool{}
	for _, m := range maps {
		if seen[m.Path] {
			continue
		}
		seen[m.Path] = true
		head, err := pkgtemplate.ReadFileCapped(pr.Head.FS, m.Path, render.MaxTemplateBytes)
		if err != nil || head == nil {
			continue
		}
		ht, _ := template.Parse(m.Path, head, pr.Limits)
		if ht == nil {
			continue
		}
		had := map[string]bool{}
		if base, err := pkgtemplate.ReadFileCapped(pr.Base.FS, m.Path, render.MaxTemplateBytes); err == nil && base != nil {
			if bt, _ := template.Parse(m.Path, base, pr.Limits); bt != nil {
				for _, r := range bt.Refs() {
					had[r.Image] = true
				}
			}
		}
		for _, r := range ht.Refs() {
			if !had[r.Image] {
				out = append(out, ImageRef{Ref: r.Image, Pos: r.Pos, Package: m.Package, Field: "template bundle image"})
			}
		}
	}
	return out
}

// bundleDirImageRefs lists the images a bundle directory's CSV names: spec.relatedImages and the containers
// (and init containers) of its deployments, each at its line in the CSV file.
func bundleDirImageRefs(b *change.BundleChange) []ImageRef {
	if b.Head == nil || b.Head.CSV == nil {
		return nil
	}
	csv := b.Head.CSV
	file := path.Join(b.Dir, csv.File)
	var out []ImageRef
	seen := map[string]bool{}
	add := func(v *catalog.Value, field string) {
		if v == nil || v.Kind != catalog.KindString || v.Str() == "" || seen[v.Str()+field] {
			return
		}
		seen[v.Str()+field] = true
		out = append(out, ImageRef{Ref: v.Str(), Pos: v.Pos(file), Package: b.Package, Bundle: csv.Name, Field: field})
	}
	spec := csv.Value.Get("spec")
	if spec == nil {
		return nil
	}
	if ris := spec.Get("relatedImages"); ris != nil {
		for _, ri := range ris.Items() {
			name := ""
			if n := ri.Get("name"); n != nil {
				name = n.Str()
			}
			add(ri.Get("image"), fmt.Sprintf("relatedImages[%s]", name))
		}
	}
	install := spec.Get("install")
	if install == nil || install.Get("spec") == nil || install.Get("spec").Get("deployments") == nil {
		return out
	}
	for _, d := range install.Get("spec").Get("deployments").Items() {
		podSpec := d.Get("spec")
		if podSpec != nil {
			podSpec = podSpec.Get("template")
		}
		if podSpec != nil {
			podSpec = podSpec.Get("spec")
		}
		if podSpec == nil {
			continue
		}
		for _, key := range []string{"initContainers", "containers"} {
			if cs := podSpec.Get(key); cs != nil {
				for _, c := range cs.Items() {
					name := ""
					if n := c.Get("name"); n != nil {
						name = n.Str()
					}
					add(c.Get("image"), fmt.Sprintf("%s[%s]", key, name))
				}
			}
		}
	}
	return out
}
