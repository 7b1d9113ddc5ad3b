package checks_test

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/catalogbot/catalogbot/catalog"
	"github.com/catalogbot/catalogbot/checks"
)

// sharedTestdata is the shared test data of real community content: $CATALOGBOT_SHARED_TESTDATA, else
// ../shared/testdata next to the repository. The test is skipped when it is absent.
func sharedTestdata(t testing.TB) string {
	t.Helper()
	dir := os.Getenv("CATALOGBOT_SHARED_TESTDATA")
	if dir == "" {
		dir = filepath.Join("..", "..", "shared", "testdata")
	}
	if _, err := os.Stat(filepath.Join(dir, "templates", "catalogs")); err != nil {
		t.Skipf("the shared test data is absent (%v): set CATALOGBOT_SHARED_TESTDATA", err)
	}
	return dir
}

// copyTree writes every file under src into the repository under dst.
func (r *gitRepo) copyTree(src, dst string) {
	r.t.Helper()
	err := filepath.WalkDir(src, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		r.write(filepath.ToSlash(filepath.Join(dst, rel)), string(data))
		return nil
	})
	if err != nil {
		r.t.Fatal(err)
	}
}

const rmqPkg = "rabbitmq-cluster-operator"

const communityPolicy = `version: 1
catalogs:
  - path: catalogs/v4.18
  - path: catalogs/v4.19
  - path: catalogs/v4.20
  - path: catalogs/v4.21
  - path: catalogs/v4.22
maintainers: [alice]
bundles:
  - path: operators
    ownersFromCIYaml: true
    templatesFromCIYaml: true
    image: quay.io/community-operator-pipeline-prod/{package}:{version}
`

// communityRepo is the community layout of rabbitmq-cluster-operator as the shared test data holds it:
// ci.yaml, Makefile and basic templates, four bundle directories (2.21.1 to 2.22.3), and the catalogs the
// templates render into. It returns the base commit.
func communityRepo(t *testing.T, ciYaml func(string) string, policyExtra ...string) (*gitRepo, string) {
	td := sharedTestdata(t)
	r := newGitRepo(t)
	r.write(".catalogbot.yaml", communityPolicy+strings.Join(policyExtra, ""))
	r.copyTree(filepath.Join(td, "bundles", rmqPkg), "operators/"+rmqPkg)
	for _, v := range []string{"v4.18", "v4.19", "v4.20", "v4.21", "v4.22"} {
		r.copyTree(filepath.Join(td, "templates", "catalogs", v, rmqPkg), "catalogs/"+v+"/"+rmqPkg)
	}
	// The templates name most bundle images by tag: they resolve offline from the committed catalogs, which
	// hold the same references verbatim.
	if ciYaml != nil {
		p := filepath.Join(r.dir, "operators", rmqPkg, "ci.yaml")
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		if s := ciYaml(string(data)); s == "" {
			if err := os.Remove(p); err != nil {
				t.Fatal(err)
			}
		} else {
			r.write("operators/"+rmqPkg+"/ci.yaml", s)
		}
	}
	return r, r.commit("base")
}

// newBundle adds operators/rabbitmq-cluster-operator/2.22.4: 2.22.3 renamed, its CSV edited by csv and its
// CRD by crd, and commits it.
func (r *gitRepo) newBundle(csv, crd func(string) string) string {
	r.t.Helper()
	src := filepath.Join(r.dir, "operators", rmqPkg, "2.22.3")
	dst := "operators/" + rmqPkg + "/2.22.4"
	r.copyTree(src, dst)
	csvFile := dst + "/manifests/rabbitmq-cluster-operator.clusterserviceversion.yaml"
	data, err := os.ReadFile(filepath.Join(r.dir, csvFile))
	if err != nil {
		r.t.Fatal(err)
	}
	s := strings.Replace(string(data), "name: rabbitmq-cluster-operator.v2.22.3", "name: rabbitmq-cluster-operator.v2.22.4", 1)
	s = strings.Replace(s, "\n  version: 2.22.3\n", "\n  version: 2.22.4\n", 1)
	r.write(csvFile, csv(s))
	crdFile := dst + "/manifests/rabbitmq.com_rabbitmqcluster.yaml"
	data, err = os.ReadFile(filepath.Join(r.dir, crdFile))
	if err != nil {
		r.t.Fatal(err)
	}
	r.write(crdFile, crd(string(data)))
	return r.commit("add 2.22.4")
}

