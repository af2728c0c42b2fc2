package e2e

import (
	"fmt"
	"os"
	"os/exec"
	goruntime "runtime"
	"syscall"
	"testing"
	"time"
)

// process is one minik8s command (a server, an agent) that a test runs
// as a process of its own, so that it can kill it as a crash would and
// start it again with the same arguments.
type process struct {
	t    *testing.T
	name string // in messages: "minik8s server"
	bin  string
	args []string
	logs *os.File
	cmd  *exec.Cmd
	// exited is closed once the process has been waited for.
	exited chan struct{}
}

func (p *process) start() {
	p.t.Helper()
	cmd := exec.Command(p.bin, p.args...)
	cmd.Stdout, cmd.Stderr = p.logs, p.logs
	// Killed with the test binary. The signal follows the thread that
	// started the process, so that thread stays reserved to it.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	started, exited := make(chan error, 1), make(chan struct{})
	go func() {
		goruntime.LockOSThread()
		defer goruntime.UnlockOSThread()
		if err := cmd.Start(); err != nil {
			started <- err
			return
		}
		started <- nil
		_ = cmd.Wait()
		close(exited)
	}()
	if err := <-started; err != nil {
		p.t.Fatalf("start %s: %v", p.name, err)
	}
	p.cmd, p.exited = cmd, exited
}

func (p *process) running() bool {
	if p.exited == nil {
		return false
	}
	select {
	case <-p.exited:
		return false
	default:
		return true
	}
}

// kill stops the process as a crash would.
func (p *process) kill() {
	p.t.Helper()
	if err := p.cmd.Process.Kill(); err != nil {
		p.t.Fatalf("kill %s: %v", p.name, err)
	}
	<-p.exited
}

// stop asks the process to stop, and kills it if it has not in 30s.
func (p *process) stop() {
	if !p.running() {
		return
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.exited:
	case <-time.After(30 * time.Second):
		p.t.Errorf("%s did not stop in 30s of SIGTERM", p.name)
		p.kill()
	}
}

// tail is the end of the process's log.
func (p *process) tail(lines int) string {
	out, _ := exec.Command("tail", "-n", fmt.Sprint(lines), p.logs.Name()).Output()
	return string(out)
}
