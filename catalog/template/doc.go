// Package template reads catalog templates — olm.template.basic and olm.semver — and renders them into
// file-based catalog blobs exactly as `opm alpha render-template` does, with a position on every finding.
//
// A template names bundles by image only. Rendering asks a Resolver for the olm.bundle blob of each
// image; resolvers that need no network (a catalog that already holds the image's blob, a bundle
// directory whose deterministic image has that digest) come first, a registry last. Here are the parse
// (template.go), the render (render.go, semver.go, renderer.go, yamlout.go), the resolvers (resolve.go) with
// what they keep of bundle directories by content (dirfacts.go, memofs.go), and what a repository's
// committed catalogs are checked against: the drift between a render and the committed file (drift.go) and
// the catalogs a community ci.yaml maps a template to (mapping.go). Editing a template — adding a bundle,
// converting a catalog into one — is catalog/template/authoring's.
//
// Layer: above catalog, catalog/bundle, catalog/image, catalog/jsonout and catalog/load, which are all it
// imports of this module. catalog/template/authoring, internal/pkgtemplate, promote, checks, app and cmd
// may import it; nothing under catalog/ that it imports may import it back.
package template
