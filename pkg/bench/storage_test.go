package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/minik8s/minik8s/pkg/controller/volume/localpath"
	"github.com/minik8s/minik8s/pkg/glusterfs"
	"github.com/minik8s/minik8s/pkg/image"
)

// storageLines is the script's output for runs of the given step times
// (write, read, create, stat, remove), each begun 1s after the previous.
func storageLines(reads string, runs ...[5]float64) string {
	var b strings.Builder
	t := 0.0
	stamp := func(line string) { b.WriteString(strconv.FormatFloat(t, 'f', 6, 64) + " " + line + "\n") }
	stamp("O " + reads)
	for i, r := range runs {
		t += 0.01
		stamp("B " + strconv.Itoa(i+1))
		t += r[0]
		stamp("W")
		t += r[1]
		stamp("R")
		t += 0.01
		stamp("F")
		t += r[2]
		stamp("C")
		t += r[3]
		stamp("S")
		t += r[4]
		stamp("X")
	}
	stamp("D")
	return b.String()
}

func near(a, b float64) bool { return math.Abs(a-b) <= 1e-6*math.Max(1, math.Abs(b)) }

func TestParseStorageOutput(t *testing.T) {
	const sizeMiB, files = 100, 1000
	mb := 100 * 1.048576 // 100 MiB in MB
	tests := []struct {
		name      string
		out       string
		wantErr   string
		reads     string
		writeMBps []float64
		fileOps   []float64
	}{
		{
			name:      "two runs, direct",
			out:       storageLines("direct", [5]float64{0.5, 0.25, 0.1, 0.05, 0.1}, [5]float64{1, 0.5, 0.2, 0.1, 0.2}),
			reads:     StorageReadsDirect,
			writeMBps: []float64{mb / 0.5, mb / 1},
			fileOps:   []float64{3000 / 0.25, 3000 / 0.5},
		},
		{
			name:      "cached, with a message that does not matter",
			out:       "0.000100 something said\n" + storageLines("cached", [5]float64{0.5, 0.25, 0.1, 0.05, 0.1}),
			reads:     StorageReadsCached,
			writeMBps: []float64{mb / 0.5},
			fileOps:   []float64{3000 / 0.25},
		},
		{
			name:    "failed: the messages are the error",
			out:     "0.000010 O direct\n0.000020 B 1\n0.000300 dd: can't open '/data/x': No space left on device\n",
			wantErr: "did not finish, after 0 runs: dd: can't open '/data/x': No space left on device",
		},
		{
			name:    "no output at all",
			out:     "",
			wantErr: "did not finish, after 0 runs: no output",
		},
		{
			name:    "a line that is not stamped",
			out:     "sh: set: line 1: illegal option -o pipefail\n",
			wantErr: "illegal option",
		},
		{
			name:    "steps out of order",
			out:     "0.1 O direct\n0.2 B 1\n0.3 R\n",
			wantErr: "event R where W was due",
		},
		{
			name:    "a run skipped",
			out:     "0.1 O direct\n0.2 B 2\n",
			wantErr: `run "2" begins after 0 runs`,
		},
		{
			name:    "done in the middle of a run",
			out:     "0.1 O direct\n0.2 B 1\n0.3 W\n0.4 D\n",
			wantErr: "done in the middle of run 1",
		},
		{
			name:    "a step of no time",
			out:     "0.1 O direct\n0.2 B 1\n0.3 W\n0.4 R\n0.5 F\n0.5 C\n0.6 S\n0.7 X\n0.8 D\n",
			wantErr: "run 1: a step took 0s",
		},
		{
			name:    "no read mode",
			out:     "0.1 D\n",
			wantErr: "did not say how it reads",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parseStorageOutput(tt.out, sizeMiB, files)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got.reads != tt.reads {
				t.Errorf("reads %q, want %q", got.reads, tt.reads)
			}
			if len(got.runs) != len(tt.writeMBps) {
				t.Fatalf("%d runs, want %d", len(got.runs), len(tt.writeMBps))
			}
			for i, r := range got.runs {
				if !near(r.WriteMBps, tt.writeMBps[i]) || !near(r.FileOpsPerSec, tt.fileOps[i]) {
					t.Errorf("run %d: write %v MB/s, %v file ops/s; want %v and %v", i+1, r.WriteMBps, r.FileOpsPerSec, tt.writeMBps[i], tt.fileOps[i])
				}
				if !near(r.ReadMBps, 2*r.WriteMBps) {
					t.Errorf("run %d: read %v MB/s, want twice the write's", i+1, r.ReadMBps)
				}
			}
		})
	}
}

