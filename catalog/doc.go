// Package catalog is the model of an OLM file-based catalog (FBC): the blobs read from a tree decoded into
// packages, channels, bundles and deprecations with the position of every blob, validated as opm validate
// does, and the upgrade graph between its bundles.
//
// Files are decoded by catalog/decode (YAML and JSON into Values with positions, as opm's reader does),
// whose vocabulary (Position, Finding, Value, Doc, ...) this package re-exports, and a tree is read by
// catalog/load (the walk, the Reader and its strategies, the parse cache and the summary index), whose
// Limits it re-exports too. Here are what is built on what load reads: Load and LoadDir (read_whole.go),
// LoadPartial (read_partial.go), the model (model*.go, property.go), the rules (validate*.go, rules*.go;
// ValidateFS judges each package as a streamed read goes by) and the graph (graph.go).
//
// Layer: above catalog/decode and catalog/load, which are all it imports of this module. Everything else of
// ours may import it; neither package it imports may import it back.
package catalog
