// Package resilience holds tests that run the real `catalogbot serve` binary
// against a fake GitHub, a git server and a registry, and break things on
// purpose: SIGKILL mid-stream, GitHub outages and rate limits, a lost database.
package resilience
