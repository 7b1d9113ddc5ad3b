package catalog

// Rules is the table of every rule this package emits, the loader's
// (LoadRules) and the model's and validator's, in that order. Every finding's
// Rule is an ID of this table, so a rules reference rendered from it
// cannot drift from the code.
func Rules() []Rule {
	return append(LoadRules(), modelRules()...)
}
