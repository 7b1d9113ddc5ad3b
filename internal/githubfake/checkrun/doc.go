// Package checkrun is the GitHub simulator's check-run model: a check run as GitHub stores it, the body of a
// create or update request, GitHub's documented limits on it (422 with the field and code GitHub names) and
// how an update applies (fields given replace, annotations accumulate, a conclusion completes the run).
//
// Layer: the bottom of internal/githubfake; it imports nothing of this module. Imported only by package
// githubfake, which serves the routes and re-exports CheckRun, Annotation and Action under its own name.
package checkrun
