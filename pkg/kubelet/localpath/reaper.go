package localpath

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/clock"

	"github.com/minik8s/minik8s/pkg/controller/loop"
	"github.com/minik8s/minik8s/pkg/controller/volume/localpath"
)

// Config is what a Reaper is built from.
type Config struct {
	// Client reaches the apiserver (required).
	Client kubernetes.Interface
	// NodeName is this node (required).
	NodeName string
	// Root is where this node's local-path volumes live (default
	// localpath.DefaultRoot).
	Root string
	// Recorder receives the volumes' events; nil records none.
	Recorder record.EventRecorder
	Clock    clock.WithTicker
	Logger   *slog.Logger
}

// Reaper publishes the node's local-path root and deletes its Released
// local-path volumes.
type Reaper struct {
	cfg     Config
	factory informers.SharedInformerFactory
	volumes corelisters.PersistentVolumeLister
	loop    *loop.Loop[string]
}

// New validates cfg and wires the reaper to a PV informer of its own.
func New(cfg Config) (*Reaper, error) {
	if cfg.Client == nil || cfg.NodeName == "" {
		return nil, errors.New("local-path: a client and a node name are required")
	}
	if cfg.Root == "" {
		cfg.Root = localpath.DefaultRoot
	}
	root, err := filepath.Abs(cfg.Root)
	if err != nil {
		return nil, fmt.Errorf("local-path: root: %w", err)
	}
	cfg.Root = root
	if cfg.Clock == nil {
		cfg.Clock = clock.RealClock{}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Recorder == nil {
		cfg.Recorder = &record.FakeRecorder{}
	}
	factory := informers.NewSharedInformerFactory(cfg.Client, 0)
	pvInf := factory.Core().V1().PersistentVolumes()
	r := &Reaper{cfg: cfg, factory: factory, volumes: pvInf.Lister()}
	r.loop = &loop.Loop[string]{
		Queue: loop.NewQueue[string]("local-path-reaper", cfg.Clock), Reconcile: r.Reconcile,
		Logger: cfg.Logger.With("component", "local-path"), KeyAttr: "volume",
		Synced: []cache.InformerSynced{pvInf.Informer().HasSynced},
	}
	if _, err := pvInf.Informer().AddEventHandler(loop.KeyHandler(r.loop.Queue)); err != nil {
		return nil, fmt.Errorf("local-path: %w", err)
	}
	return r, nil
}

// Root is where this node's local-path volumes live.
func (r *Reaper) Root() string { return r.cfg.Root }

// Start publishes the root and reaps volumes until ctx ends.
func (r *Reaper) Start(ctx context.Context) error {
	if err := os.MkdirAll(r.cfg.Root, 0o755); err != nil {
		return fmt.Errorf("local-path root: %w", err)
	}
	r.factory.Start(ctx.Done())
	defer r.factory.Shutdown()
	go r.publishRoot(ctx)
	return r.loop.Run(ctx)
}

// publishRoot annotates the Node with the root, once it exists (the
// kubelet registers it), and again should the annotation go.
func (r *Reaper) publishRoot(ctx context.Context) {
	patch, _ := json.Marshal(map[string]any{"metadata": map[string]any{
		"annotations": map[string]string{localpath.AnnRoot: r.cfg.Root},
	}})
	wait.UntilWithContext(ctx, func(ctx context.Context) {
		node, err := r.cfg.Client.CoreV1().Nodes().Get(ctx, r.cfg.NodeName, metav1.GetOptions{})
		if err != nil || node.Annotations[localpath.AnnRoot] == r.cfg.Root {
			return
		}
		if _, err := r.cfg.Client.CoreV1().Nodes().Patch(ctx, r.cfg.NodeName, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil && ctx.Err() == nil {
			r.cfg.Logger.Warn("publish local-path root", "err", err)
		}
	}, 2*time.Second)
}

// Reconcile deletes the volume key names if it is one of this node's
// local-path volumes, Released, with reclaim policy Delete.
func (r *Reaper) Reconcile(ctx context.Context, key string) error {
	pv, err := r.volumes.Get(key)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	if !localpath.Provisioned(pv) || localpath.NodeOf(pv) != r.cfg.NodeName ||
		pv.Status.Phase != corev1.VolumeReleased || pv.Spec.PersistentVolumeReclaimPolicy != corev1.PersistentVolumeReclaimDelete {
		return nil
	}
	dir := ""
	switch {
	case pv.Spec.Local != nil:
		dir = pv.Spec.Local.Path
	case pv.Spec.HostPath != nil:
		dir = pv.Spec.HostPath.Path
	}
	if !r.inRoot(dir) {
		r.cfg.Recorder.Eventf(pv, corev1.EventTypeWarning, "VolumeFailedDelete", "%s is not under this node's local-path root %s: not removed", dir, r.cfg.Root)
		return nil
	}
	if err := os.RemoveAll(dir); err != nil {
		r.cfg.Recorder.Eventf(pv, corev1.EventTypeWarning, "VolumeFailedDelete", "remove %s: %v", dir, err)
		return fmt.Errorf("remove %s: %w", dir, err)
	}
	uid := pv.UID
	err = r.cfg.Client.CoreV1().PersistentVolumes().Delete(ctx, pv.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}})
	if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
		return fmt.Errorf("delete volume %s: %w", pv.Name, err)
	}
	r.cfg.Logger.Info("deleted local-path volume", "volume", pv.Name, "dir", dir)
	return nil
}

// inRoot: dir is strictly below the root.
func (r *Reaper) inRoot(dir string) bool {
	if dir == "" || !filepath.IsAbs(dir) {
		return false
	}
	rel, err := filepath.Rel(r.cfg.Root, filepath.Clean(dir))
	return err == nil && rel != "." && !strings.HasPrefix(rel, "..")
}
