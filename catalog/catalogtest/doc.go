// Package catalogtest generates synthetic file-based catalogs in memory, of any
// size and with realistic YAML, for benchmarks and property tests of the
// catalog package. It is test support: nothing in production imports it.
package catalogtest
