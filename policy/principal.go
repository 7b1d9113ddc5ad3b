package policy

import (
	"fmt"
	"strings"
)

// Principal is one entry of a maintainers or owners list: either a GitHub user
// (Login set) or a GitHub team (Org and Team set), written "@org/team".
type Principal struct {
	Login string
	Org   string
	Team  string
}

// IsTeam reports whether p names a team rather than a user.
func (p Principal) IsTeam() bool { return p.Team != "" }

// String gives the principal as written in the policy file: "login" or "@org/team".
func (p Principal) String() string {
	if p.IsTeam() {
		return "@" + p.Org + "/" + p.Team
	}
	return p.Login
}

// ParsePrincipal reads "login" or "@org/team". The error says what is wrong
// and how to write it instead.
func ParsePrincipal(s string) (Principal, error) {
	if strings.HasPrefix(s, "@") {
		org, team, ok := strings.Cut(s[1:], "/")
		if !ok {
			return Principal{}, fmt.Errorf("%q starts with @ but has no /team: write a user as %q (no @) or a team as \"@org/team\"", s, s[1:])
		}
		if !ValidLogin(org) {
			return Principal{}, fmt.Errorf("%q: organisation %q is not a valid GitHub name (1-39 letters, digits or hyphens, not starting with a hyphen)", s, org)
		}
		if !validTeamSlug(team) {
			return Principal{}, fmt.Errorf("%q: team %q is not a valid team slug (1-100 letters, digits, '-', '_' or '.', starting with a letter or digit): use the slug from the team's URL", s, team)
		}
		return Principal{Org: org, Team: team}, nil
	}
	if strings.Contains(s, "/") {
		return Principal{}, fmt.Errorf("%q looks like a team: write teams as \"@org/team\"", s)
	}
	if !ValidLogin(s) {
		return Principal{}, fmt.Errorf("%q is not a valid GitHub login (1-39 letters, digits or hyphens, not starting with a hyphen; apps may end in [bot])", s)
	}
	return Principal{Login: s}, nil
}

// ValidLogin reports whether s can be a GitHub user or organisation name:
// 1 to 39 ASCII letters, digits and hyphens, not starting with a hyphen. New
// accounts may not have two hyphens in a row or end with one, but accounts
// made before GitHub said so keep such names (the community repository's
// ci.yaml files list "jan--f"), so they are accepted: a login only ever
// matches the same account's login, so accepting them grants nothing to
// anyone else. An app's bot account ("name[bot]") is accepted too.
func ValidLogin(s string) bool {
	s = strings.TrimSuffix(s, "[bot]")
	if len(s) == 0 || len(s) > 39 || s[0] == '-' {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; !isAlnum(c) && c != '-' {
			return false
		}
	}
	return true
}

func validTeamSlug(s string) bool {
	if len(s) == 0 || len(s) > 100 || !isAlnum(s[0]) {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !isAlnum(c) && c != '-' && c != '_' && c != '.' {
			return false
		}
	}
	return true
}

func isAlnum(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9'
}

// SameLogin reports whether a and b name the same GitHub account. GitHub
// logins are case-insensitive ASCII, so this folds ASCII case only and then
// compares the whole strings: "bob" is not "bobby", and non-ASCII look-alikes
// (the Kelvin sign for "k") never match.
func SameLogin(a, b string) bool {
	if len(a) != len(b) || a == "" {
		return false
	}
	for i := 0; i < len(a); i++ {
		if lowerASCII(a[i]) != lowerASCII(b[i]) {
			return false
		}
	}
	return true
}

func lowerASCII(c byte) byte {
	if 'A' <= c && c <= 'Z' {
		return c + 'a' - 'A'
	}
	return c
}
