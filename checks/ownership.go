package checks

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/catalogbot/catalogbot/catalog"
	"github.com/catalogbot/catalogbot/checks/change"
	"github.com/catalogbot/catalogbot/policy"
)

// Ownership checks that the author may change everything the pull request
// touches: every package (by the content of the blobs, not by folder), new
// packages, protected paths and files outside the catalogs. Owners and
// maintainers come from the base revision's policy.
type Ownership struct{}

func (Ownership) Name() string { return "ownership" }

// Gates: the ownership verdict decides whether the costly checks run.
func (Ownership) Gates() bool { return true }

const (
	ruleNotOwner       = "ownership.not-owner"
	ruleNewPackage     = "ownership.new-package"
	ruleProtectedPath  = "ownership.protected-path"
	ruleOutsideCatalog = "ownership.outside-catalog"
	ruleNoPackage      = "ownership.no-package"
	ruleCannotVerify   = "ownership.cannot-verify"
)

func ownershipRules() []catalog.Rule {
	return []catalog.Rule{
		{ID: ruleNotOwner, Severity: catalog.SeverityError, Source: "catalogbot (production pipelines' per-package reviewers)",
			Summary: "the pull request touches a package its author does not own",
			Hint:    "ask an owner of the package (listed under packages in the base branch's .catalogbot.yaml) to make or approve the change, or split the pull request per package"},
		{ID: ruleNewPackage, Severity: catalog.SeverityError, Source: "catalogbot",
			Summary: "the pull request adds a package and the policy lets only maintainers add packages",
			Hint:    "ask a maintainer to add the package and its owners to .catalogbot.yaml first, in a separate pull request"},
		{ID: ruleProtectedPath, Severity: catalog.SeverityError, Source: "catalogbot",
			Summary: "the pull request changes a path only maintainers may change (protectedPaths, and always .catalogbot.yaml)",
			Hint:    "leave the file out of this pull request, or ask a maintainer to make the change"},
		{ID: ruleOutsideCatalog, Severity: catalog.SeverityError, Source: "catalogbot (production pipelines: catalog changes are not mixed with unrelated files)",
			Summary: "the pull request changes files outside the catalogs declared in the policy",
			Hint:    "keep catalog changes and other changes in separate pull requests; only maintainers change files outside the catalogs"},
		{ID: ruleNoPackage, Severity: catalog.SeverityError, Source: "catalogbot",
			Summary: "a changed catalog file holds no blob of any package, so no package owner can vouch for it",
			Hint:    "put the content in the package's own blobs, or ask a maintainer"},
		{ID: ruleCannotVerify, Severity: catalog.SeverityWarning, Source: "catalogbot",
			Summary: "membership of a team in the policy could not be checked, so ownership cannot be verified",
			Hint:    "make the team resolvable (the App needs members:read; the CLI takes --team-members FILE), or list the owners by login"},
	}
}

