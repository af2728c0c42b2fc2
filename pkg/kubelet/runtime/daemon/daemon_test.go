package daemon

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// TestEnsureStartsAndStops starts a private containerd (its own socket,
// root and state in a temp dir), finds it running on a second Ensure, and
// stops it.
func TestEnsureStartsAndStops(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to run containerd")
	}
	if _, err := exec.LookPath("containerd"); err != nil {
		t.Skip("needs containerd (hack/install-deps.sh installs it)")
	}
	dir, err := os.MkdirTemp("/tmp", "containerd-test-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	cfg := Config{
		Address: filepath.Join(dir, "c.sock"),
		Root:    filepath.Join(dir, "root"),
		State:   filepath.Join(dir, "state"),
		Dir:     filepath.Join(dir, "etc"),
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if Running(ctx, cfg.Address) {
		t.Fatal("a daemon answers on a fresh socket")
	}
	d, err := Ensure(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = d.Stop(context.Background()) })
	if !d.Started || d.Pid == 0 || !Running(ctx, cfg.Address) {
		t.Fatalf("daemon %+v not started", d)
	}
	again, err := Ensure(ctx, cfg)
	if err != nil || again.Started {
		t.Fatalf("second Ensure: %+v %v, want the running daemon", again, err)
	}
	if err := again.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	if !Running(ctx, cfg.Address) {
		t.Fatal("Stop of a daemon Ensure did not start stopped it")
	}
	if err := d.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	if Running(ctx, cfg.Address) {
		t.Fatal("daemon still answers after Stop")
	}
}
