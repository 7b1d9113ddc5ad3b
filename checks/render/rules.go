package render

import "github.com/catalogbot/catalogbot/catalog"

// Rules lists every rule id this package emits itself: the templates check's and the preview's.
func Rules() []catalog.Rule {
	return append(templatesRules(), previewRules()...)
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
