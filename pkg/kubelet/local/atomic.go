package local

import (
	"bytes"
	"errors"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/minik8s/minik8s/pkg/kubelet/podenv"
)

// dataDirName is the symlink to the current timestamped directory.
const dataDirName = "..data"

// writeAtomic makes dir hold exactly payload (relative path -> file), the
// way Kubernetes' AtomicWriter does: the files go into a new hidden
// timestamped directory, the "..data" symlink is swapped to it with one
// rename, and each top-level entry is a symlink through "..data". A
// container that has dir mounted sees the old or the new set of files,
// never a mix. gid, when set, owns the files (the pod's fsGroup).
func writeAtomic(dir string, payload map[string]podenv.File, gid *int64) error {
	for p := range payload {
		if err := podenv.ValidatePayloadPath(p); err != nil {
			return err
		}
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	oldTS, _ := os.Readlink(filepath.Join(dir, dataDirName))
	if oldTS != "" && sameContent(filepath.Join(dir, oldTS), payload) {
		return linkTopLevel(dir, payload)
	}
	tsDir, err := os.MkdirTemp(dir, time.Now().UTC().Format("..2006_01_02_15_04_05."))
	if err != nil {
		return err
	}
	if err := os.Chmod(tsDir, 0o755); err != nil {
		return err
	}
	for rel, f := range payload {
		full := filepath.Join(tsDir, rel)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(full, f.Data, 0o600); err != nil {
			return err
		}
		if err := os.Chmod(full, fs.FileMode(f.Mode)&fs.ModePerm); err != nil {
			return err
		}
		if gid != nil {
			if err := os.Lchown(full, -1, int(*gid)); err != nil {
				return err
			}
		}
	}
	tmpLink := filepath.Join(dir, "..data_tmp")
	_ = os.Remove(tmpLink)
	if err := os.Symlink(filepath.Base(tsDir), tmpLink); err != nil {
		return err
	}
	if err := os.Rename(tmpLink, filepath.Join(dir, dataDirName)); err != nil {
		return err
	}
	if err := linkTopLevel(dir, payload); err != nil {
		return err
	}
	if oldTS != "" && oldTS != filepath.Base(tsDir) {
		if err := os.RemoveAll(filepath.Join(dir, oldTS)); err != nil {
			return err
		}
	}
	return nil
}

// sameContent says whether tsDir holds exactly payload.
func sameContent(tsDir string, payload map[string]podenv.File) bool {
	n := 0
	err := filepath.WalkDir(tsDir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			return nil
		}
		rel, _ := filepath.Rel(tsDir, path)
		f, ok := payload[rel]
		if !ok {
			return errors.New("extra file")
		}
		info, err := d.Info()
		if err != nil || info.Mode().Perm() != fs.FileMode(f.Mode)&fs.ModePerm {
			return errors.New("mode differs")
		}
		data, err := os.ReadFile(path)
		if err != nil || !bytes.Equal(data, f.Data) {
			return errors.New("content differs")
		}
		n++
		return nil
	})
	return err == nil && n == len(payload)
}

// linkTopLevel makes every top-level entry of payload a symlink through
// ..data and removes the symlinks of entries that are gone.
func linkTopLevel(dir string, payload map[string]podenv.File) error {
	want := map[string]bool{}
	for p := range payload {
		top, _, _ := strings.Cut(p, "/")
		want[top] = true
	}
	for _, top := range slices.Sorted(maps.Keys(want)) {
		link := filepath.Join(dir, top)
		target := filepath.Join(dataDirName, top)
		if cur, err := os.Readlink(link); err == nil && cur == target {
			continue
		}
		_ = os.RemoveAll(link)
		if err := os.Symlink(target, link); err != nil {
			return err
		}
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	for _, e := range entries {
		name := e.Name()
		if strings.HasPrefix(name, "..") || want[name] {
			continue
		}
		if target, err := os.Readlink(filepath.Join(dir, name)); err == nil && strings.HasPrefix(target, dataDirName+"/") {
			if err := os.Remove(filepath.Join(dir, name)); err != nil {
				return err
			}
		}
	}
	return nil
}
