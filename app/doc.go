// Package app is the GitHub App's composition root: it reads the
// configuration and builds the server in one pass — it opens the store,
// builds each feature once with everything it needs, registers every job
// kind's worker from one list — and serves the webhook, health and metrics.
// It exports only what cmd/catalogbot and the tests use (the configuration,
// NewServer and its options, Sign).
//
// The layers under app, each importing only those below it:
//
//	app/jobs      the vocabulary of work: job kinds and arguments, plans, check-run ids, the comment grammar
//	app/store     the one database: queue, delivery log, merge, command, rebuild and update records, leases
//	app/ghapp     GitHub: clients, transport, git cache, teams, check-run reporting
//	app/intake    the webhook: signature, each event's plan, the delivery committed with its jobs
//	app/merge     merge facts, decision, merger, merge result, reviewers, comment commands
//	app/rebuild   after a merge: catalog and bundle images, catalog updates, the App's provenance
//	app/pipeline  the check job: check runs of a pull request or merge group head, observe → decide → act
//	app/recovery  the resync and the redelivery: work a lost webhook would have made
//	app/promotion a new OpenShift version: one promotion pull request per package, on a policy change or /promote
//
// Features import app/jobs, app/store and app/ghapp; of each other, only
// app/pipeline imports app/merge and app/rebuild, and app/recovery imports
// app/intake. Nothing below app imports app.
package app
