//go:build unix

package gitfs

import (
	"syscall"
	"time"
)

// processCPUTime is the user+system time the process has used. On a shared,
// busy machine it says more about our cost than wall time.
func processCPUTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
