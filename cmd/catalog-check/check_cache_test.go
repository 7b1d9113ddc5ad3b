package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/catalogbot/catalogbot/internal/summarycache"
)

// The file summary index: a second run (a fresh process, as in CI) reads only
// the files of the touched packages, and reports exactly what the first run
// and a run without the index report — catalog-wide findings in files the
// pull request did not touch included. A damaged or foreign index is rebuilt.
func TestCheckCommandSummaryCache(t *testing.T) {
	dir, git, write := testRepo(t)
	write(".catalogbot.yaml", "version: 1\ncatalogs: [{path: catalog}]\nmaintainers: [alice]\npackages:\n  etcd: {owners: [bob]}\n  other: {owners: [carol]}\n")
	const image = "quay.io/acme/etcd-bundle"
	channel := "---\nschema: olm.channel\npackage: etcd\nname: stable\nentries:\n  - name: etcd.v1.0.0\n"
	write("catalog/etcd/catalog.yaml", etcdPackage+channel+etcdBundle(image, "1.0.0"))
	// Unchanged files the check must still see: a syntax error (catalog-wide), a second declaration of
	// a package, and many files of other packages that it need not read.
	write("catalog/broken/catalog.yaml", "schema: olm.package\nname: [broken\n")
	write("catalog/dup/one.json", `{"schema":"olm.package","name":"dup"}`+"\n")
	write("catalog/dup/two.json", `{"schema":"olm.package","name":"dup"}`+"\n")
	for _, p := range []string{"a", "b", "c", "d", "e"} {
		write("catalog/"+p+"/catalog.json", `{"schema":"olm.package","name":"`+p+`","defaultChannel":"stable"}`+"\n"+
			`{"schema":"olm.channel","package":"`+p+`","name":"stable","entries":[{"name":"`+p+`.v1"}]}`+"\n"+
			`{"schema":"olm.bundle","package":"`+p+`","name":"`+p+`.v1","image":"quay.io/x/`+p+`:1","properties":[{"type":"olm.package","value":{"packageName":"`+p+`","version":"1.0.0"}}]}`+"\n")
	}
	git("add", "-A")
	git("commit", "-q", "-m", "base")
	base := git("rev-parse", "HEAD")
	write("catalog/etcd/catalog.yaml", etcdPackage+channel+"  - name: etcd.v1.1.0\n    replaces: etcd.v1.0.0\n"+etcdBundle(image, "1.0.0")+etcdBundle(image, "1.1.0"))
	git("add", "-A")
	git("commit", "-q", "-m", "upgrade")
	head := git("rev-parse", "HEAD")

	durations := regexp.MustCompile(`"durationNanos": [0-9]+`)
	run := func(cacheDir string) string {
		t.Helper()
		var out, errb bytes.Buffer
		runEnv(context.Background(), []string{"check", "--repo", dir, "--base", base, "--head", head, "--author", "bob",
			"--checks", "ownership,validation,immutability,crd-safety", "--output", "json", "--cache-dir", cacheDir},
			&out, &errb, env{getenv: func(string) string { return "" }})
		if errb.Len() > 0 {
			t.Logf("stderr: %s", errb.String())
		}
		return durations.ReplaceAllString(out.String(), "")
	}
	want := run("off")
	for _, s := range []string{"load.yaml-syntax", "package.duplicate", `"conclusion": "failure"`} {
		if !strings.Contains(want, s) {
			t.Fatalf("the fixture's check lacks %s:\n%s", s, want)
		}
	}
	cache := t.TempDir()
	index := filepath.Join(cache, summarycache.FileName)
	if got := run(cache); got != want {
		t.Errorf("first run with the index differs from a run without:\n%s\nwant:\n%s", got, want)
	}
	data, err := os.ReadFile(index)
	if err != nil {
		t.Fatalf("the first run wrote no index: %v", err)
	}
	if n := bytes.Count(data, []byte("\n")); n != 9 { // 8 distinct blobs (the two dup files are one)
		t.Errorf("the index holds %d lines, want a header and one summary per file:\n%s", n, data)
	}
	st, _ := os.Stat(index)
	if got := run(cache); got != want {
		t.Errorf("second run (from the index) differs:\n%s\nwant:\n%s", got, want)
	}
	if st2, _ := os.Stat(index); !st2.ModTime().Equal(st.ModTime()) {
		t.Errorf("a run that learnt nothing new rewrote the index")
	}
	// Damaged: rebuilt, same findings.
	if err := os.WriteFile(index, data[:len(data)/2], 0o600); err != nil {
		t.Fatal(err)
	}
	if got := run(cache); got != want {
		t.Errorf("run with a damaged index differs:\n%s\nwant:\n%s", got, want)
	}
	if again, _ := os.ReadFile(index); !sameLines(again, data) {
		t.Errorf("the damaged index was not rebuilt whole:\n%s", again)
	}
	// Written by another build: ignored and replaced.
	foreign := bytes.Replace(data, []byte(`"stamp":"`), []byte(`"stamp":"another build `), 1)
	if err := os.WriteFile(index, foreign, 0o600); err != nil {
		t.Fatal(err)
	}
	if got := run(cache); got != want {
		t.Errorf("run with a foreign index differs:\n%s\nwant:\n%s", got, want)
	}
	if again, _ := os.ReadFile(index); !sameLines(again, data) {
		t.Errorf("the foreign index was not replaced:\n%s", again)
	}
}

// sameLines compares two indexes as sets of lines (their order is the order files were parsed in).
func sameLines(a, b []byte) bool {
	la, lb := strings.Split(string(a), "\n"), strings.Split(string(b), "\n")
	slices.Sort(la)
	slices.Sort(lb)
	return slices.Equal(la, lb)
}
