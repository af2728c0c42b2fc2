package bench

import (
	"archive/tar"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/minik8s/minik8s/pkg/serverless/pyruntime"
)

// runtimesDirEnv is where pyruntime.BaseTarball looks for the runtimes'
// root filesystems first.
const runtimesDirEnv = "MINIK8S_RUNTIMES_DIR"

// uniqueRuntime writes into dir a copy of the runtime's root filesystem
// with one file of the run's own added, and points pyruntime.BaseTarball
// at it until restore is called. The function's image then shares no
// layer with any other image on the machine's containerd (images of
// other runs or tests built from the same runtime), so deleting it from
// the node really makes the next start pull and unpack the whole image.
func uniqueRuntime(dir, runtime, id string) (restore func(), err error) {
	src, err := pyruntime.BaseTarball(runtime)
	if err != nil {
		return nil, err
	}
	in, err := os.Open(src)
	if err != nil {
		return nil, err
	}
	defer in.Close()
	dst := filepath.Join(dir, runtime+".tar")
	out, err := os.Create(dst)
	if err != nil {
		return nil, err
	}
	defer func() {
		if cerr := out.Close(); err == nil && cerr != nil {
			err = cerr
		}
	}()
	tr, tw := tar.NewReader(in), tar.NewWriter(out)
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("read %s: %w", src, err)
		}
		if err := tw.WriteHeader(hdr); err != nil {
			return nil, fmt.Errorf("copy %s: %s: %w", src, hdr.Name, err)
		}
		if _, err := io.Copy(tw, tr); err != nil {
			return nil, fmt.Errorf("copy %s: %s: %w", src, hdr.Name, err)
		}
	}
	marker := []byte("minik8s bench functions " + id + "\n")
	if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: "etc/minik8s-bench-" + id, Mode: 0o644,
		Size: int64(len(marker)), ModTime: time.Now(), Format: tar.FormatPAX}); err != nil {
		return nil, err
	}
	if _, err := tw.Write(marker); err != nil {
		return nil, err
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	old, had := os.LookupEnv(runtimesDirEnv)
	if err := os.Setenv(runtimesDirEnv, dir); err != nil {
		return nil, err
	}
	return func() {
		if had {
			_ = os.Setenv(runtimesDirEnv, old)
		} else {
			_ = os.Unsetenv(runtimesDirEnv)
		}
	}, nil
}
