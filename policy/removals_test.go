package policy

import (
	"strings"
	"testing"
)

func TestRemovals(t *testing.T) {
	p, err := Parse(FileName, []byte(`version: 1
catalogs: [{path: catalogs}]
maintainers: [alice]
removals:
  - packages: [sailoperator, "ack-*"]
    versions: [prerelease, "*-hotfix"]
  - channels: ["*-nightly", candidate]
`))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		pkg, version string
		channels     []string
		line         int // 0: not allowed
	}{
		{"sailoperator", "1.31.0-nightly-2026-08-22", nil, 5},
		{"ack-s3-controller", "v1.2.0-rc.1", []string{"stable"}, 5},
		{"sailoperator", "1.30.0-hotfix", nil, 5},
		{"sailoperator", "1.30.0", []string{"stable"}, 0},
		{"etcd", "1.0.0-rc.1", []string{"stable"}, 0},
		{"etcd", "1.0.0", []string{"stable-nightly", "candidate"}, 7},
		{"etcd", "1.0.0", []string{"stable-nightly", "stable"}, 0},
		{"etcd", "1.0.0", nil, 0},
		{"etcd", "", []string{"fast-nightly"}, 7},
	} {
		r, ok := p.RemovalAllowed(tc.pkg, tc.version, tc.channels)
		if got := map[bool]int{true: r.Pos.Line}[ok]; got != tc.line {
			t.Errorf("%s %s %v: rule at line %d, want %d", tc.pkg, tc.version, tc.channels, got, tc.line)
		}
	}
	if s := p.Removals[0].String(); s != "removals (line 5): versions prerelease, *-hotfix of sailoperator, ack-*" {
		t.Errorf("String() = %q", s)
	}
}

func TestRemovalsProblems(t *testing.T) {
	for src, want := range map[string]string{
		"removals: [{packages: [etcd]}]":           "4:12: a removals entry names neither versions nor channels",
		"removals: [{versions: [\"[a\"]}]":         `removals[].versions: "[a" is not a valid pattern`,
		"removals: [{channels: [prerelease]}]":     "prerelease is a keyword of versions",
		"removals: [{versions: [x], owners: [a]}]": "unknown key",
		"removals: {versions: [x]}":                "removals",
	} {
		_, err := Parse(FileName, []byte("version: 1\ncatalogs: [{path: c}]\nmaintainers: [alice]\n"+src+"\n"))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: error %v, want %q", src, err, want)
		}
	}
}
