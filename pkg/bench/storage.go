package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/minik8s/minik8s/pkg/controller/volume/localpath"
	"github.com/minik8s/minik8s/pkg/glusterfs"
	"github.com/minik8s/minik8s/pkg/image"
	"github.com/minik8s/minik8s/pkg/kubelet/runtime/daemon"
)

// StorageConfig is what `minik8s bench storage` measures and how.
type StorageConfig struct {
	// SizeMiB is the size of the file written and read back sequentially
	// (default 256).
	SizeMiB int
	// Files is the number of small files created, stat'ed and removed
	// (default 2000).
	Files int
	// Runs is how many times each place is measured; the report gives the
	// median (default 3, at most MaxStorageRuns).
	Runs int
	// Dir is where the node's root directory is made, and with it the
	// directory measured on the node's disk, the local-path volumes and
	// the hostPath volume, and the shared file system's directory (its
	// brick holds the glusterfs volumes' data): its filesystem is the
	// one measured (default: the temporary directory).
	Dir string
	// ContainerdAddress is containerd's socket (default
	// /run/containerd/containerd.sock); one is started when none answers.
	ContainerdAddress string
	// PodTimeout bounds each pod, from its creation to its end (default
	// 10m).
	PodTimeout time.Duration
	// JSON writes the report as JSON instead of a table.
	JSON bool
	// Progress, when set, gets a line per step.
	Progress io.Writer
}

// Defaults for the zero fields of StorageConfig.
const (
	DefaultStorageSizeMiB    = 256
	DefaultStorageFiles      = 2000
	DefaultStorageRuns       = 3
	DefaultStoragePodTimeout = 10 * time.Minute
	// MaxStorageRuns bounds Runs: a pod's results come back in its
	// termination message, which holds 4 KiB.
	MaxStorageRuns = 30
	// storageFileBytes is the size of each small file.
	storageFileBytes = 4096
)

func (c *StorageConfig) complete() error {
	if c.SizeMiB < 0 || c.Files < 0 || c.Runs < 0 || c.PodTimeout < 0 {
		return errors.New("size, files, runs and pod timeout must not be negative")
	}
	if c.SizeMiB == 0 {
		c.SizeMiB = DefaultStorageSizeMiB
	}
	if c.Files == 0 {
		c.Files = DefaultStorageFiles
	}
	if c.Runs == 0 {
		c.Runs = DefaultStorageRuns
	}
	if c.Runs > MaxStorageRuns {
		return fmt.Errorf("at most %d runs (a pod's results come back in its 4 KiB termination message), got %d", MaxStorageRuns, c.Runs)
	}
	if c.Dir == "" {
		c.Dir = os.TempDir()
	}
	if c.ContainerdAddress == "" {
		c.ContainerdAddress = daemon.DefaultAddress
	}
	if c.PodTimeout == 0 {
		c.PodTimeout = DefaultStoragePodTimeout
	}
	if c.Progress == nil {
		c.Progress = io.Discard
	}
	return nil
}

// Keys of the places measured, as in the JSON report and the pods' names.
const (
	KeyStorageNode      = "node-disk"
	KeyStorageEmptyDir  = "emptydir"
	KeyStorageHostPath  = "hostpath-pv"
	KeyStorageLocalPath = "local-path-pvc"
	KeyStorageGlusterfs = "glusterfs-pvc"
)

// storageVolume is one volume type measured in a pod: how the pod's
// volume is built, and what it needs beside the pod. A new type (a
// shared network filesystem) is one more row of storageVolumes.
type storageVolume struct {
	key, name string
	// shared: the type's volumes are the shared file system's
	// (pkg/glusterfs), which the benchmark runs for them; without it
	// (GlusterFS not installed) the type is left out of the report, with
	// the reason.
	shared bool
	// build returns the pod's volume and the PersistentVolume and claim
	// to create first (nil when none); pv, when it has a directory on the
	// node, is removed with its directory after the run.
	build func(s storageSetup) (src corev1.VolumeSource, pv *corev1.PersistentVolume, pvc *corev1.PersistentVolumeClaim)
}