func replacesOf(name string) func(string) string {
	return func(s string) string {
		return regexp.MustCompile(`(?m)^  replaces: .*\n`).ReplaceAllString(s, func() string {
			if name == "" {
				return ""
			}
			return "  replaces: " + name + "\n"
		}())
	}
}

// withoutField removes the spec property name (and its block) from the RabbitmqCluster CRD.
func withoutField(name string) func(string) string {
	return func(s string) string {
		key := "\n              " + name + ":\n"
		i := strings.Index(s, key)
		if i < 0 {
			panic("no field " + name)
		}
		rest := s[i+len(key):]
		end := 0
		for _, line := range strings.SplitAfter(rest, "\n") {
			if !strings.HasPrefix(line, "               ") {
				break
			}
			end += len(line)
		}
		return s[:i+1] + rest[end:]
	}
}

func same(s string) string { return s }

func runPreviewChecks(t *testing.T, r *gitRepo, base, head string) (verdict, *checks.PullRequest) {
	t.Helper()
	pr := buildPR(t, r, base, head, "alice", nil) // a maintainer: the costly checks run
	runner := checks.NewRunner([]checks.Check{checks.Validation{}, checks.CRDSafety{}})
	out := verdict{}
	for _, res := range runner.Run(context.Background(), pr) {
		out[res.Check] = res
	}
	return out, pr
}

const rmqCSV = "operators/" + rmqPkg + "/2.22.4/manifests/rabbitmq-cluster-operator.clusterserviceversion.yaml"

