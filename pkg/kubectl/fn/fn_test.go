package fn

import (
	"archive/zip"
	"bytes"
	"context"
	"crypto/rand"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/utils/ptr"

	minik8sv1 "github.com/minik8s/minik8s/pkg/apis/minik8s/v1"
	"github.com/minik8s/minik8s/pkg/serverless/fnmeta"
)

// writeTree writes files (slash-separated paths) under a new folder.
func writeTree(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, content := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func unzipAll(t *testing.T, data []byte) map[string]string {
	t.Helper()
	zr, err := zip.NewReader(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, f := range zr.File {
		rc, err := f.Open()
		if err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(rc)
		rc.Close()
		if err != nil {
			t.Fatal(err)
		}
		out[f.Name] = string(b)
	}
	return out
}

func zipOf(t *testing.T, files map[string]string) []byte {
	t.Helper()
	bin := map[string][]byte{}
	for k, v := range files {
		bin[k] = []byte(v)
	}
	data, err := zipFiles(bin)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func randomBytes(t *testing.T, n int) string {
	t.Helper()
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestPack(t *testing.T) {
	nested := map[string]string{"main.py": "from lib import util\n", "lib/__init__.py": "", "lib/util.py": "X = 1\n"}
	for _, tc := range []struct {
		name string
		// path makes what -f names.
		path func(t *testing.T) string
		// keys are the ConfigMap keys wanted, files what they unpack to.
		keys    []string
		files   map[string]string
		wantErr string
	}{{
		name: "one .py file",
		path: func(t *testing.T) string {
			return filepath.Join(writeTree(t, map[string]string{"greet.py": "def handle(e): pass\n"}), "greet.py")
		},
		keys:  []string{"greet.py"},
		files: map[string]string{"greet.py": "def handle(e): pass\n"},
	}, {
		name: "flat folder, one key per file, without dotfiles and caches",
		path: func(t *testing.T) string {
			return writeTree(t, map[string]string{
				"main.py": "import helper\n", "helper.py": "Y = 2\n", "requirements.txt": "",
				".env": "SECRET=1", ".git/config": "x", "__pycache__/main.cpython-311.pyc": "x", "old.pyc": "x",
			})
		},
		keys:  []string{"helper.py", "main.py", "requirements.txt"},
		files: map[string]string{"main.py": "import helper\n", "helper.py": "Y = 2\n", "requirements.txt": ""},
	}, {
		name: "nested folder, one zip",
		path: func(t *testing.T) string {
			return writeTree(t, map[string]string{
				"main.py": nested["main.py"], "lib/__init__.py": "", "lib/util.py": nested["lib/util.py"],
				"lib/__pycache__/util.cpython-311.pyc": "x", "lib/.hidden/x.py": "x",
			})
		},
		keys:  []string{ArchiveKey},
		files: nested,
	}, {
		name:  "zip as it is",
		path:  func(t *testing.T) string { return writeZip(t, zipOf(t, nested)) },
		keys:  []string{ArchiveKey},
		files: nested,
	}, {
		name:  "file names that cannot be keys, zipped",
		path:  func(t *testing.T) string { return writeTree(t, map[string]string{"main.py": "", "my notes.txt": "hi"}) },
		keys:  []string{ArchiveKey},
		files: map[string]string{"main.py": "", "my notes.txt": "hi"},
	}, {
		name: "flat folder too big as it is, fits zipped",
		path: func(t *testing.T) string {
			return writeTree(t, map[string]string{"main.py": "", "table.py": strings.Repeat("ROW = 1\n", MaxSourceBytes/4)})
		},
		keys:  []string{ArchiveKey},
		files: map[string]string{"main.py": "", "table.py": strings.Repeat("ROW = 1\n", MaxSourceBytes/4)},
	}, {
		name: "too big even zipped",
		path: func(t *testing.T) string {
			return writeTree(t, map[string]string{"main.py": "", "model.bin": randomBytes(t, MaxSourceBytes+1)})
		},
		wantErr: "more than the 1048576 a function's ConfigMap holds",
	}, {
		name:    "missing",
		path:    func(t *testing.T) string { return filepath.Join(t.TempDir(), "nope.py") },
		wantErr: "no such file or folder",
	}, {
		name:    "empty folder",
		path:    func(t *testing.T) string { return writeTree(t, map[string]string{"__pycache__/a.pyc": "x"}) },
		wantErr: "no files to deploy",
	}, {
		name:    "not a zip",
		path:    func(t *testing.T) string { return writeZip(t, []byte("PK? no")) },
		wantErr: "not a zip archive",
	}} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Pack(tc.path(t))
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("got %v, want an error with %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if keys := slices.Sorted(maps.Keys(got)); !slices.Equal(keys, tc.keys) {
				t.Fatalf("keys %v, want %v", keys, tc.keys)
			}
			files := map[string]string{}
			for k, v := range got {
				if k == ArchiveKey {
					maps.Copy(files, unzipAll(t, v))
				} else {
					files[k] = string(v)
				}
			}
			if !maps.Equal(files, tc.files) {
				t.Fatalf("files %v, want %v", slices.Sorted(maps.Keys(files)), slices.Sorted(maps.Keys(tc.files)))
			}
		})
	}
}

func writeZip(t *testing.T, data []byte) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "code.zip")
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// The same files zip to the same bytes, whenever they were written: an
// unchanged function redeploys unchanged.
func TestPackIsStable(t *testing.T) {
	files := map[string]string{"main.py": "x", "lib/a.py": "a", "lib/b.py": "b"}
	a, err := Pack(writeTree(t, files))
	if err != nil {
		t.Fatal(err)
	}
	dir := writeTree(t, files)
	later := time.Now().Add(time.Hour)
	if err := os.Chtimes(filepath.Join(dir, "main.py"), later, later); err != nil {
		t.Fatal(err)
	}
	b, err := Pack(dir)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(a[ArchiveKey], b[ArchiveKey]) {
		t.Fatal("the same files zipped differently")
	}
}

