package policy

import (
	"regexp"
	"strings"
	"testing"
)

// The hand-written name checks accept exactly what the patterns they replace accept.
func TestNameChecksMatchPatterns(t *testing.T) {
	dns := regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`)
	rule := regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$`)
	inputs := []string{"", "a", "-", "a-", "-a", "a-b", "A", "a.b", "a_b", "9", "etcd-operator", "crd.field-removed",
		".x", "x.", "_x", strings.Repeat("a", 100), strings.Repeat("a", 101), "a b", "é", "a/b"}
	for _, s := range inputs {
		if got, want := isDNSLabel(s), dns.MatchString(s); got != want {
			t.Errorf("isDNSLabel(%q) = %v, want %v", s, got, want)
		}
		if got, want := isRuleID(s), rule.MatchString(s); got != want {
			t.Errorf("isRuleID(%q) = %v, want %v", s, got, want)
		}
	}
}

func FuzzNameChecks(f *testing.F) {
	f.Add("etcd")
	f.Add("crd.unknown-change")
	dns := regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`)
	rule := regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$`)
	f.Fuzz(func(t *testing.T, s string) {
		if isDNSLabel(s) != dns.MatchString(s) || isRuleID(s) != rule.MatchString(s) {
			t.Fatalf("%q: isDNSLabel %v (pattern %v), isRuleID %v (pattern %v)", s, isDNSLabel(s), dns.MatchString(s), isRuleID(s), rule.MatchString(s))
		}
	})
}
