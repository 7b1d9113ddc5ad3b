// Package gitfs reads the tree of a commit in a local git repository (bare or
// not) as an io/fs file system, without a checkout: symbolic links are never
// followed, submodules are marked, and every read is bounded.
package gitfs
