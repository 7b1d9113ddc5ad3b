// Package catalog is the model of an OLM file-based catalog (FBC): loading it from
// any fs.FS with the position of every blob, validating it as opm validate does,
// and the upgrade graph between its bundles. It imports nothing else of this module.
package catalog
