package pipeline

import (
	"strings"
	"testing"

	"github.com/catalogbot/catalogbot/checks"
)

func TestMergeResults(t *testing.T) {
	got := mergeResults("catalogbot/validate", []checks.Result{
		{Check: "validation", Conclusion: checks.Success, Title: "Catalog is valid", Summary: "ok"},
		{Check: "immutability", Conclusion: checks.Failure, Title: "Released bundle modified", Summary: "bad", Err: ""},
	})
	if got.Conclusion != checks.Failure || got.Check != "catalogbot/validate" ||
		got.Title != "Catalog is valid; Released bundle modified" || !strings.Contains(got.Summary, "### immutability\n\nbad") {
		t.Errorf("mergeResults = %+v", got)
	}
	if got := mergeResults("catalogbot/images", nil); got.Conclusion != checks.Neutral {
		t.Errorf("mergeResults(none) conclusion = %s, want neutral", got.Conclusion)
	}
	names := RunNames([]checks.Check{checks.Ownership{}, checks.Validation{}, checks.Immutability{}, checks.CRDSafety{}, checks.Images{}})
	want := "catalogbot/ownership catalogbot/validate catalogbot/crd-safety catalogbot/images"
	if strings.Join(names, " ") != want {
		t.Errorf("runNames = %v, want %s", names, want)
	}
}
