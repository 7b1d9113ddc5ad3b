// Package store is the App's one database (SQLite or PostgreSQL): the
// delivery log and River's job queue written in one transaction, and the
// tables beside them — what the last check of a pull request saw and the
// merge audit log, the comment commands (head log, approvals, holds, merge
// claims), the catalog image rebuilds, the bundle builds and catalog update
// commits the App made (its provenance), and the merge lease. Every table is
// created once, when the database is opened (OpenQueue), and each part is
// handed out as an interface (Merges, Commands, Rebuilds, Updates, Leases)
// that the features hold.
//
// Layer: above app/jobs (it stores jobs and plans), below every feature of
// app; it imports nothing else of app, and only app's packages and cmd may
// import it.
package store
