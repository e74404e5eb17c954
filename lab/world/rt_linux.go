//go:build linux

package world

import (
	"runtime"
	"syscall"
	"time"
	"unsafe"
)

// RealTimePriority is the SCHED_FIFO priority the releaser's thread asks
// for when Config.RealTime is set: low among real-time priorities (1-99),
// above every ordinary thread.
const RealTimePriority = 10

// lockRealTime locks the calling goroutine to its thread and makes the
// thread SCHED_FIFO, so that on a loaded machine it runs as soon as its
// sleep ends instead of waiting for a time slice. It needs CAP_SYS_NICE
// (root); without it the thread stays ordinary and ok is false. The caller
// must call runtime.UnlockOSThread when done; the thread then exits with
// the goroutine (it is not returned to the pool with its priority).
func lockRealTime() (ok bool) {
	runtime.LockOSThread()
	param := struct{ priority int32 }{RealTimePriority}
	const schedFIFO = 1
	_, _, errno := syscall.RawSyscall(syscall.SYS_SCHED_SETSCHEDULER, 0, schedFIFO, uintptr(unsafe.Pointer(&param)))
	return errno == 0
}

// sleep sleeps in the kernel (nanosleep(2), hrtimer precision) rather than
// on a Go timer.
func sleep(d time.Duration) {
	ts := syscall.NsecToTimespec(int64(d))
	_ = syscall.Nanosleep(&ts, nil)
}
