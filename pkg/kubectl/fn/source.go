package fn

import (
	"archive/zip"
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/validation"
)

// MaxSourceBytes is the most a function's files may take in their
// ConfigMap: what Kubernetes lets a ConfigMap hold.
const MaxSourceBytes = 1 << 20

// ArchiveKey is the ConfigMap key of a function's files packed as a zip:
// a folder with subfolders, a zip given as it is, or files whose names
// cannot be keys.
const ArchiveKey = "source.zip"

// Pack reads the function's files at path: a file, a folder (recursively,
// without __pycache__, *.pyc and names beginning with a dot) or a .zip.
// It returns them as ConfigMap binaryData: one key per file for a file or
// a folder without subfolders, else the one key ArchiveKey. The zip it
// makes is the same for the same files, so an unchanged function deploys
// unchanged.
func Pack(path string) (map[string][]byte, error) {
	info, err := os.Stat(path)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("%s: no such file or folder (-f takes a .py file, a folder or a .zip)", path)
		}
		return nil, err
	}
	var files map[string][]byte
	switch {
	case info.IsDir():
		if files, err = readTree(path); err != nil {
			return nil, err
		}
		if len(files) == 0 {
			return nil, fmt.Errorf("%s: no files to deploy (__pycache__, *.pyc and dotfiles are left out)", path)
		}
	case !info.Mode().IsRegular():
		return nil, fmt.Errorf("%s: not a file or a folder", path)
	case strings.EqualFold(filepath.Ext(path), ".zip"):
		data, err := os.ReadFile(path)
		if err != nil {
			return nil, err
		}
		if _, err := zip.NewReader(bytes.NewReader(data), int64(len(data))); err != nil {
			return nil, fmt.Errorf("%s: not a zip archive: %w", path, err)
		}
		return fit(path, map[string][]byte{ArchiveKey: data})
	default:
		data, err := os.ReadFile(path)
		if err != nil {
			return nil, err
		}
		files = map[string][]byte{filepath.Base(path): data}
	}
	if flat(files) {
		if out, err := fit(path, files); err == nil {
			return out, nil
		}
		// Too big as they are: zipped, they may fit.
	}
	archive, err := zipFiles(files)
	if err != nil {
		return nil, err
	}
	return fit(path, map[string][]byte{ArchiveKey: archive})
}

// readTree reads the files under root by slash-separated relative path.
func readTree(root string) (map[string][]byte, error) {
	files := map[string][]byte{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if p != root && (strings.HasPrefix(name, ".") || name == "__pycache__") {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		if d.IsDir() || strings.HasSuffix(name, ".pyc") {
			return nil
		}
		info, err := os.Stat(p) // a link counts as what it points at
		if err != nil {
			return err
		}
		if !info.Mode().IsRegular() {
			return nil
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(root, p)
		if err != nil {
			return err
		}
		files[filepath.ToSlash(rel)] = data
		return nil
	})
	return files, err
}

// flat says whether every file can be a ConfigMap key of its own: none
// in a subfolder, every name a valid key.
func flat(files map[string][]byte) bool {
	for name := range files {
		if strings.Contains(name, "/") || name == ArchiveKey || len(validation.IsConfigMapKey(name)) > 0 {
			return false
		}
	}
	return true
}

func size(files map[string][]byte) int {
	n := 0
	for _, data := range files {
		n += len(data)
	}
	return n
}

// fit returns files if they fit a ConfigMap.
func fit(path string, files map[string][]byte) (map[string][]byte, error) {
	if n := size(files); n > MaxSourceBytes {
		return nil, fmt.Errorf("%s: %d bytes of code, more than the %d a function's ConfigMap holds; leave models and data out of the function's files (python3-ml ships numpy and scikit-learn)", path, n, MaxSourceBytes)
	}
	return files, nil
}

// zipEpoch is every entry's time, so that the same files zip the same.
var zipEpoch = time.Date(1980, 1, 1, 0, 0, 0, 0, time.UTC)

// zipFiles packs files, in name order, with fixed times.
func zipFiles(files map[string][]byte) ([]byte, error) {
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	names := make([]string, 0, len(files))
	for name := range files {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		h := &zip.FileHeader{Name: name, Method: zip.Deflate, Modified: zipEpoch}
		h.SetMode(0o644)
		w, err := zw.CreateHeader(h)
		if err != nil {
			return nil, fmt.Errorf("zip %s: %w", name, err)
		}
		if _, err := w.Write(files[name]); err != nil {
			return nil, fmt.Errorf("zip %s: %w", name, err)
		}
	}
	if err := zw.Close(); err != nil {
		return nil, fmt.Errorf("zip: %w", err)
	}
	return buf.Bytes(), nil
}
