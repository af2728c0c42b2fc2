package build

import (
	"archive/tar"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"maps"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/minik8s/minik8s/pkg/serverless/registry"
)

// startRegistry runs a registry on a free loopback port for the test and
// returns its host:port; it skips the test without a registry binary.
func startRegistry(t *testing.T) (addr, logPath string) {
	t.Helper()
	if _, err := registry.FindBinary(); err != nil {
		t.Skipf("no registry binary: %v", err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr = ln.Addr().String()
	ln.Close()
	ready := make(chan struct{})
	r, err := registry.New(registry.Config{Dir: t.TempDir(), Address: addr, Ready: func() { close(ready) }})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- r.Start(ctx) }()
	t.Cleanup(func() {
		cancel()
		<-done
	})
	select {
	case <-ready:
	case err := <-done:
		t.Fatalf("registry: %v", err)
	case <-time.After(30 * time.Second):
		log, _ := os.ReadFile(r.LogPath())
		t.Fatalf("registry not ready after 30s; log:\n%s", log)
	}
	return addr, r.LogPath()
}

// writeTar writes a tar of files (and, with pad > 0, one more file of
// pad random bytes) to a file in the test's temp dir.
func writeTar(t *testing.T, files map[string]string, pad int) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "base.tar")
	f, err := os.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	tw := tar.NewWriter(f)
	for _, name := range slices.Sorted(maps.Keys(files)) {
		body := files[name]
		if err := tw.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: int64(len(body)), Typeflag: tar.TypeReg}); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write([]byte(body)); err != nil {
			t.Fatal(err)
		}
	}
	if pad > 0 {
		if err := tw.WriteHeader(&tar.Header{Name: "padding", Mode: 0o644, Size: int64(pad), Typeflag: tar.TypeReg}); err != nil {
			t.Fatal(err)
		}
		if _, err := io.CopyN(tw, rand.Reader, int64(pad)); err != nil {
			t.Fatal(err)
		}
	}
	if err := errors.Join(tw.Close(), f.Close()); err != nil {
		t.Fatal(err)
	}
	return p
}

func fileSHA256(t *testing.T, p string) string {
	t.Helper()
	f, err := os.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		t.Fatal(err)
	}
	return "sha256:" + hex.EncodeToString(h.Sum(nil))
}

// layerFiles reads a layer's regular files and directories with their modes.
func layerFiles(t *testing.T, l v1.Layer) (map[string]string, map[string]int64) {
	t.Helper()
	rc, err := l.Uncompressed()
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	files, modes := map[string]string{}, map[string]int64{}
	tr := tar.NewReader(rc)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(tr)
		files[h.Name] = string(b)
		modes[h.Name] = h.Mode
	}
	return files, modes
}

