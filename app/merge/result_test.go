package merge

import (
	"testing"

	"github.com/catalogbot/catalogbot/gitfs"
	"github.com/catalogbot/catalogbot/policy"
)

func TestPackageDirOf(t *testing.T) {
	for _, c := range []struct {
		root, path, dir, pkg string
		ok                   bool
	}{
		{"catalogs/v4.16", "catalogs/v4.16/etcd/catalog.yaml", "catalogs/v4.16/etcd", "etcd", true},
		{"catalogs/v4.*", "catalogs/v4.17/etcd/a/b.yaml", "catalogs/v4.17/etcd", "etcd", true},
		{"catalogs/v4.*", "catalogs/v5.0/etcd/catalog.yaml", "", "", false},
		{"catalogs/v4.16", "catalogs/v4.16/catalog.yaml", "", "", false}, // a file of the root itself
		{"operators", "operators/etcd/ci.yaml", "operators/etcd", "etcd", true},
		{".", "etcd/catalog.yaml", "", "", false},
	} {
		dir, pkg, ok := packageDirOf(c.root, c.path)
		if dir != c.dir || pkg != c.pkg || ok != c.ok {
			t.Errorf("packageDirOf(%q, %q) = %q, %q, %v; want %q, %q, %v", c.root, c.path, dir, pkg, ok, c.dir, c.pkg, c.ok)
		}
	}
}

// A base move matters to a pull request when it changed the policy or a folder of a package it touches, under
// a catalog or a bundle root; anything else leaves its verdict standing.
func TestRelevantChange(t *testing.T) {
	pol, err := policy.Parse(policy.FileName, []byte("version: 1\nmaintainers: [maria]\ncatalogs: [{path: \"catalogs/v4.*\"}]\nbundles: [{path: operators}]\n"))
	if err != nil {
		t.Fatal(err)
	}
	touched := []string{"etcd"}
	for _, c := range []struct {
		changes []gitfs.Change
		want    string
	}{
		{[]gitfs.Change{{Path: "catalogs/v4.16/redis/catalog.yaml", Action: gitfs.Added}}, ""},
		{[]gitfs.Change{{Path: "README.md", Action: gitfs.Modified}}, ""},
		{[]gitfs.Change{{Path: "catalogs/v4.17/etcd/catalog.yaml", Action: gitfs.Modified}}, "catalogs/v4.17/etcd/catalog.yaml"},
		{[]gitfs.Change{{Path: "operators/etcd/ci.yaml", Action: gitfs.Modified}}, "operators/etcd/ci.yaml"},
		{[]gitfs.Change{{Path: "catalogs/v4.16/x/y.yaml", OldPath: "catalogs/v4.16/etcd/y.yaml", Action: gitfs.Renamed}}, "catalogs/v4.16/etcd/y.yaml"},
		{[]gitfs.Change{{Path: policy.FileName, Action: gitfs.Modified}}, policy.FileName},
	} {
		if got := relevantChange(pol, touched, c.changes); got != c.want {
			t.Errorf("relevantChange(%+v) = %q, want %q", c.changes, got, c.want)
		}
	}
}
