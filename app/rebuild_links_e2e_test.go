package app

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/catalogbot/catalogbot/app/jobs"
	"github.com/catalogbot/catalogbot/app/store"
)

// The App's post-merge bundle build never follows a link either (issue 26.7): a bundle directory that reaches
// the default branch with manifests/ a link to another folder of the repository (merged by an administrator
// past the checks, or pushed directly) is not built: catalogbot/bundle-image fails naming the link, and no tag
// of the version exists on the registry, so the folder the link points at is never published as the bundle.
func TestMergedBundleWithALinkIsNotBuilt(t *testing.T) {
	e := newRebuildEnv(t, store.BackendSQLite, bundleImagePolicy)
	e.start()
	files := e2eBundle("1.1.0", "registry+v1")
	csv := files["operators/etcd/1.1.0/manifests/etcd.csv.yaml"]
	delete(files, "operators/etcd/1.1.0/manifests/etcd.csv.yaml")
	files["private/manifests/etcd.csv.yaml"] = csv
	files["private/manifests/secret.yaml"] = "apiVersion: v1\nkind: Secret\nmetadata: {name: stolen}\ndata: {key: c2VjcmV0}\n"
	dir := filepath.Join(e.work.dir, "operators", "etcd", "1.1.0")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("../../../private/manifests", filepath.Join(dir, "manifests")); err != nil {
		t.Skipf("cannot make a symlink here: %v", err)
	}
	before, sha := e.commitMain(files, "merge #7: etcd 1.1.0, its manifests a link")
	if mode := runGit(t, e.work.dir, "ls-tree", sha, "operators/etcd/1.1.0/manifests"); !strings.HasPrefix(mode, "120000") {
		t.Fatalf("manifests is not a link in git: %s", mode)
	}
	e.deliverPush(before, sha)
	run := e.waitRun(jobs.BundleImageCheckRunName, sha)
	if run.Conclusion != "failure" || !strings.Contains(run.Title+run.Summary, "operators/etcd/1.1.0") || !strings.Contains(run.Summary, "link") {
		t.Errorf("bundle-image run: %s %q, want failure naming the link\n%s", run.Conclusion, run.Title, run.Summary)
	}
	ref, err := name.ParseReference(e.reg.host+"/acme/etcd-bundle:v1.1.0", name.Insecure)
	if err != nil {
		t.Fatal(err)
	}
	if desc, err := remote.Head(ref); err == nil {
		t.Errorf("the version was pushed anyway: %s", desc.Digest)
	}
}
