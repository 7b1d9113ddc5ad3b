// Package githubfake is a stateful, in-memory GitHub REST API for one App,
// served as an http.Handler, for the App's end-to-end tests and the demo.
// It models the endpoints the App uses as GitHub documents them:
//
// Authentication. App endpoints (/app/...) take a JWT: RS256, signed with
// the App's key, iss = the App id, exp in the future and at most 10 minutes
// ahead, iat not in the future (60 s drift allowed); anything else is 401.
// POST /app/installations/{id}/access_tokens (201) issues a token that lives
// one hour; every other endpoint takes such a token ("token" or "Bearer")
// and answers 401 without one. A repository or team the installation cannot
// see is 404, as GitHub hides what a token may not see; DenyPermission makes
// endpoints needing a withdrawn permission answer 403 "Resource not
// accessible by integration".
//
// Rate limits. Each identity (the App, each installation) has an hourly
// budget (5000 by default). Every answer carries X-RateLimit-Limit,
// -Remaining, -Used, -Reset and -Resource; an exhausted budget is 403 with
// X-RateLimit-Remaining: 0. Successful GETs carry an ETag; a request whose
// If-None-Match matches gets 304 and costs nothing.
//
// Check runs. Create (201), update, get, list annotations, list for a ref
// (SHA or branch; check_name, status, app_id, filter=latest|all).
// 422 for more than 50 annotations in one request, a summary or text over
// 65,535 characters, a missing output title or summary, a completed status
// without a conclusion, columns on a multi-line annotation, more than 3
// actions or an action label/identifier over 20 or description over 40
// characters. Annotations accumulate across updates. pull_requests lists
// only same-repository PRs whose head is the run's SHA (empty for forks).
//
// Pull requests. List (state, base, head, sort, direction; offset
// pagination: per_page default 30, at most 100, Link header with next, last,
// first, prev), get (mergeable, mergeable_state), reviews. Merge:
// PUT .../pulls/{n}/merge answers 409 "Head branch was modified" when sha is
// not the head; 405 for a closed or draft PR, a disallowed method, conflicts,
// or unmet branch protection or ruleset (required checks from commit
// statuses or check runs, strict up-to-date, approvals); 200 with the merge
// SHA otherwise, which closes the PR and moves the base branch. Merge queue
// groups (QueueMergeGroup) are built in git and announced by merge_group
// events. Review
// requests: POST .../pulls/{n}/requested_reviewers answers 201 with the pull
// request, or 422 for the whole request when a user is the author or not a
// collaborator, a team unknown, or the PR not open; a submitted review
// fulfils the user's request; GET lists users and teams. In a repository
// with a git directory whose objects hold both commits the merge is made in
// git as GitHub makes it: a merge commit of both, one squashed
// commit on the base authored by the PR's author, or the PR's commits
// replayed, committed by GitHub; changes that do not merge cleanly are 405.
// Commits made through the Git database API are authored and committed by
// the App's bot and now, unless author or committer are given (the committer
// defaults to the author). PushBranch moves a branch, and the open PRs from
// it, as a git push does.
// The PR's user is a Bot for an App's "<slug>[bot]" login; head.repo carries
// the repository id (a made-up one for a fork).
//
// Also: issue comments (create, edit, delete; list per issue or per
// repository, with since, sort and direction; bodies up to 65,536 characters; the App may edit only its own; user.type Bot for the
// App's), reactions on issue comments (201 new, 200 when the App already
// reacted so, 422 for an unknown content), a user's permission on a
// repository (collaborators as set; anyone else read on a public repository,
// none on a private one), labels on issues, team members
// by slug (404 unknown or another organization's), required status checks
// of branch protection (404 "Branch not protected"), branch rules, commit
// statuses (combined and list), installation repositories, and App webhook
// deliveries: list with cursor pagination (newest first), get, and redeliver
// (202, sent in the background with the same GUID, within 3 days).
// Deliver sends signed webhooks (X-Hub-Signature-256) and records them;
// PullRequestEvent, PullRequestReviewEvent, IssueCommentEvent, CheckRunEvent,
// CheckSuiteEvent and PushEvent build their payloads from the current state. The fake does
// not send events on its own: a test delivers the ones GitHub would send.
//
// InjectFault makes chosen requests fail (500, 502, 403 rate limited, 429
// with Retry-After) before authentication, a bounded number of times.
//
// StartOutage makes authenticated calls fail for a while (a duration or a
// number of failures), cycling through 500, 502 and the rate limits as
// GitHub documents them: a primary limit is 403 (or 429) with
// X-RateLimit-Remaining: 0 until X-RateLimit-Reset (epoch seconds), for
// every request of that identity; a secondary limit is 403 or 429 "You have
// exceeded a secondary rate limit" with Retry-After in seconds, again for
// every request of the identity until then. Limits outlast the outage.
// Requests records, per request, its arrival time, its identity (the App or
// an installation), the fault that answered it, and whether it came before
// an earlier answer's Retry-After or reset had passed (Early), so a test
// can check that the client waits as GitHub asks.
//
// Layer: internal, for tests and the demo; it imports nothing of the App or the checks. Its rooms below it,
// which never import it back: fakegit (the git database on a bare repository) and checkrun (the check-run
// model and GitHub's limits on it). Imported by the App's and the commands' tests, test/*, and the demo.
package githubfake
