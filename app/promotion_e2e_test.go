package app

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/catalogbot/catalogbot/app/jobs"
	"github.com/catalogbot/catalogbot/catalog"
	"github.com/catalogbot/catalogbot/catalog/template"
	"github.com/catalogbot/catalogbot/checks"
	"github.com/catalogbot/catalogbot/internal/githubfake"
	"github.com/catalogbot/catalogbot/promote"
	"sigs.k8s.io/yaml"
)

// The promotion tests: a community-layout repository of 20 packages (catalogs/<version>/<package>/,
// operators/<package>/ci.yaml, templates under operators/<package>/catalog-templates/) with a mix of
// strategies, templates and plain catalogs, promoted from v4.22 to v4.23 by the App.

// manifestPermissions are the permissions deploy/github-app.yaml asks for.
func manifestPermissions(t *testing.T) map[string]string {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("..", "deploy", "github-app.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var manifest struct {
		Permissions map[string]string `json:"default_permissions"`
	}
	if err := yaml.Unmarshal(raw, &manifest); err != nil {
		t.Fatal(err)
	}
	return manifest.Permissions
}

// promotionPkg is one package of the test repository.
type promotionPkg struct {
	name string
	// strategy is what ci.yaml says ("" for nothing: review-needed); mapped: ci.yaml maps v4.22 to its
	// template; semver: the template is a semver one; ci: a ci.yaml of its own instead (malformed ones).
	strategy       string
	mapped, semver bool
	noCI           bool
	ci             string
	catalogs       []string
	// want: the state the promotion leaves it in (open: a pull request; merged: merged by the App).
	want string
}

func promotionPkgs() []promotionPkg {
	both := []string{"v4.21", "v4.22"}
	return []promotionPkg{
		{name: "a01-template", strategy: "always", mapped: true, catalogs: both, want: "merged"},
		{name: "a02-template", strategy: "always", mapped: true, catalogs: both, want: "merged"},
		{name: "a03-template", strategy: "always", mapped: true, catalogs: both, want: "merged"},
		{name: "a04-template", strategy: "always", mapped: true, catalogs: both, want: "merged"},
		{name: "a05-template", strategy: "always", mapped: true, catalogs: both, want: "merged"},
		{name: "a06-semver", strategy: "always", mapped: true, semver: true, catalogs: both, want: "merged"},
		{name: "a07-copy", strategy: "always", catalogs: both, want: "merged"},
		{name: "a08-copy", strategy: "always", catalogs: both, want: "merged"},
		{name: "r01-template", strategy: "review-needed", mapped: true, catalogs: both, want: "open"},
		{name: "r02-template", strategy: "review-needed", mapped: true, catalogs: both, want: "open"},
		{name: "r03-semver", strategy: "review-needed", mapped: true, semver: true, catalogs: both, want: "open"},
		{name: "r04-copy", strategy: "review-needed", catalogs: both, want: "open"},
		{name: "r05-default", mapped: true, catalogs: both, want: "open"},
		{name: "r06-no-ci", noCI: true, catalogs: both, want: "open"},
		{name: "r07-no-ci", noCI: true, catalogs: []string{"v4.22"}, want: "open"},
		{name: "n01-never", strategy: "never", mapped: true, catalogs: both, want: "skipped"},
		{name: "n02-never", strategy: "never", mapped: true, semver: true, catalogs: both, want: "skipped"},
		{name: "n03-never", strategy: "never", catalogs: both, want: "skipped"},
		{name: "s01-no-source", strategy: "always", mapped: true, catalogs: []string{"v4.21"}, want: "skipped"},
		{name: "e01-bad-ci", ci: "fbc:\n  enabled: true\n  version_promotion_strategy: sometimes\n", catalogs: both, want: "failed"},
	}
}

func sha256Of(s string) string {
	sum := sha256.Sum256([]byte(s))
	return "sha256:" + hex.EncodeToString(sum[:])
}

