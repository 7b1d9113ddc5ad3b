package checks_test

import (
	"context"
	"reflect"
	"slices"
	"testing"

	"github.com/catalogbot/catalogbot/checks"
	"github.com/catalogbot/catalogbot/registry"
)

// The list is the one place the checks are named: the CLI's --checks values and what the App runs come from it.
func TestDefaultChecks(t *testing.T) {
	if got, want := checks.Names(), []string{"ownership", "validation", "immutability", "crd-safety", "templates", "images"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("Names() = %v, want %v", got, want)
	}
	names := func(cs []checks.Check) []string {
		var out []string
		for _, c := range cs {
			out = append(out, c.Name())
		}
		return out
	}
	// Offline: no images check, and nothing that reads a registry.
	offline := checks.Default(checks.Deps{})
	if got := names(offline); slices.Contains(got, "images") || len(got) != 5 {
		t.Errorf("offline checks %v", got)
	}
	for _, c := range offline {
		if cs, ok := c.(checks.CRDSafety); ok && cs.Manifests != nil {
			t.Error("offline crd-safety reads bundle images")
		}
		if tp, ok := c.(checks.Templates); ok && tp.Images != nil {
			t.Error("offline templates pull bundle images")
		}
	}
	reg, err := registry.New()
	if err != nil {
		t.Fatal(err)
	}
	defer reg.Close()
	online := checks.Default(checks.Deps{Bundles: reg, Images: reg})
	if got := names(online); !reflect.DeepEqual(got, checks.Names()) {
		t.Errorf("online checks %v, want every check", got)
	}
	if _, ok := checks.Make("no-such-check", checks.Deps{}); ok {
		t.Error("Make made a check the list does not have")
	}
}

// throwaway is a check added the way a new one is: one type (here) and one line in the list. The runner gates
// it by its Costly method and by the gate's verdict, not by its name or place.
type throwaway struct{}

func (throwaway) Name() string { return "throwaway" }
func (throwaway) Costly() bool { return true }
func (throwaway) Run(context.Context, *checks.PullRequest) (checks.Result, error) {
	return checks.Result{Check: "throwaway", Conclusion: checks.Success}, nil
}

// The gate is a property of the check: a costly check after a gate that closed is skipped whatever its name.
func TestGateIsDataNotAName(t *testing.T) {
	r := newGitRepo(t)
	base := seed(r)
	r.git("checkout", "-q", "-b", "pr")
	r.write("catalogs/v4.16/etcd/catalog.yaml", pkgHeader("etcd", "1.0.0", "1.1.0")+bundle("etcd", "1.0.0", "size", "version")+bundle("etcd", "1.1.0", "size", "version", "tls"))
	head := r.commit("etcd 1.1.0")
	// mallory owns nothing the pull request touches: the gate closes.
	pr := buildPR(t, r, base, head, "mallory", nil)
	res := checks.NewRunner(append(checks.Default(checks.Deps{}), throwaway{})).Run(context.Background(), pr)
	last := res[len(res)-1]
	if last.Check != "throwaway" || last.Conclusion != checks.Skipped {
		t.Fatalf("a costly check after a closed gate: %s %s, want skipped", last.Check, last.Conclusion)
	}
	// The author owns it: the gate opens and the check runs.
	res = checks.NewRunner(append(checks.Default(checks.Deps{}), throwaway{})).Run(context.Background(), buildPR(t, r, base, head, "bob", nil))
	if last := res[len(res)-1]; last.Conclusion != checks.Success {
		t.Fatalf("with the owner: %s %s, want success", last.Check, last.Conclusion)
	}
}
