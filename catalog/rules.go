package catalog

import "github.com/catalogbot/catalogbot/catalog/load"

// Rules is the table of every rule this package emits, the loader's
// (load.Rules) and the model's and validator's, in that order. Every finding's
// Rule is an ID of this table, so a rules reference rendered from it
// cannot drift from the code.
func Rules() []Rule {
	return append(load.Rules(), modelRules()...)
}
