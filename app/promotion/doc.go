// Package promotion is the App's catalog promotion: when a new OpenShift version's catalog root appears in
// the default branch's policy (a push that newly declares catalogs/<to>, still empty), or a maintainer
// comments "/promote <from> <to>" on a pull request or an issue, it promotes every package's catalog from
// <from> to <to> as package promote computes it on the default branch's head, and opens one pull request per
// package from the App's own branch catalogbot/promote/<to>/<package> (through promote/pulls), labelled with
// the package's fbc.version_promotion_strategy. A package whose strategy is never is skipped and listed in the
// tracking comment; review-needed pull requests wait for their owners' /approve; always ones are derived —
// because the App recorded every commit on them, and only then (see app/rebuild's provenance and
// checks.PromotionProvenance) — and the merge takes them like any derived change.
//
// Every package's outcome is a row of store.PromotionStore (repository, from, to, package: state and pull
// request), read before anything is opened, so a retried job, a redelivery or a second /promote opens nothing
// twice, and a pull request the owners closed stays closed. One job works a repository's promotion at a time
// (a lease of its own beside the merge lease).
//
// Layer: a feature of app, above app/jobs, app/store and app/ghapp, which it imports, with promote and
// promote/pulls; it imports no other feature. Why a room of its own and not part of app/rebuild: it is not
// work after a merge, it has its own trigger (a policy change or a command), records and lifecycle (one pull
// request per package, the tracking comment), and the rebuild is large already; the one thing it shares with
// the rebuild — telling the App's own pull requests from look-alikes — stays in app/rebuild's provenance,
// which reads this package's records from the store. Only the composition root (app) uses it: it builds it
// once (New) and registers its worker.
package promotion
