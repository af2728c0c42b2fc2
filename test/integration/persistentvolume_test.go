package integration

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/minik8s/minik8s/pkg/controller/volume/localpath"
	kubeletlocalpath "github.com/minik8s/minik8s/pkg/kubelet/localpath"
)

// pvStatic is a hostPath PV of class, size and access modes, with labels.
func pvStatic(name, class, size string, modes []corev1.PersistentVolumeAccessMode, labels map[string]string) *corev1.PersistentVolume {
	return &corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels},
		Spec: corev1.PersistentVolumeSpec{
			Capacity:         corev1.ResourceList{corev1.ResourceStorage: resource.MustParse(size)},
			AccessModes:      modes,
			StorageClassName: class,
			PersistentVolumeSource: corev1.PersistentVolumeSource{
				HostPath: &corev1.HostPathVolumeSource{Path: "/tmp/" + name},
			},
		},
	}
}

// pvClaim is a claim in ns asking for size of class (nil: none named).
func pvClaim(ns, name string, class *string, size string, modes ...corev1.PersistentVolumeAccessMode) *corev1.PersistentVolumeClaim {
	if len(modes) == 0 {
		modes = []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce}
	}
	return &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes:      modes,
			StorageClassName: class,
			Resources:        corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse(size)}},
		},
	}
}

var rwo = []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce}