func (o Ownership) Run(ctx context.Context, pr *PullRequest) (Result, error) {
	if err := Prepare(ctx, pr); err != nil {
		return Result{}, err
	}
	pol := pr.Policy
	maint, maintErr := pol.IsMaintainer(ctx, pr.Author, pr.Teams)
	if maint == policy.Yes {
		return Result{Conclusion: Success, Title: "Author is a maintainer",
			Summary: fmt.Sprintf("@%s is a maintainer of this repository and may change anything.", pr.Author)}, nil
	}
	if d := Derived(ctx, pr); d != nil && d.Promotion != nil {
		return Result{Conclusion: Success, Title: "Promotion to " + d.Promotion.To + " derived from the default branch",
			Summary: fmt.Sprintf("catalogbot made this pull request to promote %s from the %s catalog to %s, and it changes exactly what that promotion computes on the base branch (its ci.yaml mapping gains %s; the new catalog is rendered from the package's template, or copied). "+
				"The package's ci.yaml on the base branch says `fbc.version_promotion_strategy: always`, so it needs no review. Any other change makes it an ordinary pull request.\n", d.Package, d.Promotion.From, d.Promotion.To, d.Promotion.To)}, nil
	} else if d != nil {
		return Result{Conclusion: Success, Title: "Catalog update derived from merged bundles",
			Summary: fmt.Sprintf("This pull request only adds bundles the base branch already holds to the templates of %s, by the digest of the image built from each directory (%s), and its catalogs are exactly what the templates render to. "+
				"Those bundles were authorized when their own pull requests merged; this one carries no decision of its own. Any other change makes it an ordinary pull request.\n", d.Package, strings.Join(d.Bundles, ", "))}, nil
	}
	var fs []catalog.Finding
	unverified := false
	cannotVerify := func(pos catalog.Position, pkg string, err error) {
		unverified = true
		fs = append(fs, catalog.Finding{Rule: ruleCannotVerify, Severity: catalog.SeverityWarning, Position: pos, Package: pkg,
			Message: err.Error(), Hint: ruleHint(ruleCannotVerify)})
	}
	notMaintainer := func(pos catalog.Position, rule, pkg, msg string) {
		if maint == policy.Unresolved {
			cannotVerify(pos, pkg, fmt.Errorf("%s, unless @%s is a maintainer: %v", msg, pr.Author, maintErr))
			return
		}
		fs = append(fs, catalog.Finding{Rule: rule, Severity: catalog.SeverityError, Position: pos, Package: pkg, Message: msg, Hint: ruleHint(rule)})
	}

	var owned, added, touched []string
	for _, cc := range pr.Changes.Catalogs {
		for _, pkg := range cc.TouchedPackages() {
			positions := touchPositions(cc, cc.Touched[pkg])
			if pkg == "" {
				for _, site := range positions {
					notMaintainer(site.Pos, ruleNoPackage, "", "this file changes catalog content that belongs to no package"+site.Note)
				}
				continue
			}
			touched = append(touched, pkg)
			_, reserved := pol.Owners(pkg)
			isNew := cc.NewPackages[pkg] && change.NewToRepository(pr, pkg)
			if isNew && !reserved {
				if pol.NewPackages == policy.NewPackagesAnyone {
					added = append(added, pkg)
					continue
				}
				for _, site := range positions {
					notMaintainer(site.Pos, ruleNewPackage, pkg,
						fmt.Sprintf("adds the new package %q; the policy lets only maintainers add packages", pkg)+site.Note)
				}
				continue
			}
			// The package's owners own its blobs in every catalog: the policy's owners and its ci.yaml reviewers.
			d, err := change.OwnsBundlePackage(ctx, pr, pkg, pr.Author)
			switch d {
			case policy.Yes:
				owned = append(owned, pkg)
			case policy.Unresolved:
				for _, site := range positions {
					cannotVerify(site.Pos, pkg, err)
				}
			default:
				owners, listed := pol.Owners(pkg)
				msg := fmt.Sprintf("changes package %q, which @%s does not own: %s", pkg, pr.Author, change.BundleOwnersText(pr, pkg))
				if isNew {
					// Named in the policy before it exists: reserved for its owners, whatever newPackages says.
					msg = fmt.Sprintf("adds package %q, which the policy reserves for its owners (it is listed under packages): %s", pkg, change.BundleOwnersText(pr, pkg))
					if !listed || len(owners) == 0 {
						msg = fmt.Sprintf("adds package %q, which the policy reserves (it is listed under packages with no owners), so only maintainers may add it", pkg)
					}
				}
				for _, site := range positions {
					notMaintainer(site.Pos, ruleNotOwner, pkg, msg+site.Note)
				}
			}
		}
	}
	// Bundle directories: the package their annotations declare (not their folder) decides.
	newReported := map[string]bool{} // new packages already reported, once each
	for _, b := range pr.Changes.Bundles {
		pos := b.FirstFile()
		pkg := b.Package
		if pkg == "" {
			notMaintainer(pos, ruleNoPackage, "", fmt.Sprintf("bundle directory %s declares no package (metadata/annotations.yaml)", b.Dir))
			continue
		}
		touched = append(touched, pkg)
		_, reserved := pol.Owners(pkg)
		existed := b.Base != nil || !change.NewToRepository(pr, pkg)
		if !existed && !reserved && len(pr.Changes.CIOwners(pkg)) == 0 {
			if pol.NewPackages == policy.NewPackagesAnyone {
				added = append(added, pkg)
				continue
			}
			newReported[pkg] = true
			notMaintainer(pos, ruleNewPackage, pkg, fmt.Sprintf("bundle directory %s adds the new package %q; the policy lets only maintainers add packages", b.Dir, pkg))
			continue
		}
		d, err := change.OwnsBundlePackage(ctx, pr, pkg, pr.Author)
		switch d {
		case policy.Yes:
			owned = append(owned, pkg)
		case policy.Unresolved:
			cannotVerify(pos, pkg, err)
		default:
			notMaintainer(pos, ruleNotOwner, pkg, fmt.Sprintf("bundle directory %s belongs to package %q (its annotations say so), which @%s does not own: %s", b.Dir, pkg, pr.Author, change.BundleOwnersText(pr, pkg)))
		}
	}
	for _, f := range pr.Changes.PackageFiles {
		pos := catalog.Position{File: f.File.Path}
		// Every file of the package folder, ci.yaml and the templates included, belongs to the package's owners
		// as the base has them (a change to ci.yaml's reviewers applies once merged).
		// The folder of a package the repository never held comes with the package: it is judged as an addition.
		if _, reserved := pol.Owners(f.Package); !reserved && change.NewToRepository(pr, f.Package) {
			if pol.NewPackages == policy.NewPackagesAnyone || newReported[f.Package] {
				continue
			}
			newReported[f.Package] = true
			notMaintainer(pos, ruleNewPackage, f.Package, fmt.Sprintf("%s adds the new package %q; the policy lets only maintainers add packages", f.File.Path, f.Package))
			continue
		}
		if d, _ := change.OwnsBundlePackage(ctx, pr, f.Package, pr.Author); d != policy.Yes {
			notMaintainer(pos, ruleNotOwner, f.Package, fmt.Sprintf("%s is a file of package %q, which @%s does not own: %s", f.File.Path, f.Package, pr.Author, change.BundleOwnersText(pr, f.Package)))
		}
	}
	for _, f := range pr.Files {
		for _, p := range f.Paths() {
			if pol.Protected(p) {
				notMaintainer(catalog.Position{File: p}, ruleProtectedPath, "", fmt.Sprintf("%s is protected: only maintainers may change it", p))
			}
		}
	}
	for _, f := range pr.Changes.OtherFiles {
		if pol.Protected(f.Path) || (f.OldPath != "" && pol.Protected(f.OldPath)) {
			continue // already reported as protected
		}
		// A template of the policy belongs to the packages it renders.
		if pkgs, ok := pr.Changes.TemplatePackages(f.Path); ok || (f.OldPath != "" && pr.Changes.TemplatePackagesOf(f.OldPath) != nil) {
			if !ok {
				pkgs = pr.Changes.TemplatePackagesOf(f.OldPath)
			}
			pos := catalog.Position{File: f.Path}
			if len(pkgs) == 0 {
				notMaintainer(pos, ruleNoPackage, "", fmt.Sprintf("%s is a template of %s that renders no package, so no package owner can vouch for it", f.Path, policy.FileName))
				continue
			}
			for _, pkg := range pkgs {
				touched = append(touched, pkg)
				switch d, err := change.OwnsBundlePackage(ctx, pr, pkg, pr.Author); d {
				case policy.Yes:
					owned = append(owned, pkg)
				case policy.Unresolved:
					cannotVerify(pos, pkg, err)
				default:
					notMaintainer(pos, ruleNotOwner, pkg, fmt.Sprintf("%s is a template of package %q, which @%s does not own: %s", f.Path, pkg, pr.Author, change.BundleOwnersText(pr, pkg)))
				}
			}
			continue
		}
		notMaintainer(catalog.Position{File: f.Path}, ruleOutsideCatalog, "",
			fmt.Sprintf("%s is outside the catalogs of this repository (%s)", f.Path, catalogRoots(pol)))
	}

	var approval approvalOutcome
	if pr.ApprovalsKnown {
		fs, approval = applyApprovals(ctx, pr, fs)
	}
	res := Result{Findings: fs, Conclusion: Conclude(fs, unverified)}
	if res.Conclusion == Failure && approval.onlyApprovable {
		res.Conclusion = ActionRequired
	}
	// The author may change none of the touched packages, and nobody entitled vouched for any: the checks
	// that spend registry requests wait for an approval.
	res.SkipCostly = len(touched) > 0 && len(owned) == 0 && len(added) == 0 && len(approval.approvedBy) == 0 && res.Conclusion != Success
	var b strings.Builder
	switch res.Conclusion {
	case Success:
		res.Title = "Author owns everything touched"
		switch {
		case len(owned) > 0 && len(added) > 0:
			fmt.Fprintf(&b, "@%s owns %s and adds %s, a new package anyone may add (newPackages: anyone); adding it does not make them an owner.\n",
				pr.Author, quoteList(owned), quoteList(added))
		case len(added) > 0:
			res.Title = "Author may add these packages"
			fmt.Fprintf(&b, "@%s adds %s, new packages anyone may add (newPackages: anyone); adding one does not make them an owner.\n", pr.Author, quoteList(added))
		case len(owned) > 0:
			fmt.Fprintf(&b, "@%s owns every package this pull request touches: %s.\n", pr.Author, quoteList(owned))
		default:
			fmt.Fprintf(&b, "@%s owns every package this pull request touches.\n", pr.Author)
		}
	case Neutral:
		res.Title = "Ownership could not be verified"
		b.WriteString("Team membership could not be resolved, so ownership is not verified. This is not a pass.\n")
	case ActionRequired:
		res.Title = "An owner's approval is needed"
		fmt.Fprintf(&b, "@%s may not make some of these changes alone (each is annotated on its line). An approving review of %s by one of these people lets them through:\n\n%s",
			pr.Author, short(pr.Head.SHA), approval.whoCanApprove)
		b.WriteString("\nAn approval counts for the commit it was given on only: a later push needs a new one.\n")
	default:
		res.Title = "Author may not make some of these changes"
		fmt.Fprintf(&b, "@%s may not make some of these changes; each is annotated on its line.\n", pr.Author)
	}
	if len(approval.approvedBy) > 0 {
		if res.Conclusion == Success {
			res.Title = "Approved by " + atList(approval.approvedBy)
		}
		fmt.Fprintf(&b, "\nApproved by %s on %s: %s.\n", atList(approval.approvedBy), short(pr.Head.SHA), approval.vouchedFor)
	}
	if len(touched) > 0 {
		fmt.Fprintf(&b, "\nPackages touched: %s.\n", quoteList(touched))
	}
	b.WriteString("\nOwners and maintainers are read from `.catalogbot.yaml` on the base branch; changes to it in this pull request do not count.\n")
	res.Summary = b.String()
	return res, nil
}