// storageSetup is what a row builds its volume from.
type storageSetup struct {
	// id names what the run creates; nodeRoot is the node's root dir.
	id, nodeRoot string
	// request is what a claim asks for and a static volume offers.
	request resource.Quantity
	// sharedBrick is the shared file system's brick, the directory on
	// the host that holds its volumes' data ("" when it does not run).
	sharedBrick string
}

// storageClaimName is the claim of a volume type's pod.
func storageClaimName(key string) string { return "bench-storage-" + key }

// storageVolumes are the volume types measured, in report order.
var storageVolumes = []storageVolume{
	{
		key: KeyStorageEmptyDir, name: "emptyDir",
		build: func(storageSetup) (corev1.VolumeSource, *corev1.PersistentVolume, *corev1.PersistentVolumeClaim) {
			return corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}, nil, nil
		},
	},
	{
		// A static volume, as examples/storage/pv-hostpath.yaml: a
		// directory next to the local-path ones, kept (Retain) when its
		// claim goes; the claim asks for no class and names the volume.
		key: KeyStorageHostPath, name: "hostPath PV",
		build: func(s storageSetup) (corev1.VolumeSource, *corev1.PersistentVolume, *corev1.PersistentVolumeClaim) {
			dirOrCreate := corev1.HostPathDirectoryOrCreate
			pv := &corev1.PersistentVolume{
				ObjectMeta: metav1.ObjectMeta{Name: "bench-storage-" + s.id + "-hostpath", Labels: storageLabels()},
				Spec: corev1.PersistentVolumeSpec{
					Capacity:                      corev1.ResourceList{corev1.ResourceStorage: s.request},
					AccessModes:                   []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
					PersistentVolumeReclaimPolicy: corev1.PersistentVolumeReclaimRetain,
					StorageClassName:              "",
					PersistentVolumeSource: corev1.PersistentVolumeSource{HostPath: &corev1.HostPathVolumeSource{
						Path: filepath.Join(s.nodeRoot, "hostpath-pv"), Type: &dirOrCreate,
					}},
				},
			}
			pvc := storageClaim(KeyStorageHostPath, "", s.request)
			pvc.Spec.VolumeName = pv.Name
			return claimSource(pvc), pv, pvc
		},
	},
	{
		// A claim of the default class, provisioned on the node when the
		// pod is scheduled (WaitForFirstConsumer) and deleted with the
		// claim (Delete).
		key: KeyStorageLocalPath, name: "local-path PVC",
		build: func(s storageSetup) (corev1.VolumeSource, *corev1.PersistentVolume, *corev1.PersistentVolumeClaim) {
			pvc := storageClaim(KeyStorageLocalPath, localpath.ClassName, s.request)
			return claimSource(pvc), nil, pvc
		},
	},
	{
		// A claim of the shared file system's class, provisioned at once
		// (Immediate) as a directory of its GlusterFS volume and deleted
		// with the claim (Delete): the node mounts it with the FUSE
		// client, which talks TLS over TCP to glusterfsd, whose brick is
		// on the same disk as the node's root dir.
		key: KeyStorageGlusterfs, name: "glusterfs PVC", shared: true,
		build: func(s storageSetup) (corev1.VolumeSource, *corev1.PersistentVolume, *corev1.PersistentVolumeClaim) {
			pvc := storageClaim(KeyStorageGlusterfs, glusterfs.ClassName, s.request)
			pvc.Spec.AccessModes = []corev1.PersistentVolumeAccessMode{corev1.ReadWriteMany}
			return claimSource(pvc), nil, pvc
		},
	},
}

func storageLabels() map[string]string {
	return map[string]string{podAppLabel: storageAppValue}
}

// storageAppValue labels what the benchmark creates on its cluster.
const storageAppValue = "minik8s-bench-storage"

func storageClaim(key, class string, request resource.Quantity) *corev1.PersistentVolumeClaim {
	return &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: storageClaimName(key), Namespace: podNamespace, Labels: storageLabels()},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes:      []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			StorageClassName: &class,
			Resources: corev1.VolumeResourceRequirements{
				Requests: corev1.ResourceList{corev1.ResourceStorage: request},
			},
		},
	}
}

func claimSource(pvc *corev1.PersistentVolumeClaim) corev1.VolumeSource {
	return corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: pvc.Name}}
}