func TestBuildPushDelete(t *testing.T) {
	reg, regLog := startRegistry(t)
	ctx := context.Background()
	b, err := New(Config{Registry: reg})
	if err != nil {
		t.Fatal(err)
	}
	base := writeTar(t, map[string]string{"etc/os-release": "ID=test\n", "usr/bin/hello": "#!/bin/sh\necho hi\n"}, 0)
	img := Image{
		Repository: "functions/default/greet", Tag: "r1", BaseTarball: base,
		Files: map[string][]byte{
			"function/main.py":  []byte("def handle(req):\n    return {'v': 1}\n"),
			"runtime/server.py": []byte("# server\n"),
		},
		Entrypoint: []string{"python3", "/runtime/server.py"},
		Env:        []string{"HANDLER=main.handle", "FUNCTION_DIR=/function"},
		WorkingDir: "/function", ExposedPort: 8080,
		Labels: map[string]string{"minik8s.io/function": "greet"},
	}
	ref1, err := b.Build(ctx, img)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(ref1, reg+"/functions/default/greet@sha256:") {
		t.Fatalf("ref %q is not by digest in the registry's repository", ref1)
	}

	// What was pushed is what was asked for.
	r1, err := name.NewDigest(ref1, name.Insecure)
	if err != nil {
		t.Fatal(err)
	}
	pulled, err := remote.Image(r1)
	if err != nil {
		t.Fatal(err)
	}
	cf, err := pulled.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	c := cf.Config
	if !slices.Equal(c.Entrypoint, img.Entrypoint) || c.WorkingDir != "/function" || c.Labels["minik8s.io/function"] != "greet" || cf.OS != "linux" {
		t.Errorf("config: %+v", cf)
	}
	if _, ok := c.ExposedPorts["8080/tcp"]; !ok {
		t.Errorf("exposed ports: %v", c.ExposedPorts)
	}
	if !slices.Contains(c.Env, "HANDLER=main.handle") || !slices.ContainsFunc(c.Env, func(e string) bool { return strings.HasPrefix(e, "PATH=/") }) {
		t.Errorf("env: %v", c.Env)
	}
	layers, err := pulled.Layers()
	if err != nil || len(layers) != 2 {
		t.Fatalf("layers: %d, %v", len(layers), err)
	}
	baseDigest, _ := layers[0].Digest()
	if baseDigest.String() != fileSHA256(t, base) {
		t.Errorf("base layer %s is not the tarball as it is (%s)", baseDigest, fileSHA256(t, base))
	}
	files, modes := layerFiles(t, layers[1])
	if files["function/main.py"] != string(img.Files["function/main.py"]) || files["runtime/server.py"] != "# server\n" {
		t.Errorf("files layer: %v", files)
	}
	if modes["function/main.py"] != 0o644 || modes["function/"] != 0o755 || modes["runtime/"] != 0o755 {
		t.Errorf("modes: %v", modes)
	}

	// The same inputs give the same image.
	again, err := b.Build(ctx, img)
	if err != nil {
		t.Fatal(err)
	}
	if again != ref1 {
		t.Errorf("same inputs, another image: %s, %s", ref1, again)
	}

	// Changed code: another image on the same base.
	img.Tag = "r2"
	img.Files = map[string][]byte{"function/main.py": []byte("def handle(req):\n    return {'v': 2}\n"), "runtime/server.py": []byte("# server\n")}
	ref2, err := b.Build(ctx, img)
	if err != nil {
		t.Fatal(err)
	}
	if ref2 == ref1 {
		t.Fatal("changed files, same image")
	}
	r2, _ := name.NewDigest(ref2, name.Insecure)
	pulled2, err := remote.Image(r2)
	if err != nil {
		t.Fatal(err)
	}
	layers2, _ := pulled2.Layers()
	if d, _ := layers2[0].Digest(); d != baseDigest {
		t.Errorf("rebuild changed the base layer: %s, %s", d, baseDigest)
	}
	tags, err := b.Tags(ctx, img.Repository)
	if err != nil || !slices.Equal(slices.Sorted(slices.Values(tags)), []string{"r1", "r2"}) {
		t.Fatalf("tags: %v, %v", tags, err)
	}

	// Another function on the same base (mounted, not uploaded).
	other := img
	other.Repository, other.Tag = "functions/default/add", "r1"
	refOther, err := b.Build(ctx, other)
	if err != nil {
		t.Fatal(err)
	}
	if log, _ := os.ReadFile(regLog); !strings.Contains(string(log), "/v2/functions/default/add/blobs/uploads/?from=minik8s%2Fbase-layers&mount=sha256%3A"+baseDigest.Hex) {
		t.Errorf("the base layer was not mounted into another function's repository; registry log:\n%s", log)
	}

	// Delete: nothing of greet can be pulled; add is untouched.
	if err := b.Delete(ctx, img.Repository); err != nil {
		t.Fatal(err)
	}
	if tags, err := b.Tags(ctx, img.Repository); err != nil || len(tags) != 0 {
		t.Errorf("tags after delete: %v, %v", tags, err)
	}
	for _, r := range []name.Digest{r1, r2} {
		if _, err := remote.Image(r); err == nil {
			t.Errorf("%s still pulls after delete", r)
		}
	}
	if err := b.Delete(ctx, img.Repository); err != nil {
		t.Errorf("second delete: %v", err)
	}
	if err := b.Delete(ctx, "functions/default/never"); err != nil {
		t.Errorf("delete of an unknown repository: %v", err)
	}
	if tags, err := b.Tags(ctx, "functions/default/never"); err != nil || len(tags) != 0 {
		t.Errorf("tags of an unknown repository: %v, %v", tags, err)
	}
	ro, _ := name.NewDigest(refOther, name.Insecure)
	if _, err := remote.Image(ro); err != nil {
		t.Errorf("the other function's image: %v", err)
	}
}

