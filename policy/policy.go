package policy

import (
	"context"
	"errors"
	"fmt"
	"path"
	"strings"
)

// FileName is where the policy lives, at the repository root of the base revision.
const FileName = ".catalogbot.yaml"

// Version is the only schema version this package reads.
const Version = 1

// Policy is a parsed .catalogbot.yaml. Build one with Parse or Default; the
// zero value is not useful.
type Policy struct {
	// File is the name the policy was parsed from, "" for Default.
	File    string
	Version int
	// Catalogs are the file-based catalog roots of the repository, cleaned,
	// relative and without "..". Empty only in Default.
	Catalogs []Catalog
	// Maintainers may change anything, add packages and change protected paths.
	Maintainers []Principal
	// Packages maps a package name to its owners.
	Packages       map[string]Package
	NewPackages    NewPackageRule
	ProtectedPaths []string
	Images         Images
	CRDSafety      CRDSafety
	Automerge      Automerge
	Limits         Limits
	// Bundles are the roots of bundle directories (<root>/<package>/<version>/manifests and metadata).
	Bundles []BundleRoot
	// Templates are catalog templates and the catalog files each renders into.
	Templates []Template
	// Removals say which released content a package's owners may remove (pruning); see RemovalAllowed.
	Removals []RemovalRule
}

// Template is one catalog template (olm.template.basic or olm.semver) and the committed catalog files it
// renders into: a pull request touching either is checked for drift between them.
type Template struct {
	// Path is the template file, slash-separated, relative to the repository root, cleaned.
	Path string
	// Catalogs are the catalog files it renders into, each with opm's --migrate-level for it.
	Catalogs []TemplateCatalog
	// Opm is the opm release whose rendering the catalogs follow ("" for the newest known).
	Opm string
	Pos Position
}

// TemplateCatalog is one catalog file a template renders into.
type TemplateCatalog struct {
	Path string
	// MigrateLevel is "none" or "bundle-object-to-csv-metadata".
	MigrateLevel string
}

// MigrateLevels are the --migrate-level values a template's catalogs may name.
var MigrateLevels = []string{"none", "bundle-object-to-csv-metadata"}

// BundleRoot is a directory whose <package>/<version>/ subdirectories are registry+v1 bundle directories,
// as the community catalog repositories keep them under operators/.
type BundleRoot struct {
	// Path is slash-separated, relative to the repository root, cleaned.
	Path string
	// CIYamlOwners: the reviewers listed in <root>/<package>/ci.yaml (read from the base revision) own
	// the package too, as the community pipeline has it.
	CIYamlOwners bool
	// RequireOLMv1: bundles must be installable by OLM v1 (AllNamespaces, no webhooks, no dependencies);
	// otherwise that report is informational.
	RequireOLMv1 bool
	// Strict: operator-registry's bundle format and content checks (what `opm alpha bundle validate` refuses
	// beyond what opm render and operator-sdk's default validators refuse) are errors; otherwise warnings.
	Strict bool
	// OptionalSuites are operator-sdk's optional validator suites to run on the bundles ("operatorhub",
	// "deprecated-apis", "good-practices", "operatorframework").
	OptionalSuites []string
	// K8sVersion is the Kubernetes version the bundles are meant for, as operator-sdk's
	// --optional-values=k8s-version= gives it ("" when not set): APIs removed by then are errors.
	K8sVersion string
	// TemplatesFromCIYaml: <root>/<package>/ci.yaml's fbc.catalog_mapping names the package's templates
	// (<root>/<package>/catalog-templates/) and the catalogs/<version>/<package>/catalog.yaml each renders
	// into, as the community repository keeps them.
	TemplatesFromCIYaml bool
	// Image is where a merged bundle's image goes and how templates name it, with {package} and {version}
	// replaced (e.g. quay.io/acme/{package}-bundle:v{version}); "" when the repository does not say.
	Image string
	Pos   Position
}

// BundleRootOf returns the bundle root that holds the repository path name, if any.
func (p *Policy) BundleRootOf(name string) (BundleRoot, bool) {
	name = strings.TrimPrefix(path.Clean("/"+name), "/")
	for _, b := range p.Bundles {
		if name == b.Path || strings.HasPrefix(name, b.Path+"/") || b.Path == "." {
			return b, true
		}
	}
	return BundleRoot{}, false
}

// DefaultMaxFileBytes is limits.maxFileBytes when the policy does not set it: four times the largest catalog file
// of the public community and certified catalogs (about 4 MB).
const DefaultMaxFileBytes = 16 << 20

// Limits bound what a pull request may bring.
type Limits struct {
	// MaxFileBytes is the largest catalog file a pull request may add or change; a larger one is refused
	// before it is parsed. Whole-catalog validation keeps the loader's own, larger bound.
	MaxFileBytes int64
}

// Position is a place in the policy file, counting from 1.
type Position struct {
	Line, Column int
}

