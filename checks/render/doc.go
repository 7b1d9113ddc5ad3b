// Package render is the room of what a pull request renders to: the templates check (each template the pull
// request concerns rendered and compared with its catalogs), the catalog preview (the catalog update a merge
// would make, computed in memory for every bundle directory added or changed) and the upgrade graphs drawn
// from it. They share the base's parsed catalog files and the bundle directories' renders, so they are one
// room.
//
// Layer: above checks/change, catalog, catalog/template, policy, registry and internal/pkgtemplate; it imports
// nothing of package checks. Imported by package checks (the list of checks and its front-end names) and by
// the checks that read the preview (crd-safety, validation); app and cmd use it through package checks.
package render
