// Package merge is how a checked pull request becomes a merge: the facts
// gathered from GitHub and the store, the decision as a pure
// function of them (DecideMerge), the merger that acts on it under the
// repository's lease and records the audit entry, the judgement of the merge
// result against a base that moved, the reviewers a ci.yaml asks for, and the
// comment commands (/approve and /hold bind approvals and holds to a head;
// /retest and /help live beside them because they share the command's
// context, replies and record).
//
// Layer: a feature of app, above app/jobs, app/store and app/ghapp, which it
// imports; it imports no other feature. Only the composition root (app) and
// the pipeline (what a check saw, through an interface of its own) use it.
package merge
