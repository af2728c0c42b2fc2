package supervisor

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// The child's process group ends with us in three ways:
//
//   - Pdeathsig: the kernel SIGKILLs the child when the thread that
//     started it exits, as it does when we die. Only the child: what it
//     forks (nginx's workers) does not inherit Pdeathsig, and nginx's
//     workers keep serving when their master dies.
//   - The watchdog: a shell in the child's process group, reading a pipe
//     whose only writer is us. When we die the kernel closes our end, its
//     read returns, and it kills its own group, itself included. It sends
//     the signal from inside the group, so the group's id is still taken
//     and cannot name another group.
//   - The pid file: a record of the group that the next Start reads; when
//     the group still holds a process of the program, started no earlier
//     than the one we recorded, the group is ended (SIGTERM, then SIGKILL)
//     before the child starts again. It covers what the other two miss
//     (the watchdog SIGKILLed with us).

// watchdogScript waits for EOF on stdin, then kills its process group.
// $0 names it in ps.
const watchdogScript = `read -r _; kill -KILL 0`

// watchdogName is the watchdog's argv[0], as ps shows it.
const watchdogName = "minik8s-supervisor-watchdog"

// watchdog is the shell that kills the child's group when we die.
type watchdog struct {
	cmd *exec.Cmd
	w   *os.File // our end of its stdin: closed when we die
}

// startWatchdog starts the watchdog in process group pgid.
func startWatchdog(pgid int) (*watchdog, error) {
	r, w, err := os.Pipe() // close-on-exec: no other child holds w
	if err != nil {
		return nil, fmt.Errorf("watchdog pipe: %w", err)
	}
	defer r.Close()
	cmd := exec.Command("/bin/sh", "-c", watchdogScript, watchdogName)
	cmd.Stdin = r
	cmd.SysProcAttr = &unix.SysProcAttr{Setpgid: true, Pgid: pgid}
	if err := cmd.Start(); err != nil {
		_ = w.Close()
		return nil, fmt.Errorf("start watchdog: %w", err)
	}
	return &watchdog{cmd: cmd, w: w}, nil
}

// reap waits for the watchdog, which its group's SIGKILL ended, and
// closes our end of its pipe.
func (wd *watchdog) reap() {
	_ = wd.cmd.Wait()
	_ = wd.w.Close()
}

// waitExited returns once the process pid, a child of ours, has exited,
// without reaping it: until it is reaped its pid, and so its process
// group's id, stays taken.
func waitExited(pid int) {
	for {
		var info unix.Siginfo
		err := unix.Waitid(unix.P_PID, pid, &info, unix.WEXITED|unix.WNOWAIT, nil)
		if err != unix.EINTR {
			return
		}
	}
}

// proc is what /proc/<pid>/stat says of a process.
type proc struct {
	pid, pgid int
	state     byte
	start     uint64 // clock ticks after boot
}

// readProc reads /proc/<pid>/stat.
func readProc(pid int) (proc, error) {
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return proc{}, err
	}
	// pid (comm) state ppid pgrp ... : comm may hold spaces and parens.
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return proc{}, fmt.Errorf("/proc/%d/stat: %q", pid, s)
	}
	f := strings.Fields(s[i+1:]) // f[0] is field 3, state
	if len(f) < 20 || len(f[0]) != 1 {
		return proc{}, fmt.Errorf("/proc/%d/stat: %q", pid, s)
	}
	pgid, err1 := strconv.Atoi(f[2])
	start, err2 := strconv.ParseUint(f[19], 10, 64)
	if err := errors.Join(err1, err2); err != nil {
		return proc{}, fmt.Errorf("/proc/%d/stat: %w", pid, err)
	}
	return proc{pid: pid, pgid: pgid, state: f[0][0], start: start}, nil
}

// groupMembers are the live (not zombie) processes of process group pgid.
func groupMembers(pgid int) []proc {
	ents, _ := os.ReadDir("/proc")
	var out []proc
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		p, err := readProc(pid)
		if err != nil || p.pgid != pgid || p.state == 'Z' || p.state == 'X' {
			continue
		}
		out = append(out, p)
	}
	return out
}

