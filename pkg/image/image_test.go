package image

import (
	"archive/tar"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/containerd/containerd"
	"github.com/containerd/containerd/images"
	"github.com/containerd/containerd/namespaces"
	"github.com/containerd/containerd/platforms"
	digest "github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/minik8s/minik8s/pkg/kubelet/runtime/runtimetest"
)

// readLayout returns the entries of an OCI layout tarball by name.
func readLayout(t *testing.T, data []byte) map[string][]byte {
	t.Helper()
	entries := map[string][]byte{}
	tr := tar.NewReader(bytes.NewReader(data))
	for {
		hdr, err := tr.Next()
		if err == io.EOF {
			return entries
		}
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(tr)
		entries[hdr.Name] = b
	}
}

// TestWriteLayout checks the tarball is a valid OCI image layout: every
// blob's digest matches, the manifest names its config and layer, and the
// image is named for containerd and for other OCI tools.
func TestWriteLayout(t *testing.T) {
	var buf bytes.Buffer
	err := Write(&buf, Image{
		Name:   "example.com/app:v1",
		Config: ocispec.ImageConfig{Cmd: []string{"/app"}},
		Files:  []File{{Path: "/usr/bin/app", Mode: 0o755, Data: []byte("#!/bin/sh\n")}},
	})
	if err != nil {
		t.Fatal(err)
	}
	entries := readLayout(t, buf.Bytes())
	for name, data := range entries {
		if strings.HasPrefix(name, "blobs/sha256/") && digest.FromBytes(data).Encoded() != strings.TrimPrefix(name, "blobs/sha256/") {
			t.Errorf("blob %s has the wrong digest", name)
		}
	}
	var index ocispec.Index
	if err := json.Unmarshal(entries["index.json"], &index); err != nil || len(index.Manifests) != 1 {
		t.Fatalf("index.json: %v %+v", err, index)
	}
	m := index.Manifests[0]
	if m.Annotations["io.containerd.image.name"] != "example.com/app:v1" || m.Annotations[ocispec.AnnotationRefName] != "v1" {
		t.Errorf("manifest annotations %v", m.Annotations)
	}
	var manifest ocispec.Manifest
	if err := json.Unmarshal(entries["blobs/sha256/"+m.Digest.Encoded()], &manifest); err != nil {
		t.Fatal(err)
	}
	var config ocispec.Image
	if err := json.Unmarshal(entries["blobs/sha256/"+manifest.Config.Digest.Encoded()], &config); err != nil {
		t.Fatal(err)
	}
	if config.Config.Cmd[0] != "/app" || len(config.RootFS.DiffIDs) != 1 || config.RootFS.DiffIDs[0] != manifest.Layers[0].Digest {
		t.Errorf("config %+v manifest %+v", config, manifest)
	}
	var names []string
	tr := tar.NewReader(bytes.NewReader(entries["blobs/sha256/"+manifest.Layers[0].Digest.Encoded()]))
	for {
		hdr, err := tr.Next()
		if err != nil {
			break
		}
		names = append(names, hdr.Name+":"+strconv.FormatInt(hdr.Mode, 8))
	}
	if got := strings.Join(names, " "); got != "usr/:755 usr/bin/:755 usr/bin/app:755" {
		t.Errorf("layer entries: %s", got)
	}
}

func TestBuildBusybox(t *testing.T) {
	if _, err := FindBusybox(); err != nil {
		t.Skip(err)
	}
	var a, b bytes.Buffer
	if err := BuildBusybox(&a); err != nil {
		t.Fatal(err)
	}
	if err := BuildBusybox(&b); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(a.Bytes(), b.Bytes()) {
		t.Error("two builds of the same busybox differ")
	}
	entries := readLayout(t, a.Bytes())
	var layer []byte
	for name, data := range entries {
		if len(data) > len(layer) && strings.HasPrefix(name, "blobs/") {
			layer = data
		}
	}
	files := map[string]*tar.Header{}
	tr := tar.NewReader(bytes.NewReader(layer))
	for {
		hdr, err := tr.Next()
		if err != nil {
			break
		}
		files[hdr.Name] = hdr
	}
	for _, applet := range []string{"sh", "ls", "wget", "httpd", "sleep", "cat", "echo", "date"} {
		if h := files["bin/"+applet]; h == nil || h.Typeflag != tar.TypeSymlink || h.Linkname != "busybox" {
			t.Errorf("bin/%s: %+v", applet, h)
		}
	}
	for _, want := range []string{"bin/busybox", "etc/passwd", "etc/group", "etc/hosts", "tmp/"} {
		if files[want] == nil {
			t.Errorf("missing %s", want)
		}
	}
	if files["tmp/"].Mode != 0o1777 {
		t.Errorf("/tmp mode %o", files["tmp/"].Mode)
	}
}

