package app

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/catalogbot/catalogbot/app/githubfake"
	"github.com/catalogbot/catalogbot/catalog/bundle"
	"github.com/catalogbot/catalogbot/catalog/image"
)

func bundleImagePolicy(host, baseRef string) string {
	return rebuildPolicy(host, baseRef) + fmt.Sprintf("bundles:\n  - path: operators\n    image: %s/acme/{package}-bundle:v{version}\n", host)
}

func (e *rebuildEnv) waitRun(name, sha string) githubfake.CheckRun {
	e.t.Helper()
	deadline := time.Now().Add(90 * time.Second)
	for {
		for _, r := range e.fake.CheckRuns("acme", "catalog", sha) {
			if r.Name == name && r.Status == "completed" {
				return r
			}
		}
		if time.Now().After(deadline) {
			e.t.Fatalf("no completed %s run on %s after 90s", name, short(sha))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// expectedBundleDigest builds the bundle directory's image from the same files, as catalogbot build-bundle does.
func expectedBundleDigest(t *testing.T, files map[string]string, dir string) string {
	t.Helper()
	tmp := t.TempDir()
	for k, v := range files {
		p := filepath.Join(tmp, filepath.FromSlash(k))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(v), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	fsys := os.DirFS(filepath.Join(tmp, dir))
	b, _, err := bundle.Load(context.Background(), fsys, bundle.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	img, err := image.BundleImage(context.Background(), fsys, b.Annotations, image.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	d, err := img.Digest()
	if err != nil {
		t.Fatal(err)
	}
	return d.String()
}

// A merged bundle directory becomes its bundle image on the registry the policy names, reported as
// catalogbot/bundle-image on the merge commit with the digest (the same as `catalogbot build-bundle` of the
// directory); a later merge of the same version with other content is refused, and the tag keeps the
// digest it had. The catalog image of each commit is built as before. On SQLite and PostgreSQL.
func TestMergedBundleBecomesItsImage(t *testing.T) {
	for _, backend := range backendNames {
		t.Run(backend, func(t *testing.T) {
			e := newRebuildEnv(t, backend, bundleImagePolicy)
			e.start()
			files := e2eBundle("1.1.0", "registry+v1")
			want := expectedBundleDigest(t, files, "operators/etcd/1.1.0")
			before, sha := e.commitMain(files, "merge #7: etcd 1.1.0")
			e.deliverPush(before, sha)
			run := e.waitRun(BundleImageCheckRunName, sha)
			if run.Conclusion != "success" || !strings.Contains(run.Summary, want) || !strings.Contains(run.Summary, "/acme/etcd-bundle:v1.1.0") {
				t.Fatalf("bundle-image run: %s %q\n%s", run.Conclusion, run.Title, run.Summary)
			}
			ref, err := name.ParseReference(e.reg.host+"/acme/etcd-bundle:v1.1.0", name.Insecure)
			if err != nil {
				t.Fatal(err)
			}
			desc, err := remote.Head(ref)
			if err != nil {
				t.Fatal(err)
			}
			if desc.Digest.String() != want {
				t.Errorf("pushed %s, want %s", desc.Digest, want)
			}
			if img := e.waitImageRun(sha); img.Conclusion != "success" {
				t.Errorf("catalog image run: %s %q", img.Conclusion, img.Title)
			}

			// The same version again, other content: refused, the tag unchanged.
			changed := map[string]string{"operators/etcd/1.1.0/manifests/etcd.csv.yaml": files["operators/etcd/1.1.0/manifests/etcd.csv.yaml"] + "  displayName: etcd\n"}
			before, sha2 := e.commitMain(changed, "merge #8: etcd 1.1.0 changed")
			e.deliverPush(before, sha2)
			run = e.waitRun(BundleImageCheckRunName, sha2)
			if run.Conclusion != "failure" || !strings.Contains(run.Summary, "never replaced") {
				t.Errorf("second push of v1.1.0: %s %q\n%s", run.Conclusion, run.Title, run.Summary)
			}
			if desc, err := remote.Head(ref); err != nil || desc.Digest.String() != want {
				t.Errorf("the tag moved: %v %v", desc, err)
			}
			// A commit that changes no bundle directory has no bundle-image run.
			before, sha3 := e.commitMain(map[string]string{"notes/README.md": "hello\n"}, "merge #9")
			e.deliverPush(before, sha3)
			e.waitImageRun(sha3)
			for _, r := range e.fake.CheckRuns("acme", "catalog", sha3) {
				if r.Name == BundleImageCheckRunName {
					t.Errorf("a bundle-image run on a commit without bundle changes: %+v", r)
				}
			}
		})
	}
}

// Registry down: the bundle-image run stays in progress with a note while the push is tried again, and
// succeeds once the registry is back.
func TestBundleImageRetriesRegistryFailures(t *testing.T) {
	e := newRebuildEnv(t, BackendSQLite, bundleImagePolicy)
	e.tune = func(rb *Rebuilder) { rb.retryWait = 500 * time.Millisecond }
	e.reg.down.Store(true)
	e.start()
	before, sha := e.commitMain(e2eBundle("1.2.0", "registry+v1"), "merge #10")
	e.deliverPush(before, sha)
	deadline := time.Now().Add(60 * time.Second)
	for {
		var note bool
		for _, r := range e.fake.CheckRuns("acme", "catalog", sha) {
			if r.Name == BundleImageCheckRunName && r.Status == "in_progress" && strings.Contains(r.Summary, " of 3 failed") {
				note = true
			}
		}
		if note {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no retry note: %+v", e.fake.CheckRuns("acme", "catalog", sha))
		}
		time.Sleep(20 * time.Millisecond)
	}
	e.reg.down.Store(false)
	if run := e.waitRun(BundleImageCheckRunName, sha); run.Conclusion != "success" {
		t.Errorf("after the registry came back: %s %q\n%s", run.Conclusion, run.Title, run.Summary)
	}
}
