// Package app is the GitHub App: the composition root that builds the server
// (configuration, health, metrics, worker registration) from the packages
// below it, and — until they get rooms of their own — the webhook intake and
// recovery.
//
// The layers under app, each importing only those below it:
//
//	app/jobs     the vocabulary of work: job kinds and arguments, plans, run names, the comment grammar
//	app/store    the one database: queue, delivery log, merge, command, rebuild and update records, leases
//	app/ghapp    GitHub: clients, transport, git cache, teams, check-run reporting
//	app/merge    merge facts, decision, merger, merge result, reviewers, comment commands
//	app/rebuild  after a merge: catalog and bundle images, catalog updates, the App's provenance
//	app/pipeline the check job: check runs of a pull request or merge group head, observe → decide → act
//
// Nothing below app imports app.
package app
