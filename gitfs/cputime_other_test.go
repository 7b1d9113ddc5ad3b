//go:build !unix

package gitfs

import "time"

func processCPUTime() time.Duration { return 0 }
