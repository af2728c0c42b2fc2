package image

import (
	"debug/elf"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"strings"

	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
)

// BusyboxRef is the name of the built-in busybox image: what `image: busybox`
// in a manifest resolves to.
const BusyboxRef = "docker.io/library/busybox:latest"

// busyboxPaths are where Debian's busybox-static installs the binary.
var busyboxPaths = []string{"/bin/busybox", "/usr/bin/busybox"}

// FindBusybox returns the path of a statically linked busybox on this machine.
func FindBusybox() (string, error) {
	for _, p := range busyboxPaths {
		if static, err := isStatic(p); err == nil && static {
			return p, nil
		}
	}
	return "", fmt.Errorf("no statically linked busybox in %s (install the busybox-static package)", strings.Join(busyboxPaths, " or "))
}

// BuildBusybox writes an OCI image tarball tagged BusyboxRef made from this
// machine's static busybox: /bin/busybox with a symlink per applet in /bin
// (sh, ls, wget, httpd, sleep, cat, ...), /etc/passwd and /etc/group with
// root and nobody, /etc/hosts naming localhost, /tmp, /root and /home. Its
// command is sh, as the Docker Hub image's is.
func BuildBusybox(w io.Writer) error {
	bin, err := FindBusybox()
	if err != nil {
		return err
	}
	return BuildBusyboxFrom(w, bin)
}

// BuildBusyboxFrom is BuildBusybox with the busybox binary at bin.
func BuildBusyboxFrom(w io.Writer, bin string) error {
	img, err := BusyboxImage(BusyboxRef, bin)
	if err != nil {
		return err
	}
	return Write(w, img)
}

// BusyboxImage is the busybox image of BuildBusybox, named name, with the
// busybox binary at bin.
func BusyboxImage(name, bin string) (Image, error) {
	data, err := os.ReadFile(bin)
	if err != nil {
		return Image{}, fmt.Errorf("busybox image: %w", err)
	}
	out, err := exec.Command(bin, "--list").Output()
	if err != nil {
		return Image{}, fmt.Errorf("busybox image: list applets of %s: %w", bin, err)
	}
	files := []File{
		{Path: "bin/busybox", Mode: 0o755, Data: data},
		{Path: "etc/passwd", Mode: 0o644, Data: []byte("root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/home:/bin/false\n")},
		{Path: "etc/group", Mode: 0o644, Data: []byte("root:x:0:\nnobody:x:65534:\n")},
		// busybox resolves names with no DNS server from /etc/hosts only; the
		// kubelet mounts its own over it, but `ctr run` and tests get these.
		{Path: "etc/hosts", Mode: 0o644, Data: []byte("127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\n")},
		{Path: "tmp", Mode: fs.ModeDir | fs.ModeSticky | 0o777},
		{Path: "root", Mode: fs.ModeDir | 0o700},
		{Path: "home", Mode: fs.ModeDir | 0o755},
		{Path: "var", Mode: fs.ModeDir | 0o755},
		{Path: "proc", Mode: fs.ModeDir | 0o755},
		{Path: "sys", Mode: fs.ModeDir | 0o755},
		{Path: "dev", Mode: fs.ModeDir | 0o755},
	}
	for _, applet := range strings.Fields(string(out)) {
		if applet == "busybox" || strings.Contains(applet, "/") {
			continue
		}
		files = append(files, File{Path: "bin/" + applet, Mode: fs.ModeSymlink | 0o777, Link: "busybox"})
	}
	return Image{
		Name: name,
		Config: ocispec.ImageConfig{
			Env: []string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"},
			Cmd: []string{"sh"},
		},
		Files: files,
	}, nil
}

// isStatic reports whether the ELF file at path has no program interpreter.
func isStatic(path string) (bool, error) {
	f, err := elf.Open(path)
	if err != nil {
		return false, err
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			return false, nil
		}
	}
	return true, nil
}
