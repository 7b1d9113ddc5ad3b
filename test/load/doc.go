// Package load measures the real `catalogbot serve` binary, two replicas on
// PostgreSQL, against the fake GitHub, a git server and a loopback registry:
// how many signed deliveries per second it acknowledges without losing one,
// how long an acknowledgement takes, and how much memory a replica needs
// while 50 pull requests on the community v4.16 catalog are checked at once.
// The test runs only with CATALOGBOT_LOAD=1; see docs/resilience.md, "Load".
package load
