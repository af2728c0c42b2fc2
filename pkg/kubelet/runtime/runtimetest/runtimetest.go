// Package runtimetest gives tests a containerd to run real containers on.
//
// Tests that need one call Containerd(t): it skips the test, saying why, when
// the process is not root or containerd and runc are not installed, and
// otherwise makes sure a daemon answers (starting one, left running for the
// next test package, when none does). CI runs as root with the packages from
// hack/install-deps.sh, so there nothing skips.
package runtimetest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/containerd/containerd"
	"github.com/containerd/containerd/namespaces"

	"github.com/minik8s/minik8s/pkg/kubelet/runtime/daemon"
)

// AddressEnv overrides the containerd socket the tests use.
const AddressEnv = "MINIK8S_CONTAINERD_ADDRESS"

// Containerd returns the address of a running containerd, or skips t.
func Containerd(t testing.TB) string {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root to run containers (containerd, runc, cgroups, network namespaces)")
	}
	addr := os.Getenv(AddressEnv)
	if addr == "" {
		addr = daemon.DefaultAddress
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if !daemon.Running(ctx, addr) {
		for _, bin := range []string{"containerd", "containerd-shim-runc-v2", "runc"} {
			if _, err := exec.LookPath(bin); err != nil {
				if _, err := os.Stat("/usr/sbin/" + bin); err != nil {
					t.Skipf("needs %s (install it with hack/install-deps.sh as root)", bin)
				}
			}
		}
	}
	d, err := daemon.Ensure(ctx, daemon.Config{Address: addr})
	if err != nil {
		t.Fatalf("containerd: %v", err)
	}
	if d.Started {
		t.Logf("started containerd (pid %d, log %s); it keeps running", d.Pid, d.LogPath)
	}
	return addr
}

// Test namespaces are named NamespacePrefix + a random suffix and labelled
// with the pid of the test process that owns them, so a later run can tell
// the ones a killed test binary left behind (StaleNamespaces).
const (
	NamespacePrefix = "minik8s-test-"
	PIDLabel        = "minik8s.io/test-pid"
)

// Namespace creates a containerd namespace for one test. The caller
// empties and deletes it when the test ends.
func Namespace(t testing.TB, client *containerd.Client) string {
	t.Helper()
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	ns := NamespacePrefix + hex.EncodeToString(b)
	// containerd 1.6 publishes the creation in the namespace itself.
	ctx := namespaces.WithNamespace(context.Background(), ns)
	if err := client.NamespaceService().Create(ctx, ns, map[string]string{PIDLabel: strconv.Itoa(os.Getpid())}); err != nil {
		t.Fatalf("create namespace %s: %v", ns, err)
	}
	return ns
}

// StaleNamespaces returns the test namespaces whose test process is gone.
func StaleNamespaces(ctx context.Context, client *containerd.Client) []string {
	nss, err := client.NamespaceService().List(ctx)
	if err != nil {
		return nil
	}
	var stale []string
	for _, ns := range nss {
		if !strings.HasPrefix(ns, NamespacePrefix) {
			continue
		}
		labels, err := client.NamespaceService().Labels(ctx, ns)
		if err != nil {
			continue
		}
		if pid, _ := strconv.Atoi(labels[PIDLabel]); pid > 0 && syscall.Kill(pid, 0) == nil {
			continue
		}
		stale = append(stale, ns)
	}
	return stale
}
