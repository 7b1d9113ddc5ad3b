package policy

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestSameLogin(t *testing.T) {
	tests := []struct {
		a, b string
		want bool
	}{
		{"bob", "bob", true},
		{"Alice", "alice", true},
		{"ALICE", "alice", true},
		{"bob", "bobby", false},
		{"bobby", "bob", false},
		{"bob", "ob", false},
		{"bob", "", false},
		{"", "", false},
		{"kate", "\u212aate", false}, // Kelvin sign folds to k in Unicode, not in GitHub logins
		{"a-b", "a_b", false},
	}
	for _, tt := range tests {
		if got := SameLogin(tt.a, tt.b); got != tt.want {
			t.Errorf("SameLogin(%q, %q) = %v, want %v", tt.a, tt.b, got, tt.want)
		}
	}
}

func TestParsePrincipal(t *testing.T) {
	tests := []struct {
		in      string
		want    Principal
		wantErr string
	}{
		{"alice", Principal{Login: "alice"}, ""},
		{"a", Principal{Login: "a"}, ""},
		{"a-b-c", Principal{Login: "a-b-c"}, ""},
		{strings.Repeat("a", 39), Principal{Login: strings.Repeat("a", 39)}, ""},
		{"dependabot[bot]", Principal{Login: "dependabot[bot]"}, ""},
		{"@acme/catalog-admins", Principal{Org: "acme", Team: "catalog-admins"}, ""},
		{"@acme/team_x.y", Principal{Org: "acme", Team: "team_x.y"}, ""},
		{strings.Repeat("a", 40), Principal{}, "not a valid GitHub login"},
		{"-a", Principal{}, "not a valid GitHub login"},
		// Names from before GitHub forbade them: a trailing hyphen, two in a row (ci.yaml lists "jan--f").
		{"a-", Principal{Login: "a-"}, ""},
		{"jan--f", Principal{Login: "jan--f"}, ""},
		{"a_b", Principal{}, "not a valid GitHub login"},
		{"", Principal{}, "not a valid GitHub login"},
		{"[bot]", Principal{}, "not a valid GitHub login"},
		{"@alice", Principal{}, "has no /team"},
		{"acme/team", Principal{}, "looks like a team"},
		{"@acme/", Principal{}, "not a valid team slug"},
		{"@acme/-x", Principal{}, "not a valid team slug"},
		{"@-acme/x", Principal{}, "organisation"},
		{"@acme/a/b", Principal{}, "not a valid team slug"},
	}
	for _, tt := range tests {
		got, err := ParsePrincipal(tt.in)
		if tt.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("ParsePrincipal(%q) = %v, %v, want an error containing %q", tt.in, got, err, tt.wantErr)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("ParsePrincipal(%q) = %+v, %v, want %+v", tt.in, got, err, tt.want)
		}
		if got.String() != tt.in {
			t.Errorf("ParsePrincipal(%q).String() = %q, want it back", tt.in, got.String())
		}
	}
}

// teamMap is a TeamResolver over a map; teams missing from it fail to resolve.
type teamMap map[string][]string

func (m teamMap) TeamMembers(_ context.Context, org, team string) ([]string, error) {
	if ms, ok := m[org+"/"+team]; ok {
		return ms, nil
	}
	return nil, errors.New("GitHub answered 502")
}

