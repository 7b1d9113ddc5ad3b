// Package checks holds the checks a pull request on a catalog repository goes through (ownership,
// validation, immutability, CRD safety, images), each behind one small interface, their one list (registry.go:
// adding a check is one file and one line) and the runner that runs them concurrently. It is shared by the
// catalog-check CLI and the GitHub App.
//
// Layer: above catalog, policy, registry, promote and gitfs; below app and cmd, which import it. Its rooms
// below it, which must never import it back:
//   - checks/change: the pull request, the change set every check reads, changed lines and anchors, the Check
//     interface (re-exported here as PullRequest, Result, ... so the front ends name only this package);
//   - checks/verdict: what a check run says, for reporters that need no checks;
//   - checks/gitpr: a pull request built from a git repository.
package checks
