// Package load reads the files of an OLM file-based catalog tree from any fs.FS as opm's loader does, into
// documents with positions and findings, without building the model: the walk in lexical order with
// .indexignore (walk.go), bounded reads parsed by catalog/decode under Limits, the Reader and its strategies
// (read.go: whole; partial.go: only the files some packages need; stream.go: in file order, a window ahead),
// the parse cache by content key (cache.go) and the index of what each file content holds (summary.go).
// It plays the part of opm's declcfg loading; the model built from the documents, its judgement and its
// upgrade graph are package catalog's.
//
// Layer: the bottom of the catalog packages, beside catalog/decode. It imports catalog/decode alone. It may be
// imported by catalog (Load, LoadPartial and ValidateFS open a Reader; catalog re-exports Limits) and by
// anything above catalog (catalog/image, catalog/template, checks, app, cmd); it never imports catalog.
package load
