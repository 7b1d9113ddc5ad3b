package ghapp

import (
	"regexp"
	"strings"
	"testing"
)

// FuzzNameScans: the scans accept exactly what the regular expressions they replace accept.
func FuzzNameScans(f *testing.F) {
	repoName := regexp.MustCompile(`^[A-Za-z0-9_.-]{1,100}$`)
	ref := regexp.MustCompile(`^refs/(heads/[A-Za-z0-9._/-]{1,250}|pull/[0-9]{1,10}/head)$`)
	for _, s := range []string{"", ".", "..", "acme", "my_repo.git", "a b", "é", strings.Repeat("a", 100), strings.Repeat("a", 101),
		"refs/heads/main", "refs/heads/", "refs/heads/feature/x-1.2_3", "refs/heads/" + strings.Repeat("b", 250),
		"refs/heads/" + strings.Repeat("b", 251), "refs/pull/7/head", "refs/pull//head", "refs/pull/12345678901/head",
		"refs/pull/1234567890/head", "refs/pull/7/merge", "refs/pull/7/head/head", "refs/tags/v1", "refs/heads/a\n"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if got, want := isRepoNamePart(s), repoName.MatchString(s); got != want {
			t.Fatalf("isRepoNamePart(%q) = %v, the expression %v", s, got, want)
		}
		if got, want := isFetchableRef(s), ref.MatchString(s); got != want {
			t.Fatalf("isFetchableRef(%q) = %v, the expression %v", s, got, want)
		}
	})
}
