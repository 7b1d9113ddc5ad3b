package main

import (
	"fmt"
	"os"
	"testing"
)

// TestMain keeps the build's layer cache of every test of this package in a directory of its own, not in the
// user's ~/.cache: a test that wants a cache passes --cache-dir.
func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "catalogbot-test-cache-*")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	os.Setenv("CATALOGBOT_CACHE_DIR", dir)
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}
