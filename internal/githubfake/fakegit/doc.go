// Package fakegit is the GitHub simulator's git database: a bare repository on disk written and read with the
// git command itself (objects, the index of a tree being built, a commit applied onto another tree, the merged
// tree of a merge-queue group), so what the simulator creates through the API is what a clone fetches.
//
// Layer: the bottom of internal/githubfake; it imports nothing of this module. Imported only by package
// githubfake, whose REST routes call it.
package fakegit
