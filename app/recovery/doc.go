// Package recovery re-derives work from GitHub's state on a timer, so that a
// lost webhook delays work instead of losing it: the resync enqueues a check
// for every open pull request head without all the App's check runs
// completed (and a merge evaluation for the rest), and the comment commands
// whose delivery never came; the redelivery asks GitHub to send again the
// App's failed deliveries of the last window.
//
// Layer: a feature of app, above app/jobs and app/store, which it imports,
// and above app/intake, whose plans (EnqueueCheck, CommandJob) it reuses so a
// recovered job is the job the delivery would have made. Its GitHub side is a
// set of functions the composition root fills from app/ghapp. Only the
// composition root (app) uses it: it builds it once (New) and registers its
// workers.
package recovery