// touchSite is where a finding about a touch goes, and what to add to its message.
type touchSite struct {
	Pos  catalog.Position
	Note string // "" or why the content moved in or out of the loaded catalog
}

// touchPositions gives one site per file that touches the package: the
// first blob of it in that file, as a repository path. A file present in
// head is pointed at in head; a file only in base (deleted or renamed away)
// is named without a line, since its lines do not exist in head. A file that
// did not change but starts or stops being loaded is reported on the changed
// line of the file that caused it (an .indexignore), saying so.
func touchPositions(cc *change.CatalogChange, ts []change.Touch) []touchSite {
	seen := map[string]bool{}
	var out []touchSite
	// Blobs of the package that the pull request changed line by line come first: the finding goes on such a
	// line, where GitHub shows it inline, rather than on an untouched blob of the same file.
	preferred := make([]change.Touch, 0, len(ts))
	var rest []change.Touch
	for _, t := range ts {
		if line, ok := cc.ChangeInBlob(t.Pos.File, t.Pos.Line); !t.InBase && ok {
			t.Pos.Line, t.Pos.Column = line, 0
			preferred = append(preferred, t)
		} else {
			rest = append(rest, t)
		}
	}
	ts = append(preferred, rest...)
	for _, inBase := range []bool{false, true} {
		for _, t := range ts {
			if t.InBase != inBase {
				continue
			}
			pos := t.Pos
			file := pos.File
			pos.File = cc.RepoPath(pos.File)
			if seen[pos.File] {
				continue
			}
			seen[pos.File] = true
			if inBase {
				pos.Line, pos.Column = 0, 0
			}
			site := touchSite{Pos: pos}
			if c, ok := cc.Causes[file]; ok {
				site.Note = " (" + c.Describe(pos.File) + ")"
				if c.File != "" {
					site.Pos = c.Position()
				}
			}
			out = append(out, site)
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Pos.Less(out[j].Pos) })
	return out
}