func TestDecisions(t *testing.T) {
	p := mustParse(t, `version: 1
catalogs: [{path: catalogs}]
maintainers: [alice, "@acme/admins"]
packages:
  etcd: {owners: [bob, "@etcd-io/maintainers"]}
  solo: {owners: [Carol]}
  teamonly: {owners: ["@ghost/team"]}
`)
	teams := teamMap{"acme/admins": {"dave", "Erin"}, "etcd-io/maintainers": {"frank"}}
	ctx := context.Background()
	tests := []struct {
		name     string
		pkg      string // "" asks IsMaintainer
		login    string
		resolver TeamResolver
		want     Decision
	}{
		{"maintainer by login", "", "alice", teams, Yes},
		{"maintainer login case", "", "ALICE", teams, Yes},
		{"maintainer by team", "", "erin", teams, Yes},
		{"substring of a maintainer", "", "alic", teams, No},
		{"superstring of a maintainer", "", "alice2", teams, No},
		{"not a maintainer", "", "bob", teams, No},
		{"login listed, teams unresolvable", "", "alice", nil, Yes},
		{"not listed, teams unresolvable", "", "dave", nil, Unresolved},
		{"owner by login", "etcd", "bob", teams, Yes},
		{"owner substring", "etcd", "bobby", teams, No},
		{"owner prefix", "etcd", "bo", teams, No},
		{"owner by team", "etcd", "Frank", teams, Yes},
		{"owner case", "solo", "carol", teams, Yes},
		{"maintainer is not an owner", "etcd", "alice", teams, No},
		{"unknown package", "nope", "bob", teams, No},
		{"team that cannot be resolved", "teamonly", "bob", teams, Unresolved},
		{"invalid login never matches", "etcd", "bob ", teams, No},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got Decision
			var err error
			if tt.pkg == "" {
				got, err = p.IsMaintainer(ctx, tt.login, tt.resolver)
			} else {
				got, err = p.IsOwner(ctx, tt.pkg, tt.login, tt.resolver)
			}
			if got != tt.want {
				t.Errorf("got %v (%v), want %v", got, err, tt.want)
			}
			if (err != nil) != (got == Unresolved) {
				t.Errorf("error %v with decision %v: want an error exactly when unresolved", err, got)
			}
		})
	}

	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	if got, err := p.IsMaintainer(cancelled, "dave", teams); got != Unresolved || !errors.Is(err, context.Canceled) {
		t.Errorf("IsMaintainer with a cancelled context = %v, %v, want Unresolved, context.Canceled", got, err)
	}
}

func TestDefaultPolicy(t *testing.T) {
	p := Default()
	ctx := context.Background()
	if d, _ := p.IsMaintainer(ctx, "alice", nil); d != No {
		t.Errorf("Default().IsMaintainer = %v, want No", d)
	}
	if d, _ := p.IsOwner(ctx, "etcd", "alice", nil); d != No {
		t.Errorf("Default().IsOwner = %v, want No", d)
	}
	if !p.Protected(FileName) || p.Protected("catalogs/x.yaml") || p.NewPackages != NewPackagesMaintainers || p.Automerge.Enabled {
		t.Errorf("Default() = %+v, want only the policy file protected, new packages by maintainers, no automerge", p)
	}
}

func TestProtected(t *testing.T) {
	p := mustParse(t, minimal+`protectedPaths:
  - .github/**
  - docs
  - "catalogs/*/.indexignore"
  - "**/OWNERS"
  - "scripts/*.sh"
  - "a/**/z"
`)
	tests := []struct {
		path string
		want bool
	}{
		{".catalogbot.yaml", true},
		{"./.catalogbot.yaml", true},
		{"sub/.catalogbot.yaml", false},
		{".github/workflows/ci.yaml", true},
		{".github", true},
		{".githubx/a", false},
		{"docs", true},
		{"docs/policy.md", true},
		{"docs2/policy.md", false},
		{"catalogs/v4.16/.indexignore", true},
		{"catalogs/v4.16/etcd/.indexignore", false},
		{"OWNERS", true},
		{"catalogs/etcd/OWNERS", true},
		{"catalogs/etcd/OWNERS.md", false},
		{"scripts/build.sh", true},
		{"scripts/sub/build.sh", false},
		{"scripts/build.sh.txt", false},
		{"a/z", true},
		{"a/b/c/z", true},
		{"a/b/c/y", false},
		{"catalogs/v4.16/etcd/catalog.json", false},
	}
	for _, tt := range tests {
		if got := p.Protected(tt.path); got != tt.want {
			t.Errorf("Protected(%q) = %v, want %v", tt.path, got, tt.want)
		}
	}
}

func TestMatchPathManyStars(t *testing.T) {
	// Many ** segments against a long path must stay cheap (memoised).
	pat := strings.Repeat("**/", 30) + "x"
	name := strings.Repeat("a/", 200) + "y"
	if matchPath(pat, name) {
		t.Errorf("matchPath(%q, long path) = true, want false", pat)
	}
}

