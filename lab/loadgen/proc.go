package loadgen

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
	"time"
)

// clockTick is USER_HZ, the unit of utime and stime in /proc/<pid>/stat:
// 100 on every Linux architecture Go supports.
const clockTick = 10 * time.Millisecond

// ProcCPU returns the CPU time (user + system) that process pid has used,
// from /proc/<pid>/stat. Its resolution is one clock tick (10 ms).
func ProcCPU(pid int) (time.Duration, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, err
	}
	return parseStatCPU(b)
}

// parseStatCPU reads utime and stime (fields 14 and 15) of a
// /proc/<pid>/stat line. The command name (field 2) is in parentheses and
// may hold spaces and parentheses, so fields are counted from the last ')'.
func parseStatCPU(b []byte) (time.Duration, error) {
	end := bytes.LastIndexByte(b, ')')
	if end < 0 {
		return 0, fmt.Errorf("loadgen: stat: no command name")
	}
	f := bytes.Fields(b[end+1:])
	// f[0] is field 3 (state); utime is field 14, stime field 15.
	if len(f) < 13 {
		return 0, fmt.Errorf("loadgen: stat: %d fields after the command name", len(f))
	}
	var ticks uint64
	for _, s := range f[11:13] {
		v, err := strconv.ParseUint(string(s), 10, 64)
		if err != nil {
			return 0, fmt.Errorf("loadgen: stat: %w", err)
		}
		ticks += v
	}
	return time.Duration(ticks) * clockTick, nil
}

// ProcRSS returns the resident set size of process pid in bytes, from the
// VmRSS line of /proc/<pid>/status.
func ProcRSS(pid int) (int64, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return 0, err
	}
	return parseStatusRSS(b)
}

func parseStatusRSS(b []byte) (int64, error) {
	for line := range bytes.Lines(b) {
		v, ok := bytes.CutPrefix(line, []byte("VmRSS:"))
		if !ok {
			continue
		}
		f := bytes.Fields(v)
		if len(f) != 2 || string(f[1]) != "kB" {
			return 0, fmt.Errorf("loadgen: status: VmRSS line %q", bytes.TrimSpace(line))
		}
		kb, err := strconv.ParseInt(string(f[0]), 10, 64)
		if err != nil {
			return 0, fmt.Errorf("loadgen: status: %w", err)
		}
		return kb * 1024, nil
	}
	return 0, fmt.Errorf("loadgen: status: no VmRSS line")
}
