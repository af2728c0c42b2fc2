// Package supervisor keeps one child process of ours running: the real
// programs minik8s drives from the control-plane host (CoreDNS, the
// gateway's nginx). It restarts the child with back-off when it dies,
// stops it when the context ends, and can start it inside a network
// namespace.
//
// The child runs in a process group of its own, and the whole group
// (nginx's workers too, not just the process we started) ends with it and
// with us, even when we are SIGKILLed: the child gets Pdeathsig, a
// watchdog in its group kills the group when our end of a pipe closes,
// and a pid file lets the next Start find and end what an earlier run
// left behind (see group.go).
//
// It owns the child's process group, its log file and its pid file,
// nothing else: what the child reads (its configuration) is written by
// the caller.
package supervisor

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"runtime"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// Config describes the child.
type Config struct {
	// Name is for logs ("coredns", "nginx").
	Name string
	// Path and Args are the program and its arguments (Args without the
	// program name).
	Path string
	Args []string
	// Env is added to the child's environment (NAME=value), which is
	// otherwise ours.
	Env []string
	// Dir is the child's working directory.
	Dir string
	// LogPath receives the child's stdout and stderr (appended).
	LogPath string
	// PIDFile records the running child's process group (and what tells
	// it from a later process with the same pid), so that Start ends the
	// leftovers of an earlier run of ours that was SIGKILLed before it
	// starts the child again. Empty: no record, no such check.
	PIDFile string
	// NetNS is the path of a network namespace to start the child in;
	// empty: ours.
	NetNS string
	// RestartBackoff is the first wait before restarting a child that
	// died (default 1s, doubling to 30s, back to the start after a minute
	// of uptime).
	RestartBackoff time.Duration
	// StopTimeout is how long a SIGTERMed child (or leftover group) gets
	// before SIGKILL (default 5s).
	StopTimeout time.Duration
	Logger      *slog.Logger
}

// Process supervises one child.
type Process struct {
	cfg Config
	log *slog.Logger

	mu      sync.Mutex
	current *os.Process // nil while not running
	started chan struct{}
	once    sync.Once
}

// New checks cfg and fills its defaults.
func New(cfg Config) (*Process, error) {
	if cfg.Path == "" {
		return nil, errors.New("supervisor: a program is required")
	}
	if cfg.Name == "" {
		cfg.Name = cfg.Path
	}
	if cfg.RestartBackoff <= 0 {
		cfg.RestartBackoff = time.Second
	}
	if cfg.StopTimeout <= 0 {
		cfg.StopTimeout = 5 * time.Second
	}
	log := cfg.Logger
	if log == nil {
		log = slog.Default()
	}
	return &Process{cfg: cfg, log: log.With("component", cfg.Name), started: make(chan struct{})}, nil
}

// Start runs the child and restarts it whenever it exits, until ctx
// ends; then it stops the child (SIGTERM, SIGKILL to its group after
// StopTimeout) and returns nil. Before each start it ends what an earlier
// run left in the group that PIDFile records.
func (p *Process) Start(ctx context.Context) error {
	backoff := p.cfg.RestartBackoff
	for {
		began := time.Now()
		err := p.runOnce(ctx)
		if ctx.Err() != nil {
			return nil
		}
		if time.Since(began) > time.Minute {
			backoff = p.cfg.RestartBackoff
		}
		p.log.Warn("exited; restarting", "err", err, "in", backoff, "log", p.cfg.LogPath)
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, 30*time.Second)
	}
}

// Started is closed once the child has been started the first time.
func (p *Process) Started() <-chan struct{} { return p.started }

// Signal sends sig to the running child; it fails when none runs.
func (p *Process) Signal(sig os.Signal) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.current == nil {
		return fmt.Errorf("%s is not running", p.cfg.Name)
	}
	return p.current.Signal(sig)
}

