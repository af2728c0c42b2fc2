package glusterfs

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/moby/sys/mountinfo"
	"golang.org/x/sys/unix"
)

// FSType is how the kernel lists a GlusterFS FUSE mount.
const FSType = "fuse.glusterfs"

// FindClient is the FUSE client, glusterfs (Debian's glusterfs-client).
func FindClient() (string, error) { return findProgram("glusterfs") }

func findProgram(name string) (string, error) {
	if p, err := exec.LookPath(name); err == nil {
		return p, nil
	}
	// sbin is not on every PATH (a user's sudo, go test).
	p := filepath.Join("/usr/sbin", name)
	if _, err := os.Stat(p); err != nil {
		return "", fmt.Errorf("%s not found (apt-get install glusterfs-client; make deps installs it)", name)
	}
	return p, nil
}

// MountConfig is one mount of a volume's directory.
type MountConfig struct {
	Server Server
	Path   Path
	TLS    TLS
	// ReadOnly mounts it read-only.
	ReadOnly bool
	// Target is the mount point, made when missing. Its volume file and
	// log are written beside it (Target+".vol", Target+".log").
	Target string
	// Timeout bounds the mount and the first look at it (default 20s).
	Timeout time.Duration
}

// Mount mounts cfg.Path at cfg.Target with the FUSE client, which runs
// on as a daemon of its own: the mount outlives the caller, as a node's
// mounts outlive a kubelet restart. It returns once the directory answers;
// a mount that does not (the server unreachable, the certificate refused,
// the directory missing) is undone, and the error carries the client's
// own reason from its log.
func Mount(ctx context.Context, cfg MountConfig) error {
	client, err := FindClient()
	if err != nil {
		return err
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = 20 * time.Second
	}
	ctx, cancel := context.WithTimeout(ctx, cfg.Timeout)
	defer cancel()
	if err := os.MkdirAll(cfg.Target, 0o755); err != nil {
		return err
	}
	volfile, logFile := cfg.Target+".vol", cfg.Target+".log"
	if err := os.WriteFile(volfile, []byte(clientVolfile(cfg.Server, cfg.Path.Volume, cfg.TLS)), 0o600); err != nil {
		return err
	}
	args := []string{"--volfile=" + volfile, "--log-file=" + logFile, "--process-name=fuse"}
	if cfg.Path.Dir != "" {
		args = append(args, "--subdir-mount=/"+cfg.Path.Dir)
	}
	if cfg.ReadOnly {
		args = append(args, "--read-only")
	}
	args = append(args, cfg.Target)
	cmd := exec.CommandContext(ctx, client, args...)
	// A file, not a pipe: the daemon the client leaves behind must not
	// hold our end open.
	out, err := os.CreateTemp(filepath.Dir(cfg.Target), ".mount-*.out")
	if err != nil {
		return err
	}
	defer os.Remove(out.Name())
	defer out.Close()
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Run(); err != nil {
		msg, _ := os.ReadFile(out.Name())
		return fmt.Errorf("glusterfs mount of %s: %v: %s", cfg.Path, err, bytes.TrimSpace(msg))
	}
	if err := waitMounted(ctx, cfg.Target); err != nil {
		return fmt.Errorf("glusterfs mount of %s: %w%s", cfg.Path, err, logReason(logFile))
	}
	if err := Check(ctx, cfg.Target); err != nil {
		_ = Unmount(cfg.Target)
		reason := logReason(logFile)
		if strings.Contains(reason, "authentication failed") {
			// The server says no more than this, whichever it was.
			reason += fmt.Sprintf(": the server refused this node's certificate, or has no directory %q in volume %s", cfg.Path.Dir, cfg.Path.Volume)
		}
		return fmt.Errorf("glusterfs mount of %s from %s:%d: %w%s", cfg.Path, cfg.Server.Host, cfg.Server.Port, err, reason)
	}
	return nil
}

// waitMounted waits for the daemon's mount to show.
func waitMounted(ctx context.Context, target string) error {
	for {
		if ok, err := IsMounted(target); err != nil || ok {
			return err
		}
		select {
		case <-ctx.Done():
			return errors.New("the mount did not appear")
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// IsMounted says whether a GlusterFS mount sits at target.
func IsMounted(target string) (bool, error) {
	ms, err := mountinfo.GetMounts(mountinfo.SingleEntryFilter(filepath.Clean(target)))
	if err != nil {
		return false, err
	}
	for _, m := range ms {
		if m.FSType == FSType {
			return true, nil
		}
	}
	return false, nil
}

// Mounts are the GlusterFS mount points directly in dir.
func Mounts(dir string) ([]string, error) {
	dir = filepath.Clean(dir)
	ms, err := mountinfo.GetMounts(mountinfo.PrefixFilter(dir))
	if err != nil {
		return nil, err
	}
	var out []string
	for _, m := range ms {
		if m.FSType == FSType && filepath.Dir(m.Mountpoint) == dir {
			out = append(out, m.Mountpoint)
		}
	}
	return out, nil
}

// Check looks at the mounted directory: a mount whose client died, or
// whose server cannot be reached, fails here (ENOTCONN) instead of in a
// container.
func Check(ctx context.Context, target string) error {
	errc := make(chan error, 1)
	// A stat of a FUSE mount waits for its daemon: bounded by ctx, in a
	// goroutine that may outlive the call.
	go func() {
		_, err := os.Stat(target)
		errc <- err
	}()
	select {
	case err := <-errc:
		var pe *fs.PathError
		if errors.As(err, &pe) {
			err = pe.Err
		}
		return err
	case <-ctx.Done():
		return errors.New("the mount does not answer")
	}
}

// Unmount removes the mount at target, and with it the client daemon;
// the mount point and its files go too. Nothing below target is ever
// removed: it is the shared data.
func Unmount(target string) error {
	err := unix.Unmount(target, 0)
	if errors.Is(err, unix.EBUSY) {
		// Still open somewhere (a container not yet gone): detached now,
		// released by the kernel when that ends.
		err = unix.Unmount(target, unix.MNT_DETACH)
	}
	if err != nil && !errors.Is(err, unix.EINVAL) && !errors.Is(err, unix.ENOENT) {
		return fmt.Errorf("unmount %s: %w", target, err)
	}
	if ok, err := IsMounted(target); err != nil || ok {
		return fmt.Errorf("unmount %s: still mounted (%v)", target, err)
	}
	// Remove, never RemoveAll: should anything be mounted here after all,
	// this fails instead of deleting through it.
	if err := os.Remove(target); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	_ = os.Remove(target + ".vol")
	return nil
}

// logReason is the last error the client logged, as ": <reason>", or "".
func logReason(path string) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	last := ""
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	for sc.Scan() {
		// [time] E [file:line:func] 0-xlator: message
		line := sc.Text()
		if !strings.Contains(line, "] E [") {
			continue
		}
		if _, msg, ok := strings.Cut(line, "] E ["); ok {
			// Call-stack dumps say nothing a user acts on.
			if _, msg, ok = strings.Cut(msg, "] "); ok && !strings.HasPrefix(msg, "(-->") {
				last = strings.TrimSpace(msg)
			}
		}
	}
	if last == "" {
		return " (see " + path + ")"
	}
	return ": " + last + " (see " + path + ")"
}