// promotionFiles writes the packages: three bundles each (as the catalog blobs a render of their images
// gives, pinned by digest), the template, and each catalog as the template renders it.
func promotionFiles(t *testing.T, pkgs []promotionPkg) map[string]string {
	t.Helper()
	files := map[string]string{}
	for _, k := range pkgs {
		p := k.name
		var blobs strings.Builder
		var images []string
		for _, v := range []string{"1.0.0", "1.1.0", "2.0.0"} {
			img := "quay.io/example/" + p + "-bundle@" + sha256Of(p+v)
			images = append(images, img)
			fmt.Fprintf(&blobs, "---\nschema: olm.bundle\npackage: %s\nname: %s.v%s\nimage: %s\nproperties:\n- type: olm.package\n  value: {packageName: %s, version: %s}\n- type: olm.csv.metadata\n  value: {displayName: %s, description: a test operator}\n",
				p, p, v, img, p, v, p)
		}
		tmplName, tmpl := "basic.yaml", fmt.Sprintf("schema: olm.template.basic\nentries:\n- schema: olm.package\n  name: %[1]s\n  defaultChannel: stable\n- schema: olm.channel\n  package: %[1]s\n  name: stable\n  entries:\n  - name: %[1]s.v1.0.0\n  - name: %[1]s.v1.1.0\n    replaces: %[1]s.v1.0.0\n  - name: %[1]s.v2.0.0\n    replaces: %[1]s.v1.1.0\n", p)
		if k.semver {
			tmplName, tmpl = "semver.yaml", "schema: olm.semver\ngenerateMajorChannels: true\ngenerateMinorChannels: false\nstable:\n  bundles:\n"
			for _, img := range images {
				tmpl += "  - image: " + img + "\n"
			}
		} else {
			for _, img := range images {
				tmpl += "- schema: olm.bundle\n  image: " + img + "\n"
			}
		}
		parsed, findings := template.Parse("t.yaml", []byte(tmpl), catalog.Limits{})
		if parsed == nil {
			t.Fatalf("%s: %v", p, findings)
		}
		docs, _ := catalog.ParseFile("seed.yaml", []byte(blobs.String()), catalog.Limits{})
		cr, _ := template.NewCatalogResolver("bundle-object-to-csv-metadata")
		cr.Add(docs)
		beh, _ := template.BehaviourOf("v1.46.0")
		out, findings := template.Render(context.Background(), parsed, template.Options{Resolver: cr, Behaviour: beh})
		if out == nil {
			t.Fatalf("%s: %v", p, findings)
		}
		var rendered bytes.Buffer
		if err := out.WriteYAML(&rendered); err != nil {
			t.Fatal(err)
		}
		dir := "operators/" + p + "/"
		switch {
		case k.ci != "":
			files[dir+"ci.yaml"] = k.ci
		case !k.noCI:
			ci := "---\nreviewers:\n  - owner-of-" + p + "\nfbc:\n"
			if k.mapped {
				ci += "  enabled: true\n"
			}
			if k.strategy != "" {
				ci += "  version_promotion_strategy: " + k.strategy + "\n"
			}
			if k.mapped {
				ci += "  catalog_mapping:\n    - template_name: " + tmplName + "\n      type: " + map[bool]string{true: "olm.semver", false: "olm.template.basic"}[k.semver] +
					"\n      catalog_names:\n        - v4.21\n        - v4.22\n"
			}
			files[dir+"ci.yaml"] = ci
		}
		if k.mapped {
			files[dir+"catalog-templates/"+tmplName] = tmpl
			files[dir+"Makefile"] = "OPM_VERSION ?= v1.46.0\n"
		}
		for _, v := range k.catalogs {
			files["catalogs/"+v+"/"+p+"/catalog.yaml"] = rendered.String()
		}
	}
	return files
}