// runOnce starts the child and waits until it exits, or stops it when
// ctx ends. Either way nothing of its process group outlives it: the rest
// of the group is killed while the exited child, unreaped, still holds
// the group's id, so no other process can have taken that id.
func (p *Process) runOnce(ctx context.Context) error {
	if err := p.endLeftovers(); err != nil {
		return err
	}
	var logFile *os.File
	if p.cfg.LogPath != "" {
		f, err := os.OpenFile(p.cfg.LogPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
		if err != nil {
			return fmt.Errorf("%s log: %w", p.cfg.Name, err)
		}
		defer f.Close()
		logFile = f
	}
	cmd := exec.Command(p.cfg.Path, p.cfg.Args...)
	cmd.Dir = p.cfg.Dir
	if len(p.cfg.Env) > 0 {
		cmd.Env = append(os.Environ(), p.cfg.Env...)
	}
	if logFile != nil {
		cmd.Stdout, cmd.Stderr = logFile, logFile
	}
	// Its own process group, so a terminal's ^C reaches us first and we
	// stop it in order, and so that its children can be found and ended
	// with it; SIGKILL when the thread that started it dies.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}

	// Pdeathsig fires when the thread that started the child exits, so
	// that thread is ours alone while the child runs: a goroutine locked
	// to it (and, for NetNS, moved into the namespace) that never
	// unlocks, so Go discards the thread only after the child is gone. It
	// waits for the child to exit without reaping it (WNOWAIT).
	exited := make(chan struct{})
	startErr := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		if p.cfg.NetNS != "" {
			if err := setNetNS(p.cfg.NetNS); err != nil {
				startErr <- err
				return
			}
		}
		if err := cmd.Start(); err != nil {
			startErr <- fmt.Errorf("start %s: %w", p.cfg.Name, err)
			return
		}
		startErr <- nil
		waitExited(cmd.Process.Pid)
		close(exited)
	}()
	if err := <-startErr; err != nil {
		return err
	}
	pgid := cmd.Process.Pid
	wd, err := startWatchdog(pgid)
	if err == nil {
		err = p.writePIDFile(pgid)
	}
	if err != nil {
		_ = unix.Kill(-pgid, unix.SIGKILL)
		<-exited
		return errors.Join(err, p.reap(cmd, wd, pgid))
	}
	p.mu.Lock()
	p.current = cmd.Process
	p.mu.Unlock()
	p.once.Do(func() { close(p.started) })
	p.log.Info("started", "pid", pgid, "log", p.cfg.LogPath)
	select {
	case <-exited:
	case <-ctx.Done():
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(p.cfg.StopTimeout):
			_ = unix.Kill(-pgid, unix.SIGKILL)
			<-exited
		}
	}
	p.mu.Lock()
	p.current = nil
	p.mu.Unlock()
	err = p.reap(cmd, wd, pgid)
	if ctx.Err() != nil {
		p.log.Info("stopped")
		return nil
	}
	return err
}

// reap ends what is left of the exited child's group (the watchdog, and
// children of the child's such as nginx's workers), waits until none of
// it lives, then reaps the child and the watchdog and removes the pid
// file. It returns how the child exited.
func (p *Process) reap(cmd *exec.Cmd, wd *watchdog, pgid int) error {
	_ = unix.Kill(-pgid, unix.SIGKILL)
	gone := waitGroupGone(pgid, 5*time.Second)
	err := cmd.Wait()
	if wd != nil {
		wd.reap()
	}
	if gone != nil {
		// The pid file stays: the next start tries again.
		return errors.Join(err, gone)
	}
	if p.cfg.PIDFile != "" {
		if rmErr := os.Remove(p.cfg.PIDFile); rmErr != nil && !errors.Is(rmErr, os.ErrNotExist) {
			p.log.Warn("remove pid file", "err", rmErr)
		}
	}
	return err
}

func setNetNS(path string) error {
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("open netns %s: %w", path, err)
	}
	defer unix.Close(fd)
	if err := unix.Setns(fd, unix.CLONE_NEWNET); err != nil {
		return fmt.Errorf("enter netns %s: %w", path, err)
	}
	return nil
}