func TestParseEnv(t *testing.T) {
	env, err := parseEnv([]string{"A=1", "B=x=y", "C="})
	if err != nil {
		t.Fatal(err)
	}
	want := []corev1.EnvVar{{Name: "A", Value: "1"}, {Name: "B", Value: "x=y"}, {Name: "C"}}
	if !slices.Equal(env, want) {
		t.Fatalf("got %v, want %v", env, want)
	}
	for _, bad := range []string{"A", "=1"} {
		if _, err := parseEnv([]string{bad}); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}

// Deploy against fake clients: the ConfigMap and the Function it writes,
// then an update that keeps what its flags do not name.
func TestDeploy(t *testing.T) {
	ctx := context.Background()
	scheme := runtime.NewScheme()
	dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(scheme, map[schema.GroupVersionResource]string{fnmeta.Resource: "FunctionList"})
	cs := fake.NewClientset()

	d := Deployment{
		Name: "add", Namespace: "default", Files: map[string][]byte{"main.py": []byte("def handle(e): return e\n")},
		Handler: "main.handle", Env: []corev1.EnvVar{{Name: "A", Value: "1"}},
		MaxScale: ptr.To[int32](3), ScaleToZeroAfter: &metav1.Duration{Duration: 5 * time.Second},
	}
	result, err := Deploy(ctx, dyn, cs, d)
	if err != nil || result != "created" {
		t.Fatalf("first deploy: %q, %v", result, err)
	}
	fn := getFunction(t, dyn, "add")
	if fn.Spec.Runtime != "python3" || fn.Spec.Handler != "main.handle" || fn.Spec.Source.ConfigMap == nil ||
		fn.Spec.Source.ConfigMap.Name != "fn-add-source" || fn.Spec.Source.Inline != "" ||
		*fn.Spec.Scale.MaxScale != 3 || fn.Spec.Scale.ScaleToZeroAfter.Duration != 5*time.Second || len(fn.Spec.Env) != 1 {
		t.Fatalf("function spec %+v", fn.Spec)
	}
	cm, err := cs.CoreV1().ConfigMaps("default").Get(ctx, "fn-add-source", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if string(cm.BinaryData["main.py"]) != "def handle(e): return e\n" || cm.Labels[fnmeta.FunctionLabel] != "add" {
		t.Fatalf("configmap %+v", cm)
	}
	if len(cm.OwnerReferences) != 1 || cm.OwnerReferences[0].Kind != "Function" || cm.OwnerReferences[0].Name != "add" ||
		cm.OwnerReferences[0].APIVersion != "minik8s.io/v1" || cm.OwnerReferences[0].UID != fn.UID {
		t.Fatalf("owner references %+v, want the function (uid %q)", cm.OwnerReferences, fn.UID)
	}

	// An update with new code and only --runtime: the rest stays.
	d2 := Deployment{Name: "add", Namespace: "default", Runtime: "python3-ml", Files: map[string][]byte{ArchiveKey: []byte("zip")}}
	if result, err := Deploy(ctx, dyn, cs, d2); err != nil || result != "configured" {
		t.Fatalf("second deploy: %q, %v", result, err)
	}
	fn = getFunction(t, dyn, "add")
	if fn.Spec.Runtime != "python3-ml" || *fn.Spec.Scale.MaxScale != 3 || len(fn.Spec.Env) != 1 {
		t.Fatalf("updated spec %+v", fn.Spec)
	}
	cm, err = cs.CoreV1().ConfigMaps("default").Get(ctx, "fn-add-source", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if keys := slices.Sorted(maps.Keys(cm.BinaryData)); !slices.Equal(keys, []string{ArchiveKey}) || len(cm.OwnerReferences) != 1 {
		t.Fatalf("updated configmap keys %v, owners %v", keys, cm.OwnerReferences)
	}
}

func getFunction(t *testing.T, dyn *dynamicfake.FakeDynamicClient, name string) *minik8sv1.Function {
	t.Helper()
	u, err := dyn.Resource(fnmeta.Resource).Namespace("default").Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	fn, err := fromUnstructured(u)
	if err != nil {
		t.Fatal(err)
	}
	return fn
}

// An owner reference of a deleted function of the same name gives way
// to the new function's; others stay.
func TestWithOwner(t *testing.T) {
	other := metav1.OwnerReference{APIVersion: "v1", Kind: "ConfigMap", Name: "x", UID: "o"}
	old := ownerReference("add", "old")
	refs := withOwner([]metav1.OwnerReference{old, other}, ownerReference("add", "new"))
	if len(refs) != 2 || refs[0].UID != "new" || refs[1] != other {
		t.Fatalf("got %+v", refs)
	}
	if again := withOwner(refs, ownerReference("add", "new")); !slices.EqualFunc(again, refs, func(a, b metav1.OwnerReference) bool { return a.UID == b.UID }) {
		t.Fatalf("again: %+v", again)
	}
	if refs := withoutFunction([]metav1.OwnerReference{old, other}, "add"); len(refs) != 1 || refs[0] != other {
		t.Fatalf("without: %+v", refs)
	}
}
