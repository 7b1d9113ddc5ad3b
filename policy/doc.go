// Package policy reads a catalog repository's policy file (.catalogbot.yaml):
// maintainers, package owners, image rules, CRD rule overrides and merge settings.
// The policy is always taken from the base revision of a pull request.
package policy
