package e2e

import (
	"bytes"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestStartupFailure: a part of `minik8s up` that is there but cannot
// start ends minik8s at once, with one line that names the part and the
// cause, and leaves nothing of the cluster running.
func TestStartupFailure(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("minik8s up must run as root")
	}
	bin := minik8sBinary(t)

	t.Run("the apiserver's port is taken", func(t *testing.T) {
		// On every address, as up's apiserver listens.
		squatter, err := net.Listen("tcp", ":0")
		if err != nil {
			t.Fatal(err)
		}
		defer squatter.Close()
		port := strconv.Itoa(squatter.Addr().(*net.TCPAddr).Port)
		up := runUp(t, bin, nil, "--port", port)
		up.failedWith(t, "minik8s: apiserver: listen tcp ", ":"+port+": bind: address already in use")
	})

	t.Run("nginx refuses the gateway's configuration", func(t *testing.T) {
		// An nginx that refuses every configuration, first on PATH.
		dir := t.TempDir()
		fake := "#!/bin/sh\necho 'nginx: [emerg] unknown directive \"minik8s\" in the configuration' >&2\nexit 1\n"
		if err := os.WriteFile(filepath.Join(dir, "nginx"), []byte(fake), 0o755); err != nil {
			t.Fatal(err)
		}
		env := []string{"PATH=" + dir + string(os.PathListSeparator) + os.Getenv("PATH")}
		up := runUp(t, bin, env, "--port", strconv.Itoa(freePort(t)))
		up.failedWith(t, "minik8s: gateway: nginx refused its configuration", `[emerg] unknown directive "minik8s"`)
	})
}

// upRun is one `minik8s up` that has exited.
type upRun struct {
	dataDir string
	output  string
	err     error
	// seen are the processes it started, and theirs, found while it ran.
	seen []psEntry
}

// runUp runs minik8s up on a data dir of its own with args (and env
// added to the test's) and waits, up to a minute, until it exits.
func runUp(t *testing.T, bin string, env []string, args ...string) *upRun {
	t.Helper()
	r := &upRun{dataDir: t.TempDir()}
	var out bytes.Buffer
	cmd := exec.Command(bin, append([]string{"up", "--data-dir", r.dataDir}, args...)...)
	cmd.Env = append(os.Environ(), env...)
	cmd.Stdout, cmd.Stderr = &out, &out
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	deadline := time.After(time.Minute)
	// Its descendants are found as the add-ons process's are.
	tree := &addonsRun{cmd: cmd}
	for {
		tree.descendants(t)
		select {
		case r.err = <-exited:
			r.output, r.seen = out.String(), tree.seen
			return r
		case <-deadline:
			_ = cmd.Process.Kill()
			<-exited
			t.Fatalf("minik8s up still running after a minute; output:\n%s", out.String())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// failedWith checks that up exited non-zero, that its last line starts
// with prefix and holds cause, and that none of its processes, nor any
// process of its data dir, still runs.
func (r *upRun) failedWith(t *testing.T, prefix, cause string) {
	t.Helper()
	if r.err == nil {
		t.Errorf("minik8s up exited 0; output:\n%s", r.output)
	}
	lines := strings.Split(strings.TrimSpace(r.output), "\n")
	last := lines[len(lines)-1]
	if !strings.HasPrefix(last, prefix) || !strings.Contains(last, cause) {
		t.Errorf("last line %q, want %q ... %q; output:\n%s", last, prefix, cause, r.output)
	}
	if err := alive(r.seen); err != nil {
		t.Errorf("left running: %v", err)
	}
	ps, err := psLive()
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range ps {
		if strings.Contains(p.args, r.dataDir) {
			t.Errorf("left running on its data dir: %d %s", p.pid, p.args)
		}
	}
}
