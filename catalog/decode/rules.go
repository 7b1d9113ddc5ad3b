package decode

// Rule ids the decoder emits. Each has one entry in Rules.
const (
	// RuleFileTooLarge is also the rule of a reader that skips a file over Limits.MaxFileSize unread.
	RuleFileTooLarge = ruleLoadFileTooLarge

	ruleLoadFileTooLarge   = "load.file-too-large"
	ruleLoadJSONSyntax     = "load.json-syntax"
	ruleLoadYAMLSyntax     = "load.yaml-syntax"
	ruleLoadYAMLSeparator  = "load.yaml-separator"
	ruleLoadEmptyDocument  = "load.empty-document"
	ruleLoadNotObject      = "load.not-object"
	ruleLoadDuplicateKey   = "load.duplicate-key"
	ruleLoadFoldedKey      = "load.case-folded-key"
	ruleLoadMetaNotString  = "load.meta-not-string"
	ruleLoadMissingSchema  = "load.missing-schema"
	ruleLoadUnsupportedKey = "load.unsupported-key"
	ruleLoadNumberRange    = "load.number-range"
	ruleLoadTooManyDocs    = "load.too-many-documents"
	ruleLoadTooDeep        = "load.too-deep"
	ruleLoadAliasExpansion = "load.alias-expansion"
	ruleLoadIgnoredContent = "load.ignored-content"
)

// Rules is the table of every rule the decoder (ParseFile, ParseDocuments, ParseShared) emits, in the
// order the rules reference lists them.
func Rules() []Rule {
	const opm = "opm v1.60.0 (declcfg.LoadFS)"
	return []Rule{
		{ID: ruleLoadFileTooLarge, Severity: SeverityError,
			Summary: "a file is larger than the loader's per-file limit, so it was not read",
			Hint:    "split the package into smaller files, or raise the limit if the file is genuine",
			Source:  "catalogbot"},
		{ID: ruleLoadJSONSyntax, Severity: SeverityError,
			Summary: "a file that starts with '{' is read as a stream of JSON objects, and it is not valid JSON",
			Hint:    "fix the JSON at the position given (opm would refuse the file or silently drop objects)",
			Source:  opm},
		{ID: ruleLoadYAMLSyntax, Severity: SeverityError,
			Summary: "a YAML document does not parse",
			Hint:    "fix the YAML at the position given; indent with spaces, never tabs",
			Source:  opm},
		{ID: ruleLoadYAMLSeparator, Severity: SeverityError,
			Summary: "a line starts with '---' but holds more than a comment after it, so opm rejects the whole file",
			Hint:    "put '---' alone on its line (a trailing '# comment' is allowed) and move the rest to the next line",
			Source:  opm},
		{ID: ruleLoadEmptyDocument, Severity: SeverityError,
			Summary: "a YAML document holds only comments, blank lines or a separator: opm reads it as an object without schema and refuses it",
			Hint:    "remove the extra '---' or the comment-only block (put header comments in the first document, after no separator)",
			Source:  opm},
		{ID: ruleLoadNotObject, Severity: SeverityError,
			Summary: "a document is not a JSON object (a list, a string, a number, null)",
			Hint:    "every document of a catalog file must be a mapping with a schema key",
			Source:  opm},
		{ID: ruleLoadDuplicateKey, Severity: SeverityWarning,
			Summary: "an object gives the same key twice; the last value wins",
			Hint:    "remove the earlier occurrence",
			Source:  "catalogbot"},
		{ID: ruleLoadFoldedKey, Severity: SeverityError,
			Summary: "two top-level keys differ only in letter case (name and Name); opm refuses the object",
			Hint:    "keep one spelling, in lower camel case",
			Source:  opm},
		{ID: ruleLoadMetaNotString, Severity: SeverityError,
			Summary: "schema, package or name is not a string",
			Hint:    "quote the value (YAML reads yes, on, 1.0, 012 as booleans or numbers)",
			Source:  opm},
		{ID: ruleLoadMissingSchema, Severity: SeverityError,
			Summary: "an object has no schema (or an empty one); opm refuses it",
			Hint:    "add schema: olm.package, olm.channel, olm.bundle or olm.deprecations (or your own schema name)",
			Source:  opm},
		{ID: ruleLoadUnsupportedKey, Severity: SeverityError,
			Summary: "a YAML mapping key is null, a list or a mapping, which JSON cannot hold; opm refuses the file",
			Hint:    "use a string key (quote it)",
			Source:  opm},
		{ID: ruleLoadNumberRange, Severity: SeverityError,
			Summary: "a number cannot be held in a JSON number (infinite, NaN or beyond float64); opm refuses the file",
			Hint:    "quote the value if it is meant as text",
			Source:  opm},
		{ID: ruleLoadTooManyDocs, Severity: SeverityError,
			Summary: "a file holds more documents than the loader's limit; the rest were not read",
			Hint:    "split the file, or raise the limit if the file is genuine",
			Source:  "catalogbot"},
		{ID: ruleLoadTooDeep, Severity: SeverityError,
			Summary: "values are nested deeper than the loader's limit; the document was not read",
			Hint:    "flatten the document; real catalogs nest a few dozen levels at most",
			Source:  "catalogbot"},
		{ID: ruleLoadAliasExpansion, Severity: SeverityError,
			Summary: "YAML aliases expand to too many values (a 'billion laughs' document); the document was not read",
			Hint:    "write the values out instead of repeating aliases of aliases",
			Source:  "catalogbot (opm: excessive aliasing)"},
		{ID: ruleLoadIgnoredContent, Severity: SeverityWarning,
			Summary: "a YAML document goes on after a '...' end marker; opm silently ignores that text",
			Hint:    "replace '...' with '---' if the text is meant as another document, or delete it",
			Source:  opm},
	}
}

// StopsReading says whether a load rule leaves the rest of its file (or document) unread: a syntax error,
// a file or document over a bound. Rules about one value of a blob that was read are not among them.
func StopsReading(rule string) bool {
	switch rule {
	case ruleLoadYAMLSyntax, ruleLoadJSONSyntax, ruleLoadYAMLSeparator, ruleLoadFileTooLarge,
		ruleLoadTooManyDocs, ruleLoadTooDeep, ruleLoadAliasExpansion:
		return true
	}
	return false
}
