// Package rebuild is what the App does after a merge to a default branch: it
// builds and pushes the catalog images and the images of merged bundle
// directories (each with its own check run), opens and keeps the catalog
// update pull requests that bring those bundles into the catalog templates,
// and keeps the App's own provenance: what it built and opened, and its bot
// login, so the checks of a later pull request can tell the App's own updates
// from look-alikes. Its configuration (Config) is the part of the App's that
// it reads, built by app's configuration code.
//
// Layer: a feature of app, above app/jobs, app/store and app/ghapp, which it
// imports; it imports no other feature and never app. Only the composition
// root (app), which builds it (app.WithRebuild) and wires its worker, and the
// pipeline, which reads the App's provenance, use it.
package rebuild
