package catalog

import (
	"github.com/catalogbot/catalogbot/catalog/decode"
	"github.com/catalogbot/catalogbot/catalog/load"
)

// The decoder's vocabulary (package decode), re-exported so that code using the model imports catalog
// alone: positions and findings, parsed values and documents.
type (
	Position = decode.Position
	Severity = decode.Severity
	Finding  = decode.Finding
	Rule     = decode.Rule
	Value    = decode.Value
	Kind     = decode.Kind
	Field    = decode.Field
	Doc      = decode.Doc
)

const (
	SeverityError   = decode.SeverityError
	SeverityWarning = decode.SeverityWarning
	SeverityIgnore  = decode.SeverityIgnore
)

const (
	KindNull   = decode.KindNull
	KindBool   = decode.KindBool
	KindNumber = decode.KindNumber
	KindString = decode.KindString
	KindObject = decode.KindObject
	KindArray  = decode.KindArray
)

// Limits bound every input a read takes (load.Limits): every parse of this module and its callers passes
// them, so the model's users name them here.
type Limits = load.Limits

// DefaultLimits returns the limits used for zero fields (load.DefaultLimits).
func DefaultLimits() Limits { return load.DefaultLimits() }

// ParseSeverity accepts error, warning and ignore.
func ParseSeverity(s string) (Severity, error) { return decode.ParseSeverity(s) }

// SortFindings orders findings by position, then rule, then message, so output is stable.
func SortFindings(fs []Finding) { decode.SortFindings(fs) }

// AppendJSONString appends s as a JSON string (decode.AppendJSONString).
func AppendJSONString(b []byte, s string, escapeHTML bool) []byte {
	return decode.AppendJSONString(b, s, escapeHTML)
}

// ParseFile parses one file's bytes into documents, as opm v1.60.0 reads a
// catalog file (decode.ParseFile, under l's bounds of one file).
func ParseFile(name string, data []byte, lim Limits) ([]Doc, []Finding) {
	return decode.ParseFile(name, data, lim.Decoding())
}

// ParseDocuments reads a YAML or JSON stream as opm's reader does, without the rules of catalog blobs
// (decode.ParseDocuments, under l's bounds of one file): for Kubernetes manifests and bundle metadata.
func ParseDocuments(name string, data []byte, lim Limits) ([]Doc, []Finding) {
	return decode.ParseDocuments(name, data, lim.Decoding())
}

// ParseDocumentsShared is ParseDocuments on a buffer the documents keep (decode.ParseDocumentsShared): data
// must never be written again.
func ParseDocumentsShared(name string, data []byte, lim Limits) ([]Doc, []Finding) {
	return decode.ParseDocumentsShared(name, data, lim.Decoding())
}