// waitGroupGone waits up to timeout for process group pgid to hold no
// live process.
func waitGroupGone(pgid int, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		left := groupMembers(pgid)
		if len(left) == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			pids := make([]string, len(left))
			for i, p := range left {
				pids[i] = strconv.Itoa(p.pid)
			}
			return fmt.Errorf("process group %d still holds %s", pgid, strings.Join(pids, ", "))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// exePath is the program process pid runs (the path it was started
// from, also after the file was replaced).
func exePath(pid int) string {
	exe, err := os.Readlink(filepath.Join("/proc", strconv.Itoa(pid), "exe"))
	if err != nil {
		return ""
	}
	return strings.TrimSuffix(exe, " (deleted)")
}

// bootID tells this boot from others: after a reboot a pid file's
// numbers name nothing of ours.
func bootID() string {
	b, _ := os.ReadFile("/proc/sys/kernel/random/boot_id")
	return strings.TrimSpace(string(b))
}

// pidRecord is the pid file's content.
type pidRecord struct {
	// PGID is the child's pid, which is its process group's id.
	PGID int `json:"pgid"`
	// Start is the child's start time (/proc/<pid>/stat, clock ticks
	// after boot): a process with the same pid but another start time is
	// not the child; a member of its group started no earlier.
	Start uint64 `json:"start"`
	Boot  string `json:"boot"`
	// Exe is the program the child runs (/proc/<pid>/exe).
	Exe string `json:"exe"`
}

// writePIDFile records the running child's group.
func (p *Process) writePIDFile(pgid int) error {
	if p.cfg.PIDFile == "" {
		return nil
	}
	self, err := readProc(pgid)
	if err != nil {
		return fmt.Errorf("%s pid file: %w", p.cfg.Name, err)
	}
	b, err := json.Marshal(pidRecord{PGID: pgid, Start: self.start, Boot: bootID(), Exe: exePath(pgid)})
	if err != nil {
		return err
	}
	tmp := p.cfg.PIDFile + ".tmp"
	if err := os.WriteFile(tmp, append(b, '\n'), 0o644); err != nil {
		return fmt.Errorf("%s pid file: %w", p.cfg.Name, err)
	}
	return os.Rename(tmp, p.cfg.PIDFile)
}

// endLeftovers ends the process group that the pid file records, when it
// still runs: an earlier run of ours died without ending it.
func (p *Process) endLeftovers() error {
	if p.cfg.PIDFile == "" {
		return nil
	}
	b, err := os.ReadFile(p.cfg.PIDFile)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("%s pid file: %w", p.cfg.Name, err)
	}
	var rec pidRecord
	if err := json.Unmarshal(b, &rec); err != nil || rec.PGID <= 1 {
		p.log.Warn("ignoring an unreadable pid file", "path", p.cfg.PIDFile, "err", err)
		return os.Remove(p.cfg.PIDFile)
	}
	if members := leftovers(rec); len(members) > 0 {
		pids := make([]int, len(members))
		for i, m := range members {
			pids[i] = m.pid
		}
		p.log.Warn("ending what an earlier run left running", "pgid", rec.PGID, "pids", pids, "exe", rec.Exe)
		_ = unix.Kill(-rec.PGID, unix.SIGTERM)
		if waitGroupGone(rec.PGID, p.cfg.StopTimeout) != nil {
			_ = unix.Kill(-rec.PGID, unix.SIGKILL)
			if err := waitGroupGone(rec.PGID, 5*time.Second); err != nil {
				return fmt.Errorf("%s: end leftovers of an earlier run: %w", p.cfg.Name, err)
			}
		}
	}
	return os.Remove(p.cfg.PIDFile)
}

// leftovers are the live members of rec's group when that group is still
// the one rec records: none when this is another boot, when a process
// with the group's id started at another time (the id was reused), or
// when no member started no earlier than the recorded child runs its
// program.
func leftovers(rec pidRecord) []proc {
	if rec.Boot != bootID() {
		return nil
	}
	members := groupMembers(rec.PGID)
	ours := false
	for _, m := range members {
		if m.pid == rec.PGID && m.start != rec.Start {
			return nil
		}
		ours = ours || (m.start >= rec.Start && rec.Exe != "" && exePath(m.pid) == rec.Exe)
	}
	if !ours {
		return nil
	}
	return members
}
