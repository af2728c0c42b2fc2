package scheduler

import (
	"math/rand/v2"
	"slices"
	"testing"

	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	corelisters "k8s.io/client-go/listers/core/v1"
	storagelisters "k8s.io/client-go/listers/storage/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"
)

func claim(name, class, volume string, annotations ...string) *v1.PersistentVolumeClaim {
	c := &v1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: types.UID("uid-claim-" + name)},
		Spec: v1.PersistentVolumeClaimSpec{
			StorageClassName: ptr.To(class), VolumeName: volume,
			AccessModes: []v1.PersistentVolumeAccessMode{v1.ReadWriteOnce},
			Resources:   v1.VolumeResourceRequirements{Requests: v1.ResourceList{v1.ResourceStorage: resource.MustParse("1Gi")}},
		},
	}
	if len(annotations) == 2 {
		c.Annotations = map[string]string{annotations[0]: annotations[1]}
	}
	return c
}

// volumeOn is a 1Gi volume of class, Available, for the nodes named.
func volumeOn(name, class string, nodes ...string) *v1.PersistentVolume {
	pv := &v1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: v1.PersistentVolumeSpec{
			StorageClassName: class,
			Capacity:         v1.ResourceList{v1.ResourceStorage: resource.MustParse("1Gi")},
			AccessModes:      []v1.PersistentVolumeAccessMode{v1.ReadWriteOnce},
		},
		Status: v1.PersistentVolumeStatus{Phase: v1.VolumeAvailable},
	}
	if len(nodes) > 0 {
		pv.Spec.NodeAffinity = &v1.VolumeNodeAffinity{Required: &v1.NodeSelector{NodeSelectorTerms: []v1.NodeSelectorTerm{{
			MatchExpressions: []v1.NodeSelectorRequirement{expr(v1.LabelHostname, v1.NodeSelectorOpIn, nodes...)},
		}}}}
	}
	return pv
}

func class(name, provisioner string, mode storagev1.VolumeBindingMode) *storagev1.StorageClass {
	return &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: name}, Provisioner: provisioner, VolumeBindingMode: &mode}
}

func usingClaims(names ...string) func(*v1.Pod) {
	return func(p *v1.Pod) {
		for _, n := range names {
			p.Spec.Volumes = append(p.Spec.Volumes, v1.Volume{Name: n, VolumeSource: v1.VolumeSource{
				PersistentVolumeClaim: &v1.PersistentVolumeClaimVolumeSource{ClaimName: n},
			}})
		}
	}
}

func volumeListers(objs ...any) *Listers {
	claims := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
	volumes := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
	classes := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
	for _, o := range objs {
		switch o.(type) {
		case *v1.PersistentVolumeClaim:
			_ = claims.Add(o)
		case *v1.PersistentVolume:
			_ = volumes.Add(o)
		case *storagev1.StorageClass:
			_ = classes.Add(o)
		}
	}
	return &Listers{Volumes: VolumeListers{
		Claims:  corelisters.NewPersistentVolumeClaimLister(claims),
		Volumes: corelisters.NewPersistentVolumeLister(volumes),
		Classes: storagelisters.NewStorageClassLister(classes),
	}}
}

func TestVolumeBinding(t *testing.T) {
	const wffc, immediate = storagev1.VolumeBindingWaitForFirstConsumer, storagev1.VolumeBindingImmediate
	objects := []any{
		class("local-path", "minik8s.io/local-path", wffc),
		class("static", "kubernetes.io/no-provisioner", wffc),
		class("fast", "example.com/fast", immediate),
		volumeOn("on-b", "", "b"),
		volumeOn("static-on-c", "static", "c"),
		claim("bound-to-b", "", "on-b"),
		claim("fresh", "local-path", ""),
		claim("chosen-c", "local-path", "", "volume.kubernetes.io/selected-node", "c"),
		claim("static-wait", "static", ""),
		claim("immediate", "fast", ""),
		claim("lost", "", "nowhere"),
	}
	nodes := infos(node("a", "4", "8Gi", 10), node("b", "4", "8Gi", 10), node("c", "4", "8Gi", 10))
	cases := []struct {
		name   string
		claims []string
		// fit are the nodes the pod may go to; err the message when none.
		fit []string
		err string
	}{
		{name: "no claims, any node", fit: []string{"a", "b", "c"}},
		{name: "a bound claim follows its volume's node affinity", claims: []string{"bound-to-b"}, fit: []string{"b"}},
		{name: "an unbound claim of a provisioning class goes anywhere", claims: []string{"fresh"}, fit: []string{"a", "b", "c"}},
		{name: "a claim with a selected node keeps to it", claims: []string{"chosen-c"}, fit: []string{"c"}},
		{name: "a claim of a static class goes where a volume fits", claims: []string{"static-wait"}, fit: []string{"c"}},
		{name: "claims that disagree leave no node", claims: []string{"bound-to-b", "static-wait"},
			err: "0/3 nodes are available: 1 node(s) didn't find available persistent volumes to bind, 2 node(s) had volume node affinity conflict."},
		{name: "an unbound Immediate claim keeps the pod off every node", claims: []string{"fresh", "immediate"},
			err: "0/3 nodes are available: pod has unbound immediate PersistentVolumeClaims."},
		{name: "a missing claim", claims: []string{"missing"},
			err: `0/3 nodes are available: persistentvolumeclaim "missing" not found.`},
		{name: "a claim bound to a volume that is gone", claims: []string{"lost"},
			err: `0/3 nodes are available: pvc default/lost is bound to non-existent persistentvolume "nowhere".`},
	}
	p := newProfile(ScoreConfig{Strategy: LeastAllocated, Resources: cpuMem}, volumeListers(objects...))
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			pi := NewPodInfo(pod("p", "", "", usingClaims(tc.claims...)))
			fit, err := p.feasible(pi, nodes)
			if tc.err != "" {
				if err == nil || err.Error() != tc.err {
					t.Fatalf("error %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, n := range fit {
				names = append(names, n.Node.Name)
			}
			if !slices.Equal(names, tc.fit) {
				t.Errorf("fits %v, want %v", names, tc.fit)
			}
			if _, err := p.schedule(pi, nodes, rand.New(rand.NewPCG(1, 2))); err != nil {
				t.Errorf("schedule: %v", err)
			}
		})
	}

	t.Run("the claims to annotate with the chosen node", func(t *testing.T) {
		vb := VolumeBinding{Listers: &volumeListers(objects...).Volumes}
		var got []string
		for _, c := range vb.claimsToAnnotate(pod("p", "", "", usingClaims("bound-to-b", "fresh", "chosen-c")), "c") {
			got = append(got, c.Name)
		}
		if !slices.Equal(got, []string{"fresh"}) {
			t.Errorf("claims to annotate %v, want only the unbound one without node c", got)
		}
	})
}