// promotionPolicy lists the catalogs of versions by path, each with its image, with the community's bundle
// root and automerge by squash.
func promotionPolicy(host, baseRef string, versions ...string) string {
	var b strings.Builder
	b.WriteString("version: 1\ncatalogs:\n  - path: catalogs/v4.16\n    image: " + host + "/acme/catalog:latest\n    baseImage: " + baseRef + "\n")
	for _, v := range versions {
		fmt.Fprintf(&b, "  - path: catalogs/%s\n    image: %s/acme/catalog:%s\n    baseImage: %s\n", v, host, v, baseRef)
	}
	b.WriteString("maintainers: [maria]\npackages:\n  etcd: { owners: [bob] }\nbundles:\n  - path: operators\n    ownersFromCIYaml: true\n    templatesFromCIYaml: true\nautomerge: {enabled: true, method: squash}\n")
	return b.String()
}

// promotionPRs are the App's promotion pull requests to v4.23, by package.
func (e *rebuildEnv) promotionPRs() map[string]githubfake.PR {
	out := map[string]githubfake.PR{}
	for n := 1; n < 200; n++ {
		p, ok := e.fake.PullRequest("acme", "catalog", n)
		if !ok {
			continue
		}
		if to, pkg, ok := promote.ParseBranch(p.HeadRef); ok && to == "v4.23" && p.Author == e.fake.BotLogin() {
			if _, dup := out[pkg]; dup {
				e.t.Errorf("a second pull request for %s: #%d", pkg, p.Number)
			}
			out[pkg] = p
		}
	}
	return out
}

// trackingIssue is the App's promotion tracking issue (0 when none).
func (e *rebuildEnv) trackingIssues() []githubfake.PR {
	var out []githubfake.PR
	for n := 1; n < 200; n++ {
		if p, ok := e.fake.PullRequest("acme", "catalog", n); ok && p.Issue {
			out = append(out, p)
		}
	}
	return out
}

// followMain delivers a push for every move of main since last (GitHub's push after each merge) and returns
// main's head.
func (e *rebuildEnv) followMain(last string) string {
	e.t.Helper()
	if now, ok := e.fake.BranchSHA("acme", "catalog", "main"); ok && now != last {
		e.deliverPush(last, now)
		return now
	}
	return last
}

// TestPromotionOfTwentyPackages: a maintainer declares catalogs/v4.23 in the default branch's policy; the App
// promotes the 20 packages from v4.22: one pull request per promoted package from its own branch, labelled
// with the strategy — the always ones derived and merged by the App, the review-needed ones left open for
// their owners — nothing for the never ones, the package without a v4.22 catalog and the one whose ci.yaml is
// malformed, each listed in the tracking issue's comment with why. The push delivered again, and a /promote by
// a maintainer, open nothing twice; a /promote by anyone else is refused with a reply. After the merges the
// v4.23 catalog's image is built like the others. On SQLite and PostgreSQL.
func TestPromotionOfTwentyPackages(t *testing.T) {
	for _, backend := range backendNames {
		t.Run(backend, func(t *testing.T) { testPromotion(t, backend) })
	}
}

