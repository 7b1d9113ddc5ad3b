// Package sigtools runs the clients that verify catalogbot's signatures in the field — opm, whose
// containers/image enforces a containers policy, and the cosign CLI — for tests: it finds them (as
// internal/opmrun does, skipping the test when absent), runs them under a throw-away HOME, and writes the
// policy.json and registries.d file docs/signing.md tells a node to use. test/sigclients (images signed as
// the CLI signs them) and the App's end-to-end tests (images the App pushed) share it.
//
// A test helper: imported only by tests, and it imports nothing of ours but internal/opmrun.
package sigtools
