// Package decode reads the bytes of a catalog file as opm v1.60.0's reader does (declcfg's YAML-or-JSON
// stream) into Values that keep the line and column of every key and value: a fast path for the block YAML
// catalogs are written in, goyaml.v3 for the rest of YAML (resolved as YAML 1.1, as opm reads it), and a
// JSON stream parser. Every input is bounded (Limits: file size, documents, depth, alias expansion per
// document, file and read); whatever is malformed is a finding with a stable rule id (Rules), never a
// panic.
//
// It also defines the vocabulary every finding of this module uses (Position, Severity, Finding, Rule),
// because the decoder is the first to need it. It imports nothing of ours. Its one direct user is the
// catalog package, which re-exports the types (catalog.Value, catalog.Finding, ...), walks trees of files,
// caches and indexes parses, and builds the model; catalog/bundle, catalog/crd and catalog/template read
// through catalog.
package decode