func testPromotion(t *testing.T, backend string) {
	e := newRebuildEnv(t, backend, rebuildPolicy)
	e.checks = []checks.Check{checks.Ownership{}, checks.Validation{}}
	srv, _, _ := e.start()
	pkgs := promotionPkgs()
	files := promotionFiles(t, pkgs)
	files[".catalogbot.yaml"] = promotionPolicy(e.reg.host, e.baseRef, "v4.21", "v4.22")
	before, seed := e.commitMain(files, "twenty packages up to v4.22")
	e.deliverPush(before, seed)
	waitQueueIdle(t, srv.Queue())
	// v4.21 and v4.22 are newly declared too, but they hold catalogs: no promotion.
	if prs := e.promotionPRs(); len(prs) != 0 || len(e.trackingIssues()) != 0 {
		t.Fatalf("a policy declaring catalogs that exist promoted: %v", prs)
	}

	// The maintainer declares v4.23.
	before, declared := e.commitMain(map[string]string{".catalogbot.yaml": promotionPolicy(e.reg.host, e.baseRef, "v4.21", "v4.22", "v4.23")}, "declare catalogs/v4.23")
	e.deliverPush(before, declared)
	waitQueueIdle(t, srv.Queue())
	// The new root holds nothing yet: its image is not built, and that is no failure.
	if run := e.waitImageRun(declared); run.Conclusion != "success" {
		t.Errorf("catalog image run on the commit declaring v4.23: %s %q\n%s", run.Conclusion, run.Title, run.Summary)
	}
	prs := e.promotionPRs()
	want := map[string]string{}
	for _, k := range pkgs {
		want[k.name] = k.want
		pr, opened := prs[k.name]
		if opened != (k.want == "merged" || k.want == "open") {
			t.Errorf("%s (want %s): pull request opened = %v", k.name, k.want, opened)
			continue
		}
		if !opened {
			continue
		}
		strategy := promote.Always
		if k.want == "open" {
			strategy = promote.ReviewNeeded
		}
		if len(pr.Labels) != 1 || pr.Labels[0] != promote.Label(strategy) {
			t.Errorf("%s: #%d is labelled %v, want %s", k.name, pr.Number, pr.Labels, promote.Label(strategy))
		}
		if pr.BaseRef != "main" || pr.HeadRef != promote.Branch("v4.23", k.name) {
			t.Errorf("%s: #%d goes from %s into %s", k.name, pr.Number, pr.HeadRef, pr.BaseRef)
		}
		// Exactly the package's promotion: its new catalog, and ci.yaml when a template maps it.
		diff := runGit(t, e.git.BarePath("acme", "catalog"), "diff", "--name-status", declared, pr.HeadSHA)
		wantDiff := "A\tcatalogs/v4.23/" + k.name + "/catalog.yaml"
		if k.mapped {
			wantDiff += "\nM\toperators/" + k.name + "/ci.yaml"
		}
		if diff != wantDiff {
			t.Errorf("%s: #%d changes\n%s\nwant\n%s", k.name, pr.Number, diff, wantDiff)
		}
	}
	if len(prs) != 15 {
		t.Errorf("%d promotion pull requests, want 15 (8 always, 7 review-needed)", len(prs))
	}
	issues := e.trackingIssues()
	if len(issues) != 1 {
		t.Fatalf("%d tracking issues, want 1", len(issues))
	}
	tracking := func() string {
		for _, c := range e.fake.Comments("acme", "catalog", issues[0].Number) {
			if strings.Contains(c.Body, "catalogbot:promotion v4.22 v4.23") {
				return c.Body
			}
		}
		t.Fatalf("no tracking comment on #%d", issues[0].Number)
		return ""
	}
	body := tracking()
	for _, line := range []string{
		"| `n01-never` | never | skipped: fbc.version_promotion_strategy is never (operators/n01-never/ci.yaml:",
		"| `n03-never` | never | skipped:",
		"| `s01-no-source` | always | skipped: it has no v4.22 catalog",
		"| `e01-bad-ci` | review-needed | failed: operators/e01-bad-ci/ci.yaml:3",
		"20 packages: 15 open, 4 skipped, 1 failed.",
	} {
		if !strings.Contains(body, line) {
			t.Errorf("the tracking comment lacks %q:\n%s", line, body)
		}
	}

	// GitHub delivers the push again: nothing is opened twice.
	e.deliverPush(before, declared)
	waitQueueIdle(t, srv.Queue())
	if again := e.promotionPRs(); len(again) != len(prs) || len(e.trackingIssues()) != 1 {
		t.Fatalf("the push delivered again: %d pull requests (was %d), %d tracking issues", len(again), len(prs), len(e.trackingIssues()))
	}

	// The App's pull requests are announced; the always ones merge by themselves, one after the other.
	numbers := make([]int, 0, len(prs))
	for _, pr := range prs {
		numbers = append(numbers, pr.Number)
	}
	sort.Ints(numbers)
	for _, n := range numbers {
		e.deliverPR(n, "opened")
	}
	last := declared
	deadline := time.Now().Add(3 * time.Minute)
	for {
		last = e.followMain(last)
		merged := 0
		for pkg, pr := range prs {
			if p, _ := e.fake.PullRequest("acme", "catalog", pr.Number); p.Merged {
				if want[pkg] != "merged" {
					t.Fatalf("%s (%s) was merged", pkg, want[pkg])
				}
				merged++
			}
		}
		if merged == 8 {
			break
		}
		if time.Now().After(deadline) {
			for pkg, pr := range prs {
				p, _ := e.fake.PullRequest("acme", "catalog", pr.Number)
				var comments []string
				for _, c := range e.fake.Comments("acme", "catalog", pr.Number) {
					comments = append(comments, c.Body)
				}
				t.Logf("%s #%d merged=%v comments=%q", pkg, pr.Number, p.Merged, comments)
			}
			t.Fatalf("%d of 8 always pull requests merged after 3 minutes", merged)
		}
		time.Sleep(100 * time.Millisecond)
	}
	waitQueueIdle(t, srv.Queue())
	last = e.followMain(last)
	waitQueueIdle(t, srv.Queue())
	for pkg, pr := range prs {
		own := e.prRun("catalogbot/ownership", pr.Number, pr.HeadSHA)
		switch want[pkg] {
		case "merged":
			if own.Conclusion != "success" || !strings.Contains(own.Title, "Promotion to v4.23 derived") {
				t.Errorf("%s: ownership of #%d: %s %q", pkg, pr.Number, own.Conclusion, own.Title)
			}
		case "open":
			if p, _ := e.fake.PullRequest("acme", "catalog", pr.Number); p.Merged || p.State != "open" {
				t.Errorf("%s: review-needed #%d is %s (merged %v)", pkg, pr.Number, p.State, p.Merged)
			}
			if own.Conclusion == "success" {
				t.Errorf("%s: ownership of review-needed #%d passed without an owner: %q", pkg, pr.Number, own.Title)
			}
		}
	}
	// The v4.23 catalog's image is built from main as the promotions left it.
	run := e.waitImageRun(last)
	if run.Conclusion != "success" {
		t.Errorf("catalog image run on %s: %s %q\n%s", jobs.Short(last), run.Conclusion, run.Title, run.Summary)
	}
	e.pushedDigest("v4.23")
	for pkg, w := range want {
		has := strings.Contains(runGit(t, e.git.BarePath("acme", "catalog"), "ls-tree", "-r", "--name-only", last, "catalogs/v4.23/"), "catalogs/v4.23/"+pkg+"/")
		if has != (w == "merged") {
			t.Errorf("main's catalogs/v4.23 holds %s: %v (want %s)", pkg, has, w)
		}
	}

	// An owner of r01-template (a reviewer of its ci.yaml) approves its promotion with /approve: it merges.
	srv.commands.SetClockSkew(0)
	approved := prs["r01-template"]
	id, err := e.fake.AddComment("acme", "catalog", approved.Number, "owner-of-r01-template", "/approve")
	if err != nil {
		t.Fatal(err)
	}
	ev, err := e.fake.IssueCommentEvent("acme", "catalog", id, "created", "")
	if err != nil {
		t.Fatal(err)
	}
	if d, err := e.fake.Deliver(context.Background(), "issue_comment", withCloneURL(t, ev, e.git.URL("acme", "catalog"))); err != nil || d.StatusCode != 202 {
		t.Fatalf("delivering the /approve: %v %+v", err, d)
	}
	e.waitMergedPR(approved.Number)
	want["r01-template"] = "merged"
	waitQueueIdle(t, srv.Queue())
	last = e.followMain(last)
	waitQueueIdle(t, srv.Queue())

	// The owners of r04-copy decline its promotion: closed, it is never opened again.
	declined := prs["r04-copy"].Number
	if err := e.fake.ClosePullRequest("acme", "catalog", declined); err != nil {
		t.Fatal(err)
	}

	// /promote on the tracking issue: refused for someone who is not a maintainer, with a reply; a maintainer's
	// opens nothing twice and answers with the state of each package.
	for _, tc := range []struct{ who, want string }{
		{"mallory", "`/promote` was not applied: only the maintainers in the default branch's policy (maria) may use it"},
		{"bob", "`/promote` was not applied: only the maintainers"},
		{"maria", "9 merged"},
	} {
		id, err := e.fake.AddComment("acme", "catalog", issues[0].Number, tc.who, "Please:\n\n/promote v4.22 v4.23\n")
		if err != nil {
			t.Fatal(err)
		}
		ev, err := e.fake.IssueCommentEvent("acme", "catalog", id, "created", "")
		if err != nil {
			t.Fatal(err)
		}
		if d, err := e.fake.Deliver(context.Background(), "issue_comment", withCloneURL(t, ev, e.git.URL("acme", "catalog"))); err != nil || d.StatusCode != 202 {
			t.Fatalf("delivering the comment: %v %+v", err, d)
		}
		waitQueueIdle(t, srv.Queue())
		var reply string
		for _, c := range e.fake.Comments("acme", "catalog", issues[0].Number) {
			if strings.Contains(c.Body, fmt.Sprintf("catalogbot:promote-reply %d ", id)) {
				reply = c.Body
			}
		}
		if !strings.Contains(reply, tc.want) {
			t.Errorf("/promote by %s: the reply %q lacks %q", tc.who, reply, tc.want)
		}
		reacted := len(e.fake.Reactions("acme", "catalog", id)) > 0
		if reacted != (tc.who == "maria") {
			t.Errorf("/promote by %s: reacted = %v", tc.who, reacted)
		}
	}
	if again := e.promotionPRs(); len(again) != len(prs) {
		t.Errorf("after /promote: %d pull requests, was %d", len(again), len(prs))
	}
	// A maintainer's /promote on an open pull request whose delivery was lost: the resync finds it, once.
	lost, err := e.fake.AddComment("acme", "catalog", prs["r02-template"].Number, "maria", "/promote v4.22 v4.23")
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 2; i++ {
		if err := srv.recovery.Resync(context.Background()); err != nil {
			t.Fatal(err)
		}
		waitQueueIdle(t, srv.Queue())
	}
	if r := e.fake.Reactions("acme", "catalog", lost); len(r) != 1 {
		t.Errorf("the lost /promote: reactions %v, want one 👍", r)
	}

	// Every call the promotion made is one the App's manifest grants, and the tracking issue needed issues: write.
	granted := manifestPermissions(t)
	usedIssues := false
	for _, r := range e.fake.Requests() {
		perm, access, ok := githubfake.RoutePermission(r.Route)
		if !ok {
			continue
		}
		if granted[perm] != access && granted[perm] != "write" {
			t.Errorf("%s needs %s: %s; the manifest grants %q", r.Route, perm, access, granted[perm])
		}
		usedIssues = usedIssues || perm == "issues"
	}
	if !usedIssues {
		t.Errorf("no call needed issues: write")
	}
	if want := fmt.Sprintf("| `r04-copy` | review-needed | #%d closed |", declined); !strings.Contains(tracking(), want) {
		t.Errorf("the tracking comment lacks %q:\n%s", want, tracking())
	}
	if !strings.Contains(tracking(), "9 merged") {
		t.Errorf("the tracking comment does not follow the merges:\n%s", tracking())
	}
}
