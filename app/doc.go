// Package app is the GitHub App: webhook intake, the durable job queue, the git
// cache, check-run reporting, merging and the catalog image rebuild.
package app
