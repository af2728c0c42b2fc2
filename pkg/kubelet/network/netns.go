package network

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// DefaultNetNSDir is where iproute2 keeps named network namespaces, so
// `ip netns exec NAME ...` works on the ones made here.
const DefaultNetNSDir = "/var/run/netns"

// CreateNamedNetNS makes a network namespace that outlives every process:
// it is bind-mounted at dir/name, as `ip netns add` does, with its
// loopback up. If a namespace is already mounted there, its path is
// returned unchanged, so a retry after a crash adopts it.
func CreateNamedNetNS(dir, name string) (string, error) {
	if name == "" || name != filepath.Base(name) || name == "." || name == ".." {
		return "", fmt.Errorf("netns name %q: must be one path element", name)
	}
	if err := ensureNetNSDir(dir); err != nil {
		return "", err
	}
	path := filepath.Join(dir, name)
	if isNetNS(path) {
		return path, nil
	}
	f, err := os.OpenFile(path, os.O_RDONLY|os.O_CREATE|os.O_EXCL, 0o444)
	if err != nil {
		return "", fmt.Errorf("create netns %s: %w", name, err)
	}
	_ = f.Close()

	// unshare(CLONE_NEWNET) moves only this thread; the thread is never
	// unlocked, so the Go runtime throws it away when the goroutine ends
	// instead of reusing it in the wrong namespace.
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		if err := unix.Unshare(unix.CLONE_NEWNET); err != nil {
			errc <- fmt.Errorf("unshare: %w", err)
			return
		}
		self := fmt.Sprintf("/proc/self/task/%d/ns/net", unix.Gettid())
		if err := unix.Mount(self, path, "none", unix.MS_BIND, ""); err != nil {
			errc <- fmt.Errorf("bind-mount %s: %w", path, err)
			return
		}
		errc <- setLoopbackUp()
	}()
	if err := <-errc; err != nil {
		_ = RemoveNamedNetNS(dir, name)
		return "", fmt.Errorf("create netns %s: %w", name, err)
	}
	return path, nil
}

// RemoveNamedNetNS unmounts and removes dir/name. The kernel destroys the
// namespace, with the links inside it, once no process is left in it. A
// namespace that is already gone is not an error.
func RemoveNamedNetNS(dir, name string) error {
	path := filepath.Join(dir, name)
	if err := unix.Unmount(path, unix.MNT_DETACH); err != nil && !errors.Is(err, unix.EINVAL) && !errors.Is(err, unix.ENOENT) {
		return fmt.Errorf("unmount netns %s: %w", path, err)
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("remove netns %s: %w", path, err)
	}
	return nil
}

// InNetNS runs fn on an OS thread that has joined the network namespace
// at path (the calling thread's own namespace when path is empty). Every
// socket fn opens and every process it starts (CNI plugins, iptables)
// belongs to that namespace; goroutines fn starts do not. The thread is
// discarded afterwards rather than switched back.
func InNetNS(path string, fn func() error) error {
	if path == "" {
		return fn()
	}
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("open netns %s: %w", path, err)
	}
	defer unix.Close(fd)
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		// No UnlockOSThread: see CreateNamedNetNS.
		if err := unix.Setns(fd, unix.CLONE_NEWNET); err != nil {
			errc <- fmt.Errorf("enter netns %s: %w", path, err)
			return
		}
		errc <- fn()
	}()
	return <-errc
}

// isNetNS reports whether path is a mounted network namespace.
func isNetNS(path string) bool {
	var st unix.Statfs_t
	return unix.Statfs(path, &st) == nil && st.Type == unix.NSFS_MAGIC
}

// ensureNetNSDir makes dir a shared mount point, as iproute2 does, so
// namespaces mounted under it later show up in every mount namespace
// that has a copy of it (containerd's, a container's).
func ensureNetNSDir(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("netns dir: %w", err)
	}
	madeMount := false
	for {
		err := unix.Mount("", dir, "none", unix.MS_SHARED|unix.MS_REC, "")
		if err == nil {
			return nil
		}
		if !errors.Is(err, unix.EINVAL) || madeMount {
			return fmt.Errorf("make %s shared: %w", dir, err)
		}
		// Not a mount point yet: bind it onto itself, then share it.
		if err := unix.Mount(dir, dir, "none", unix.MS_BIND|unix.MS_REC, ""); err != nil {
			return fmt.Errorf("bind-mount %s: %w", dir, err)
		}
		madeMount = true
	}
}

func setLoopbackUp() error {
	lo, err := netlink.LinkByName("lo")
	if err != nil {
		return fmt.Errorf("find lo: %w", err)
	}
	if err := netlink.LinkSetUp(lo); err != nil {
		return fmt.Errorf("set lo up: %w", err)
	}
	return nil
}