func TestMedian(t *testing.T) {
	for _, tt := range []struct {
		in   []float64
		want float64
	}{
		{nil, 0},
		{[]float64{7}, 7},
		{[]float64{9, 1, 5}, 5},
		{[]float64{4, 1, 3, 2}, 2.5},
	} {
		in := append([]float64(nil), tt.in...)
		if got := median(in); got != tt.want {
			t.Errorf("median(%v) = %v, want %v", tt.in, got, tt.want)
		}
		for i := range in {
			if in[i] != tt.in[i] {
				t.Fatal("median reordered its input")
			}
		}
	}
}

func TestStorageReport(t *testing.T) {
	run := func(w, r, f float64) StorageRun { return StorageRun{WriteMBps: w, ReadMBps: r, FileOpsPerSec: f} }
	out := func(reads string, runs ...StorageRun) storageOutput { return storageOutput{reads: reads, runs: runs} }
	r := &StorageReport{
		Node: "bench-x in network namespace mk8s-bench-x", NodeRoot: "/tmp/minik8s-bench-node-1",
		Filesystem: "ext4 /dev/vda mounted on /", Busybox: "/bin/busybox (BusyBox v1.35.0)",
		SizeMiB: 256, Files: 2000, FileBytes: 4096, Runs: 3,
		Rows: []StorageRow{
			newStorageRow(KeyStorageNode, "node disk", "/tmp/minik8s-bench-node-1/node-disk",
				out(StorageReadsDirect, run(400, 800, 30000), run(500, 1000, 40000), run(600, 900, 20000))),
			newStorageRow(KeyStorageEmptyDir, "emptyDir", "/tmp/minik8s-bench-node-1/pods/u/volumes/kubernetes.io~empty-dir/data",
				out(StorageReadsDirect, run(250, 500, 10000), run(250, 500, 10000), run(250, 500, 10000))),
			newStorageRow(KeyStorageLocalPath, "local-path PVC", "/tmp/minik8s-bench-node-1/local-path/default_c_pvc-1",
				out(StorageReadsCached, run(1000, 9000, 60000))),
			newStorageRow(KeyStorageGlusterfs, "glusterfs PVC", "/tmp/minik8s-bench-glusterfs-1/brick/default_c_pvc-2",
				out(StorageReadsDirect, run(50, 90, 300))),
		},
	}
	r.computeRatios()
	node, empty, shared := r.Rows[0], r.Rows[1], r.Rows[3]
	if node.WriteMBps != 500 || node.ReadMBps != 900 || node.FileOpsPerSec != 30000 {
		t.Errorf("node medians %v %v %v, want 500 900 30000", node.WriteMBps, node.ReadMBps, node.FileOpsPerSec)
	}
	if *node.WriteVsNode != 1 || *empty.WriteVsNode != 0.5 || !near(*empty.ReadVsNode, 500.0/900) || !near(*empty.FileOpsVsNode, 1.0/3) {
		t.Errorf("ratios: node %v, emptyDir %v %v %v", *node.WriteVsNode, *empty.WriteVsNode, *empty.ReadVsNode, *empty.FileOpsVsNode)
	}
	if !near(*shared.WriteVsNode, 0.1) || !near(*shared.ReadVsNode, 0.1) || !near(*shared.FileOpsVsNode, 0.01) {
		t.Errorf("glusterfs ratios %v %v %v, want 0.1 0.1 0.01", *shared.WriteVsNode, *shared.ReadVsNode, *shared.FileOpsVsNode)
	}

	var b bytes.Buffer
	if err := r.WriteTable(&b); err != nil {
		t.Fatal(err)
	}
	table := b.String()
	for _, want := range []string{
		"ext4 /dev/vda mounted on / (node root dir /tmp/minik8s-bench-node-1)",
		"256 MiB written", "2000 files of 4096 bytes", "median of 3 runs",
		"PLACE", "WRITE VS NODE", "FILES VS NODE",
		"500.0", "900.0", "30000", "1.00x", "0.50x", "0.56x", "0.33x",
		"9000.0*", "2.00x", "10.00x",
		"local-path PVC  /tmp/minik8s-bench-node-1/local-path/default_c_pvc-1",
		"except where marked *",
		"glusterfs PVC   /tmp/minik8s-bench-glusterfs-1/brick/default_c_pvc-2", "0.10x", "0.01x",
		"glusterfs PVC: the shared file system; the pod's I/O goes through the node's FUSE client", "O_DIRECT holds at the pod's end only",
	} {
		if !strings.Contains(table, want) {
			t.Errorf("table lacks %q:\n%s", want, table)
		}
	}

	var j bytes.Buffer
	if err := r.WriteJSON(&j); err != nil {
		t.Fatal(err)
	}
	var back StorageReport
	if err := json.Unmarshal(j.Bytes(), &back); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(table, "not measured") || strings.Contains(j.String(), "skipped") {
		t.Errorf("a type left out, though none was:\n%s\n%s", table, j.String())
	}
	if len(back.Rows) != 4 || back.Rows[1].Key != KeyStorageEmptyDir || back.Rows[1].WriteVsNode == nil || *back.Rows[1].WriteVsNode != 0.5 ||
		len(back.Rows[0].Runs) != 3 || back.Rows[2].Reads != StorageReadsCached {
		t.Errorf("JSON round trip: %s", j.String())
	}

	// A type left out (no GlusterFS) says why, in the table and the JSON.
	r.Rows = r.Rows[:3]
	r.Skipped = []StorageSkipped{{Key: KeyStorageGlusterfs, Name: "glusterfs PVC", Reason: "GlusterFS is not installed: glusterfsd not found"}}
	b.Reset()
	if err := r.WriteTable(&b); err != nil {
		t.Fatal(err)
	}
	if want := "\nnot measured:\n  glusterfs PVC  GlusterFS is not installed: glusterfsd not found\n"; !strings.Contains(b.String(), want) ||
		strings.Contains(b.String(), "FUSE") {
		t.Errorf("table lacks %q, or explains a row it lacks:\n%s", want, b.String())
	}
	j.Reset()
	if err := r.WriteJSON(&j); err != nil {
		t.Fatal(err)
	}
	back = StorageReport{}
	if err := json.Unmarshal(j.Bytes(), &back); err != nil {
		t.Fatal(err)
	}
	if len(back.Skipped) != 1 || back.Skipped[0] != r.Skipped[0] {
		t.Errorf("JSON skipped: %s", j.String())
	}

	// Without the node's row there is nothing to compare with.
	noNode := &StorageReport{Rows: []StorageRow{empty}}
	noNode.Rows[0].WriteVsNode = nil
	noNode.computeRatios()
	if noNode.Rows[0].WriteVsNode != nil {
		t.Error("a ratio without the node's row")
	}
}

