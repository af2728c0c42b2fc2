package glusterfs

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/minik8s/minik8s/pkg/pki"
)

// requireGluster skips unless the real server and client can run: root
// (FUSE mounts) and Debian's glusterfs-client, which make deps installs.
func requireGluster(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root: GlusterFS mounts are FUSE mounts")
	}
	if _, err := FindServer(); err != nil {
		t.Skipf("needs glusterfsd: %v", err)
	}
	if _, err := FindClient(); err != nil {
		t.Skipf("needs glusterfs: %v", err)
	}
	if _, err := os.Stat("/dev/fuse"); err != nil {
		t.Skipf("needs /dev/fuse: %v", err)
	}
}

// startServer runs a server on loopback and returns it with the CA.
func startServer(t *testing.T) (*ServerProcess, *pki.Bundle) {
	t.Helper()
	bundle, err := pki.Ensure(pki.Config{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	srv, err := NewServer(ServerConfig{Dir: t.TempDir(), Address: "127.0.0.1", Bundle: bundle})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	ready, done := make(chan struct{}), make(chan error, 1)
	go func() { done <- srv.Start(ctx, func() { close(ready) }) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("server: %v", err)
		}
	})
	select {
	case <-ready:
	case err := <-done:
		t.Fatalf("server exited: %v", err)
	case <-time.After(30 * time.Second):
		t.Fatal("server not listening after 30s")
	}
	return srv, bundle
}

// clientTLS writes a client certificate of user, signed by bundle.
func clientTLS(t *testing.T, bundle *pki.Bundle, user string) TLS {
	t.Helper()
	cert, key, err := bundle.IssueClientCert(user, nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	tls := TLS{CertFile: filepath.Join(dir, "c.crt"), KeyFile: filepath.Join(dir, "c.key"), CAFile: filepath.Join(dir, "ca.crt")}
	for f, d := range map[string][]byte{tls.CertFile: cert, tls.KeyFile: key, tls.CAFile: bundle.CAPEM} {
		if err := os.WriteFile(f, d, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return tls
}

// mount mounts path at a new mount point, unmounted when the test ends.
func mount(t *testing.T, server Server, path Path, tls TLS, readOnly bool) (string, error) {
	t.Helper()
	target := filepath.Join(t.TempDir(), "m")
	err := Mount(context.Background(), MountConfig{Server: server, Path: path, TLS: tls, ReadOnly: readOnly, Target: target, Timeout: 15 * time.Second})
	if err == nil {
		t.Cleanup(func() {
			if err := Unmount(target); err != nil {
				t.Errorf("unmount: %v", err)
			}
		})
	}
	return target, err
}

// TestSharedMounts: two mounts of one directory, as two nodes hold them,
// see each other's writes at once; only cluster certificates of nodes
// (and the provisioner) get in; a missing directory fails the mount with
// the client's reason; unmounting removes the mount point and leaves the
// data.
func TestSharedMounts(t *testing.T) {
	requireGluster(t)
	srv, bundle := startServer(t)
	server := Server{Host: "127.0.0.1", Port: srv.Port()}
	if err := os.Mkdir(filepath.Join(srv.Brick(), "pv1"), 0o777); err != nil {
		t.Fatal(err)
	}
	node1, node2 := clientTLS(t, bundle, "system:node:n1"), clientTLS(t, bundle, "system:node:n2")
	path := Path{Volume: VolumeName, Dir: "pv1"}
	a, err := mount(t, server, path, node1, false)
	if err != nil {
		t.Fatal(err)
	}
	b, err := mount(t, server, path, node2, false)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range []string{a, b} {
		if ok, err := IsMounted(m); !ok || err != nil {
			t.Fatalf("IsMounted(%s) = %v, %v", m, ok, err)
		}
		if got, err := Mounts(filepath.Dir(m)); err != nil || len(got) != 1 || got[0] != m {
			t.Fatalf("Mounts(%s) = %v, %v; want [%s]", filepath.Dir(m), got, err, m)
		}
	}
	if err := os.WriteFile(filepath.Join(a, "from-a"), []byte("hello from a\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if got, err := os.ReadFile(filepath.Join(b, "from-a")); err != nil || string(got) != "hello from a\n" {
		t.Fatalf("b reads a's file: %q, %v", got, err)
	}
	// Appends from both ends land in one file.
	for _, m := range []string{b, a, b} {
		f, err := os.OpenFile(filepath.Join(m, "log"), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = f.WriteString(filepath.Base(filepath.Dir(m)) + "\n")
		_ = f.Close()
	}
	if got, _ := os.ReadFile(filepath.Join(a, "log")); strings.Count(string(got), "\n") != 3 {
		t.Errorf("the shared log has %q, want 3 lines", got)
	}
	// The subdirectory is all a mount sees.
	if _, err := os.Stat(filepath.Join(srv.Brick(), "pv1", "from-a")); err != nil {
		t.Errorf("the file is not in the brick's directory: %v", err)
	}

	ro, err := mount(t, server, path, node1, true)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(ro, "x"), nil, 0o644); err == nil {
		t.Error("a read-only mount took a write")
	}

	// Certificates of users, or of another CA, are refused.
	if _, err := mount(t, server, path, clientTLS(t, bundle, "alice"), false); err == nil {
		t.Error("a certificate of user alice mounted the volume")
	} else {
		t.Logf("user certificate: %v", err)
	}
	other, err := pki.Ensure(pki.Config{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	foreign := clientTLS(t, other, "system:node:n1")
	foreign.CAFile = node1.CAFile
	if _, err := mount(t, server, path, foreign, false); err == nil {
		t.Error("a node certificate of another CA mounted the volume")
	} else {
		t.Logf("foreign certificate: %v", err)
	}

	target, err := mount(t, server, Path{Volume: VolumeName, Dir: "missing"}, node1, false)
	if err == nil {
		t.Fatal("a missing directory mounted")
	}
	if ok, _ := IsMounted(target); ok {
		t.Error("a failed mount was left mounted")
	}
	t.Logf("missing directory: %v", err)

	if err := Unmount(a); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(a); !os.IsNotExist(err) {
		t.Errorf("mount point left after unmount: %v", err)
	}
	if _, err := os.ReadFile(filepath.Join(b, "from-a")); err != nil {
		t.Errorf("the other mount lost the data: %v", err)
	}
}
