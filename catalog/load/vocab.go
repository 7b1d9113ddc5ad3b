package load

import "github.com/catalogbot/catalogbot/catalog/decode"

// The decoder's vocabulary this package speaks (catalog re-exports the same names for the model's users).
type (
	Position = decode.Position
	Finding  = decode.Finding
	Rule     = decode.Rule
	Doc      = decode.Doc
)

// SeverityError is decode.SeverityError.
const SeverityError = decode.SeverityError

// schemaPackage is the schema of an olm.package blob (catalog.SchemaPackage).
const schemaPackage = "olm.package"

// SortFindings orders findings by position, then rule, then message (decode.SortFindings).
func SortFindings(fs []Finding) { decode.SortFindings(fs) }
