package githubfake

// routePermissions is what GitHub requires of a GitHub App's installation token for each endpoint the fake
// serves ("Permissions required for GitHub Apps" in GitHub's REST documentation): the permission and the
// least access. Endpoints called with the App's own JWT (/app/...) need none and are not listed. Where
// GitHub accepts either of two permissions (issue comments and labels on a pull request: issues or
// pull_requests), the one a catalog App is granted is listed.
func routePermissions() map[string][2]string {
	return map[string][2]string{
		"GET /installation/repositories":                                                {"metadata", "read"},
		"GET /repos/{owner}/{repo}":                                                     {"metadata", "read"},
		"GET /repos/{owner}/{repo}/branches/{branch}":                                   {"contents", "read"},
		"GET /repos/{owner}/{repo}/branches/{branch}/protection/required_status_checks": {"administration", "read"},
		"GET /repos/{owner}/{repo}/rules/branches/{branch}":                             {"metadata", "read"},
		"POST /repos/{owner}/{repo}/check-runs":                                         {"checks", "write"},
		"PATCH /repos/{owner}/{repo}/check-runs/{id}":                                   {"checks", "write"},
		"GET /repos/{owner}/{repo}/check-runs/{id}":                                     {"checks", "read"},
		"GET /repos/{owner}/{repo}/check-runs/{id}/annotations":                         {"checks", "read"},
		"GET /repos/{owner}/{repo}/commits/{ref}/check-runs":                            {"checks", "read"},
		"GET /repos/{owner}/{repo}/commits/{ref}/status":                                {"statuses", "read"},
		"GET /repos/{owner}/{repo}/commits/{ref}/statuses":                              {"statuses", "read"},
		"POST /repos/{owner}/{repo}/statuses/{sha}":                                     {"statuses", "write"},
		"GET /repos/{owner}/{repo}/pulls":                                               {"pull_requests", "read"},
		"GET /repos/{owner}/{repo}/pulls/{number}":                                      {"pull_requests", "read"},
		"PUT /repos/{owner}/{repo}/pulls/{number}/merge":                                {"contents", "write"},
		"GET /repos/{owner}/{repo}/pulls/{number}/reviews":                              {"pull_requests", "read"},
		"POST /repos/{owner}/{repo}/pulls/{number}/requested_reviewers":                 {"pull_requests", "write"},
		"GET /repos/{owner}/{repo}/pulls/{number}/requested_reviewers":                  {"pull_requests", "read"},
		"GET /repos/{owner}/{repo}/issues/{a}/{b}":                                      {"pull_requests", "read"},
		"POST /repos/{owner}/{repo}/issues/{number}/comments":                           {"pull_requests", "write"},
		"PATCH /repos/{owner}/{repo}/issues/comments/{id}":                              {"pull_requests", "write"},
		"DELETE /repos/{owner}/{repo}/issues/comments/{id}":                             {"pull_requests", "write"},
		"POST /repos/{owner}/{repo}/issues/{number}/labels":                             {"pull_requests", "write"},
		"PUT /repos/{owner}/{repo}/issues/{number}/labels":                              {"pull_requests", "write"},
		"DELETE /repos/{owner}/{repo}/issues/{number}/labels/{name}":                    {"pull_requests", "write"},
		"POST /repos/{owner}/{repo}/issues/comments/{id}/reactions":                     {"pull_requests", "write"},
		"GET /repos/{owner}/{repo}/collaborators/{username}/permission":                 {"metadata", "read"},
		"GET /repos/{owner}/{repo}/issues/comments":                                     {"pull_requests", "read"},
		"GET /orgs/{org}/teams/{slug}/members":                                          {"members", "read"},
		"POST /repos/{owner}/{repo}/git/blobs":                                          {"contents", "write"},
		"POST /repos/{owner}/{repo}/git/trees":                                          {"contents", "write"},
		"POST /repos/{owner}/{repo}/git/commits":                                        {"contents", "write"},
		"GET /repos/{owner}/{repo}/git/ref/{ref...}":                                    {"contents", "read"},
		"POST /repos/{owner}/{repo}/git/refs":                                           {"contents", "write"},
		"PATCH /repos/{owner}/{repo}/git/refs/{ref...}":                                 {"contents", "write"},
		"POST /repos/{owner}/{repo}/pulls":                                              {"pull_requests", "write"},
		"POST /repos/{owner}/{repo}/issues":                                             {"issues", "write"},
		"PATCH /repos/{owner}/{repo}/pulls/{number}":                                    {"pull_requests", "write"},
	}
}

// RoutePermission is the permission and access ("read" or "write") GitHub requires of an installation for
// the endpoint route (a Request's Route); ok is false for endpoints that need none (the App's own).
func RoutePermission(route string) (permission, access string, ok bool) {
	p, ok := routePermissions()[route]
	return p[0], p[1], ok
}