func TestFilesystemOf(t *testing.T) {
	const mountinfo = `22 1 254:0 / / rw,relatime shared:1 - ext4 /dev/vda rw,discard
23 22 0:21 / /proc rw,nosuid shared:2 - proc proc rw
30 22 0:30 / /tmp rw,nosuid shared:9 - tmpfs tmpfs rw,size=1g
31 30 0:31 / /tmp/my\040disk rw shared:10 - xfs /dev/sdb\0401 rw
32 22 0:32 / /tmpfoo rw shared:11 - btrfs /dev/sdc rw
33 30 0:33 / /tmp rw shared:12 - ext4 /dev/sdd rw
`
	for _, tt := range []struct{ path, want string }{
		{"/var/lib/minik8s", "ext4 /dev/vda mounted on /"},
		{"/", "ext4 /dev/vda mounted on /"},
		{"/tmp/minik8s-bench-node-1", "ext4 /dev/sdd mounted on /tmp"}, // the last mount on /tmp hides the first
		{"/tmp", "ext4 /dev/sdd mounted on /tmp"},
		{"/tmp/my disk/x", "xfs /dev/sdb 1 mounted on /tmp/my disk"},
		{"/tmpfoo/x", "btrfs /dev/sdc mounted on /tmpfoo"},
		{"/tmpf", "ext4 /dev/vda mounted on /"},
	} {
		if got := filesystemOf(mountinfo, tt.path); got != tt.want {
			t.Errorf("filesystemOf(%s) = %q, want %q", tt.path, got, tt.want)
		}
	}
	if got := filesystemOf("garbage\n", "/x"); got != "unknown filesystem" {
		t.Errorf("no mounts: %q", got)
	}
}

