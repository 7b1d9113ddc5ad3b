//go:build unix

package load

import (
	"syscall"
	"time"
)

// processCPUTime is the user+system time the process has used: on a shared
// machine it says more about the parser's cost than wall time does.
func processCPUTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
