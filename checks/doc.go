// Package checks holds the checks a pull request on a catalog repository goes
// through (ownership, validation, immutability, CRD safety, images), each behind
// one small interface, and the runner that runs them concurrently. It is shared
// by the catalog-check CLI and the GitHub App.
package checks
