package main

import (
	"runtime/debug"
	"testing"
)

// check's soft heap limit is set for the run and put back after it; 0 and $GOMEMLIMIT leave the runtime's.
func TestWithMemoryLimit(t *testing.T) {
	before := debug.SetMemoryLimit(-1)
	noEnv := func(string) string { return "" }
	restore := withMemoryLimit(123, noEnv)
	if got := debug.SetMemoryLimit(-1); got != 123<<20 {
		t.Errorf("during the run: limit %d, want %d", got, 123<<20)
	}
	restore()
	if got := debug.SetMemoryLimit(-1); got != before {
		t.Errorf("after the run: limit %d, want %d back", got, before)
	}
	for _, tc := range []struct {
		mib int
		env string
	}{{0, ""}, {123, "1GiB"}} {
		restore := withMemoryLimit(tc.mib, func(k string) string {
			if k == "GOMEMLIMIT" {
				return tc.env
			}
			return ""
		})
		if got := debug.SetMemoryLimit(-1); got != before {
			t.Errorf("%d MiB, GOMEMLIMIT=%q: limit %d, want the runtime's %d", tc.mib, tc.env, got, before)
		}
		restore()
	}
}