// Catalog is one file-based catalog root of the repository.
type Catalog struct {
	// Path is slash-separated, relative to the repository root, cleaned; "." is the root. In a policy as
	// parsed it may be a pattern (catalogs/v4.*, see IsPattern); ResolveCatalogs turns each pattern into
	// the directories it matches.
	Path string
	// Pattern is the pattern of the policy file this catalog was resolved from ("" for a catalog listed by
	// its path). In a policy as parsed, Pattern equals Path for a pattern.
	Pattern string
	// Image is where the rebuilt catalog image is pushed; "" means not rebuilt.
	Image string
	// BaseImage is the opm image the catalog image is built on, pinned by
	// digest; "" means the builder's default.
	BaseImage string
	Pos       Position
}

// Package holds what the policy says about one package.
type Package struct {
	Owners []Principal
	Pos    Position
}

// NewPackageRule says who may add a package the base revision does not have.
type NewPackageRule string

const (
	// NewPackagesMaintainers lets only maintainers add packages (the default).
	NewPackagesMaintainers NewPackageRule = "maintainers"
	// NewPackagesAnyone lets any author add a package; they do not become its owner.
	NewPackagesAnyone NewPackageRule = "anyone"
)

// Images holds the rules for image references in the catalog.
type Images struct {
	// AllowedRegistries are prefixes ("quay.io/acme/", "registry.example.com")
	// an image reference must start with. Empty allows every registry.
	AllowedRegistries []string
	// RequireDigest demands references by digest (@sha256:...), not by tag.
	RequireDigest bool
}

// CRDSafety holds the CRD upgrade safety settings.
type CRDSafety struct {
	// Overrides change the severity of CRD safety rules, in file order. Rule
	// ids are not checked here: the caller knows them and reports unknown ones
	// at Override.Pos.
	Overrides []Override
	// Profile is what the check enforces: ProfilePreflight (the default: an error exactly where OLM v1's
	// preflight refuses the upgrade) or ProfileCompatibility (an error where stored objects or existing
	// clients break; the preflight's other refusals are warnings).
	Profile string
	// ProfilePos is where profile is set (zero when it is not).
	ProfilePos Position
}

// The crdSafety profiles.
const (
	ProfilePreflight     = "preflight"
	ProfileCompatibility = "compatibility"
)

// Override sets the severity of one rule.
type Override struct {
	Rule string
	// Severity is "error", "warning" or "ignore".
	Severity string
	Pos      Position
}

// MergeMethod is how an automatic merge is made, as GitHub's merge API names it.
type MergeMethod string

// The merge methods of GitHub's merge API.
const (
	MergeMethodMerge  MergeMethod = "merge"
	MergeMethodSquash MergeMethod = "squash"
	MergeMethodRebase MergeMethod = "rebase"
)

// Automerge says whether and how catalogbot merges pull requests that pass.
type Automerge struct {
	Enabled bool
	Method  MergeMethod
	// HoldLabels stop an automatic merge while any of them is on the pull request.
	HoldLabels []string
	// RequireOwnerApproval demands an approving review from an owner of every
	// touched package (or a maintainer) even when the author is an owner.
	RequireOwnerApproval bool
}

// defaultHoldLabels apply when automerge.holdLabels is not set: Prow's hold and work-in-progress labels. Never
// modified: Default copies it.
var defaultHoldLabels = []string{"do-not-merge/hold", "do-not-merge/work-in-progress"}

// Default is the policy of a repository whose base revision has no
// .catalogbot.yaml. It fails closed: no catalogs are declared (the caller
// must be told where they are, as the CLI is with flags), nobody is a
// maintainer or an owner, so no author passes the ownership check and a person
// merges; new packages need a maintainer; .catalogbot.yaml is protected; any
// registry is allowed and tags are accepted; CRD rules keep their severities;
// automerge is off.
func Default() *Policy {
	return &Policy{
		Version:        Version,
		Packages:       map[string]Package{},
		NewPackages:    NewPackagesMaintainers,
		ProtectedPaths: []string{FileName},
		Limits:         Limits{MaxFileBytes: DefaultMaxFileBytes},
		Automerge: Automerge{
			Method:     MergeMethodMerge,
			HoldLabels: append([]string(nil), defaultHoldLabels...),
		},
	}
}

// Protected reports whether the repository path name (slash-separated,
// relative to the root) may be changed by maintainers only. FileName is
// always protected.
func (p *Policy) Protected(name string) bool {
	name = strings.TrimPrefix(path.Clean("/"+name), "/")
	if name == FileName {
		return true
	}
	for _, pat := range p.ProtectedPaths {
		if matchPath(pat, name) {
			return true
		}
	}
	return false
}

// CatalogOf returns the declared catalog whose root holds the repository path
// name, if any.
func (p *Policy) CatalogOf(name string) (Catalog, bool) {
	name = strings.TrimPrefix(path.Clean("/"+name), "/")
	for _, c := range p.Catalogs {
		if c.Path == "." || name == c.Path || strings.HasPrefix(name, c.Path+"/") {
			return c, true
		}
	}
	return Catalog{}, false
}