func TestFilesLayerIsReproducible(t *testing.T) {
	files := map[string][]byte{"function/a/b.py": []byte("x"), "function/main.py": []byte("y"), "runtime/server.py": []byte("z")}
	l1, err := filesLayer(files)
	if err != nil {
		t.Fatal(err)
	}
	l2, err := filesLayer(map[string][]byte{"runtime/server.py": []byte("z"), "function/main.py": []byte("y"), "function/a/b.py": []byte("x")})
	if err != nil {
		t.Fatal(err)
	}
	d1, _ := l1.Digest()
	d2, _ := l2.Digest()
	if d1 != d2 {
		t.Errorf("same files, digests %s and %s", d1, d2)
	}
	got, _ := layerFiles(t, l1)
	for _, want := range []string{"function/", "function/a/", "function/a/b.py", "function/main.py", "runtime/", "runtime/server.py"} {
		if _, ok := got[want]; !ok {
			t.Errorf("layer lacks %s: %v", want, got)
		}
	}
}

func TestFilesLayerRefusesBadPaths(t *testing.T) {
	for _, files := range []map[string][]byte{
		{"": nil},
		{"../etc/passwd": nil},
		{"function/../../x": nil},
		{"function//main.py": nil},
		{"function": nil, "function/main.py": nil},
		{"/a": nil, "a": nil},
	} {
		if _, err := filesLayer(files); err == nil {
			t.Errorf("accepted %v", files)
		}
	}
}

// TestBuildTimings logs how long a first build and a rebuild take on a
// ~100 MB base and, when make deps built it, the python3 runtime. It
// asserts nothing about time.
func TestBuildTimings(t *testing.T) {
	if testing.Short() {
		t.Skip("writes a 100 MB base")
	}
	reg, _ := startRegistry(t)
	bases := map[string]string{"synthetic 100MB": writeTar(t, map[string]string{"etc/os-release": "ID=test\n"}, 100<<20)}
	if _, err := os.Stat("/var/lib/minik8s/runtimes/python3.tar"); err == nil {
		bases["python3 runtime"] = "/var/lib/minik8s/runtimes/python3.tar"
	}
	ctx := context.Background()
	for label, base := range bases {
		b, err := New(Config{Registry: reg})
		if err != nil {
			t.Fatal(err)
		}
		st, _ := os.Stat(base)
		build := func(repo, tag, code string) time.Duration {
			began := time.Now()
			if _, err := b.Build(ctx, Image{Repository: repo, Tag: tag, BaseTarball: base,
				Files: map[string][]byte{"function/main.py": []byte(code)}, Entrypoint: []string{"python3"}}); err != nil {
				t.Fatal(err)
			}
			return time.Since(began)
		}
		slug := strings.ReplaceAll(strings.Fields(label)[0], "3", "")
		first := build("functions/timing/"+slug, "r1", "a = 1")
		rebuild := build("functions/timing/"+slug, "r2", "a = 2")
		other := build("functions/timing/"+slug+"-other", "r1", "a = 3")
		t.Logf("%s base (%d MB): first build %v, rebuild with changed code %v, another function on the same base %v",
			label, st.Size()>>20, first.Round(time.Millisecond), rebuild.Round(time.Millisecond), other.Round(time.Millisecond))
	}
}
