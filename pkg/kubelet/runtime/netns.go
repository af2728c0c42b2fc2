package runtime

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	goruntime "runtime"

	"golang.org/x/sys/unix"
)

// createNetNS creates a network namespace bound to path (as `ip netns add`
// does, so `ip netns exec` works on it) with its loopback up.
func createNetNS(path string) (retErr error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("netns dir: %w", err)
	}
	f, err := os.OpenFile(path, os.O_RDONLY|os.O_CREATE|os.O_EXCL, 0o444)
	if err != nil {
		return fmt.Errorf("netns file: %w", err)
	}
	f.Close()
	defer func() {
		if retErr != nil {
			_ = removeNetNS(path)
		}
	}()
	errc := make(chan error, 1)
	go func() {
		// This thread enters the new namespace to bind it and set lo up,
		// then goes back. Should going back fail, the thread stays locked
		// and ends with the goroutine rather than serve other goroutines
		// from the pod's namespace.
		goruntime.LockOSThread()
		self := fmt.Sprintf("/proc/%d/task/%d/ns/net", os.Getpid(), unix.Gettid())
		orig, err := os.Open(self)
		if err != nil {
			goruntime.UnlockOSThread()
			errc <- fmt.Errorf("current netns: %w", err)
			return
		}
		defer orig.Close()
		if err := unix.Unshare(unix.CLONE_NEWNET); err != nil {
			goruntime.UnlockOSThread()
			errc <- fmt.Errorf("unshare netns: %w", err)
			return
		}
		err = unix.Mount(self, path, "none", unix.MS_BIND, "")
		if err != nil {
			err = fmt.Errorf("bind netns to %s: %w", path, err)
		} else {
			err = loopbackUp()
		}
		if serr := unix.Setns(int(orig.Fd()), unix.CLONE_NEWNET); serr != nil {
			errc <- errors.Join(err, fmt.Errorf("return to the original netns: %w", serr))
			return
		}
		goruntime.UnlockOSThread()
		errc <- err
	}()
	return <-errc
}

// loopbackUp sets lo up in the calling thread's network namespace.
func loopbackUp() error {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("loopback up: %w", err)
	}
	defer unix.Close(fd)
	ifr, err := unix.NewIfreq("lo")
	if err != nil {
		return err
	}
	if err := unix.IoctlIfreq(fd, unix.SIOCGIFFLAGS, ifr); err != nil {
		return fmt.Errorf("loopback flags: %w", err)
	}
	ifr.SetUint16(ifr.Uint16() | unix.IFF_UP)
	if err := unix.IoctlIfreq(fd, unix.SIOCSIFFLAGS, ifr); err != nil {
		return fmt.Errorf("loopback up: %w", err)
	}
	return nil
}

// removeNetNS unmounts and removes a network namespace file; the namespace
// ends when no process is left in it. A missing file is not an error.
func removeNetNS(path string) error {
	if err := unix.Unmount(path, unix.MNT_DETACH); err != nil && !errors.Is(err, unix.EINVAL) && !errors.Is(err, unix.ENOENT) {
		return fmt.Errorf("unmount netns %s: %w", path, err)
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("remove netns %s: %w", path, err)
	}
	return nil
}
