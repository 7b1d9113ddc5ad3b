package checks

import (
	"fmt"
	"strings"
	"testing"

	"github.com/catalogbot/catalogbot/catalog"
)

// The output of crd-safety is bounded: identical changes count once whatever the number of predecessors,
// distinct changes past maxCRDGroups are counted, and a result lists at most maxCRDFindings, errors first.
func TestCRDOutputBounds(t *testing.T) {
	g := &crdGroups{}
	for from := 0; from < 300; from++ {
		for c := 0; c < 40; c++ {
			g.add(catalog.Finding{Rule: "crd.field-removed", Severity: catalog.SeverityError, Message: fmt.Sprintf("x ^.spec.f%d: field removed", c)},
				"new.v2", fmt.Sprintf("old.v1.%d", from), "skipRange, channel stable")
		}
	}
	fs := g.findings()
	if len(fs) != 40 || !strings.Contains(fs[0].Message, "upgrades from 300 bundles (old.v1.0 (skipRange, channel stable)") || !strings.Contains(fs[0].Message, "and 295 more") {
		t.Fatalf("%d findings, first %q", len(fs), fs[0].Message)
	}
	g = &crdGroups{}
	for c := 0; c < maxCRDGroups+7; c++ {
		g.add(catalog.Finding{Rule: "crd.type-changed", Severity: catalog.SeverityError, Message: fmt.Sprint(c)}, "b", "a", "replaces")
	}
	fs = g.findings()
	if len(fs) != maxCRDGroups+1 || !strings.Contains(fs[len(fs)-1].Message, "7 more distinct CRD changes not listed") {
		t.Fatalf("%d findings, last %q", len(fs), fs[len(fs)-1].Message)
	}
	mixed := append([]catalog.Finding{}, fs...)
	for i := 0; i < 10; i++ {
		mixed[i].Severity = catalog.SeverityWarning
	}
	capped := capFindings(mixed, maxCRDFindings)
	if len(capped) != maxCRDFindings || capped[0].Severity != catalog.SeverityError || !catalog.HasErrors(capped) {
		t.Fatalf("capped to %d, first %s", len(capped), capped[0].Severity)
	}
}
