package supervisor

import (
	"context"
	"os"
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
	// Each run says "run", dies the first time, then waits and reports
	// the SIGHUP it gets.
	script := `echo run; if [ ! -e first ]; then touch first; exit 3; fi; trap 'echo hup' HUP; while :; do sleep 0.05; done`
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
	time.Sleep(100 * time.Millisecond)
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
