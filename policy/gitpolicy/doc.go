// Package gitpolicy reads a repository's policy file (.catalogbot.yaml) as one
// commit holds it, its catalog patterns resolved on that commit, with a
// bounded cache of parsed policies by the file's git blob.
//
// Layer: under the checks and the App, beside policy; it imports policy and
// gitfs only. The pull request builder (checks/gitpr) reads the base's
// policy through it, and the post-merge rebuild (app/rebuild) the policy of
// the commit it builds, without importing the checks.
package gitpolicy
