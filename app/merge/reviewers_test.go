package merge

import (
	"context"
	"slices"
	"testing"

	"github.com/catalogbot/catalogbot/policy"
)

// reviewersPolicy: owners carol (etcd) and maria (maintainer), with a community bundle root whose ci.yaml
// reviewers own their package (as the end-to-end test of added reviewers has it).
const reviewersPolicy = `version: 1
catalogs:
  - path: catalogs/v4.16
maintainers: [maria]
packages:
  etcd: { owners: [carol] }
automerge:
  enabled: true
  method: squash
bundles:
  - path: operators
    ownersFromCIYaml: true
`

// reviewersWanted asks only for packages the author does not own, never the author, each person once.
func TestReviewersWanted(t *testing.T) {
	pol, err := policy.Parse(policy.FileName, []byte(reviewersPolicy))
	if err != nil {
		t.Fatal(err)
	}
	add := map[string][]string{"etcd": {"carol", "bob", "dave"}, "redis": {"dave", "erin"}}
	for _, c := range []struct {
		author  string
		touched []string
		extra   map[string][]string
		want    []string
	}{
		{"bob", []string{"etcd"}, nil, []string{"carol", "dave"}},
		{"carol", []string{"etcd"}, nil, nil},                                    // an owner in the policy
		{"erin", []string{"redis"}, map[string][]string{"redis": {"erin"}}, nil}, // an owner from ci.yaml
		{"maria", []string{"etcd", "redis"}, nil, nil},                           // a maintainer
		{"bob", []string{"etcd", "redis", "nginx"}, nil, []string{"carol", "dave", "erin"}},
	} {
		got := reviewersWanted(context.Background(), MergeFacts{Author: c.author, Touched: c.touched, ExtraOwners: c.extra, Policy: pol}, add, nil)
		if !slices.Equal(got, c.want) {
			t.Errorf("%s touching %v: %v, want %v", c.author, c.touched, got, c.want)
		}
	}
}
