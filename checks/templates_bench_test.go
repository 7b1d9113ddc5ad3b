package checks_test

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/catalogbot/catalogbot/checks"
	"github.com/catalogbot/catalogbot/policy"
)

// BenchmarkTemplatesCheckOnePackage is the templates check of a one-package pull request on the community's
// kube-green (a basic template rendered into seven OpenShift catalogs, 4.15 to 4.21): a hand edit of one
// rendered catalog, every catalog rendered offline (images from the base's catalogs) and compared. It is the
// App's cost once the revisions' files are read (in memory here, as the App's git cache serves them).
func BenchmarkTemplatesCheckOnePackage(b *testing.B) {
	root := filepath.Join("..", "..", "shared", "testdata", "templates")
	if _, err := os.Stat(root); err != nil {
		b.Skipf("%s is absent: %v", root, err)
	}
	base := fstest.MapFS{}
	var roots []policy.Catalog
	for _, v := range []string{"v4.15", "v4.16", "v4.17", "v4.18", "v4.19", "v4.20", "v4.21"} {
		addTree(base, filepath.Join(root, "catalogs", v, "kube-green"), "catalogs/"+v+"/kube-green")
		roots = append(roots, policy.Catalog{Path: "catalogs/" + v})
	}
	addTree(base, filepath.Join(root, "operators", "kube-green"), "operators/kube-green")
	head := fstest.MapFS{}
	for k, v := range base {
		head[k] = v
	}
	const edited = "catalogs/v4.18/kube-green/catalog.yaml"
	head[edited] = &fstest.MapFile{Data: []byte(strings.Replace(string(base[edited].Data), "replaces: kube-green.v0.6.0", "replaces: kube-green.v0.5.2", 1))}
	pol := policy.Default()
	pol.Catalogs = roots
	pol.Bundles = []policy.BundleRoot{{Path: "operators", TemplatesFromCIYaml: true}}
	ctx := context.Background()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		pr := &checks.PullRequest{Author: "davidebianchi", Policy: pol,
			Base: checks.Revision{SHA: "base", FS: base}, Head: checks.Revision{SHA: "head", FS: head},
			Files: []checks.FileChange{{Path: edited, Status: checks.FileModified}}}
		res, err := checks.Templates{}.Run(ctx, pr)
		if err != nil {
			b.Fatal(err)
		}
		if res.Conclusion != checks.Failure || len(res.Findings) != 1 {
			b.Fatalf("%s: %d findings: %v", res.Conclusion, len(res.Findings), res.Findings)
		}
	}
}

// addTree puts every file under src into fsys under dst (the walk stops at the first error, unreported).
func addTree(fsys fstest.MapFS, src, dst string) {
	_ = filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		fsys[filepath.ToSlash(filepath.Join(dst, rel))] = &fstest.MapFile{Data: data}
		return nil
	})
}
