//go:build unix

package checks_test

import (
	"syscall"
	"time"
)

// processCPU is the CPU time (user + system) the process has used, so benchmarks can report CPU per
// operation, which machine load does not inflate the way it inflates wall time.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
