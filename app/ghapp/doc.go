// Package ghapp is the App's side of GitHub: the App and installation
// clients (tokens cached and refreshed), the transport that honours rate
// limits and retries, the git cache that fetches pull request and branch
// refs as the installation, team membership, the check-run reporter with the
// rendering of a result into a run (annotations, summary, the commands
// footer), and the few queries recovery and merging share (open pull
// requests, completed checks, failed deliveries, recent comments).
//
// Layer: above app/jobs (run names and ids, the command grammar for the
// footer) and below every feature of app; it imports checks, catalog, policy
// and gitfs of ours, never app/store nor a feature package. Every package
// under app may import it.
package ghapp
