// Package app is the GitHub App: webhook intake, the durable job queue, the git
// cache, check-run reporting, merging and the catalog image rebuild.
//
// It is being split into layered packages below it; app/jobs (the vocabulary
// of work: job kinds and arguments, plans, run names, the comment grammar) is
// the first, and imports nothing of app.
package app