func principals(ps []policy.Principal) string {
	s := make([]string, len(ps))
	for i, p := range ps {
		s[i] = "@" + strings.TrimPrefix(p.String(), "@")
	}
	return strings.Join(s, ", ")
}

func catalogRoots(p *policy.Policy) string {
	if len(p.Catalogs) == 0 {
		return "the policy declares none"
	}
	s := make([]string, len(p.Catalogs))
	for i, c := range p.Catalogs {
		s[i] = c.Path
	}
	return "catalogs: " + strings.Join(s, ", ")
}

func quoteList(ss []string) string {
	q := make([]string, len(ss))
	for i, s := range ss {
		q[i] = fmt.Sprintf("`%s`", s)
	}
	return strings.Join(q, ", ")
}

// approvalOutcome is what approvals of the head did to the ownership findings.
type approvalOutcome struct {
	approvedBy []string // logins whose approval vouched for something, sorted
	vouchedFor string   // what they vouched for, for the summary
	// onlyApprovable: every error left could be lifted by an approval.
	onlyApprovable bool
	whoCanApprove  string // markdown list: for each finding left, who may approve it
}

// approvable are the ownership rules an approval of the head can lift: an
// owner of the package (or a maintainer) for package changes, a maintainer
// for the rest.
func approvable(rule string) bool {
	switch rule {
	case ruleNotOwner, ruleNewPackage, ruleProtectedPath, ruleOutsideCatalog, ruleNoPackage:
		return true
	}
	return false
}

