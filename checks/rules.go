package checks

import (
	"github.com/catalogbot/catalogbot/catalog"
	"github.com/catalogbot/catalogbot/checks/change"
	"github.com/catalogbot/catalogbot/checks/render"
)

// Rules lists every rule id the checks of this package emit themselves (the
// validation and CRD checks report the ids of catalog and catalog/crd).
func Rules() []catalog.Rule {
	var rs []catalog.Rule
	rs = append(rs, ownershipRules()...)
	rs = append(rs, immutabilityRules()...)
	rs = append(rs, crdSafetyRules()...)
	rs = append(rs, imagesRules()...)
	rs = append(rs, render.Rules()...)
	rs = append(rs, change.Rules()...)
	return rs
}

// ruleHint returns the hint of one of this package's rules.
func ruleHint(id string) string {
	for _, r := range Rules() {
		if r.ID == id {
			return r.Hint
		}
	}
	return ""
}