func TestStorageVolumes(t *testing.T) {
	s := storageSetup{id: "abc123", nodeRoot: "/tmp/minik8s-bench-node-1", request: storageRequest(256, 2000)}
	seen := map[string]bool{}
	for _, v := range storageVolumes {
		if v.key == "" || v.name == "" || seen[v.key] || v.key == KeyStorageNode {
			t.Errorf("volume type %q (%q): keys must be set and unique", v.key, v.name)
		}
		seen[v.key] = true
		src, pv, pvc := v.build(s)
		pod := storagePod("bench-storage-"+v.key, src, StorageConfig{SizeMiB: 256, Files: 2000, Runs: 3})
		if pod.Labels[podAppLabel] != storageAppValue || pod.Spec.RestartPolicy != corev1.RestartPolicyNever {
			t.Errorf("%s: pod labels %v, restart policy %s", v.key, pod.Labels, pod.Spec.RestartPolicy)
		}
		c := pod.Spec.Containers[0]
		if c.Image != image.BusyboxRef || c.VolumeMounts[0].MountPath != storageMount || c.TerminationMessagePath != "/dev/termination-log" {
			t.Errorf("%s: container %+v", v.key, c)
		}
		// sh -c SCRIPT $0 BUSYBOX DIR SIZE FILES RUNS OUT
		if want := []string{podBusybox, "sh", "-c", storageScript, "sh", podBusybox, storageMount, "256", "2000", "3", "/dev/termination-log"}; strings.Join(c.Command, "\x00") != strings.Join(want, "\x00") {
			t.Errorf("%s: command %q", v.key, c.Command)
		}
		switch v.key {
		case KeyStorageEmptyDir:
			if src.EmptyDir == nil || pv != nil || pvc != nil {
				t.Errorf("emptyDir: %+v %v %v", src, pv, pvc)
			}
		case KeyStorageHostPath:
			if pv == nil || pvc == nil || pv.Spec.HostPath == nil || pvc.Spec.VolumeName != pv.Name ||
				*pvc.Spec.StorageClassName != "" || pv.Spec.StorageClassName != "" ||
				pv.Spec.PersistentVolumeReclaimPolicy != corev1.PersistentVolumeReclaimRetain ||
				filepath.Dir(pv.Spec.HostPath.Path) != s.nodeRoot || pv.Labels[podAppLabel] != storageAppValue {
				t.Fatalf("hostPath PV: %+v / %+v", pv, pvc)
			}
			if q := pv.Spec.Capacity[corev1.ResourceStorage]; q.Cmp(pvc.Spec.Resources.Requests[corev1.ResourceStorage]) < 0 {
				t.Errorf("hostPath PV of %s for a claim of more", q.String())
			}
		case KeyStorageLocalPath:
			if pv != nil || pvc == nil || *pvc.Spec.StorageClassName != localpath.ClassName || pvc.Spec.VolumeName != "" || v.shared {
				t.Errorf("local-path: %v %+v", pv, pvc)
			}
		case KeyStorageGlusterfs:
			if pv != nil || pvc == nil || *pvc.Spec.StorageClassName != glusterfs.ClassName || pvc.Spec.VolumeName != "" || !v.shared ||
				len(pvc.Spec.AccessModes) != 1 || pvc.Spec.AccessModes[0] != corev1.ReadWriteMany || pvc.Labels[podAppLabel] != storageAppValue {
				t.Errorf("glusterfs: shared %v, %v %+v", v.shared, pv, pvc)
			}
		default:
			t.Errorf("volume type %q has no test", v.key)
		}
		if v.shared != (v.key == KeyStorageGlusterfs) {
			t.Errorf("%s: shared %v", v.key, v.shared)
		}
		if pvc != nil && src.PersistentVolumeClaim.ClaimName != pvc.Name {
			t.Errorf("%s: the pod mounts claim %s, not %s", v.key, src.PersistentVolumeClaim.ClaimName, pvc.Name)
		}
	}
	for _, key := range []string{KeyStorageEmptyDir, KeyStorageHostPath, KeyStorageLocalPath, KeyStorageGlusterfs} {
		if !seen[key] {
			t.Errorf("no volume type %s", key)
		}
	}
}