// applyApprovals drops the findings that an approval of the head by someone
// entitled to vouch for them lifts, and says who could lift the rest. An
// approval of another commit, or by the author, never counts.
func applyApprovals(ctx context.Context, pr *PullRequest, fs []catalog.Finding) ([]catalog.Finding, approvalOutcome) {
	pol := pr.Policy
	var approvers []string
	for _, a := range pr.Approvals {
		if a.SHA == pr.Head.SHA && !policy.SameLogin(a.Login, pr.Author) && !slices.Contains(approvers, a.Login) {
			approvers = append(approvers, a.Login)
		}
	}
	sort.Strings(approvers)
	maintainer := func(login string) bool {
		d, _ := pol.IsMaintainer(ctx, login, pr.Teams)
		return d == policy.Yes
	}
	owner := func(pkg, login string) bool {
		d, _ := change.OwnsBundlePackage(ctx, pr, pkg, login)
		return d == policy.Yes
	}
	var out approvalOutcome
	out.onlyApprovable = true
	used := map[string]bool{}
	var vouched []string
	var kept []catalog.Finding
	var who strings.Builder
	for _, f := range fs {
		if f.Severity != catalog.SeverityError {
			kept = append(kept, f)
			continue
		}
		if !approvable(f.Rule) {
			out.onlyApprovable = false
			kept = append(kept, f)
			continue
		}
		byPackage := f.Package != "" && (f.Rule == ruleNotOwner || f.Rule == ruleNewPackage)
		var by string
		for _, a := range approvers {
			if (byPackage && owner(f.Package, a)) || maintainer(a) {
				by = a
				break
			}
		}
		if by != "" {
			used[by] = true
			what := f.Position.File
			if byPackage {
				what = fmt.Sprintf("package `%s`", f.Package)
			}
			if !slices.Contains(vouched, what) {
				vouched = append(vouched, what)
			}
			continue
		}
		kept = append(kept, f)
		if byPackage {
			owners := change.PackageOwnerNames(pr, f.Package)
			fmt.Fprintf(&who, "- package `%s` (%s): ", f.Package, f.Position)
			if len(owners) > 0 {
				fmt.Fprintf(&who, "an owner (%s) or a maintainer (%s)\n", strings.Join(owners, ", "), principals(pol.Maintainers))
			} else {
				fmt.Fprintf(&who, "a maintainer (%s)\n", principals(pol.Maintainers))
			}
		} else {
			fmt.Fprintf(&who, "- `%s`: a maintainer (%s)\n", f.Position, principals(pol.Maintainers))
		}
	}
	for a := range used {
		out.approvedBy = append(out.approvedBy, a)
	}
	sort.Strings(out.approvedBy)
	out.vouchedFor = strings.Join(vouched, ", ")
	out.whoCanApprove = who.String()
	return kept, out
}

func atList(logins []string) string {
	s := make([]string, len(logins))
	for i, l := range logins {
		s[i] = "@" + l
	}
	return strings.Join(s, ", ")
}

// short is a commit's abbreviation, as GitHub shows it.
func short(sha string) string {
	if len(sha) > 7 {
		return sha[:7]
	}
	return sha
}