func TestCatalogOf(t *testing.T) {
	p := mustParse(t, "version: 1\ncatalogs: [{path: catalogs/v4.16}, {path: catalogs/v4.17}]\nmaintainers: [a]\n")
	for path, want := range map[string]string{"catalogs/v4.16/etcd/index.yaml": "catalogs/v4.16", "catalogs/v4.17": "catalogs/v4.17", "catalogs/v4.1/x": "", "README.md": ""} {
		c, ok := p.CatalogOf(path)
		if c.Path != want || ok != (want != "") {
			t.Errorf("CatalogOf(%q) = %q, %v, want %q", path, c.Path, ok, want)
		}
	}
}

func TestRegistryAllowed(t *testing.T) {
	im := Images{AllowedRegistries: []string{"quay.io/acme/", "registry.example.com", "docker.io/library", "quay.io/solo"}}
	tests := []struct {
		ref  string
		want bool
	}{
		{"quay.io/acme/etcd@sha256:abc", true},
		{"QUAY.IO/acme/etcd:1", true},
		{"quay.io/acmecorp/etcd:1", false},
		{"quay.io/acme", false},
		{"registry.example.com/x/y:1", true},
		{"registry.example.com.evil.io/x:1", false},
		{"index.docker.io/library/nginx:1", true},
		{"docker.io/library/nginx:1", true},
		{"docker.io/other/nginx:1", false},
		{"quay.io/solo:1", true},
		{"quay.io/solo@sha256:abc", true},
		{"quay.io/solo/x:1", true},
		{"quay.io/solox:1", false},
		{"ghcr.io/acme/x:1", false},
	}
	for _, tt := range tests {
		if got := im.RegistryAllowed(tt.ref); got != tt.want {
			t.Errorf("RegistryAllowed(%q) = %v, want %v", tt.ref, got, tt.want)
		}
	}
	if !(Images{}).RegistryAllowed("anything/at:all") {
		t.Errorf("an empty allow-list must allow every registry")
	}
}

func TestTeamsFile(t *testing.T) {
	name := filepath.Join(t.TempDir(), "teams.yaml")
	if err := os.WriteFile(name, []byte("\"@acme/admins\": [dave, Erin]\n\"@Etcd-IO/Maintainers\": [frank]\n\"@empty/team\": []\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	tf, err := LoadTeamsFile(name)
	if err != nil {
		t.Fatal(err)
	}
	p := mustParse(t, minimal+"packages:\n  etcd: {owners: [\"@etcd-io/maintainers\"]}\n  e: {owners: [\"@empty/team\"]}\n  g: {owners: [\"@ghost/team\"]}\n")
	ctx := context.Background()
	for _, tt := range []struct {
		pkg, login string
		want       Decision
	}{
		{"etcd", "frank", Yes},
		{"etcd", "fran", No},
		{"e", "frank", No},
		{"g", "frank", Unresolved},
	} {
		if got, err := p.IsOwner(ctx, tt.pkg, tt.login, tf); got != tt.want {
			t.Errorf("IsOwner(%s, %s) with teams file = %v (%v), want %v", tt.pkg, tt.login, got, err, tt.want)
		}
	}
	if _, err := tf.TeamMembers(ctx, "ghost", "team"); !errors.Is(err, ErrUnknownTeam) {
		t.Errorf("TeamMembers(unknown) error = %v, want ErrUnknownTeam", err)
	}

	// JSON is accepted too.
	if _, err := ParseTeamsFile("teams.json", []byte(`{"@a/b": ["c"]}`)); err != nil {
		t.Errorf("JSON teams file: %v", err)
	}
	for _, bad := range []struct{ src, msg string }{
		{"alice: [bob]\n", "not a team"},
		{"\"@a/b\": bob\n", "must be a list"},
		{"\"@a/b\": [\"bad login!\"]\n", "not a valid GitHub login"},
		{"\"@a/b\": [x]\n\"@a/b\": [y]\n", "twice"},
		{"- a\n", "must be a mapping"},
	} {
		_, err := ParseTeamsFile("teams.yaml", []byte(bad.src))
		if err == nil || !strings.Contains(err.Error(), bad.msg) {
			t.Errorf("ParseTeamsFile(%q) error = %v, want one containing %q", bad.src, err, bad.msg)
		}
	}
	big := filepath.Join(t.TempDir(), "big.yaml")
	if err := os.WriteFile(big, make([]byte, MaxFileSize+10), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadTeamsFile(big); err == nil || !strings.Contains(err.Error(), "limit") {
		t.Errorf("LoadTeamsFile(oversized) error = %v, want a size error", err)
	}
}
