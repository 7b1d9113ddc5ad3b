package promote

import (
	"bytes"
	"context"
	"fmt"
	"io/fs"
	"path"
	"sort"
	"strconv"
	"strings"

	"github.com/catalogbot/catalogbot/policy"
)

// What the App needs to turn a Plan into pull requests, and to know later that a pull request is exactly a
// promotion: the names of its branch and labels, the text, the trigger, and a content check. Whether the App
// made the pull request is the App's own records' to say, never this package's: Verify looks at content only.

// BranchPrefix starts the branch of every promotion pull request.
const BranchPrefix = "catalogbot/promote/"

// Branch is the App's branch for one package's promotion: catalogbot/promote/<to>/<package>.
func Branch(to, pkg string) string { return BranchPrefix + to + "/" + pkg }

// ParseBranch reads a promotion branch name back into its version and package.
func ParseBranch(ref string) (to, pkg string, ok bool) {
	rest, found := strings.CutPrefix(ref, BranchPrefix)
	if !found {
		return "", "", false
	}
	to, pkg, found = strings.Cut(rest, "/")
	if !found || !validCatalogName().MatchString(to) || !packageName().MatchString(pkg) {
		return "", "", false
	}
	return to, pkg, true
}

// Label is the label a promotion pull request carries, as the community's promotion labels them.
func Label(s Strategy) string { return "catalog-promotion/" + string(s) }

// Title is a promotion pull request's title.
func Title(plan *Plan, pk *Package) string {
	return fmt.Sprintf("Promote %s to the %s catalog", pk.Name, plan.To)
}

// Body is a promotion pull request's description: what changes, why, and what happens next.
func Body(plan *Plan, pk *Package) string {
	var b strings.Builder
	fmt.Fprintf(&b, "OpenShift catalog %s is new (%s). This promotes **%s** from %s:\n\n", plan.To, plan.TargetRoot, pk.Name, plan.From)
	switch pk.Method {
	case Rendered:
		fmt.Fprintf(&b, "- `%s` maps %s to a template: %s is added next to it, and the new catalog is rendered from the template as `opm alpha render-template` renders it.\n", pk.CIYaml, plan.From, plan.To)
	default:
		fmt.Fprintf(&b, "- the files of `%s/%s/` are copied to `%s/%s/`.\n", plan.SourceRoot, pk.Name, plan.TargetRoot, pk.Name)
	}
	for _, f := range pk.Files {
		fmt.Fprintf(&b, "  - `%s`\n", f.Path)
	}
	for _, n := range pk.Notes {
		fmt.Fprintf(&b, "- note: %s\n", n)
	}
	b.WriteString("\n")
	switch pk.Strategy {
	case Always:
		fmt.Fprintf(&b, "`fbc.version_promotion_strategy: always` (%s): derived from the default branch, this merges once its checks pass, without review.\n", pk.StrategyFrom)
	default:
		fmt.Fprintf(&b, "`fbc.version_promotion_strategy: review-needed` (%s): an owner of %s approves it with `/approve` (or an approving review), or closes it to keep the package out of %s.\n", pk.StrategyFrom, pk.Name, plan.To)
	}
	return b.String()
}

// Verify says whether a pull request's change is exactly the promotion of pkg from base: the paths it changes
// (adds or modifies; anything deleted or renamed is not a promotion) are those of the package's promotion
// computed on base, and head holds exactly that content. It returns the promotion (its strategy read from the
// base's ci.yaml), or nil and why not. Content only: a pull request that passes is derived only if the App's
// own records say the App made it, and only with the strategy always.
func Verify(ctx context.Context, base, head fs.FS, pol *policy.Policy, opt Options, pkg string, changed []string) (*Package, string) {
	opt.Packages = []string{pkg}
	plan, err := Compute(ctx, base, pol, opt)
	if err != nil {
		return nil, err.Error()
	}
	if len(plan.Packages) != 1 || plan.Packages[0].Outcome != Promoted {
		if len(plan.Packages) == 1 {
			return nil, fmt.Sprintf("%s is not promoted from the base: %s", pkg, plan.Packages[0].Reason)
		}
		return nil, pkg + " is not promoted from the base"
	}
	want := map[string][]byte{}
	for _, f := range plan.Packages[0].Files {
		want[f.Path] = f.Data
	}
	if len(changed) != len(want) {
		return nil, fmt.Sprintf("it changes %d files; the promotion of %s changes %d", len(changed), pkg, len(want))
	}
	for _, p := range changed {
		data, ok := want[p]
		if !ok {
			return nil, p + " is not part of the promotion of " + pkg
		}
		got, err := readCapped(head, p, int64(len(data))+1)
		if err != nil || got == nil || !bytes.Equal(got, data) {
			return nil, p + " is not what the promotion writes"
		}
	}
	return &plan.Packages[0], ""
}

// Target is a promotion the policy asks for: a catalog root From's packages are promoted into.
type Target struct{ From, To string }

// NewTargets are the promotions a change of the policy on the default branch asks for: each catalog root of
// catalogs/ that the new policy declares and the old one did not (by path; a pattern such as catalogs/v4.* that
// both have declares a new directory without a policy change, so such a repository asks with a comment
// command), promoted from the newest catalog of catalogs/ in fsys below it.
func NewTargets(fsys fs.FS, before, after *policy.Policy) []Target {
	var out []Target
	for _, c := range after.Catalogs {
		dir, name := path.Split(c.Path)
		if strings.TrimSuffix(dir, "/") != CatalogsDir || policy.IsPattern(c.Path) || !validCatalogName().MatchString(name) {
			continue
		}
		if before != nil && declares(before, c.Path) {
			continue
		}
		if from, ok := PreviousVersion(fsys, name); ok {
			out = append(out, Target{From: from, To: name})
		}
	}
	return out
}

// PreviousVersion is the newest directory of catalogs/ whose version (vMAJOR.MINOR) is below to's.
func PreviousVersion(fsys fs.FS, to string) (string, bool) {
	tv, ok := versionOf(to)
	if !ok {
		return "", false
	}
	entries, err := fs.ReadDir(fsys, CatalogsDir)
	if err != nil {
		return "", false
	}
	var cands []string
	for _, e := range entries {
		if v, ok := versionOf(e.Name()); ok && e.IsDir() && less(v, tv) {
			cands = append(cands, e.Name())
		}
	}
	if len(cands) == 0 {
		return "", false
	}
	sort.Slice(cands, func(i, j int) bool {
		a, _ := versionOf(cands[i])
		b, _ := versionOf(cands[j])
		return less(a, b)
	})
	return cands[len(cands)-1], true
}

func versionOf(name string) ([2]int, bool) {
	rest, ok := strings.CutPrefix(name, "v")
	if !ok {
		return [2]int{}, false
	}
	maj, min, ok := strings.Cut(rest, ".")
	if !ok {
		return [2]int{}, false
	}
	a, err1 := strconv.Atoi(maj)
	b, err2 := strconv.Atoi(min)
	if err1 != nil || err2 != nil || a < 0 || b < 0 || a > 1000 || b > 1000 {
		return [2]int{}, false
	}
	return [2]int{a, b}, true
}

func less(a, b [2]int) bool { return a[0] < b[0] || a[0] == b[0] && a[1] < b[1] }