func TestStorageRequest(t *testing.T) {
	for _, tt := range []struct {
		size, files int
		want        string
	}{
		{256, 2000, "1Gi"},
		{512, 0, "1Gi"},
		{513, 0, "2Gi"},
		{4096, 2000, "9Gi"},
	} {
		if got := storageRequest(tt.size, tt.files); got.Cmp(resource.MustParse(tt.want)) != 0 {
			t.Errorf("storageRequest(%d, %d) = %s, want %s", tt.size, tt.files, got.String(), tt.want)
		}
	}
}

func TestStorageConfigComplete(t *testing.T) {
	c := StorageConfig{}
	if err := c.complete(); err != nil {
		t.Fatal(err)
	}
	if c.SizeMiB != DefaultStorageSizeMiB || c.Files != DefaultStorageFiles || c.Runs != DefaultStorageRuns || c.Dir == "" || c.PodTimeout != DefaultStoragePodTimeout {
		t.Errorf("defaults: %+v", c)
	}
	for _, bad := range []StorageConfig{{Runs: MaxStorageRuns + 1}, {SizeMiB: -1}, {Files: -1}} {
		if err := bad.complete(); err == nil {
			t.Errorf("%+v accepted", bad)
		}
	}
}

// TestStorageScript runs the benchmark's script, small, with this
// machine's busybox in a temporary directory, as the benchmark does on
// the node's disk, and parses what it prints. No root needed.
func TestStorageScript(t *testing.T) {
	bb, err := image.FindBusybox()
	if err != nil {
		t.Skip(err)
	}
	dir := t.TempDir()
	cfg := StorageConfig{SizeMiB: 2, Files: 20, Runs: 2}
	args := append([]string{"sh", "-c", storageScript}, storageArgs(bb, dir, cfg, "-")...)
	out, err := exec.CommandContext(context.Background(), bb, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("script: %v\n%s", err, out)
	}
	res, err := parseStorageOutput(string(out), cfg.SizeMiB, cfg.Files)
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if len(res.runs) != cfg.Runs || (res.reads != StorageReadsDirect && res.reads != StorageReadsCached) {
		t.Errorf("%d runs, reads %q:\n%s", len(res.runs), res.reads, out)
	}
	// 2 runs: 7 lines each, and O and D.
	if n := strings.Count(string(out), "\n"); n != 2*7+2 {
		t.Errorf("%d lines:\n%s", n, out)
	}
	if matches, _ := filepath.Glob(filepath.Join(dir, "*")); len(matches) != 0 {
		t.Errorf("the script left %v", matches)
	}

	// A failure (here: the work directory cannot be made) ends the
	// script early and its message reaches the error.
	args = append([]string{"sh", "-c", storageScript}, storageArgs(bb, "/proc/version", cfg, "-")...)
	out, _ = exec.CommandContext(context.Background(), bb, args...).CombinedOutput()
	if _, err := parseStorageOutput(string(out), cfg.SizeMiB, cfg.Files); err == nil || !strings.Contains(err.Error(), "did not finish") {
		t.Errorf("failed script: %v\n%s", err, out)
	}
}

