package load

import "github.com/catalogbot/catalogbot/catalog/decode"

// Rule ids the tree reader emits besides the decoder's (decode.Rules). Each has one entry in Rules.
const (
	ruleLoadSymlink     = "load.symlink"
	ruleLoadIrregular   = "load.irregular-file"
	ruleLoadIndexIgnore = "load.indexignore"
)

// Rules is the table of every rule loading emits: the tree reader's (ReadFS, Load, LoadPartial) and
// the decoder's (ParseFile), in the order of the rules reference.
func Rules() []Rule {
	const opm = "opm v1.60.0 (declcfg.LoadFS)"
	rules := []Rule{
		{ID: ruleLoadSymlink, Severity: SeverityError,
			Summary: "the catalog contains a symbolic link; catalogbot never follows links, for safety (a git tree can point anywhere)",
			Hint:    "replace the link with a copy of the file it points to, or list it in an .indexignore file",
			Source:  "catalogbot"},
		{ID: ruleLoadIrregular, Severity: SeverityError,
			Summary: "the catalog contains something that is neither a regular file nor a directory (device, socket, pipe)",
			Hint:    "remove it from the catalog directory",
			Source:  "catalogbot"},
	}
	rules = append(rules, decode.Rules()...)
	return append(rules, Rule{ID: ruleLoadIndexIgnore, Severity: SeverityError,
		Summary: "an .indexignore file cannot be read as lines of patterns (a line over 64 KiB, say); opm fails on it",
		Hint:    "make it a small text file of gitignore patterns, one per line",
		Source:  opm})
}