// storageRequest is the space a run needs, with room to spare, in whole
// GiB: the sequential file, the small files, and as much again.
func storageRequest(sizeMiB, files int) resource.Quantity {
	const gib = 1 << 30
	need := 2 * (int64(sizeMiB)<<20 + int64(files)*storageFileBytes)
	return *resource.NewQuantity((need+gib-1)/gib*gib, resource.BinarySI)
}

// storageScript is what runs, with busybox's sh, on the node's disk and
// in each pod: `sh -c storageScript sh BUSYBOX DIR SIZE_MIB FILES RUNS
// OUT`. In a work directory under DIR, each run writes SIZE_MIB MiB
// (dd bs=1M conv=fsync), reads them back (with O_DIRECT where the
// filesystem has it, else through the page cache), then creates FILES
// files of 4 KiB (the shell's echo), stats them (one find) and removes
// them (one rm -r). The write and the small files each start after a
// sync, untimed, so that what came before is on the disk. Every
// external command is an applet of BUSYBOX, the binary the pods' busybox
// image is built from. The output, to OUT (- for stdout), is one line per
// event, each stamped by busybox ts with the seconds since the script
// began (gettimeofday, microseconds):
//
//	O direct|cached   how the reads go
//	B <run>           run begins; the write starts
//	W                 written and synced; the read starts
//	R                 read
//	F                 the small files' creation starts
//	C                 created; the stats start
//	S                 stat'ed; the removal starts
//	X                 removed
//	D                 done, the work directory removed
//
// Any other line is a message (an error). The letters keep a run's lines
// short: a pod's results travel in its termination message.
const storageScript = `set -o pipefail
bb=$1 dir=$2 size=$3 files=$4 runs=$5 out=$6
body() {
	set -e
	w="$dir/minik8s-bench-storage"
	"$bb" rm -rf "$w"
	"$bb" mkdir -p "$w"
	"$bb" dd if=/dev/zero of="$w/probe" bs=4096 count=1 2>/dev/null
	if "$bb" dd if="$w/probe" of=/dev/null bs=4096 iflag=direct 2>/dev/null; then
		rflag=iflag=direct; echo "O direct"
	else
		rflag=; echo "O cached"
	fi
	"$bb" rm -f "$w/probe"
	blk=$("$bb" head -c 4095 /dev/zero | "$bb" tr '\0' x)
	run=1
	while [ "$run" -le "$runs" ]; do
		"$bb" sync
		echo "B $run"
		"$bb" dd if=/dev/zero of="$w/seq" bs=1048576 count="$size" conv=fsync 2>/dev/null
		echo W
		"$bb" dd if="$w/seq" of=/dev/null bs=1048576 $rflag 2>/dev/null
		echo R
		"$bb" rm -f "$w/seq"
		"$bb" mkdir "$w/files"
		"$bb" sync
		echo F
		i=0
		while [ "$i" -lt "$files" ]; do
			echo "$blk" >"$w/files/f$i"
			i=$((i + 1))
		done
		echo C
		n=$("$bb" find "$w/files" -type f | "$bb" wc -l)
		echo S
		if [ "$n" -ne "$files" ]; then
			echo "found $n files, want $files"
			exit 1
		fi
		"$bb" rm -r "$w/files"
		echo X
		run=$((run + 1))
	done
	"$bb" rm -rf "$w"
	echo D
}
if [ "$out" = - ]; then
	body 2>&1 | "$bb" ts -s '%.s'
else
	body 2>&1 | "$bb" ts -s '%.s' >"$out"
fi
`

// storageArgs are the script's arguments after `sh -c storageScript`.
func storageArgs(busybox, dir string, cfg StorageConfig, out string) []string {
	return []string{"sh", busybox, dir, strconv.Itoa(cfg.SizeMiB), strconv.Itoa(cfg.Files), strconv.Itoa(cfg.Runs), out}
}

