package supervisor

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// A child that dies is started again; Signal reaches the running one;
// when ctx ends the child is stopped and Start returns.
func TestRestartSignalStop(t *testing.T) {
	dir := t.TempDir()
	logPath := filepath.Join(dir, "child.log")
	// Each run says "run", dies the first time, then says "ready" once
	// its trap is set, waits and reports the SIGHUP it gets.
	script := `echo run; if [ ! -e first ]; then touch first; exit 3; fi; trap 'echo hup' HUP; echo ready; while :; do sleep 0.05; done`
	p, err := New(Config{Name: "sh", Path: "/bin/sh", Args: []string{"-c", script}, Dir: dir, LogPath: logPath,
		RestartBackoff: 10 * time.Millisecond, StopTimeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- p.Start(ctx) }()
	logHas := func(want string, n int) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for {
			b, _ := os.ReadFile(logPath)
			if strings.Count(string(b), want) >= n {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("log %q has fewer than %d %q", b, n, want)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	logHas("run", 2) // restarted after exit 3
	// A SIGHUP before the trap is set would kill the shell instead.
	logHas("ready", 1)
	if err := p.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	logHas("hup", 1)
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("Start = %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Start did not return after ctx ended")
	}
	if err := p.Signal(syscall.SIGHUP); err == nil {
		t.Error("Signal after stop should fail: nothing runs")
	}
}

func TestNewNeedsProgram(t *testing.T) {
	if _, err := New(Config{}); err == nil {
		t.Error("New without a program should fail")
	}
}

// helperEnv makes the test binary a supervisor of familyScript
// (TestHelperSupervisor), with its pid file in the directory it names.
const helperEnv = "SUPERVISOR_TEST_HELPER_DIR"

// familyScript is a program that forks itself, as nginx does: a shell and
// two subshells in its process group, blocked opening a FIFO of the
// directory it runs in.
const familyScript = `[ -p fifo ] || mkfifo fifo; (read -r _ <fifo) & (read -r _ <fifo) & wait`

// TestHelperSupervisor is not a test: it is the supervisor process the
// tests below start and SIGKILL.
func TestHelperSupervisor(t *testing.T) {
	dir := os.Getenv(helperEnv)
	if dir == "" {
		t.Skip("the supervisor process of TestDiesWithSupervisor")
	}
	p, err := New(Config{Name: "family", Path: "/bin/sh", Args: []string{"-c", familyScript}, Dir: dir,
		PIDFile: filepath.Join(dir, "family.pid"), StopTimeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	_ = p.Start(context.Background()) // until SIGKILLed
}

// startHelper runs TestHelperSupervisor in a new process and returns it
// and the pid file's record once the family runs whole (the shell, two
// subshells and the watchdog).
func startHelper(t *testing.T, dir string) (*exec.Cmd, pidRecord) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperSupervisor$", "-test.count=1")
	cmd.Env = append(os.Environ(), helperEnv+"="+dir)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	var rec pidRecord
	waitFor(t, "the supervised family", func() bool {
		b, err := os.ReadFile(filepath.Join(dir, "family.pid"))
		return err == nil && json.Unmarshal(b, &rec) == nil && len(groupMembers(rec.PGID)) == 4
	})
	return cmd, rec
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("waited 10s for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// killGroupAtEnd SIGKILLs what is left of group pgid when the test ends,
// so that a failing test leaves nothing running.
func killGroupAtEnd(t *testing.T, pgid int) {
	t.Cleanup(func() {
		if len(groupMembers(pgid)) > 0 {
			_ = syscall.Kill(-pgid, syscall.SIGKILL)
		}
	})
}

// SIGKILLed, the supervisor takes its child's whole process group with
// it: the child (Pdeathsig) and what the child forked (the watchdog).
func TestDiesWithSupervisor(t *testing.T) {
	helper, rec := startHelper(t, t.TempDir())
	killGroupAtEnd(t, rec.PGID)
	if err := helper.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = helper.Wait()
	if err := waitGroupGone(rec.PGID, 5*time.Second); err != nil {
		t.Errorf("after the supervisor's SIGKILL: %v", err)
	}
}

// When the watchdog died with the supervisor, the child's children are
// left running (Pdeathsig reaches the child only); the next Start with the
// same pid file ends them before it starts the child again.
func TestStartEndsLeftovers(t *testing.T) {
	dir := t.TempDir()
	helper, rec := startHelper(t, dir)
	killGroupAtEnd(t, rec.PGID)
	for _, m := range groupMembers(rec.PGID) {
		if cmdline, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", m.pid)); strings.HasSuffix(string(cmdline), "\x00"+watchdogName+"\x00") {
			_ = syscall.Kill(m.pid, syscall.SIGKILL)
		}
	}
	_ = helper.Process.Kill()
	_ = helper.Wait()
	waitFor(t, "the leftovers: the subshells without their parent", func() bool {
		left := groupMembers(rec.PGID)
		return len(left) == 2 && left[0].pid != rec.PGID && left[1].pid != rec.PGID
	})

	p, err := New(Config{Name: "family", Path: "/bin/sh", Args: []string{"-c", familyScript}, Dir: dir,
		PIDFile: filepath.Join(dir, "family.pid"), StopTimeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- p.Start(ctx) }()
	select {
	case <-p.Started():
	case <-time.After(10 * time.Second):
		t.Fatal("not started")
	}
	if left := groupMembers(rec.PGID); len(left) > 0 {
		t.Errorf("started with the earlier run's %v still running", left)
	}
	b, err := os.ReadFile(filepath.Join(dir, "family.pid"))
	var now pidRecord
	if err != nil || json.Unmarshal(b, &now) != nil || now.PGID == rec.PGID {
		t.Errorf("pid file %q (%v) should record the new child", b, err)
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("Start = %v", err)
	}
	// Stopped, the child's group is gone and so is its record.
	if left := groupMembers(now.PGID); len(left) > 0 {
		t.Errorf("after stop, group %d holds %v", now.PGID, left)
	}
	if _, err := os.Stat(filepath.Join(dir, "family.pid")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("pid file after stop: %v", err)
	}
}

// A pid file names a group that is no longer ours when a process with
// its id started at another time, or when no member runs the recorded
// program: such a group is left alone.
func TestLeftoversOnlyOurs(t *testing.T) {
	sleep := exec.Command("sleep", "300")
	sleep.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := sleep.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = sleep.Process.Kill()
		_ = sleep.Wait()
	})
	pid := sleep.Process.Pid
	self, err := readProc(pid)
	if err != nil {
		t.Fatal(err)
	}
	exe := exePath(pid)
	for _, tc := range []struct {
		name string
		rec  pidRecord
		ours bool
	}{
		{"the recorded child", pidRecord{PGID: pid, Start: self.start, Boot: bootID(), Exe: exe}, true},
		{"the id reused", pidRecord{PGID: pid, Start: self.start - 1, Boot: bootID(), Exe: exe}, false},
		{"another program", pidRecord{PGID: pid, Start: self.start, Boot: bootID(), Exe: "/usr/sbin/nginx"}, false},
		{"another boot", pidRecord{PGID: pid, Start: self.start, Boot: "other", Exe: exe}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := len(leftovers(tc.rec)) > 0; got != tc.ours {
				t.Errorf("leftovers of %+v: %v, want %v", tc.rec, got, tc.ours)
			}
		})
	}
	// Start leaves it running and replaces the record.
	dir := t.TempDir()
	pidFile := filepath.Join(dir, "x.pid")
	b, _ := json.Marshal(pidRecord{PGID: pid, Start: self.start - 1, Boot: bootID(), Exe: exe})
	if err := os.WriteFile(pidFile, b, 0o644); err != nil {
		t.Fatal(err)
	}
	p, err := New(Config{Name: "true", Path: "/bin/true", PIDFile: pidFile})
	if err != nil {
		t.Fatal(err)
	}
	if err := p.endLeftovers(); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Kill(pid, 0); err != nil {
		t.Errorf("a process that is not ours was signalled: %v", err)
	}
	if _, err := os.Stat(pidFile); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a stale pid file stays: %v", err)
	}
}
