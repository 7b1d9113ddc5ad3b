// Package catalog is the model of an OLM file-based catalog (FBC): reading it from any fs.FS with the
// position of every blob, validating it as opm validate does, and the upgrade graph between its bundles.
//
// Files are decoded by catalog/decode (YAML and JSON into Values with positions, as opm's reader does),
// whose vocabulary (Position, Finding, Value, Doc, ...) this package re-exports. Reading a tree is one
// reader with its strategies (read.go: whole, partial from the summary index, streamed), the walk
// (read_walk.go) and the parse cache by content (read_cache.go); the model (model*.go, property.go), the
// rules (validate*.go, rules*.go) and the graph (graph.go) are built on what it reads. It imports nothing
// else of this module but catalog/decode.
package catalog
