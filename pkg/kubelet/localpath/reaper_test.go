package localpath

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/cache"

	"github.com/minik8s/minik8s/pkg/controller/volume/localpath"
)

// volume is a local-path PV on node at dir, in phase with policy.
func volume(name, node, dir string, phase corev1.PersistentVolumePhase, policy corev1.PersistentVolumeReclaimPolicy) *corev1.PersistentVolume {
	return &corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID("uid-" + name),
			Annotations: map[string]string{"pv.kubernetes.io/provisioned-by": localpath.Provisioner}},
		Spec: corev1.PersistentVolumeSpec{
			PersistentVolumeReclaimPolicy: policy,
			PersistentVolumeSource:        corev1.PersistentVolumeSource{Local: &corev1.LocalVolumeSource{Path: dir}},
			NodeAffinity: &corev1.VolumeNodeAffinity{Required: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
				MatchExpressions: []corev1.NodeSelectorRequirement{{Key: corev1.LabelHostname, Operator: corev1.NodeSelectorOpIn, Values: []string{node}}},
			}}}},
		},
		Status: corev1.PersistentVolumeStatus{Phase: phase},
	}
}

func TestReaperDeletesOnlyItsReleasedVolumes(t *testing.T) {
	root := filepath.Join(t.TempDir(), "local-path")
	outside := t.TempDir()
	del, retain := corev1.PersistentVolumeReclaimDelete, corev1.PersistentVolumeReclaimRetain
	cases := []struct {
		name    string
		pv      *corev1.PersistentVolume
		deleted bool
	}{
		{"released, Delete, on this node", volume("gone", "n1", filepath.Join(root, "ns_a_gone"), corev1.VolumeReleased, del), true},
		{"still bound", volume("bound", "n1", filepath.Join(root, "ns_b_bound"), corev1.VolumeBound, del), false},
		{"Retain keeps the data", volume("kept", "n1", filepath.Join(root, "ns_c_kept"), corev1.VolumeReleased, retain), false},
		{"another node's", volume("theirs", "n2", filepath.Join(root, "ns_d_theirs"), corev1.VolumeReleased, del), false},
		{"outside the root", volume("escape", "n1", filepath.Join(outside, "data"), corev1.VolumeReleased, del), false},
		{"the root itself", volume("root", "n1", root, corev1.VolumeReleased, del), false},
	}
	client := fake.NewClientset()
	ctx := context.Background()
	for _, tc := range cases {
		if _, err := client.CoreV1().PersistentVolumes().Create(ctx, tc.pv, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(filepath.Join(tc.pv.Spec.Local.Path, "sub"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	r, err := New(Config{Client: client, NodeName: "n1", Root: root})
	if err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	defer close(stop)
	r.factory.Start(stop)
	if !cache.WaitForCacheSync(stop, r.loop.Synced...) {
		t.Fatal("cache not synced")
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if err := r.Reconcile(ctx, tc.pv.Name); err != nil {
				t.Fatal(err)
			}
			_, getErr := client.CoreV1().PersistentVolumes().Get(ctx, tc.pv.Name, metav1.GetOptions{})
			_, statErr := os.Stat(tc.pv.Spec.Local.Path)
			if tc.deleted {
				if !apierrors.IsNotFound(getErr) || !os.IsNotExist(statErr) {
					t.Errorf("volume: %v, directory: %v; want both gone", getErr, statErr)
				}
				return
			}
			if getErr != nil || statErr != nil {
				t.Errorf("volume: %v, directory: %v; want both kept", getErr, statErr)
			}
		})
	}
}