// RegistryAllowed reports whether the image reference ref starts with one of
// Images.AllowedRegistries, on a path boundary: "quay.io/acme" allows
// "quay.io/acme/x:1" and "quay.io/acme:1" but not "quay.io/acmecorp/x"; with
// a trailing slash, "quay.io/acme/" allows only what lies below it.
// Hosts compare case-insensitively and docker.io equals index.docker.io.
// Pass references fully qualified (as go-containerregistry's Name prints them).
// An empty list allows everything.
func (im Images) RegistryAllowed(ref string) bool {
	if len(im.AllowedRegistries) == 0 {
		return true
	}
	ref = normaliseRegistry(ref)
	for _, allowed := range im.AllowedRegistries {
		a := normaliseRegistry(allowed)
		if strings.HasSuffix(a, "/") {
			if strings.HasPrefix(ref, a) {
				return true
			}
			continue
		}
		if ref == a || strings.HasPrefix(ref, a+"/") || strings.HasPrefix(ref, a+":") || strings.HasPrefix(ref, a+"@") {
			return true
		}
	}
	return false
}

// RegistryHosts are the registry hosts (with port when written) of Images.AllowedRegistries, each once, in
// order. They are the hosts a registry's token service may live on besides the registry itself; docker.io
// stands for Docker Hub.
func (im Images) RegistryHosts() []string {
	var hosts []string
	seen := map[string]bool{}
	for _, a := range im.AllowedRegistries {
		h, _, _ := strings.Cut(normaliseRegistry(a), "/")
		if h != "" && !seen[h] {
			seen[h] = true
			hosts = append(hosts, h)
		}
	}
	return hosts
}

func normaliseRegistry(s string) string {
	s = strings.ToLower(s)
	if rest, ok := strings.CutPrefix(s, "index.docker.io"); ok && (rest == "" || rest[0] == '/') {
		return "docker.io" + rest
	}
	return s
}

// Decision is the answer to "may this person do it?".
type Decision int

const (
	// No: the person is not in the list (and every team in it was resolved).
	No Decision = iota
	// Yes: the person is in the list, directly or through a resolved team.
	Yes
	// Unresolved: the person is not listed directly and at least one team
	// could not be resolved. Report "cannot verify", never a pass.
	Unresolved
)

func (d Decision) String() string {
	switch d {
	case Yes:
		return "yes"
	case No:
		return "no"
	case Unresolved:
		return "unresolved"
	}
	return fmt.Sprintf("Decision(%d)", int(d))
}

// TeamResolver lists the members of a GitHub team. The App implements it with
// GitHub's API, the CLI with a TeamsFile. An error means the team could not
// be resolved (not that it is empty).
type TeamResolver interface {
	TeamMembers(ctx context.Context, org, team string) ([]string, error)
}

// IsMaintainer tells whether login is a maintainer. The error is non-nil
// exactly when the decision is Unresolved and says which teams could not be
// resolved; teams may be nil, which leaves every team unresolved.
func (p *Policy) IsMaintainer(ctx context.Context, login string, teams TeamResolver) (Decision, error) {
	return member(ctx, p.Maintainers, login, teams)
}

// IsOwner tells whether login owns pkg. A package the policy does not list
// has no owners (No); maintainers are not owners, ask IsMaintainer too. The
// error is non-nil exactly when the decision is Unresolved.
func (p *Policy) IsOwner(ctx context.Context, pkg, login string, teams TeamResolver) (Decision, error) {
	return member(ctx, p.Packages[pkg].Owners, login, teams)
}

// Owners returns the owners of pkg and whether the policy lists the package.
func (p *Policy) Owners(pkg string) ([]Principal, bool) {
	pk, ok := p.Packages[pkg]
	return pk.Owners, ok
}

func member(ctx context.Context, list []Principal, login string, teams TeamResolver) (Decision, error) {
	if !ValidLogin(login) {
		return No, nil
	}
	for _, pr := range list {
		if !pr.IsTeam() && SameLogin(pr.Login, login) {
			return Yes, nil
		}
	}
	var unresolved []error
	for _, pr := range list {
		if !pr.IsTeam() {
			continue
		}
		if err := ctx.Err(); err != nil {
			return Unresolved, fmt.Errorf("cannot verify membership of %s: %w", pr, err)
		}
		if teams == nil {
			unresolved = append(unresolved, fmt.Errorf("%s: no team resolver configured", pr))
			continue
		}
		members, err := teams.TeamMembers(ctx, pr.Org, pr.Team)
		if err != nil {
			unresolved = append(unresolved, fmt.Errorf("%s: %w", pr, err))
			continue
		}
		for _, m := range members {
			if SameLogin(m, login) {
				return Yes, nil
			}
		}
	}
	if len(unresolved) > 0 {
		return Unresolved, fmt.Errorf("cannot verify whether %s is a member: %w", login, errors.Join(unresolved...))
	}
	return No, nil
}
