// Package jobs is the vocabulary of the App's work: every job kind and its
// arguments (as stored in the queue: never rename a kind or a JSON field),
// the plan a webhook delivery commits, the names and external ids of the
// check runs, and the grammar of the comment commands.
//
// Layer: the ground floor of app. It imports nothing of ours; every other
// package under app may import it, and it imports none of them.
package jobs
