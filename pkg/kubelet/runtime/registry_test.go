package runtime

import (
	"archive/tar"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	digest "github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/minik8s/minik8s/pkg/image"
)

// testRegistry serves one image over the registry API (plain HTTP), made
// from an OCI layout tarball.
type testRegistry struct {
	manifest     []byte
	manifestType string
	blobs        map[string][]byte
	resolves     atomic.Int32 // manifest requests: one per pull
	blobGets     atomic.Int32
}

func newTestRegistry(t *testing.T, layout []byte) *testRegistry {
	t.Helper()
	files := map[string][]byte{}
	tr := tar.NewReader(bytes.NewReader(layout))
	for {
		hdr, err := tr.Next()
		if err != nil {
			break
		}
		files[hdr.Name], _ = io.ReadAll(tr)
	}
	var index ocispec.Index
	if err := json.Unmarshal(files["index.json"], &index); err != nil {
		t.Fatal(err)
	}
	reg := &testRegistry{blobs: map[string][]byte{}, manifestType: index.Manifests[0].MediaType}
	for name, data := range files {
		if strings.HasPrefix(name, "blobs/sha256/") {
			reg.blobs["sha256:"+strings.TrimPrefix(name, "blobs/sha256/")] = data
		}
	}
	reg.manifest = reg.blobs[index.Manifests[0].Digest.String()]
	return reg
}

func (reg *testRegistry) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	path := r.URL.Path
	switch {
	case path == "/v2/":
	case strings.Contains(path, "/manifests/"):
		reg.resolves.Add(1)
		w.Header().Set("Content-Type", reg.manifestType)
		w.Header().Set("Docker-Content-Digest", digest.FromBytes(reg.manifest).String())
		w.Header().Set("Content-Length", strconv.Itoa(len(reg.manifest)))
		if r.Method == http.MethodGet {
			_, _ = w.Write(reg.manifest)
		}
	case strings.Contains(path, "/blobs/"):
		reg.blobGets.Add(1)
		blob, ok := reg.blobs[path[strings.LastIndex(path, "/")+1:]]
		if !ok {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Length", strconv.Itoa(len(blob)))
		if r.Method == http.MethodGet {
			_, _ = w.Write(blob)
		}
	default:
		http.NotFound(w, r)
	}
}

// TestPullFromRegistry pulls an image from a plain-HTTP registry on
// localhost, runs it, and checks the pull policies against a registry
// image (not a local one): Always pulls again, IfNotPresent does not.
func TestPullFromRegistry(t *testing.T) {
	env := newTestEnv(t)
	ctx := context.Background()
	// An image of its own (not the built-in busybox, whose blobs containerd
	// already has), so the pull fetches every blob.
	bin, err := image.FindBusybox()
	if err != nil {
		t.Skip(err)
	}
	data, err := os.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	files := []image.File{
		{Path: "bin/busybox", Mode: 0o755, Data: data},
		{Path: "etc/pulled", Mode: 0o644, Data: []byte("from the registry\n")},
	}
	for _, applet := range []string{"sh", "cat", "sleep"} {
		files = append(files, image.File{Path: "bin/" + applet, Mode: fs.ModeSymlink | 0o777, Link: "busybox"})
	}
	var layout bytes.Buffer
	if err := image.Write(&layout, image.Image{Name: "tools/busybox:v1", Config: ocispec.ImageConfig{Env: []string{"PATH=/bin"}}, Files: files}); err != nil {
		t.Fatal(err)
	}
	reg := newTestRegistry(t, layout.Bytes())
	srv := httptest.NewServer(reg)
	ref := strings.TrimPrefix(srv.URL, "http://") + "/tools/busybox:v1"

	if pulled, err := env.rt.EnsureImage(ctx, ref, corev1.PullIfNotPresent); err != nil || !pulled {
		t.Fatalf("first EnsureImage: pulled %v, %v; want a pull", pulled, err)
	}
	if reg.resolves.Load() == 0 || reg.blobGets.Load() < 2 {
		t.Errorf("pull made %d manifest and %d blob requests", reg.resolves.Load(), reg.blobGets.Load())
	}
	resolves := reg.resolves.Load()
	if pulled, err := env.rt.EnsureImage(ctx, ref, corev1.PullIfNotPresent); err != nil || pulled || reg.resolves.Load() != resolves {
		t.Errorf("IfNotPresent on a present image: %v, it asked the registry again", err)
	}
	if pulled, err := env.rt.EnsureImage(ctx, ref, corev1.PullAlways); err != nil || !pulled || reg.resolves.Load() == resolves {
		t.Errorf("Always: %v, it did not ask the registry", err)
	}

	sb := env.sandbox("pulled", nil)
	id := env.startContainer(sb, ContainerConfig{Name: "c", Image: ref, Command: []string{"sleep", "60"}})
	if _, out := env.exec(id, "cat", "/etc/pulled"); out != "from the registry\n" {
		t.Errorf("exec: %q", out)
	}
	if st := env.status(id); st.Image != ref || !strings.HasPrefix(st.ImageID, ref+"@sha256:") {
		t.Errorf("image %q id %q", st.Image, st.ImageID)
	}

	srv.Close()
	var pe *PullError
	if _, err := env.rt.EnsureImage(ctx, ref, corev1.PullAlways); !errors.As(err, &pe) {
		t.Errorf("Always with the registry gone: %v, want a PullError", err)
	}
	if _, err := env.rt.EnsureImage(ctx, ref, corev1.PullIfNotPresent); err != nil {
		t.Errorf("IfNotPresent with the registry gone: %v", err)
	}
}
