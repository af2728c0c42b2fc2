package registry

import (
	"context"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// freeAddr is a free 127.0.0.1 TCP address.
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// running are the pids of processes running binary with an argument
// that contains arg.
func running(binary, arg string) []int {
	ents, _ := os.ReadDir("/proc")
	var pids []int
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		exe, _ := os.Readlink(filepath.Join("/proc", e.Name(), "exe"))
		cmdline, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if strings.TrimSuffix(exe, " (deleted)") == binary && strings.Contains(string(cmdline), arg) {
			pids = append(pids, pid)
		}
	}
	return pids
}

func TestRegistryServesAndStops(t *testing.T) {
	bin, err := FindBinary()
	if err != nil {
		t.Skipf("no registry binary: %v", err)
	}
	bin, _ = filepath.EvalSymlinks(bin)
	dir := t.TempDir()
	addr := freeAddr(t)
	ready := make(chan struct{})
	r, err := New(Config{Dir: dir, Address: addr, Binary: bin, Ready: func() { close(ready) }})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- r.Start(ctx) }()
	defer func() {
		cancel()
		<-done
	}()

	select {
	case <-ready:
	case err := <-done:
		t.Fatalf("Start returned before ready: %v", err)
	case <-time.After(30 * time.Second):
		log, _ := os.ReadFile(r.LogPath())
		t.Fatalf("registry not ready after 30s; log:\n%s", log)
	}
	resp, err := http.Get("http://" + addr + "/v2/")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /v2/: %s", resp.Status)
	}
	if _, err := os.Stat(filepath.Join(dir, "config.yml")); err != nil {
		t.Fatal(err)
	}
	if pids := running(bin, dir); len(pids) != 1 {
		t.Fatalf("registry processes: %v, want one", pids)
	}

	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Start: %v", err)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("Start did not return after cancel")
	}
	done <- nil // for the deferred receive
	if pids := running(bin, dir); len(pids) != 0 {
		t.Fatalf("registry processes left after stop: %v", pids)
	}
	if _, err := http.Get("http://" + addr + "/v2/"); err == nil {
		t.Fatal("registry still answers after stop")
	}
}

func TestNewChecksConfig(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  Config
	}{
		{"no dir", Config{Binary: "/bin/true"}},
		{"bad address", Config{Dir: "/tmp/x", Address: "5000", Binary: "/bin/true"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := New(tc.cfg); err == nil {
				t.Fatal("New accepted it")
			}
		})
	}
}

func TestProbeHost(t *testing.T) {
	for _, tc := range []struct{ host, want string }{
		{"", "127.0.0.1"}, {"0.0.0.0", "127.0.0.1"}, {"::", "::1"}, {"10.0.0.2", "10.0.0.2"}, {"127.0.0.1", "127.0.0.1"},
	} {
		if got := probeHost(tc.host); got != tc.want {
			t.Errorf("probeHost(%q) = %q, want %q", tc.host, got, tc.want)
		}
	}
}

func TestRemoveRepository(t *testing.T) {
	dir := t.TempDir()
	repo := filepath.Join(dir, "data", "docker", "registry", "v2", "repositories", "functions", "default", "greet")
	if err := os.MkdirAll(filepath.Join(repo, "_manifests"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := RemoveRepository(dir, "functions/default/greet"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(repo); !os.IsNotExist(err) {
		t.Errorf("the repository is still there: %v", err)
	}
	if _, err := os.Stat(filepath.Dir(repo)); err != nil {
		t.Errorf("its namespace went too: %v", err)
	}
	if err := RemoveRepository(dir, "functions/default/greet"); err != nil {
		t.Errorf("a missing repository: %v", err)
	}
	for _, bad := range []string{"../x", "/abs", "a/../../b", ""} {
		if err := RemoveRepository(dir, bad); err == nil {
			t.Errorf("RemoveRepository(%q) was accepted", bad)
		}
	}
}
