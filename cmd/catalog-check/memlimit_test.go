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

// bundle validate's collection pace and soft limit are set for the run and put back after it; $GOGC leaves the
// runtime's pace.
func TestWithBundleGC(t *testing.T) {
	before := debug.SetGCPercent(100)
	defer debug.SetGCPercent(before)
	limit := debug.SetMemoryLimit(-1)
	restore := withBundleGC(func(string) string { return "" })
	if got := debug.SetGCPercent(bundleGCPercent); got != bundleGCPercent {
		t.Errorf("during the run: GC percent %d, want %d", got, bundleGCPercent)
	}
	if got := debug.SetMemoryLimit(-1); got != defaultMemoryLimitMiB<<20 {
		t.Errorf("during the run: limit %d, want %d", got, defaultMemoryLimitMiB<<20)
	}
	restore()
	if got := debug.SetGCPercent(100); got != 100 {
		t.Errorf("after the run: GC percent %d, want 100 back", got)
	}
	if got := debug.SetMemoryLimit(-1); got != limit {
		t.Errorf("after the run: limit %d, want %d back", got, limit)
	}
	restore = withBundleGC(func(k string) string {
		if k == "GOGC" {
			return "50"
		}
		return ""
	})
	if got := debug.SetGCPercent(100); got != 100 {
		t.Errorf("GOGC=50: GC percent %d during the run, want the runtime's 100", got)
	}
	restore()
}
