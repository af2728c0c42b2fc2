package function

import (
	"archive/zip"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"path"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"

	minik8sv1 "github.com/minik8s/minik8s/pkg/apis/minik8s/v1"
)

// maxUnpacked bounds what a source zip may unpack to.
const maxUnpacked = 64 << 20

// SourceError is a function whose files cannot be read: its reason goes
// into the Ready condition.
type SourceError struct {
	Reason, Message string
}

func (e *SourceError) Error() string { return e.Reason + ": " + e.Message }

// files are a function's files, by slash-separated relative path. An
// inline source is the handler's module; a ConfigMap's keys are files,
// and keys ending in .zip are unpacked.
func files(fn *minik8sv1.Function, cm *corev1.ConfigMap) (map[string][]byte, error) {
	src := fn.Spec.Source
	if src.ConfigMap == nil {
		module, _, _ := strings.Cut(fn.Spec.Handler, ".")
		if i := strings.LastIndex(fn.Spec.Handler, "."); i > 0 {
			module = fn.Spec.Handler[:i]
		}
		return map[string][]byte{strings.ReplaceAll(module, ".", "/") + ".py": []byte(src.Inline)}, nil
	}
	if cm == nil {
		return nil, &SourceError{"SourceNotFound", fmt.Sprintf("ConfigMap %s/%s not found", fn.Namespace, src.ConfigMap.Name)}
	}
	out := map[string][]byte{}
	add := func(key string, data []byte) error {
		if !strings.HasSuffix(key, ".zip") {
			out[key] = data
			return nil
		}
		return unzip(data, out)
	}
	for k, v := range cm.Data {
		if err := add(k, []byte(v)); err != nil {
			return nil, err
		}
	}
	for k, v := range cm.BinaryData {
		if err := add(k, v); err != nil {
			return nil, err
		}
	}
	if len(out) == 0 {
		return nil, &SourceError{"SourceNotFound", fmt.Sprintf("ConfigMap %s/%s holds no files", fn.Namespace, src.ConfigMap.Name)}
	}
	return out, nil
}

func unzip(data []byte, out map[string][]byte) error {
	zr, err := zip.NewReader(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		return &SourceError{"InvalidSource", "not a zip archive: " + err.Error()}
	}
	total := int64(0)
	for _, f := range zr.File {
		if f.FileInfo().IsDir() {
			continue
		}
		name := path.Clean(strings.TrimPrefix(f.Name, "/"))
		if name == ".." || strings.HasPrefix(name, "../") {
			return &SourceError{"InvalidSource", fmt.Sprintf("zip entry %q leaves the function's folder", f.Name)}
		}
		rc, err := f.Open()
		if err != nil {
			return &SourceError{"InvalidSource", fmt.Sprintf("zip entry %q: %v", f.Name, err)}
		}
		b, err := io.ReadAll(io.LimitReader(rc, maxUnpacked-total+1))
		rc.Close()
		if err != nil {
			return &SourceError{"InvalidSource", fmt.Sprintf("zip entry %q: %v", f.Name, err)}
		}
		total += int64(len(b))
		if total > maxUnpacked {
			return &SourceError{"InvalidSource", fmt.Sprintf("the zip unpacks to more than %d MiB", maxUnpacked>>20)}
		}
		out[name] = b
	}
	return nil
}

// revisionHash identifies what a revision is made of: its files and every
// setting that shapes an instance. Scale bounds are not in it: they
// change how many instances run, not what runs.
func revisionHash(fn *minik8sv1.Function, files map[string][]byte) string {
	h := sha256.New()
	settings, _ := json.Marshal(struct {
		Runtime, Handler string
		Env              []corev1.EnvVar
		Resources        corev1.ResourceRequirements
		Timeout          string
	}{fn.Spec.Runtime, fn.Spec.Handler, fn.Spec.Env, fn.Spec.Resources, timeout(fn).String()})
	h.Write(settings)
	names := make([]string, 0, len(files))
	for n := range files {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, n := range names {
		fmt.Fprintf(h, "\x00%s\x00%d\x00", n, len(files[n]))
		h.Write(files[n])
	}
	return hex.EncodeToString(h.Sum(nil))[:16]
}