// A bundle pull request whose CSV replaces the last bundle and whose CRD drops a spec field: the preview
// renders the five catalogs with it, the predecessor comes from their channels, the CRDs are compared, and
// the upgrade graphs of the channel are drawn before and after.
func TestPreviewUnsafeCRDThroughRenderedChannels(t *testing.T) {
	r, base := communityRepo(t, nil)
	head := r.newBundle(replacesOf("rabbitmq-cluster-operator.v2.22.3"), withoutField("delayStartSeconds"))
	v, pr := runPreviewChecks(t, r, base, head)
	v.expect(t, "validation", checks.Success)
	v.expect(t, "crd-safety", checks.Failure, "crd.field-removed")
	cs := v["crd-safety"]
	if !strings.Contains(cs.Summary, "rendered channels") || !strings.Contains(cs.Summary, "`rabbitmq-cluster-operator.v2.22.3` → `rabbitmq-cluster-operator.v2.22.4` (replaces, channel stable of v4.18, v4.19, v4.20, v4.21, v4.22") {
		t.Errorf("crd-safety summary does not name the rendered edge:\n%s", cs.Summary)
	}
	crdData, err := os.ReadFile(filepath.Join(r.dir, "operators", rmqPkg, "2.22.4", "manifests", "rabbitmq.com_rabbitmqcluster.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	crdLines := strings.Split(string(crdData), "\n")
	for _, f := range cs.Findings {
		if f.Rule != "crd.field-removed" {
			continue
		}
		if f.File != "operators/"+rmqPkg+"/2.22.4/manifests/rabbitmq.com_rabbitmqcluster.yaml" || !strings.Contains(f.Message, "delayStartSeconds") {
			t.Errorf("field-removed finding at %s: %s", f.Position, f.Message)
		}
		// The removed field's parent, spec, in the new CRD: where the field was.
		if f.Line < 2 || f.Line > len(crdLines) || strings.TrimSpace(crdLines[f.Line-1]) != "spec:" {
			t.Errorf("field-removed finding on line %d, want the line of its parent spec:", f.Line)
		}
	}
	if !strings.Contains(v["validation"].Summary, "catalog update of `rabbitmq-cluster-operator` (previewed): valid (5 catalogs") {
		t.Errorf("validation summary:\n%s", v["validation"].Summary)
	}
	graphs := checks.UpgradeGraphs(pr)
	if !strings.Contains(graphs, "channel `stable`, after the catalog update (previewed; v4.18)") ||
		!strings.Contains(graphs, "rabbitmq-cluster-operator.v2.22.4") {
		t.Errorf("upgrade graphs:\n%s", graphs)
	}
}

// A CSV that replaces a bundle its channel does not have: the rendered channel would have two heads — the
// catalog update would be invalid, which fails the bundle pull request on the CSV's replaces line.
func TestPreviewInvalidCatalogOnCSV(t *testing.T) {
	r, base := communityRepo(t, nil)
	head := r.newBundle(replacesOf("rabbitmq-cluster-operator.v2.9.9"), same)
	v, _ := runPreviewChecks(t, r, base, head)
	v.expect(t, "validation", checks.Failure)
	found := false
	for _, f := range v["validation"].Findings {
		if f.File == rmqCSV && f.Severity == catalog.SeverityError && strings.Contains(f.Message, "the catalog update would render catalogs/v4.18/"+rmqPkg+"/catalog.yaml") {
			found = true
			if f.Rule != "channel.multiple-heads" || f.Line != 309 { // spec.replaces
				t.Errorf("%s on line %d, want channel.multiple-heads on the CSV's replaces (line 309): %s", f.Rule, f.Line, f.Message)
			}
		}
	}
	if !found {
		t.Errorf("no finding of the rendered catalog on the CSV:\n%s", findingsText(v["validation"].Findings))
	}
}

// A CSV that names no predecessor, as most community bundles: in a basic template the catalog update puts it
// after the head of its channel, so the channel stays valid and the CRDs are compared with that head's.
func TestPreviewChainsToChannelHead(t *testing.T) {
	r, base := communityRepo(t, nil)
	head := r.newBundle(replacesOf(""), withoutField("delayStartSeconds"))
	v, _ := runPreviewChecks(t, r, base, head)
	v.expect(t, "validation", checks.Success)
	if hasRule(v["validation"].Findings, "preview.version-order") {
		t.Errorf("2.22.4 after 2.22.3 is said not to fit its channel:\n%s", findingsText(v["validation"].Findings))
	}
	v.expect(t, "crd-safety", checks.Failure, "crd.field-removed")
	if s := v["crd-safety"].Summary; !strings.Contains(s, "it replaces the head of its channels, rabbitmq-cluster-operator.v2.22.3") ||
		!strings.Contains(s, "`rabbitmq-cluster-operator.v2.22.3` → `rabbitmq-cluster-operator.v2.22.4` (replaces, channel stable") {
		t.Errorf("crd-safety summary:\n%s", s)
	}
}

// A bundle whose version does not fit a channel it joins (issue 27.2): a CSV naming no predecessor, of a
// version below the head of its channel stable; the community's catalog update would put it after that head,
// so users of 2.22.3 would "upgrade" to 2.0.9. The preview warns on the CSV's spec.version line (the catalog
// stays valid: opm does not order versions).
func TestPreviewVersionDoesNotFitItsChannel(t *testing.T) {
	r, base := communityRepo(t, nil)
	head := r.newBundle(func(s string) string {
		s = replacesOf("")(s)
		s = strings.Replace(s, "name: rabbitmq-cluster-operator.v2.22.4", "name: rabbitmq-cluster-operator.v2.0.9", 1)
		return strings.Replace(s, "\n  version: 2.22.4\n", "\n  version: 2.0.9\n", 1)
	}, same)
	v, _ := runPreviewChecks(t, r, base, head)
	v.expect(t, "validation", checks.Success, "preview.version-order")
	found := false
	for _, f := range v["validation"].Findings {
		if f.Rule != "preview.version-order" {
			continue
		}
		found = true
		if f.File != rmqCSV || f.Line != 47 || f.Severity != catalog.SeverityWarning ||
			!strings.Contains(f.Message, "rabbitmq-cluster-operator.v2.0.9 (version 2.0.9) the upgrade of rabbitmq-cluster-operator.v2.22.3 (version 2.22.3) in channel stable") {
			t.Errorf("%s:%d %s %s", f.File, f.Line, f.Severity, f.Message)
		}
	}
	if !found {
		t.Errorf("no preview.version-order finding:\n%s", findingsText(v["validation"].Findings))
	}
}

// An olm.skipRange that does not parse passes every bundle check, but the catalog update would be refused:
// the preview fails the pull request on the annotation's line.
func TestPreviewUnparsableSkipRange(t *testing.T) {
	r, base := communityRepo(t, nil)
	head := r.newBundle(func(s string) string {
		s = replacesOf("rabbitmq-cluster-operator.v2.22.3")(s)
		return strings.Replace(s, "\n  annotations:\n", "\n  annotations:\n    olm.skipRange: '>=2.22.0 <<2.22.4'\n", 1)
	}, same)
	v, _ := runPreviewChecks(t, r, base, head)
	v.expect(t, "validation", checks.Failure)
	found := false
	for _, f := range v["validation"].Findings {
		// The bundle's own check (bundle.csv-skiprange) or, without it, the previewed catalog's refusal; one
		// error on the line either way.
		if f.File == rmqCSV && f.Line == 7 && f.Severity == catalog.SeverityError {
			if found {
				t.Errorf("two errors on the olm.skipRange line:\n%s", findingsText(v["validation"].Findings))
			}
			found = true
		}
	}
	if !found {
		t.Errorf("no finding on the CSV's olm.skipRange line (7):\n%s", findingsText(v["validation"].Findings))
	}
}

// Packages without templates: ci.yaml's updateGraph chooses the predecessors, else the highest lower version;
// the summary says which rule did.
func TestPreviewFallbackRules(t *testing.T) {
	noFBC := func(mode string) func(string) string {
		return func(s string) string {
			if mode == "none" {
				return ""
			}
			s = s[:strings.Index(s, "fbc:")]
			if mode != "" {
				s += "updateGraph: " + mode + "\n"
			}
			return s
		}
	}
	for _, tc := range []struct {
		mode, rule string
		want       checks.Conclusion
	}{
		{"semver-mode", "ci.yaml updateGraph: semver-mode", checks.Failure},
		{"", "the highest lower version", checks.Failure},
		{"none", "the highest lower version", checks.Failure},
		{"replaces-mode", "ci.yaml updateGraph: replaces-mode", checks.Success}, // the CSV names nothing
	} {
		t.Run(tc.mode, func(t *testing.T) {
			r, base := communityRepo(t, noFBC(tc.mode))
			head := r.newBundle(replacesOf(""), withoutField("delayStartSeconds"))
			v, _ := runPreviewChecks(t, r, base, head)
			v.expect(t, "crd-safety", tc.want)
			if s := v["crd-safety"].Summary; !strings.Contains(s, tc.rule) {
				t.Errorf("summary does not say %q:\n%s", tc.rule, s)
			}
			if tc.want == checks.Failure && !strings.Contains(v["crd-safety"].Summary, "`rabbitmq-cluster-operator.v2.22.3` → `rabbitmq-cluster-operator.v2.22.4`") {
				t.Errorf("2.22.3 not compared:\n%s", v["crd-safety"].Summary)
			}
		})
	}
}

// crdSafety.profile compatibility: an example added (refused only by OLM v1's preflight) is a warning that
// says so; the default profile fails it.
func TestPreviewCRDSafetyProfile(t *testing.T) {
	addExample := func(s string) string {
		return strings.Replace(s, "\n              delayStartSeconds:\n", "\n              delayStartSeconds:\n                example: 30\n", 1)
	}
	for _, tc := range []struct {
		extra string
		want  checks.Conclusion
	}{{"", checks.Failure}, {"crdSafety: {profile: compatibility}\n", checks.Success}} {
		r, base := communityRepo(t, nil, tc.extra)
		head := r.newBundle(replacesOf("rabbitmq-cluster-operator.v2.22.3"), addExample)
		v, _ := runPreviewChecks(t, r, base, head)
		v.expect(t, "crd-safety", tc.want, "crd.example-added")
		for _, f := range v["crd-safety"].Findings {
			if f.Rule == "crd.example-added" && tc.want == checks.Success && (f.Severity != catalog.SeverityWarning || !strings.Contains(f.Message, "OLM v1 will refuse this upgrade unless its preflight is disabled")) {
				t.Errorf("compatibility: %s", f)
			}
		}
	}
}

// A wide olm.skipRange makes every older bundle a predecessor: the same removed field is one finding listing
// the upgrades it applies to, not one per predecessor.
func TestCRDFindingsGroupedAcrossPredecessors(t *testing.T) {
	r, base := communityRepo(t, nil)
	head := r.newBundle(func(s string) string {
		s = replacesOf("rabbitmq-cluster-operator.v2.22.3")(s)
		return strings.Replace(s, "\n  annotations:\n", "\n  annotations:\n    olm.skipRange: '>=2.21.0 <2.22.4'\n", 1)
	}, withoutField("delayStartSeconds"))
	v, _ := runPreviewChecks(t, r, base, head)
	v.expect(t, "crd-safety", checks.Failure, "crd.field-removed")
	n := 0
	for _, f := range v["crd-safety"].Findings {
		if f.Rule != "crd.field-removed" {
			continue
		}
		n++
		if !strings.Contains(f.Message, "upgrades from 4 bundles (") || !strings.Contains(f.Message, "rabbitmq-cluster-operator.v2.21.1 (skipRange") {
			t.Errorf("not grouped: %s", f.Message)
		}
	}
	if n != 1 {
		t.Errorf("%d crd.field-removed findings, want 1 for the four upgrades:\n%s", n, findingsText(v["crd-safety"].Findings))
	}
}
