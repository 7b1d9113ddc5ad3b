// Package registry is catalogbot's container registry client: it checks that image references exist
// (HEAD only), reads the manifests/ directory of bundle images and lends its guarded transport to pushes,
// with explicit credentials, deadlines, bounded retries, per-PR request budgets and an SSRF-safe dialer.
package registry