// RunStorage measures sequential write and read throughput and small-file
// operations per second on the node's disk and in a pod on each volume
// type (storageVolumes), on a node of its own, and writes the report to
// w. The types on the shared file system need GlusterFS, which it runs
// for them (startSharedStorage); without it they are left out, and the
// report says why. Everything it creates (pods, claims, volumes and
// their directories, the GlusterFS server and mounts, node, control
// plane, network namespace) is removed before it returns.
func RunStorage(ctx context.Context, cfg StorageConfig, w io.Writer) (err error) {
	if err := cfg.complete(); err != nil {
		return err
	}
	busybox, err := image.FindBusybox()
	if err != nil {
		return fmt.Errorf("bench storage: %w", err)
	}
	e, err := newNodeEnv(ctx, nodeEnvConfig{
		bench: "storage", needsRoot: "a node (containerd, runc, cgroups, a network namespace, iptables)",
		logLabel: "control plane and node log", containerdAddress: cfg.ContainerdAddress, cleanupTimeout: 3 * time.Minute, progress: cfg.Progress,
	})
	if err != nil {
		return err
	}
	defer func() { err = e.close(err) }()

	fmt.Fprintf(cfg.Progress, "starting a control plane and a node, root dir in %s\n", cfg.Dir)
	c, err := startPodCluster(ctx, e.address, e.id, cfg.Dir, e.log)
	if err != nil {
		return err // what started is stopped
	}
	e.onClose(func(ctx context.Context) error {
		fmt.Fprintf(cfg.Progress, "cleaning up: node %s, control plane, network namespace, node root dir %s\n", c.nodeName, c.rootDir)
		return c.close(ctx, e.client)
	})
	fmt.Fprintf(cfg.Progress, "node %s Ready\n", c.nodeName)
	s := &storageRun{c: c, cfg: cfg, busybox: busybox, setup: storageSetup{
		id: e.id, nodeRoot: c.rootDir, request: storageRequest(cfg.SizeMiB, cfg.Files),
	}}

	// The shared file system, when a type needs it: stopped after the
	// benchmark's pods and claims are gone (removeAll, registered after
	// it, runs before it), before the cluster.
	sharedOff := ""
	if slices.ContainsFunc(storageVolumes, func(v storageVolume) bool { return v.shared }) {
		shared, reason, err := startSharedStorage(ctx, c, cfg.Dir, e.log, cfg.Progress)
		if shared != nil {
			e.onClose(func(ctx context.Context) error {
				fmt.Fprintf(cfg.Progress, "cleaning up: GlusterFS server and its directory %s\n", shared.dir)
				return shared.close(ctx)
			})
		}
		if err != nil {
			return fmt.Errorf("shared file system: %w", err)
		}
		if shared != nil {
			s.setup.sharedBrick = shared.brick()
		}
		sharedOff = reason
	}
	// Runs before the cluster's close: what a failed run left of the
	// benchmark's pods, claims and volumes.
	e.onClose(s.removeAll)

	report := &StorageReport{
		Node:       fmt.Sprintf("%s in network namespace %s, on containerd %s", c.nodeName, c.netnsName, e.address),
		NodeRoot:   c.rootDir,
		Filesystem: describeFilesystem(c.rootDir),
		Busybox:    busyboxVersion(ctx, busybox),
		SizeMiB:    cfg.SizeMiB, Files: cfg.Files, FileBytes: storageFileBytes, Runs: cfg.Runs,
	}
	row, err := s.measureNode(ctx)
	if err != nil {
		return err
	}
	report.Rows = append(report.Rows, row)
	for _, v := range storageVolumes {
		if v.shared && sharedOff != "" {
			fmt.Fprintf(cfg.Progress, "%s: not measured: %s\n", v.name, sharedOff)
			report.Skipped = append(report.Skipped, StorageSkipped{Key: v.key, Name: v.name, Reason: sharedOff})
			continue
		}
		row, err := s.measureVolume(ctx, v)
		if err != nil {
			return fmt.Errorf("%s: %w", v.name, err)
		}
		report.Rows = append(report.Rows, row)
	}
	report.computeRatios()
	if cfg.JSON {
		return report.WriteJSON(w)
	}
	return report.WriteTable(w)
}

// busyboxVersion is the first line busybox prints about itself.
func busyboxVersion(ctx context.Context, busybox string) string {
	out, _ := exec.CommandContext(ctx, busybox).Output()
	line, _, _ := strings.Cut(string(out), "\n")
	if line = strings.TrimSpace(line); line == "" {
		return busybox
	}
	return busybox + " (" + strings.TrimSuffix(line, " multi-call binary.") + ")"
}