// TestEnsureBuiltin imports the built-in images into containerd (root and
// containerd needed), and checks a second call finds them.
func TestEnsureBuiltin(t *testing.T) {
	addr := runtimetest.Containerd(t)
	if _, err := FindBusybox(); err != nil {
		t.Skip(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	client, err := containerd.New(addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { client.Close() })
	ns := runtimetest.Namespace(t, client)
	nsCtx := namespaces.WithNamespace(ctx, ns)
	t.Cleanup(func() {
		nsCtx := namespaces.WithNamespace(context.Background(), ns)
		is := client.ImageService()
		imgs, _ := is.List(nsCtx)
		for _, img := range imgs {
			_ = is.Delete(nsCtx, img.Name, images.SynchronousDelete())
		}
		for i := 0; i < 50; i++ {
			if err := client.NamespaceService().Delete(nsCtx, ns); err == nil {
				return
			}
			time.Sleep(100 * time.Millisecond)
		}
		t.Errorf("namespace %s is not empty", ns)
	})

	if err := EnsureBuiltinIn(ctx, client, ns); err != nil {
		t.Fatal(err)
	}
	for _, ref := range []string{BusyboxRef, PauseRef} {
		img, err := client.GetImage(nsCtx, ref)
		if err != nil {
			t.Fatalf("%s: %v", ref, err)
		}
		if img.Labels()[LocalLabel] != "true" {
			t.Errorf("%s is not labelled %s", ref, LocalLabel)
		}
		if ok, err := img.IsUnpacked(nsCtx, ""); err != nil || !ok {
			t.Errorf("%s is not unpacked: %v", ref, err)
		}
	}
	before, _ := client.GetImage(nsCtx, BusyboxRef)
	if err := EnsureBuiltinIn(ctx, client, ns); err != nil {
		t.Fatal(err)
	}
	after, _ := client.GetImage(nsCtx, BusyboxRef)
	if !after.Metadata().UpdatedAt.Equal(before.Metadata().UpdatedAt) {
		t.Error("a second EnsureBuiltin imported busybox again")
	}

	// A layer blob removed behind its back (ctr content rm): the image
	// is still unpacked but cannot be exported; it is imported again.
	manifest, err := images.Manifest(nsCtx, client.ContentStore(), after.Target(), platforms.Default())
	if err != nil || len(manifest.Layers) == 0 {
		t.Fatalf("busybox manifest: %v", err)
	}
	if err := client.ContentStore().Delete(nsCtx, manifest.Layers[0].Digest); err != nil {
		t.Fatal(err)
	}
	if err := EnsureBuiltinIn(ctx, client, ns); err != nil {
		t.Fatal(err)
	}
	repaired, _ := client.GetImage(nsCtx, BusyboxRef)
	complete, _, _, missing, err := images.Check(nsCtx, client.ContentStore(), repaired.Target(), platforms.Default())
	if err != nil || !complete || len(missing) > 0 {
		t.Errorf("busybox after EnsureBuiltin with a layer gone: complete %v, missing %v, %v", complete, missing, err)
	}
}

// TestWriteAllSharesBase writes two images on one base layer file into one
// tarball: the base is stored once, below each image's own layer, and a
// setuid file keeps its bit.
func TestWriteAllSharesBase(t *testing.T) {
	base := filepath.Join(t.TempDir(), "base.tar")
	var lb bytes.Buffer
	tw := tar.NewWriter(&lb)
	_ = tw.WriteHeader(&tar.Header{Name: "etc/os-release", Mode: 0o644, Size: 3, Typeflag: tar.TypeReg})
	_, _ = tw.Write([]byte("os\n"))
	_ = tw.Close()
	if err := os.WriteFile(base, lb.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	err := WriteAll(&buf,
		Image{Name: "example.com/a:1", Base: []string{base}, Files: []File{{Path: "bin/a", Mode: 0o755 | fs.ModeSetuid, Data: []byte("a")}}},
		Image{Name: "example.com/b:2", Base: []string{base}})
	if err != nil {
		t.Fatal(err)
	}
	entries := readLayout(t, buf.Bytes())
	var index ocispec.Index
	if err := json.Unmarshal(entries["index.json"], &index); err != nil || len(index.Manifests) != 2 {
		t.Fatalf("index.json: %v %+v", err, index)
	}
	baseDigest := digest.FromBytes(lb.Bytes())
	layers := map[string][]ocispec.Descriptor{}
	for _, m := range index.Manifests {
		var manifest ocispec.Manifest
		if err := json.Unmarshal(entries["blobs/sha256/"+m.Digest.Encoded()], &manifest); err != nil {
			t.Fatal(err)
		}
		layers[m.Annotations["io.containerd.image.name"]] = manifest.Layers
	}
	a, b := layers["example.com/a:1"], layers["example.com/b:2"]
	if len(a) != 2 || a[0].Digest != baseDigest || len(b) != 1 || b[0].Digest != baseDigest {
		t.Fatalf("layers: a %v, b %v", a, b)
	}
	if !bytes.Equal(entries["blobs/sha256/"+baseDigest.Encoded()], lb.Bytes()) {
		t.Errorf("the base layer is not the base file")
	}
	tr := tar.NewReader(bytes.NewReader(entries["blobs/sha256/"+a[1].Digest.Encoded()]))
	for {
		hdr, err := tr.Next()
		if err != nil {
			t.Fatal("no bin/a in a's layer")
		}
		if hdr.Name == "bin/a" {
			if hdr.Mode != 0o4755 {
				t.Errorf("bin/a mode %o, want 4755", hdr.Mode)
			}
			break
		}
	}
}