// TestStartSharedStorageOff: without GlusterFS's programs, or where its
// volume files cannot name the directory, the shared file system does not
// start, and the reason is what the report gives; nothing is made.
func TestStartSharedStorageOff(t *testing.T) {
	saved := sharedPrograms
	t.Cleanup(func() { sharedPrograms = saved })
	dir := t.TempDir()

	sharedPrograms = []func() (string, error){func() (string, error) {
		return "", errors.New("glusterfsd not found (apt-get install glusterfs-client; make deps installs it)")
	}}
	sh, reason, err := startSharedStorage(context.Background(), nil, dir, slog.New(slog.DiscardHandler), io.Discard)
	if sh != nil || err != nil || reason != "GlusterFS is not installed: glusterfsd not found (apt-get install glusterfs-client; make deps installs it)" {
		t.Errorf("not installed: %v, %q, %v", sh, reason, err)
	}

	sharedPrograms = []func() (string, error){func() (string, error) { return "/usr/sbin/glusterfsd", nil }}
	spaced := filepath.Join(dir, "my disk")
	sh, reason, err = startSharedStorage(context.Background(), nil, spaced, slog.New(slog.DiscardHandler), io.Discard)
	if sh != nil || err != nil || !strings.Contains(reason, "white space") || !strings.Contains(reason, spaced) {
		t.Errorf("white space: %v, %q, %v", sh, reason, err)
	}
	if matches, _ := filepath.Glob(filepath.Join(dir, "*")); len(matches) != 0 {
		t.Errorf("made %v", matches)
	}
}

// TestMountsUnder finds mounts below a directory, at any depth, deepest
// first, of the type asked for only; a directory that is not there has
// none. Mounts tmpfs: root only.
func TestMountsUnder(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("mounts tmpfs: needs root")
	}
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a"), filepath.Join(dir, "a", "b", "c")
	for _, m := range []string{a, b} {
		if err := os.MkdirAll(m, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := unix.Mount("tmpfs", m, "tmpfs", 0, "size=1m"); err != nil {
			t.Skipf("mount tmpfs: %v", err)
		}
		t.Cleanup(func() { _ = unix.Unmount(m, unix.MNT_DETACH) })
		if m == a {
			if err := os.MkdirAll(b, 0o755); err != nil {
				t.Fatal(err)
			}
		}
	}
	got, err := mountsUnder(dir, "tmpfs")
	if err != nil || strings.Join(got, " ") != b+" "+a {
		t.Errorf("mountsUnder(%s) = %v, %v; want [%s %s]", dir, got, err, b, a)
	}
	if got, err := mountsUnder(dir, glusterfs.FSType); err != nil || len(got) != 0 {
		t.Errorf("glusterfs mounts: %v, %v", got, err)
	}
	if got, err := mountsUnder(filepath.Join(dir, "gone"), "tmpfs"); err != nil || len(got) != 0 {
		t.Errorf("a missing directory: %v, %v", got, err)
	}
}
