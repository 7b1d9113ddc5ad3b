package checks_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/catalogbot/catalogbot/checks"
	"github.com/catalogbot/catalogbot/policy"
)

// largestPkg is the package of the shared test data with the largest committed catalogs rendered from
// templates (about 1 MB over nine OpenShift catalogs, eight basic templates).
const largestPkg = "multicluster-global-hub-operator"

// BenchmarkPreviewLargest is BenchmarkPreview on largestPkg: a pull request adding a bundle directory of
// version 1.7.1 (a CSV naming no predecessor, channel release-1.7, as most community bundles) to the package
// as the shared test data holds it (ci.yaml, templates, the catalogs of v4.14 to v4.22; its bundle directories
// are not part of the data, so the templates' bundles resolve from the committed catalogs, tag references
// included). "preview" is the preview alone: the new directory's image built in memory for its digest, the
// eight templates rendered with it into nine catalogs, those validated, the rendered channels read.
func BenchmarkPreviewLargest(b *testing.B) {
	td := sharedTestdata(b)
	base := fstest.MapFS{}
	addTree(base, filepath.Join(td, "templates", "operators", largestPkg), "operators/"+largestPkg)
	var roots []policy.Catalog
	entries, err := os.ReadDir(filepath.Join(td, "templates", "catalogs"))
	if err != nil {
		b.Fatal(err)
	}
	for _, e := range entries {
		src := filepath.Join(td, "templates", "catalogs", e.Name(), largestPkg)
		if _, err := os.Stat(src); err != nil {
			continue
		}
		addTree(base, src, "catalogs/"+e.Name()+"/"+largestPkg)
		roots = append(roots, policy.Catalog{Path: "catalogs/" + e.Name()})
	}
	head := fstest.MapFS{}
	for k, v := range base {
		head[k] = v
	}
	dir := "operators/" + largestPkg + "/1.7.1/"
	bundleFiles := map[string]string{
		dir + "metadata/annotations.yaml": "annotations:\n" +
			"  operators.operatorframework.io.bundle.mediatype.v1: registry+v1\n" +
			"  operators.operatorframework.io.bundle.manifests.v1: manifests/\n" +
			"  operators.operatorframework.io.bundle.metadata.v1: metadata/\n" +
			"  operators.operatorframework.io.bundle.package.v1: " + largestPkg + "\n" +
			"  operators.operatorframework.io.bundle.channels.v1: release-1.7\n" +
			"  operators.operatorframework.io.bundle.channel.default.v1: release-1.7\n" +
			"  com.redhat.openshift.versions: v4.14-v4.22\n",
		dir + "manifests/" + largestPkg + ".clusterserviceversion.yaml": "apiVersion: operators.coreos.com/v1alpha1\n" +
			"kind: ClusterServiceVersion\nmetadata:\n  name: " + largestPkg + ".v1.7.1\n  annotations:\n    capabilities: Basic Install\n" +
			"spec:\n  version: 1.7.1\n  displayName: Multicluster Global Hub Operator\n  minKubeVersion: 1.27.0\n" +
			"  installModes:\n    - {type: OwnNamespace, supported: true}\n    - {type: AllNamespaces, supported: true}\n" +
			"  install:\n    strategy: deployment\n    spec:\n      deployments:\n        - name: multicluster-global-hub-operator\n" +
			"          spec:\n            selector: {matchLabels: {name: multicluster-global-hub-operator}}\n" +
			"            template:\n              metadata: {labels: {name: multicluster-global-hub-operator}}\n" +
			"              spec:\n                containers:\n                  - name: manager\n" +
			"                    image: quay.io/stolostron/multicluster-global-hub-operator@sha256:" + strings.Repeat("1", 64) + "\n",
	}
	var files []checks.FileChange
	for k, v := range bundleFiles {
		head[k] = &fstest.MapFile{Data: []byte(v)}
		files = append(files, checks.FileChange{Path: k, Status: checks.FileAdded})
	}
	pol := policy.Default()
	pol.Catalogs = roots
	pol.Bundles = []policy.BundleRoot{{Path: "operators", TemplatesFromCIYaml: true, CIYamlOwners: true, Image: "quay.io/community-operator-pipeline-prod/{package}:{version}"}}
	ctx := context.Background()
	newPR := func() *checks.PullRequest {
		return &checks.PullRequest{Author: "clyang82", Policy: pol,
			Base: checks.Revision{SHA: "base", FS: base}, Head: checks.Revision{SHA: "head", FS: head}, Files: files}
	}
	// What the preview gives, once: the bench measures a preview that rendered every catalog.
	pr := newPR()
	if err := checks.Prepare(ctx, pr); err != nil {
		b.Fatal(err)
	}
	pp := checks.Preview(ctx, pr).Package(largestPkg)
	if pp == nil || pp.Unverified != "" || len(pp.Catalogs) != len(roots) {
		b.Fatalf("preview of %s: %+v", largestPkg, pp)
	}
	if len(pp.Bundles) != 1 || len(pp.Bundles[0].Edges) == 0 {
		b.Fatalf("preview of %s: no upgrade into the new bundle from the rendered channels: %+v", largestPkg, pp.Bundles)
	}
	b.ResetTimer()
	b.Run("preview", func(b *testing.B) {
		cpu := processCPU()
		defer func() { b.ReportMetric(float64(processCPU()-cpu)/float64(b.N)/1e6, "cpu-ms/op") }()
		for i := 0; i < b.N; i++ {
			pr := newPR()
			if err := checks.Prepare(ctx, pr); err != nil {
				b.Fatal(err)
			}
			if pp := checks.Preview(ctx, pr).Package(largestPkg); pp == nil || len(pp.Catalogs) != len(roots) || pp.Unverified != "" {
				b.Fatalf("preview: %+v", pp)
			}
		}
	})
}
