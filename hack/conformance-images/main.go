// Command conformance-images writes the test images the upstream conformance
// suite's pods name as one OCI image layout tarball, for `minik8s image
// import` (hack/conformance.sh images; docs/design/0038-conformance-images.md).
//
// It reads the image names the suite uses (`e2e.test --list-images`, which
// follows KUBE_TEST_REPO_LIST) and writes each one it knows how to make, by
// the last element of its repository path:
//
//	agnhost            the Debian base + /agnhost (entrypoint, command pause)
//	nautilus, kitten   agnhost + the image's files, command test-webserver
//	busybox            the built-in busybox image (Debian's busybox-static)
//	nginx              the Debian base running nginx in the foreground
//	glibc-dns-testing  the Debian base (dig, nslookup, getent on glibc)
//	nonroot            the Debian base as user 1234
//	nonewprivs         busybox + /usr/local/bin/nnp, setuid root
//	pause              the built-in pause image
//	sample-apiserver   the Debian base + /sample-apiserver (entrypoint), the
//	                   aggregator spec's extension API server
//	etcd               the Debian base + /usr/local/bin/etcd, its storage
//
// Every image on the Debian base shares that one layer. Names from the
// private and the invalid registries are left out: the specs that use them
// expect the pull to fail.
package main

import (
	"bufio"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/distribution/reference"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/minik8s/minik8s/pkg/image"
)

type config struct {
	list, base, agnhost, nnp, kubernetes, busybox, out string
	sampleAPIServer, etcd                              string
}

func main() {
	var c config
	flag.StringVar(&c.list, "list", "", "file with the suite's image names, one a line (e2e.test --list-images)")
	flag.StringVar(&c.base, "base", "", "the Debian root file system, an uncompressed tarball")
	flag.StringVar(&c.agnhost, "agnhost", "", "static agnhost binary (k8s.io/kubernetes/test/images/agnhost)")
	flag.StringVar(&c.nnp, "nnp", "", "static nnp binary (k8s.io/kubernetes/test/images/nonewprivs)")
	flag.StringVar(&c.kubernetes, "kubernetes", "", "the k8s.io/kubernetes module's directory (test/images/...)")
	flag.StringVar(&c.busybox, "busybox", "", "static busybox (default: busybox-static's)")
	flag.StringVar(&c.sampleAPIServer, "sample-apiserver", "", "static sample-apiserver binary (k8s.io/sample-apiserver); none: the image is left out")
	flag.StringVar(&c.etcd, "etcd", "", "static etcd binary (go.etcd.io/etcd/server/v3); none: the image is left out")
	flag.StringVar(&c.out, "o", "images.tar", "output tarball")
	flag.Parse()
	if err := run(c); err != nil {
		fmt.Fprintln(os.Stderr, "conformance-images:", err)
		os.Exit(1)
	}
}

func run(c config) error {
	if c.list == "" || c.base == "" || c.agnhost == "" || c.nnp == "" || c.kubernetes == "" {
		return errors.New("-list, -base, -agnhost, -nnp and -kubernetes are required")
	}
	if c.busybox == "" {
		bb, err := image.FindBusybox()
		if err != nil {
			return err
		}
		c.busybox = bb
	}
	names, err := readList(c.list)
	if err != nil {
		return err
	}
	var imgs []image.Image
	for _, name := range names {
		img, ok, err := c.build(name)
		if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		if !ok {
			fmt.Printf("left out %s\n", name)
			continue
		}
		fmt.Printf("image %s\n", name)
		imgs = append(imgs, img)
	}
	tmp := c.out + ".tmp"
	f, err := os.Create(tmp)
	if err != nil {
		return err
	}
	if err := image.WriteAll(f, imgs...); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(tmp, c.out)
}

func readList(p string) ([]string, error) {
	f, err := os.Open(p)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var names []string
	s := bufio.NewScanner(f)
	for s.Scan() {
		if l := strings.TrimSpace(s.Text()); l != "" {
			names = append(names, l)
		}
	}
	return names, s.Err()
}

// debianPath is PATH in the images on the Debian base.
const debianPath = "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

