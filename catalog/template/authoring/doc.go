// Package authoring edits catalog templates as an author would: AddBundle adds a bundle directory, named by
// its image, to a basic or semver template by adding lines only (comments, indentation and folded scalars
// stay; add.go, addtext.go), and Convert turns a package's file-based catalog into the basic template
// `opm alpha convert-template basic` prints, byte for byte (convert.go). Rendering a template and
// resolving its images are package template's; this package only writes template text.
//
// Layer: above catalog/template (its schema names), catalog and catalog/bundle, which are all it imports
// of this module. checks, app and cmd may import it; nothing under catalog/ imports it.
package authoring
