package runtime

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/containerd/containerd"
	tasksapi "github.com/containerd/containerd/api/services/tasks/v1"
	"github.com/containerd/containerd/images"
	"github.com/containerd/containerd/namespaces"
	"github.com/containerd/containerd/snapshots"

	"github.com/minik8s/minik8s/pkg/image"
	"github.com/minik8s/minik8s/pkg/kubelet/runtime/runtimetest"
)

// testEnv is a runtime in a containerd namespace and cgroup root of its own,
// with the built-in images imported; its cleanup checks that nothing the
// test made is left behind.
type testEnv struct {
	t     *testing.T
	cfg   Config
	rt    *Containerd
	netns string // the test process's network namespace
}

func newTestEnv(t *testing.T) *testEnv {
	t.Helper()
	addr := runtimetest.Containerd(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	client, err := containerd.New(addr)
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	sweepStale(t, client, addr)

	cfg := testConfig(addr, runtimetest.Namespace(t, client))
	if err := image.EnsureBuiltinIn(ctx, client, cfg.Namespace); err != nil {
		t.Fatalf("import built-in images: %v", err)
	}
	rt, err := New(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	netns, _ := os.Readlink("/proc/self/ns/net")
	env := &testEnv{t: t, cfg: cfg, rt: rt, netns: netns}
	t.Cleanup(func() { env.teardown(true) })
	return env
}

func testConfig(addr, namespace string) Config {
	return Config{Address: addr, Namespace: namespace, CgroupRoot: "/" + namespace}
}

// sweepStale tears down the namespaces of test processes that died without
// cleaning up (a test binary killed on timeout).
func sweepStale(t *testing.T, client *containerd.Client, addr string) {
	for _, ns := range runtimetest.StaleNamespaces(context.Background(), client) {
		cfg := testConfig(addr, ns)
		rt, err := New(context.Background(), cfg)
		if err != nil {
			continue
		}
		t.Logf("removing %s, left by a test process that died", ns)
		(&testEnv{t: t, cfg: cfg, rt: rt}).teardown(false)
	}
}

// restart closes the runtime, waits, and opens a new one, as a kubelet
// that restarts does.
func (e *testEnv) restart(down time.Duration) {
	e.t.Helper()
	if err := e.rt.Close(); err != nil {
		e.t.Fatal(err)
	}
	time.Sleep(down)
	rt, err := New(context.Background(), e.cfg)
	if err != nil {
		e.t.Fatal(err)
	}
	e.rt = rt
}

// teardown removes whatever pods are left, then (with check) verifies that
// no container, task, active snapshot, netns or cgroup is, and deletes the
// namespace (which containerd refuses while anything is in it).
func (e *testEnv) teardown(check bool) {
	t := e.t
	errorf := t.Errorf
	if !check {
		errorf = t.Logf
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	leftovers, err := e.rt.ListContainers(ctx)
	if err != nil {
		errorf("cleanup: %v", err)
	}
	for _, c := range leftovers {
		if c.IsSandbox {
			if err := e.rt.RemoveSandbox(ctx, c.ID); err != nil {
				errorf("cleanup: %v", err)
			}
		}
	}
	for _, c := range leftovers {
		if !c.IsSandbox {
			if err := e.rt.RemoveContainer(ctx, c.ID); err != nil {
				errorf("cleanup: %v", err)
			}
		}
	}
	e.rt.Close()
	nsCtx := namespaces.WithNamespace(ctx, e.cfg.Namespace)

	client, err := containerd.New(e.cfg.Address)
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	if cs, err := client.Containers(nsCtx); err != nil || len(cs) != 0 {
		errorf("containers left: %d (%v)", len(cs), err)
	}
	if ts, err := client.TaskService().List(nsCtx, &tasksapi.ListTasksRequest{}); err != nil || len(ts.Tasks) != 0 {
		errorf("tasks left: %v (%v)", ts, err)
	}
	active := 0
	_ = client.SnapshotService(containerd.DefaultSnapshotter).Walk(nsCtx, func(_ context.Context, info snapshots.Info) error {
		if info.Kind == snapshots.KindActive {
			active++
		}
		return nil
	})
	if active != 0 {
		errorf("%d active snapshots left", active)
	}
	// Creating pods' namespaces must leave this process where it was.
	if netns, _ := os.Readlink("/proc/self/ns/net"); e.netns != "" && netns != e.netns {
		errorf("the test process moved from %s to %s", e.netns, netns)
	}
	for _, c := range leftovers {
		if _, err := os.Stat(c.NetNSPath); c.IsSandbox && err == nil {
			errorf("netns left: %s", c.NetNSPath)
		}
	}
	if cg, err := readCgroupMounts(); err == nil {
		for _, controller := range []string{"memory", "cpu", "pids"} {
			dir, err := cg.dir(controller, e.cfg.CgroupRoot)
			if err != nil {
				continue
			}
			pods, _ := os.ReadDir(dir)
			for _, p := range pods {
				if p.IsDir() && strings.HasPrefix(p.Name(), "pod") {
					errorf("cgroup left: %s/%s", dir, p.Name())
				}
			}
		}
		if err := cg.removeCgroup(e.cfg.CgroupRoot); err != nil {
			errorf("cgroup root: %v", err)
		}
	}

	imgs, _ := client.ImageService().List(nsCtx)
	for i, img := range imgs {
		opts := []images.DeleteOpt{}
		if i == len(imgs)-1 {
			opts = append(opts, images.SynchronousDelete())
		}
		_ = client.ImageService().Delete(nsCtx, img.Name, opts...)
	}
	// Unreferenced snapshots go with containerd's garbage collection, which
	// may lag the image deletion a little.
	for i := 0; ; i++ {
		err := client.NamespaceService().Delete(nsCtx, e.cfg.Namespace)
		if err == nil || errors.Is(err, context.Canceled) {
			break
		}
		if i == 50 {
			errorf("delete namespace %s: %v", e.cfg.Namespace, err)
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// waitFor polls cond until it holds or timeout passes.
func waitFor(t *testing.T, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", timeout, what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// status returns the listed status of a container.
func (e *testEnv) status(id string) ContainerStatus {
	e.t.Helper()
	all, err := e.rt.ListContainers(context.Background())
	if err != nil {
		e.t.Fatal(err)
	}
	for _, c := range all {
		if c.ID == id {
			return c
		}
	}
	e.t.Fatalf("container %s is not listed", id)
	return ContainerStatus{}
}

// parentPid reads a process's parent from /proc.
func parentPid(t *testing.T, pid int) int {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "PPid:"); ok {
			n, err := strconv.Atoi(strings.TrimSpace(v))
			if err != nil {
				t.Fatal(err)
			}
			return n
		}
	}
	t.Fatalf("no PPid in /proc/%d/status", pid)
	return 0
}