func pvCreate(t *testing.T, c *cluster, pvs ...*corev1.PersistentVolume) {
	t.Helper()
	for _, pv := range pvs {
		if _, err := c.client.CoreV1().PersistentVolumes().Create(ctxT(t), pv, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
}

func pvcCreate(t *testing.T, c *cluster, pvc *corev1.PersistentVolumeClaim) *corev1.PersistentVolumeClaim {
	t.Helper()
	got, err := c.client.CoreV1().PersistentVolumeClaims(pvc.Namespace).Create(ctxT(t), pvc, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return got
}

func pvNamespace(t *testing.T, c *cluster, name string) string {
	t.Helper()
	if _, err := c.client.CoreV1().Namespaces().Create(ctxT(t), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	return name
}

// pvcWaitBound waits for the claim to be Bound and returns it.
func pvcWaitBound(t *testing.T, c *cluster, ns, name string) *corev1.PersistentVolumeClaim {
	t.Helper()
	var pvc *corev1.PersistentVolumeClaim
	waitFor(t, "claim "+ns+"/"+name+" Bound", func(ctx context.Context) (bool, error) {
		var err error
		pvc, err = c.client.CoreV1().PersistentVolumeClaims(ns).Get(ctx, name, metav1.GetOptions{})
		return err == nil && pvc.Status.Phase == corev1.ClaimBound, nil
	})
	return pvc
}

// pvWaitPhase waits for the volume's phase and returns the volume.
func pvWaitPhase(t *testing.T, c *cluster, name string, phase corev1.PersistentVolumePhase) *corev1.PersistentVolume {
	t.Helper()
	var pv *corev1.PersistentVolume
	waitFor(t, "volume "+name+" "+string(phase), func(ctx context.Context) (bool, error) {
		var err error
		pv, err = c.client.CoreV1().PersistentVolumes().Get(ctx, name, metav1.GetOptions{})
		return err == nil && pv.Status.Phase == phase, nil
	})
	return pv
}

// pvWaitEvent waits for an event about the object with reason and a
// message containing msg, and then checks that the claim is still Pending.
func pvWaitEvent(t *testing.T, c *cluster, ns, kind, name, reason, msg string) {
	t.Helper()
	waitFor(t, kind+" "+name+" event "+reason+" "+msg, func(ctx context.Context) (bool, error) {
		for _, m := range rsEvents(t, ctx, c, ns, kind, name, reason) {
			if strings.Contains(m, msg) {
				return true, nil
			}
		}
		return false, nil
	})
}

func pvWaitGone(t *testing.T, what string, get func(ctx context.Context) error) {
	t.Helper()
	waitFor(t, what+" gone", func(ctx context.Context) (bool, error) {
		err := get(ctx)
		if apierrors.IsNotFound(err) {
			return true, nil
		}
		return false, nil
	})
}

func TestPersistentVolumeBinding(t *testing.T) {
	c := startCluster(t)
	noClass := ptr.To("")

	t.Run("the smallest volume that fits", func(t *testing.T) {
		ns := pvNamespace(t, c, "smallest")
		pvCreate(t, c,
			pvStatic("small-1g", "manual", "1Gi", rwo, nil),
			pvStatic("small-10g", "manual", "10Gi", rwo, nil),
			pvStatic("small-5g", "manual", "5Gi", rwo, nil),
		)
		// As kubectl get pv shows them: all three Available.
		for _, name := range []string{"small-1g", "small-10g", "small-5g"} {
			pvWaitPhase(t, c, name, corev1.VolumeAvailable)
		}
		pvcCreate(t, c, pvClaim(ns, "data", ptr.To("manual"), "3Gi"))
		pvc := pvcWaitBound(t, c, ns, "data")
		if pvc.Spec.VolumeName != "small-5g" {
			t.Fatalf("claim bound to %q, want the smallest that fits, small-5g", pvc.Spec.VolumeName)
		}
		if got := pvc.Status.Capacity[corev1.ResourceStorage]; got.String() != "5Gi" || !slices.Equal(pvc.Status.AccessModes, rwo) {
			t.Errorf("claim status capacity %s, modes %v; want the volume's 5Gi, RWO", got.String(), pvc.Status.AccessModes)
		}
		if pvc.Annotations["pv.kubernetes.io/bind-completed"] != "yes" || pvc.Annotations["pv.kubernetes.io/bound-by-controller"] != "yes" {
			t.Errorf("claim annotations %v", pvc.Annotations)
		}
		pv := pvWaitPhase(t, c, "small-5g", corev1.VolumeBound)
		if ref := pv.Spec.ClaimRef; ref == nil || ref.Namespace != ns || ref.Name != "data" || ref.UID != pvc.UID {
			t.Errorf("volume claimRef %+v", pv.Spec.ClaimRef)
		}
		if pv.Annotations["pv.kubernetes.io/bound-by-controller"] != "yes" {
			t.Errorf("volume annotations %v", pv.Annotations)
		}
		for _, name := range []string{"small-1g", "small-10g"} {
			pvWaitPhase(t, c, name, corev1.VolumeAvailable)
		}
	})

	t.Run("no volume matches: Pending with the reason", func(t *testing.T) {
		ns := pvNamespace(t, c, "mismatch")
		pvCreate(t, c, pvStatic("mm-fast", "", "5Gi", rwo, map[string]string{"tier": "fast"}))
		selector := pvClaim(ns, "slow", noClass, "1Gi")
		selector.Spec.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"tier": "slow"}}
		pvcCreate(t, c, selector)
		pvcCreate(t, c, pvClaim(ns, "shared", noClass, "1Gi", corev1.ReadWriteMany))
		pvcCreate(t, c, pvClaim(ns, "big", noClass, "50Gi"))
		for _, name := range []string{"slow", "shared", "big"} {
			pvWaitEvent(t, c, ns, "PersistentVolumeClaim", name, "FailedBinding", "no persistent volumes available for this claim and no storage class is set")
		}
		// A claim that matches takes the volume: the others were not
		// refused for want of trying.
		fits := pvClaim(ns, "fits", noClass, "1Gi")
		fits.Spec.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"tier": "fast"}}
		pvcCreate(t, c, fits)
		if got := pvcWaitBound(t, c, ns, "fits").Spec.VolumeName; got != "mm-fast" {
			t.Fatalf("claim fits bound to %q", got)
		}
		for _, name := range []string{"slow", "shared", "big"} {
			pvc, err := c.client.CoreV1().PersistentVolumeClaims(ns).Get(ctxT(t), name, metav1.GetOptions{})
			if err != nil || pvc.Status.Phase != corev1.ClaimPending || pvc.Spec.VolumeName != "" {
				t.Errorf("claim %s: %v, phase %s, volume %q; want Pending", name, err, pvc.Status.Phase, pvc.Spec.VolumeName)
			}
		}
	})

	t.Run("a claim of another class does not take the volume", func(t *testing.T) {
		ns := pvNamespace(t, c, "classes")
		if _, err := c.client.StorageV1().StorageClasses().Create(ctxT(t), &storagev1.StorageClass{
			ObjectMeta: metav1.ObjectMeta{Name: "static"}, Provisioner: "kubernetes.io/no-provisioner",
		}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		pvCreate(t, c, pvStatic("cls-gold", "gold", "5Gi", rwo, nil))
		pvcCreate(t, c, pvClaim(ns, "data", ptr.To("static"), "1Gi"))
		// A class of static volumes only: the claim waits for an
		// administrator, as Kubernetes says.
		pvWaitEvent(t, c, ns, "PersistentVolumeClaim", "data", "ExternalProvisioning", "external provisioner 'kubernetes.io/no-provisioner' or manually by the system administrator")
		pvWaitPhase(t, c, "cls-gold", corev1.VolumeAvailable)
	})

	t.Run("an unknown class is reported", func(t *testing.T) {
		ns := pvNamespace(t, c, "unknown")
		pvcCreate(t, c, pvClaim(ns, "data", ptr.To("fast"), "1Gi"))
		pvWaitEvent(t, c, ns, "PersistentVolumeClaim", "data", "ProvisioningFailed", `storageclass.storage.k8s.io "fast" not found`)
	})

	t.Run("a claim names its volume", func(t *testing.T) {
		ns := pvNamespace(t, c, "volname")
		pvCreate(t, c, pvStatic("vn-small", "", "1Gi", rwo, nil), pvStatic("vn-big", "", "8Gi", rwo, nil))
		pvc := pvClaim(ns, "data", noClass, "1Gi")
		pvc.Spec.VolumeName = "vn-big"
		pvcCreate(t, c, pvc)
		got := pvcWaitBound(t, c, ns, "data")
		if got.Spec.VolumeName != "vn-big" || got.Annotations["pv.kubernetes.io/bound-by-controller"] != "" {
			t.Fatalf("claim volume %q annotations %v; want vn-big, not bound by the controller", got.Spec.VolumeName, got.Annotations)
		}
		pv := pvWaitPhase(t, c, "vn-big", corev1.VolumeBound)
		if pv.Annotations["pv.kubernetes.io/bound-by-controller"] != "yes" {
			t.Errorf("volume annotations %v: the controller wrote its claimRef", pv.Annotations)
		}

		// A claim naming a volume bound to another waits, and says why.
		other := pvClaim(ns, "other", noClass, "1Gi")
		other.Spec.VolumeName = "vn-big"
		pvcCreate(t, c, other)
		pvWaitEvent(t, c, ns, "PersistentVolumeClaim", "other", "FailedBinding", `volume "vn-big" already bound to a different claim.`)
		// One naming a volume too small, too.
		small := pvClaim(ns, "small", noClass, "2Gi")
		small.Spec.VolumeName = "vn-small"
		pvcCreate(t, c, small)
		pvWaitEvent(t, c, ns, "PersistentVolumeClaim", "small", "FailedBinding", `Cannot bind to requested volume "vn-small": requested PV is too small`)
	})

	t.Run("a volume names its claim", func(t *testing.T) {
		ns := pvNamespace(t, c, "claimref")
		reserved := pvStatic("cr-reserved", "", "20Gi", rwo, nil)
		reserved.Spec.ClaimRef = &corev1.ObjectReference{Namespace: ns, Name: "db"}
		pvCreate(t, c, reserved, pvStatic("cr-fits", "", "1Gi", rwo, nil))
		pvWaitPhase(t, c, "cr-reserved", corev1.VolumeAvailable)
		pvcCreate(t, c, pvClaim(ns, "db", noClass, "1Gi"))
		if got := pvcWaitBound(t, c, ns, "db").Spec.VolumeName; got != "cr-reserved" {
			t.Fatalf("claim bound to %q, want the volume reserved for it", got)
		}
		// Another claim does not get the reserved volume's place.
		pvWaitPhase(t, c, "cr-fits", corev1.VolumeAvailable)
	})

	t.Run("the default class is set on claims that name none", func(t *testing.T) {
		ns := pvNamespace(t, c, "defaults")
		sc, err := c.client.StorageV1().StorageClasses().Get(ctxT(t), "local-path", metav1.GetOptions{})
		if err != nil {
			t.Fatalf("the control plane's default class: %v", err)
		}
		if sc.Annotations["storageclass.kubernetes.io/is-default-class"] != "true" || sc.Provisioner != "minik8s.io/local-path" ||
			ptr.Deref(sc.VolumeBindingMode, "") != storagev1.VolumeBindingWaitForFirstConsumer || ptr.Deref(sc.ReclaimPolicy, "") != corev1.PersistentVolumeReclaimDelete {
			t.Errorf("default class %+v", sc)
		}
		got := pvcCreate(t, c, pvClaim(ns, "data", nil, "1Gi"))
		if ptr.Deref(got.Spec.StorageClassName, "<nil>") != "local-path" {
			t.Errorf("claim without a class got %q, want local-path", ptr.Deref(got.Spec.StorageClassName, "<nil>"))
		}
		explicit := pvcCreate(t, c, pvClaim(ns, "none", noClass, "1Gi"))
		if ptr.Deref(explicit.Spec.StorageClassName, "<nil>") != "" {
			t.Errorf("claim asking for no class got %q", ptr.Deref(explicit.Spec.StorageClassName, "<nil>"))
		}
		// WaitForFirstConsumer: no volume before a pod is scheduled.
		pvWaitEvent(t, c, ns, "PersistentVolumeClaim", "data", "WaitForFirstConsumer", "waiting for first consumer to be created before binding")

		// With two default classes, the newest wins, as in Kubernetes.
		// Creation times have a one-second resolution: wait for the next.
		waitFor(t, "a later second", func(context.Context) (bool, error) {
			return time.Now().Truncate(time.Second).After(sc.CreationTimestamp.Time), nil
		})
		if _, err := c.client.StorageV1().StorageClasses().Create(ctxT(t), &storagev1.StorageClass{
			ObjectMeta:  metav1.ObjectMeta{Name: "newer", Annotations: map[string]string{"storageclass.kubernetes.io/is-default-class": "true"}},
			Provisioner: "example.com/newer",
		}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			_ = c.client.StorageV1().StorageClasses().Delete(context.Background(), "newer", metav1.DeleteOptions{})
		})
		if got := pvcCreate(t, c, pvClaim(ns, "later", nil, "1Gi")); ptr.Deref(got.Spec.StorageClassName, "<nil>") != "newer" {
			t.Errorf("with two defaults the claim got %q, want the newest, newer", ptr.Deref(got.Spec.StorageClassName, "<nil>"))
		}
	})

	t.Run("claims and volumes carry the protection finalizers", func(t *testing.T) {
		ns := pvNamespace(t, c, "finalizers")
		pvCreate(t, c, pvStatic("fin-pv", "x", "1Gi", rwo, nil))
		pv, err := c.client.CoreV1().PersistentVolumes().Get(ctxT(t), "fin-pv", metav1.GetOptions{})
		if err != nil || !slices.Contains(pv.Finalizers, "kubernetes.io/pv-protection") {
			t.Errorf("volume finalizers %v (%v)", pv.Finalizers, err)
		}
		pvc := pvcCreate(t, c, pvClaim(ns, "data", noClass, "1Gi"))
		if !slices.Contains(pvc.Finalizers, "kubernetes.io/pvc-protection") {
			t.Errorf("claim finalizers %v", pvc.Finalizers)
		}
	})

	t.Run("a claim whose volume is gone is Lost", func(t *testing.T) {
		ns := pvNamespace(t, c, "lost")
		pvCreate(t, c, pvStatic("doomed", "lost", "1Gi", rwo, nil))
		pvcCreate(t, c, pvClaim(ns, "data", ptr.To("lost"), "1Gi"))
		pvcWaitBound(t, c, ns, "data")
		// Protection holds a Bound volume; forcing its finalizer off
		// removes it under the claim.
		ctx := ctxT(t)
		if err := c.client.CoreV1().PersistentVolumes().Delete(ctx, "doomed", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		if _, err := c.client.CoreV1().PersistentVolumes().Patch(ctx, "doomed", "application/merge-patch+json", []byte(`{"metadata":{"finalizers":null}}`), metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
		waitFor(t, "claim Lost", func(ctx context.Context) (bool, error) {
			pvc, err := c.client.CoreV1().PersistentVolumeClaims(ns).Get(ctx, "data", metav1.GetOptions{})
			return err == nil && pvc.Status.Phase == corev1.ClaimLost, nil
		})
		pvWaitEvent(t, c, ns, "PersistentVolumeClaim", "data", "ClaimLost", "Bound claim has lost its PersistentVolume. Data on the volume is lost!")
	})

	t.Run("a volume with two sources is refused", func(t *testing.T) {
		pv := pvStatic("two-sources", "", "1Gi", rwo, nil)
		pv.Spec.NFS = &corev1.NFSVolumeSource{Server: "nfs.example", Path: "/exports"}
		_, err := c.client.CoreV1().PersistentVolumes().Create(ctxT(t), pv, metav1.CreateOptions{})
		if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "may not specify more than 1 volume type") {
			t.Fatalf("create: %v; want 422 may not specify more than 1 volume type", err)
		}
	})
}

func TestPersistentVolumeReclaim(t *testing.T) {
	c := startCluster(t)
	ctx := ctxT(t)
	noClass := ptr.To("")

	t.Run("Retain: the volume is Released and kept", func(t *testing.T) {
		ns := pvNamespace(t, c, "retain")
		pvCreate(t, c, pvStatic("keep", "", "1Gi", rwo, nil))
		pvcCreate(t, c, pvClaim(ns, "data", noClass, "1Gi"))
		pvcWaitBound(t, c, ns, "data")
		if err := c.client.CoreV1().PersistentVolumeClaims(ns).Delete(ctx, "data", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		pv := pvWaitPhase(t, c, "keep", corev1.VolumeReleased)
		if pv.Spec.ClaimRef == nil || pv.Spec.ClaimRef.Name != "data" {
			t.Errorf("a Released volume keeps its claimRef: %+v", pv.Spec.ClaimRef)
		}
		pvWaitGone(t, "claim data", func(ctx context.Context) error {
			_, err := c.client.CoreV1().PersistentVolumeClaims(ns).Get(ctx, "data", metav1.GetOptions{})
			return err
		})
		// A new claim of the same name does not get the old data.
		pvcCreate(t, c, pvClaim(ns, "data", noClass, "1Gi"))
		pvWaitEvent(t, c, ns, "PersistentVolumeClaim", "data", "FailedBinding", "no persistent volumes available")
		pvWaitPhase(t, c, "keep", corev1.VolumeReleased)
		// The administrator, done with the old data, frees the volume:
		// it is Available again and the waiting claim takes it.
		if _, err := c.client.CoreV1().PersistentVolumes().Patch(ctx, "keep", "application/merge-patch+json", []byte(`{"spec":{"claimRef":null}}`), metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
		if got := pvcWaitBound(t, c, ns, "data").Spec.VolumeName; got != "keep" {
			t.Fatalf("claim bound to %q, want the freed volume keep", got)
		}
		// It would take the next test's volume.
		if err := c.client.CoreV1().PersistentVolumeClaims(ns).Delete(ctx, "data", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
	})

	t.Run("Delete of a volume no provisioner made: Failed", func(t *testing.T) {
		ns := pvNamespace(t, c, "delete-static")
		pv := pvStatic("static-delete", "", "2Gi", rwo, nil)
		pv.Spec.PersistentVolumeReclaimPolicy = corev1.PersistentVolumeReclaimDelete
		pvCreate(t, c, pv)
		pvcCreate(t, c, pvClaim(ns, "data", noClass, "2Gi"))
		pvcWaitBound(t, c, ns, "data")
		if err := c.client.CoreV1().PersistentVolumeClaims(ns).Delete(ctx, "data", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		failed := pvWaitPhase(t, c, "static-delete", corev1.VolumeFailed)
		if !strings.Contains(failed.Status.Message, "no deletable volume plugin matched") {
			t.Errorf("status message %q", failed.Status.Message)
		}
		pvWaitEvent(t, c, "", "PersistentVolume", "static-delete", "VolumeFailedDelete", "no deletable volume plugin matched")
	})

	t.Run("Delete of a local-path volume: the node removes the directory, then the PV", func(t *testing.T) {
		ns := pvNamespace(t, c, "delete-local")
		const nodeName = "disk-node"
		root := filepath.Join(t.TempDir(), "local-path")
		// A node as its kubelet registers it; its reaper publishes the root.
		if _, err := c.client.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{
			Name: nodeName, Labels: map[string]string{corev1.LabelHostname: nodeName},
		}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		reaper, err := kubeletlocalpath.New(kubeletlocalpath.Config{Client: c.client, NodeName: nodeName, Root: root,
			Logger: slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))})
		if err != nil {
			t.Fatal(err)
		}
		rctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- reaper.Start(rctx) }()
		t.Cleanup(func() { cancel(); <-done })
		waitFor(t, "the node's local-path root published", func(ctx context.Context) (bool, error) {
			n, err := c.client.CoreV1().Nodes().Get(ctx, nodeName, metav1.GetOptions{})
			return err == nil && n.Annotations[localpath.AnnRoot] == root, nil
		})

		// The scheduler would name the node of the claim's first pod.
		claim := pvClaim(ns, "data", nil, "2Gi")
		claim.Annotations = map[string]string{"volume.kubernetes.io/selected-node": nodeName}
		created := pvcCreate(t, c, claim)
		bound := pvcWaitBound(t, c, ns, "data")
		pvName := "pvc-" + string(created.UID)
		if bound.Spec.VolumeName != pvName || bound.Annotations["volume.kubernetes.io/storage-provisioner"] != localpath.Provisioner {
			t.Fatalf("claim volume %q annotations %v", bound.Spec.VolumeName, bound.Annotations)
		}
		pv := pvWaitPhase(t, c, pvName, corev1.VolumeBound)
		dir := filepath.Join(root, ns+"_data_"+pvName)
		if pv.Spec.Local == nil || pv.Spec.Local.Path != dir {
			t.Fatalf("volume source %+v, want local %s", pv.Spec.PersistentVolumeSource, dir)
		}
		if got := localpath.NodeOf(pv); got != nodeName {
			t.Errorf("volume node affinity names %q", got)
		}
		if got := pv.Spec.Capacity[corev1.ResourceStorage]; got.String() != "2Gi" || pv.Spec.PersistentVolumeReclaimPolicy != corev1.PersistentVolumeReclaimDelete ||
			pv.Spec.StorageClassName != "local-path" || pv.Annotations["pv.kubernetes.io/provisioned-by"] != localpath.Provisioner {
			t.Errorf("volume %+v", pv)
		}
		// What the kubelet makes on first mount, with a pod's data.
		if err := os.MkdirAll(dir, 0o777); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "data.txt"), []byte("hello"), 0o644); err != nil {
			t.Fatal(err)
		}

		if err := c.client.CoreV1().PersistentVolumeClaims(ns).Delete(ctx, "data", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		pvWaitGone(t, "volume "+pvName, func(ctx context.Context) error {
			_, err := c.client.CoreV1().PersistentVolumes().Get(ctx, pvName, metav1.GetOptions{})
			return err
		})
		if _, err := os.Stat(dir); !os.IsNotExist(err) {
			t.Errorf("volume directory still there: %v", err)
		}
		if _, err := os.Stat(root); err != nil {
			t.Errorf("the root itself must stay: %v", err)
		}
	})
}

func TestStorageObjectInUseProtection(t *testing.T) {
	c := startCluster(t)
	ctx := ctxT(t)
	ns := pvNamespace(t, c, "protect")
	pvCreate(t, c, pvStatic("protected", "", "1Gi", rwo, nil))
	pvcCreate(t, c, pvClaim(ns, "data", ptr.To(""), "1Gi"))
	pvcWaitBound(t, c, ns, "data")
	// A pod on a node (no kubelet here: it stays as it is) uses the claim.
	if _, err := c.client.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "somewhere"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.client.CoreV1().Pods(ns).Create(ctx, &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "user"},
		Spec: corev1.PodSpec{
			NodeName:   "somewhere",
			Containers: []corev1.Container{{Name: "c", Image: "busybox"}},
			Volumes: []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{
				PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "data"},
			}}},
		},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	if err := c.client.CoreV1().PersistentVolumeClaims(ns).Delete(ctx, "data", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := c.client.CoreV1().PersistentVolumes().Delete(ctx, "protected", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	// Both stay, terminating, while the pod uses them; the claim stays
	// Bound. Another claim update proves the controllers have looked.
	waitFor(t, "claim and volume terminating", func(ctx context.Context) (bool, error) {
		pvc, err := c.client.CoreV1().PersistentVolumeClaims(ns).Get(ctx, "data", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		pv, err := c.client.CoreV1().PersistentVolumes().Get(ctx, "protected", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		return pvc.DeletionTimestamp != nil && pv.DeletionTimestamp != nil, nil
	})
	// The protection controller re-checks the claim whenever a pod that
	// names it changes: a label change on the pod is such a moment, and
	// the claim must still be there after it.
	if _, err := c.client.CoreV1().Pods(ns).Patch(ctx, "user", "application/merge-patch+json", []byte(`{"metadata":{"labels":{"poke":"1"}}}`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	pvWaitPhase(t, c, "protected", corev1.VolumeBound)
	if pvc, err := c.client.CoreV1().PersistentVolumeClaims(ns).Get(ctx, "data", metav1.GetOptions{}); err != nil || !slices.Contains(pvc.Finalizers, "kubernetes.io/pvc-protection") {
		t.Fatalf("claim in use: %v, finalizers %v", err, pvc.Finalizers)
	}

	if err := c.client.CoreV1().Pods(ns).Delete(ctx, "user", metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)}); err != nil {
		t.Fatal(err)
	}
	pvWaitGone(t, "claim data", func(ctx context.Context) error {
		_, err := c.client.CoreV1().PersistentVolumeClaims(ns).Get(ctx, "data", metav1.GetOptions{})
		return err
	})
	// The claim gone, the volume is Released and no longer protected.
	pvWaitGone(t, "volume protected", func(ctx context.Context) error {
		_, err := c.client.CoreV1().PersistentVolumes().Get(ctx, "protected", metav1.GetOptions{})
		return err
	})
}

func TestVolumeScheduling(t *testing.T) {
	c := startCluster(t)
	ctx := ctxT(t)
	startSimulatedNodes(t, c, 2)
	ns := pvNamespace(t, c, "sched")
	podWith := func(name, claim string) *corev1.Pod {
		return &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
			Spec: corev1.PodSpec{
				Containers: []corev1.Container{{Name: "c", Image: "busybox"}},
				Volumes: []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{
					PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: claim},
				}}},
			},
		}
	}
	createPod := func(p *corev1.Pod) {
		t.Helper()
		if _, err := c.client.CoreV1().Pods(ns).Create(ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	waitScheduled := func(name string) string {
		t.Helper()
		var node string
		waitFor(t, "pod "+name+" scheduled", func(ctx context.Context) (bool, error) {
			p, err := c.client.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
			node = p.Spec.NodeName
			return err == nil && node != "", nil
		})
		return node
	}

	t.Run("an unbound Immediate claim keeps the pod Pending", func(t *testing.T) {
		if _, err := c.client.StorageV1().StorageClasses().Create(ctx, &storagev1.StorageClass{
			ObjectMeta: metav1.ObjectMeta{Name: "manual-immediate"}, Provisioner: "kubernetes.io/no-provisioner",
		}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		pvcCreate(t, c, pvClaim(ns, "immediate", ptr.To("manual-immediate"), "1Gi"))
		createPod(podWith("waits", "immediate"))
		pvWaitEvent(t, c, ns, "Pod", "waits", "FailedScheduling", "0/2 nodes are available: pod has unbound immediate PersistentVolumeClaims.")
		// A volume for it: the claim binds and the pod is scheduled.
		pvCreate(t, c, pvStatic("sched-immediate", "manual-immediate", "1Gi", rwo, nil))
		pvcWaitBound(t, c, ns, "immediate")
		waitScheduled("waits")
	})

	t.Run("a missing claim keeps the pod Pending", func(t *testing.T) {
		createPod(podWith("orphan", "nowhere"))
		pvWaitEvent(t, c, ns, "Pod", "orphan", "FailedScheduling", `persistentvolumeclaim "nowhere" not found`)
	})

	t.Run("WaitForFirstConsumer: the volume is made on the pod's node, and the next pod follows it", func(t *testing.T) {
		pvcCreate(t, c, pvClaim(ns, "data", nil, "1Gi"))
		createPod(podWith("writer", "data"))
		node := waitScheduled("writer")
		pvc := pvcWaitBound(t, c, ns, "data")
		if got := pvc.Annotations["volume.kubernetes.io/selected-node"]; got != node {
			t.Errorf("claim selected-node %q, pod on %q", got, node)
		}
		pv, err := c.client.CoreV1().PersistentVolumes().Get(ctx, pvc.Spec.VolumeName, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if got := localpath.NodeOf(pv); got != node {
			t.Fatalf("volume on %q, pod on %q", got, node)
		}
		for i := range 4 {
			name := "reader-" + string(rune('a'+i))
			createPod(podWith(name, "data"))
			if got := waitScheduled(name); got != node {
				t.Fatalf("pod %s on %q, its volume is on %q", name, got, node)
			}
		}
	})

	t.Run("a claim whose chosen node is gone is scheduled again", func(t *testing.T) {
		ghost := pvClaim(ns, "ghost", nil, "1Gi")
		ghost.Annotations = map[string]string{"volume.kubernetes.io/selected-node": "gone-node"}
		pvcCreate(t, c, ghost)
		pvWaitEvent(t, c, ns, "PersistentVolumeClaim", "ghost", "ProvisioningFailed", `node "gone-node" not found`)
		createPod(podWith("haunted", "ghost"))
		node := waitScheduled("haunted")
		pvc := pvcWaitBound(t, c, ns, "ghost")
		if got := pvc.Annotations["volume.kubernetes.io/selected-node"]; got != node {
			t.Errorf("claim's selected node %q, pod on %q", got, node)
		}
	})

	t.Run("a bound volume's node affinity limits the pod", func(t *testing.T) {
		pv := pvStatic("pinned", "", "1Gi", rwo, nil)
		pv.Spec.NodeAffinity = &corev1.VolumeNodeAffinity{Required: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
			MatchExpressions: []corev1.NodeSelectorRequirement{{Key: corev1.LabelHostname, Operator: corev1.NodeSelectorOpIn, Values: []string{"gone"}}},
		}}}}
		pvCreate(t, c, pv)
		pvcCreate(t, c, pvClaim(ns, "pinned", ptr.To(""), "1Gi"))
		pvcWaitBound(t, c, ns, "pinned")
		createPod(podWith("stuck", "pinned"))
		pvWaitEvent(t, c, ns, "Pod", "stuck", "FailedScheduling", "0/2 nodes are available: 2 node(s) had volume node affinity conflict.")
	})
}