// build returns the image named name, or false when it is not one this
// command makes.
func (c config) build(name string) (image.Image, bool, error) {
	named, err := reference.ParseNormalizedNamed(name)
	if err != nil {
		return image.Image{}, false, err
	}
	repo := reference.Path(named)
	if host := reference.Domain(named); strings.Contains(host, "invalid") || strings.Contains(repo, "k8s-authenticated-test") {
		return image.Image{}, false, nil
	}
	debian := func(cfg ocispec.ImageConfig, files ...image.File) image.Image {
		cfg.Env = append([]string{debianPath}, cfg.Env...)
		return image.Image{Name: name, Config: cfg, Base: []string{c.base}, Files: files}
	}
	switch path.Base(repo) {
	case "agnhost":
		files, err := c.agnhostFiles()
		return debian(ocispec.ImageConfig{Entrypoint: []string{"/agnhost"}, Cmd: []string{"pause"}}, files...), true, err
	case "nautilus", "kitten":
		files, err := c.agnhostFiles()
		if err != nil {
			return image.Image{}, false, err
		}
		html := filepath.Join(c.kubernetes, "test", "images", path.Base(repo), "html")
		entries, err := os.ReadDir(html)
		if err != nil {
			return image.Image{}, false, err
		}
		for _, e := range entries {
			data, err := os.ReadFile(filepath.Join(html, e.Name()))
			if err != nil {
				return image.Image{}, false, err
			}
			files = append(files, image.File{Path: e.Name(), Mode: 0o644, Data: data})
		}
		return debian(ocispec.ImageConfig{Entrypoint: []string{"/agnhost"}, Cmd: []string{"test-webserver"}}, files...), true, nil
	case "nginx":
		return debian(ocispec.ImageConfig{Cmd: []string{"nginx", "-g", "daemon off;"}, StopSignal: "SIGQUIT",
			ExposedPorts: map[string]struct{}{"80/tcp": {}}}), true, nil
	case "glibc-dns-testing":
		return debian(ocispec.ImageConfig{Cmd: []string{"/bin/sh"}}), true, nil
	case "nonroot":
		return debian(ocispec.ImageConfig{Cmd: []string{"/bin/sh"}, User: "1234"}), true, nil
	case "busybox":
		img, err := image.BusyboxImage(name, c.busybox)
		return img, true, err
	case "nonewprivs":
		img, err := image.BusyboxImage(name, c.busybox)
		if err != nil {
			return image.Image{}, false, err
		}
		nnp, err := os.ReadFile(c.nnp)
		if err != nil {
			return image.Image{}, false, err
		}
		img.Files = append(img.Files, image.File{Path: "usr/local/bin/nnp", Mode: 0o755 | fs.ModeSetuid, Data: nnp})
		img.Config.Cmd = []string{"nnp"}
		return img, true, nil
	case "pause":
		img, err := image.PauseImage(name)
		return img, true, err
	case "sample-apiserver":
		if c.sampleAPIServer == "" {
			return image.Image{}, false, nil
		}
		bin, err := os.ReadFile(c.sampleAPIServer)
		return debian(ocispec.ImageConfig{Entrypoint: []string{"/sample-apiserver"}},
			image.File{Path: "sample-apiserver", Mode: 0o755, Data: bin}), true, err
	case "etcd":
		if c.etcd == "" {
			return image.Image{}, false, nil
		}
		bin, err := os.ReadFile(c.etcd)
		return debian(ocispec.ImageConfig{Cmd: []string{"/usr/local/bin/etcd"}},
			image.File{Path: "usr/local/bin/etcd", Mode: 0o755, Data: bin}), true, err
	}
	return image.Image{}, false, nil
}

// agnhostFiles are what agnhost's image adds to its base: the program, its
// second name, and porter's TLS certificate and key.
func (c config) agnhostFiles() ([]image.File, error) {
	bin, err := os.ReadFile(c.agnhost)
	if err != nil {
		return nil, err
	}
	files := []image.File{
		{Path: "agnhost", Mode: 0o755, Data: bin},
		{Path: "agnhost-2", Mode: fs.ModeSymlink | 0o777, Link: "agnhost"},
	}
	for _, n := range []string{"localhost.crt", "localhost.key"} {
		data, err := os.ReadFile(filepath.Join(c.kubernetes, "test", "images", "agnhost", "porter", n))
		if err != nil {
			return nil, err
		}
		files = append(files, image.File{Path: n, Mode: 0o644, Data: data})
	}
	return files, nil
}
