package image

import (
	"io/fs"
	"syscall"
	"time"
)

// statOf reads the change time, device and inode of fi.
func statOf(fi fs.FileInfo) (fileStat, bool) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return fileStat{}, false
	}
	return fileStat{ctime: time.Unix(st.Ctim.Sec, st.Ctim.Nsec), dev: uint64(st.Dev), ino: st.Ino}, true
}
