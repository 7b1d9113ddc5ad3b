package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func writeBundle(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, body := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

const bundleAnnotations = "annotations:\n  operators.operatorframework.io.bundle.mediatype.v1: registry+v1\n  operators.operatorframework.io.bundle.manifests.v1: manifests/\n  operators.operatorframework.io.bundle.metadata.v1: metadata/\n  operators.operatorframework.io.bundle.package.v1: etcd\n  operators.operatorframework.io.bundle.channels.v1: stable\n"

const bundleCSV = "apiVersion: operators.coreos.com/v1alpha1\nkind: ClusterServiceVersion\nmetadata:\n  name: etcdoperator.v1.0.0\nspec:\n  version: 1.0.0\n  minKubeVersion: 1.25.0\n  installModes: [{type: AllNamespaces, supported: true}]\n"

func TestBundleValidateCommand(t *testing.T) {
	good := writeBundle(t, map[string]string{"metadata/annotations.yaml": bundleAnnotations, "manifests/csv.yaml": bundleCSV})
	bad := writeBundle(t, map[string]string{"metadata/annotations.yaml": strings.Replace(bundleAnnotations, "registry+v1", "helm", 1), "manifests/csv.yaml": bundleCSV})
	run := func(args ...string) (int, string, string) {
		var out, errb bytes.Buffer
		code := runEnv(context.Background(), append([]string{"bundle", "validate"}, args...), &out, &errb, env{getenv: func(string) string { return "" }})
		return code, out.String(), errb.String()
	}
	if code, out, errs := run(good); code != exitPass || !strings.Contains(out, "valid: package etcd, etcdoperator.v1.0.0") {
		t.Errorf("valid bundle: exit %d\n%s%s", code, out, errs)
	}
	// A helm mediatype is operator-registry's format check: a warning, an error with --strict.
	if code, out, errs := run(bad); code != exitPass || !strings.Contains(out, "warning: bundle.mediatype") {
		t.Errorf("helm mediatype without --strict: exit %d, want 0 and a warning\n%s%s", code, out, errs)
	}
	code, out, _ := run("--strict", good, bad)
	if code != exitFail || !strings.Contains(out, filepath.Join(bad, "metadata", "annotations.yaml")+":2:") || !strings.Contains(out, "bundle.mediatype") {
		t.Errorf("invalid bundle: exit %d, want 1 and bundle.mediatype at annotations.yaml:2\n%s", code, out)
	}
	// operator-sdk's optional suite operatorhub only when asked: the CSV names no provider.
	if code, out, errs := run("--optional-suite", "operatorhub", good); code != exitFail || !strings.Contains(out, "operatorhub.provider") {
		t.Errorf("--optional-suite operatorhub: exit %d, want 1 and operatorhub.provider\n%s%s", code, out, errs)
	}
	// Removed Kubernetes APIs: a warning unless the bundle targets a version without them; the OpenShift
	// versions of the annotations say which, or --k8s-version.
	pc := "apiVersion: scheduling.k8s.io/v1beta1\nkind: PriorityClass\nmetadata:\n  name: high\nvalue: 1000\n"
	oldKube := strings.Replace(bundleCSV, "minKubeVersion: 1.25.0", "minKubeVersion: 1.19.0", 1)
	old := writeBundle(t, map[string]string{"metadata/annotations.yaml": bundleAnnotations + "  com.redhat.openshift.versions: v4.6-v4.8\n", "manifests/csv.yaml": oldKube, "manifests/pc.yaml": pc})
	newer := writeBundle(t, map[string]string{"metadata/annotations.yaml": bundleAnnotations + "  com.redhat.openshift.versions: v4.8\n", "manifests/csv.yaml": oldKube, "manifests/pc.yaml": pc})
	if code, out, errs := run("--optional-suite", "deprecated-apis", old); code != exitPass || !strings.Contains(out, filepath.Join(old, "manifests", "pc.yaml")+":1:13: warning: deprecated-apis.removed-api") {
		t.Errorf("v1beta1 PriorityClass for OpenShift 4.6-4.8: exit %d, want 0 and a warning at pc.yaml:1:13\n%s%s", code, out, errs)
	}
	if code, out, errs := run("--optional-suite", "deprecated-apis", newer); code != exitFail || !strings.Contains(out, "error: deprecated-apis.removed-api") || !strings.Contains(out, "OpenShift 4.8 and later") {
		t.Errorf("v1beta1 PriorityClass for OpenShift 4.8 and later: exit %d, want 1 and an error naming the range\n%s%s", code, out, errs)
	}
	if code, out, errs := run("--optional-suite", "deprecated-apis", "--k8s-version", "1.22", old); code != exitFail || !strings.Contains(out, "the Kubernetes version given is 1.22") {
		t.Errorf("--k8s-version 1.22: exit %d, want 1\n%s%s", code, out, errs)
	}
	if code, _, errs := run("--optional-suite", "deprecated-apis", "--k8s-version", "latest", old); code != exitCannotRun || !strings.Contains(errs, "--k8s-version") {
		t.Errorf("--k8s-version latest: exit %d, want 2\n%s", code, errs)
	}
	if code, out, errs := run("--optional-suite", "operatorframework", newer); code != exitFail || strings.Count(out, "deprecated-apis.removed-api") != 1 || !strings.Contains(out, "good-practices.no-deployment") || !strings.Contains(out, "operatorhub.provider") {
		t.Errorf("--optional-suite operatorframework: exit %d, want 1, each check once\n%s%s", code, out, errs)
	}
	if code, _, errs := run("--optional-suite", "community", good); code != exitCannotRun || !strings.Contains(errs, "unknown optional suite") {
		t.Errorf("--optional-suite community: exit %d, want 2\n%s", code, errs)
	}
	if code, _, errs := run(t.TempDir()); code != exitCannotRun || !strings.Contains(errs, "not a bundle directory") {
		t.Errorf("empty directory: exit %d, want 2 saying it is not a bundle\n%s", code, errs)
	}
	code, out, _ = run("--output", "json", "--strict", bad)
	var reps []bundleReport
	hasRule := func(r bundleReport, rule string) bool {
		for _, f := range r.Findings {
			if f.Rule == rule {
				return true
			}
		}
		return false
	}
	if err := json.Unmarshal([]byte(out), &reps); err != nil || len(reps) != 1 || reps[0].Valid || !hasRule(reps[0], "bundle.mediatype") {
		t.Errorf("json = %s (%v), exit %d", out, err, code)
	}
}

// Directories are judged concurrently; what is printed, and the exit code, must be what judging them one by
// one gives, in the order given: every output format, with valid, invalid, unreadable and missing directories
// mixed, and the community bundles when the shared test data is there.
func TestBundleValidateManyDirectoriesInOrder(t *testing.T) {
	good := writeBundle(t, map[string]string{"metadata/annotations.yaml": bundleAnnotations, "manifests/csv.yaml": bundleCSV})
	helm := writeBundle(t, map[string]string{"metadata/annotations.yaml": strings.Replace(bundleAnnotations, "registry+v1", "helm", 1), "manifests/csv.yaml": bundleCSV})
	noVersion := writeBundle(t, map[string]string{"metadata/annotations.yaml": bundleAnnotations, "manifests/csv.yaml": strings.Replace(bundleCSV, "  version: 1.0.0\n", "", 1) + "  relatedImages: [{name: x, image: ''}]\n"})
	empty := t.TempDir()
	missing := filepath.Join(t.TempDir(), "absent")
	dirs := []string{helm, good, noVersion, empty, good, missing, helm}
	anns, _ := filepath.Glob(filepath.Join("..", "..", "..", "shared", "testdata", "bundles", "*", "*", "metadata", "annotations.yaml"))
	if len(anns) == 0 {
		t.Log("the shared test data (../shared/testdata/bundles) is absent: the community bundles are left out, the synthetic ones checked")
	}
	for i, a := range anns {
		if testing.Short() && i > 20 {
			continue
		}
		dirs = append(dirs, filepath.Dir(filepath.Dir(a)))
	}
	run := func(args ...string) (int, string, string) {
		var out, errb bytes.Buffer
		code := runEnv(context.Background(), append([]string{"bundle", "validate"}, args...), &out, &errb, env{getenv: func(string) string { return "" }})
		return code, out.String(), errb.String()
	}
	for _, output := range []string{"text", "github", "json"} {
		for _, cut := range [][]string{dirs, dirs[:3], dirs[:2], dirs[:1]} {
			code, out, errs := run(append([]string{"--strict", "--output", output}, cut...)...)
			wantCode, wantOut, wantErr := exitPass, "", ""
			var wantJSON []json.RawMessage
			for _, d := range cut {
				c, o, e := run("--strict", "--output", output, d)
				switch {
				case c == exitCannotRun:
					wantCode = exitCannotRun
				case c == exitFail && wantCode == exitPass:
					wantCode = exitFail
				}
				if output == "json" {
					var one []json.RawMessage
					if err := json.Unmarshal([]byte(o), &one); err != nil || len(one) != 1 {
						t.Fatalf("%s alone, json: %v\n%s", d, err, o)
					}
					wantJSON = append(wantJSON, one[0])
					continue
				}
				wantOut += o
				wantErr += e
			}
			if output == "json" {
				var got []json.RawMessage
				if err := json.Unmarshal([]byte(out), &got); err != nil || len(got) != len(wantJSON) {
					t.Fatalf("json of %d directories: %v, %d reports\n%s", len(cut), err, len(got), out)
				}
				for i := range got {
					if !bytes.Equal(got[i], wantJSON[i]) {
						t.Errorf("json report %d (%s) differs from the directory alone:\n%s\nwant\n%s", i, cut[i], got[i], wantJSON[i])
					}
				}
			} else if output == "text" && (out != wantOut || errs != wantErr) {
				t.Errorf("%s output of %d directories differs from one directory at a time:\n%s%s\nwant\n%s%s", output, len(cut), out, errs, wantOut, wantErr)
			}
			// GitHub's output keeps the first annotations only: the same as judging them in a single goroutine.
			var seq bytes.Buffer
			seqCode := runBundleValidate(context.Background(), cut, output, bundleChecks{strict: true, workers: 1}, &seq, io.Discard, func(string) string { return "" })
			var par bytes.Buffer
			parCode := runBundleValidate(context.Background(), cut, output, bundleChecks{strict: true, workers: 8}, &par, io.Discard, func(string) string { return "" })
			if seq.String() != par.String() || seqCode != parCode || parCode != code {
				t.Errorf("%s output of %d directories on 8 goroutines differs from one (exit %d, %d, %d):\n%s\nwant\n%s", output, len(cut), parCode, seqCode, code, par.String(), seq.String())
			}
			if code != wantCode {
				t.Errorf("%s, %d directories: exit %d, one at a time %d", output, len(cut), code, wantCode)
			}
		}
	}
}

func TestBundleRenderCommand(t *testing.T) {
	dir := writeBundle(t, map[string]string{"metadata/annotations.yaml": bundleAnnotations, "manifests/csv.yaml": bundleCSV})
	var out, errb bytes.Buffer
	code := runEnv(context.Background(), []string{"bundle", "render", dir, "--image", "quay.io/acme/etcd-bundle:v1.0.0"}, &out, &errb, env{getenv: func(string) string { return "" }})
	if code != exitPass {
		t.Fatalf("exit %d\n%s", code, errb.String())
	}
	var blob struct {
		Schema, Name, Package, Image string
		Properties                   []struct {
			Type  string
			Value json.RawMessage
		}
		RelatedImages []struct{ Name, Image string }
	}
	if err := json.Unmarshal(out.Bytes(), &blob); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	if blob.Schema != "olm.bundle" || blob.Name != "etcdoperator.v1.0.0" || blob.Package != "etcd" || blob.Image != "quay.io/acme/etcd-bundle:v1.0.0" {
		t.Errorf("blob = %+v", blob)
	}
	if len(blob.Properties) != 2 || blob.Properties[0].Type != "olm.package" || strings.Join(strings.Fields(string(blob.Properties[0].Value)), "") != `{"packageName":"etcd","version":"1.0.0"}` || blob.Properties[1].Type != "olm.bundle.object" {
		t.Errorf("properties = %+v", blob.Properties)
	}
	if len(blob.RelatedImages) != 1 || blob.RelatedImages[0].Image != blob.Image {
		t.Errorf("related images = %+v, want the bundle image", blob.RelatedImages)
	}
	code = runEnv(context.Background(), []string{"bundle", "render", dir}, &out, &errb, env{getenv: func(string) string { return "" }})
	if code != exitCannotRun {
		t.Errorf("render without --image: exit %d, want 2", code)
	}

	// --migrate-level bundle-object-to-csv-metadata: the manifests give way to one olm.csv.metadata.
	out.Reset()
	code = runEnv(context.Background(), []string{"bundle", "render", dir, "--image", "quay.io/acme/etcd-bundle:v1.0.0", "--migrate-level", "bundle-object-to-csv-metadata"}, &out, &errb, env{getenv: func(string) string { return "" }})
	if code != exitPass {
		t.Fatalf("render --migrate-level: exit %d\n%s", code, errb.String())
	}
	blob.Properties = nil
	if err := json.Unmarshal(out.Bytes(), &blob); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	if len(blob.Properties) != 2 || blob.Properties[0].Type != "olm.package" || blob.Properties[1].Type != "olm.csv.metadata" {
		t.Errorf("properties with --migrate-level = %+v, want olm.package then olm.csv.metadata", blob.Properties)
	}
	errb.Reset()
	code = runEnv(context.Background(), []string{"bundle", "render", dir, "--image", "x", "--migrate-level", "all-the-things"}, &out, &errb, env{getenv: func(string) string { return "" }})
	if code != exitCannotRun || !strings.Contains(errb.String(), "bundle-object-to-csv-metadata") {
		t.Errorf("unknown --migrate-level: exit %d, stderr %q; want 2 naming the known levels", code, errb.String())
	}
}

// The OLM v1 installability report: a warning by default, an error with --olm-v1.
func TestBundleValidateOLMv1(t *testing.T) {
	csv := strings.Replace(bundleCSV, "installModes: [{type: AllNamespaces, supported: true}]", "installModes: [{type: OwnNamespace, supported: true}]", 1)
	dir := writeBundle(t, map[string]string{"metadata/annotations.yaml": bundleAnnotations, "manifests/csv.yaml": csv})
	run := func(args ...string) (int, string) {
		var out, errb bytes.Buffer
		code := runEnv(context.Background(), append([]string{"bundle", "validate"}, args...), &out, &errb, env{getenv: func(string) string { return "" }})
		return code, out.String()
	}
	code, out := run(dir)
	if code != exitPass || !strings.Contains(out, ": warning: olmv1.install-mode: ") {
		t.Errorf("default: exit %d, want 0 with an olmv1.install-mode warning\n%s", code, out)
	}
	if code, out := run("--olm-v1", dir); code != exitFail || !strings.Contains(out, ": error: olmv1.install-mode: ") {
		t.Errorf("--olm-v1: exit %d, want 1\n%s", code, out)
	}
}

// Bundle directories on disk are bounded and their links never followed, wherever they are read (issue 26.7):
// bundle validate and render, template render --bundles and template add-bundle, on real directories with
// links to what is outside the bundle and a metadata file beyond the bound.
func TestBundleDirectoriesNeverFollowLinks(t *testing.T) {
	const marker = "TOP-SECRET-MARKER"
	outside := writeBundle(t, map[string]string{
		"secret.yaml":             "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: stolen}\ndata: {key: " + marker + "}\n",
		"annotations.yaml":        bundleAnnotations,
		"folder/csv.yaml":         bundleCSV,
		"folder/secret.yaml":      "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: stolen}\ndata: {key: " + marker + "}\n",
		"bundle/manifests/c.yaml": bundleCSV,
		"bundle/metadata/a.yaml":  bundleAnnotations,
	})
	link := func(t *testing.T, target, name string) {
		t.Helper()
		if err := os.RemoveAll(name); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(target, name); err != nil {
			t.Fatal(err)
		}
	}
	env := env{getenv: func(string) string { return "" }}
	cli := func(args ...string) (int, string, string) {
		var out, errb bytes.Buffer
		code := runEnv(context.Background(), args, &out, &errb, env)
		return code, out.String(), errb.String()
	}
	for _, tc := range []struct {
		name  string
		edit  func(t *testing.T, dir string)
		rule  string
		where string // the finding's file, relative to the bundle directory
	}{
		{"a manifest linked to a file outside", func(t *testing.T, dir string) {
			link(t, filepath.Join(outside, "secret.yaml"), filepath.Join(dir, "manifests", "secret.yaml"))
		}, "bundle.not-regular-file", "manifests/secret.yaml"},
		{"manifests/ linked to a folder outside", func(t *testing.T, dir string) {
			link(t, filepath.Join(outside, "folder"), filepath.Join(dir, "manifests"))
		}, "bundle.not-regular-file", "manifests"},
		{"metadata/annotations.yaml linked outside", func(t *testing.T, dir string) {
			link(t, filepath.Join(outside, "annotations.yaml"), filepath.Join(dir, "metadata", "annotations.yaml"))
		}, "bundle.not-regular-file", "metadata/annotations.yaml"},
		{"a metadata file beyond the bound", func(t *testing.T, dir string) {
			f, err := os.Create(filepath.Join(dir, "metadata", "huge.bin"))
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			if err := f.Truncate(200 << 20); err != nil { // sparse: nothing is written
				t.Fatal(err)
			}
		}, "bundle.too-large", "metadata/huge.bin"},
		{"a file in a folder of metadata/ beyond the bound", func(t *testing.T, dir string) {
			if err := os.MkdirAll(filepath.Join(dir, "metadata", "deep", "er"), 0o755); err != nil {
				t.Fatal(err)
			}
			f, err := os.Create(filepath.Join(dir, "metadata", "deep", "er", "huge.bin"))
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			if err := f.Truncate(65 << 20); err != nil {
				t.Fatal(err)
			}
		}, "bundle.too-large", "metadata/deep/er/huge.bin"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			dir := filepath.Join(root, "etcd", "1.0.0")
			for name, body := range map[string]string{"metadata/annotations.yaml": bundleAnnotations, "manifests/csv.yaml": bundleCSV} {
				p := filepath.Join(dir, filepath.FromSlash(name))
				if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			tc.edit(t, dir)
			code, out, errs := cli("bundle", "validate", dir)
			if want := filepath.Join(dir, filepath.FromSlash(tc.where)) + ": error: " + tc.rule; code != exitFail || !strings.Contains(out, want) {
				t.Errorf("bundle validate: exit %d, want 1 and %q\n%s%s", code, want, out, errs)
			}
			code, out, errs = cli("bundle", "render", dir, "--image", "quay.io/acme/etcd-bundle:v1.0.0")
			if code != exitFail || strings.Contains(out+errs, marker) || out != "" {
				t.Errorf("bundle render: exit %d, want 1 and no blob\n%s%s", code, out, errs)
			}
			tmpl := filepath.Join(root, "basic.yaml")
			if err := os.WriteFile(tmpl, []byte("schema: olm.template.basic\nentries:\n  - schema: olm.package\n    name: etcd\n  - schema: olm.channel\n    package: etcd\n    name: stable\n    entries: [{name: etcdoperator.v1.0.0}]\n  - schema: olm.bundle\n    image: quay.io/acme/etcd-bundle:v1.0.0\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			code, out, errs = cli("template", "render", tmpl, "--offline", "--bundles", root, "--bundle-image", "quay.io/acme/{package}-bundle:v{version}")
			if code == exitPass || strings.Contains(out+errs, marker) {
				t.Errorf("template render --bundles: exit %d, want the bundle left unresolved\n%s%s", code, out, errs)
			}
			code, out, errs = cli("template", "add-bundle", tmpl, dir, "--image", "quay.io/acme/etcd-bundle@sha256:"+strings.Repeat("a", 64))
			if code != exitFail || !strings.Contains(errs, filepath.FromSlash(tc.where)) {
				t.Errorf("template add-bundle: exit %d, want 1 naming %s\n%s%s", code, tc.where, out, errs)
			}
		})
	}
	// A bundle directory that is itself a link is not found under --bundles.
	root := t.TempDir()
	if err := os.MkdirAll(filepath.Join(root, "etcd"), 0o755); err != nil {
		t.Fatal(err)
	}
	link(t, filepath.Join(outside, "bundle"), filepath.Join(root, "etcd", "1.0.0"))
	if dirs, err := findBundleDirs(root); err == nil || len(dirs) != 0 {
		t.Errorf("findBundleDirs found %v (%v) through a link", dirs, err)
	}
}
