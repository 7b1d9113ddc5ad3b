package app

import (
	"strings"
	"testing"
	"time"

	"github.com/catalogbot/catalogbot/app/store"
	"github.com/catalogbot/catalogbot/checks"
)

const bundlePolicy = `version: 1
catalogs:
  - path: catalogs/v4.16
bundles:
  - path: operators
    ownersFromCIYaml: true
maintainers: [maria]
`

const e2eAnnotations = `annotations:
  operators.operatorframework.io.bundle.mediatype.v1: registry+v1
  operators.operatorframework.io.bundle.manifests.v1: manifests/
  operators.operatorframework.io.bundle.metadata.v1: metadata/
  operators.operatorframework.io.bundle.package.v1: etcd
  operators.operatorframework.io.bundle.channels.v1: stable
`

func e2eBundle(version, mediatype string) map[string]string {
	return map[string]string{
		"operators/etcd/" + version + "/metadata/annotations.yaml": strings.Replace(e2eAnnotations, "registry+v1", mediatype, 1),
		"operators/etcd/" + version + "/manifests/etcd.csv.yaml": "apiVersion: operators.coreos.com/v1alpha1\nkind: ClusterServiceVersion\nmetadata:\n  name: etcdoperator.v" +
			version + "\nspec:\n  version: " + version + "\n  installModes: [{type: AllNamespaces, supported: true}]\n",
	}
}

// A bundle pull request through the App: bob, a reviewer in operators/etcd/ci.yaml, adds a version whose
// annotations are not registry+v1; ownership passes (from ci.yaml, read from the base). opm renders such a
// bundle and operator-sdk's default validators accept it, so by default the mediatype is a warning annotated on
// its line and validation passes; a bundle root with strict: true (operator-registry's own format checks, as
// `opm alpha bundle validate` runs them) makes it an error and validation fails.
func TestBundlePullRequestThroughTheApp(t *testing.T) {
	for _, tc := range []struct {
		name, policy, conclusion, level string
	}{
		{"reference verdict", bundlePolicy, "success", "warning"},
		{"strict", strings.Replace(bundlePolicy, "    ownersFromCIYaml: true\n", "    ownersFromCIYaml: true\n    strict: true\n", 1), "failure", "failure"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := startE2EWith(t, store.BackendSQLite, func(w *workRepo) (string, string) {
				files := map[string]string{".catalogbot.yaml": tc.policy, "catalogs/v4.16/etcd/catalog.yaml": e2eBase, "operators/etcd/ci.yaml": "reviewers: [bob]\n"}
				for k, v := range e2eBundle("1.0.0", "registry+v1") {
					files[k] = v
				}
				base := w.commit(files, "base")
				w.push("HEAD", "refs/heads/main")
				runGit(t, w.dir, "checkout", "-q", "-b", "pr")
				head := w.commit(e2eBundle("1.1.0", "helm"), "add etcd 1.1.0")
				w.push("HEAD", "refs/pull/1/head")
				return base, head
			}, checks.Ownership{}, checks.Validation{}, checks.Immutability{})
			e.deliver(t, "pull_request", e.prEvent("opened", e.headSHA))
			runs := latestByName(e.waitRuns(t, e.headSHA, 2))
			if own := runs["catalogbot/ownership"]; own.Conclusion != "success" {
				t.Errorf("ownership = %s (%s), want success: bob is a ci.yaml reviewer of etcd\n%s", own.Conclusion, own.Title, own.Summary)
			}
			val := runs["catalogbot/validate"]
			if val.Conclusion != tc.conclusion {
				t.Errorf("validate = %s, want %s\n%s", val.Conclusion, tc.conclusion, val.Summary)
			}
			found := false
			for _, a := range val.Annotations {
				if a.Path == "operators/etcd/1.1.0/metadata/annotations.yaml" && a.StartLine == 2 && strings.Contains(a.Message, "registry+v1") && a.Level == tc.level {
					found = true
				}
			}
			if !found {
				t.Errorf("no %s annotation on the mediatype line: %+v", tc.level, val.Annotations)
			}
		})
	}
}

// A ci.yaml reviewer's valid bundle pull request merges by itself: the merge decision counts the owners the
// base's ci.yaml adds, as the ownership check does. On SQLite and PostgreSQL (the owners travel with the
// recorded check).
func TestBundlePullRequestByACIYamlReviewerMerges(t *testing.T) {
	for _, backend := range backendNames {
		t.Run(backend, func(t *testing.T) {
			e := startE2EWith(t, backend, func(w *workRepo) (string, string) {
				files := map[string]string{".catalogbot.yaml": bundlePolicy + "automerge: {enabled: true}\n",
					"catalogs/v4.16/etcd/catalog.yaml": e2eBase, "operators/etcd/ci.yaml": "reviewers: [bob]\n"}
				for k, v := range e2eBundle("1.0.0", "registry+v1") {
					files[k] = v
				}
				base := w.commit(files, "base")
				w.push("HEAD", "refs/heads/main")
				runGit(t, w.dir, "checkout", "-q", "-b", "pr")
				head := w.commit(e2eBundle("1.1.0", "registry+v1"), "add etcd 1.1.0")
				w.push("HEAD", "refs/pull/1/head")
				return base, head
			}, checks.Ownership{}, checks.Validation{}, checks.Immutability{})
			e.deliver(t, "pull_request", e.prEvent("opened", e.headSHA))
			if merges := e.waitMerged(t, 30*time.Second); len(merges) != 1 || merges[0].HeadSHA != e.headSHA {
				var comments []string
				for _, c := range e.fake.Comments("acme", "catalog", 1) {
					comments = append(comments, c.Body)
				}
				t.Fatalf("merges = %+v, want bob's bundle pull request merged; comments: %q", merges, comments)
			}
		})
	}
}
