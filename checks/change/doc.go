// Package change is the room below every check: what a pull request is (two revisions, the changed files,
// the author, the base's policy), what changed between its revisions (Prepare's ChangeSet: catalog documents
// paired by key, bundle directories, ci.yaml owners, the packages a changed template renders), the changed
// lines a finding is anchored to, and the Check interface with the verdicts a check returns.
//
// Layer: above catalog, catalog/*, policy and verdict; below the checks. It imports nothing of checks and
// nothing above it. It is imported by package checks (the registry and runner, which re-exports the pull
// request and the verdicts for the front ends) and by the checks' own subpackages; app and cmd use it through
// package checks.
//
// Why a room of its own: every check reads the same ChangeSet, and the checks' subpackages must not import
// package checks (which lists them), so what they share lives here. Answers that belong to a check but are
// shared through the change set (the preview, the derivation) are kept in it with Memo, so this package does
// not need to know their types.
package change
