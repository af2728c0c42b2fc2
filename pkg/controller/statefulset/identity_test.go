package statefulset

import (
	"slices"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

func testSet() *appsv1.StatefulSet {
	return &appsv1.StatefulSet{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "ns", UID: "set-uid"},
		Spec: appsv1.StatefulSetSpec{
			Replicas:    ptr.To[int32](2),
			ServiceName: "nginx",
			Selector:    &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web", "tier": "front"}},
				Spec: corev1.PodSpec{
					Containers: []corev1.Container{{Name: "c", Image: "busybox"}},
					Volumes: []corev1.Volume{
						{Name: "www", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
						{Name: "cache", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
					},
				},
			},
			VolumeClaimTemplates: []corev1.PersistentVolumeClaim{{
				ObjectMeta: metav1.ObjectMeta{Name: "www", Labels: map[string]string{"kind": "data"}},
				Spec: corev1.PersistentVolumeClaimSpec{
					AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
					Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}},
				},
			}},
		},
	}
}

func TestParentAndOrdinal(t *testing.T) {
	for name, want := range map[string]int{"web-0": 0, "web-12": 12, "my-web-3": 3, "web": -1, "web-": -1, "web-x": -1} {
		if _, got := parentAndOrdinal(name); got != want {
			t.Errorf("ordinal of %q = %d, want %d", name, got, want)
		}
	}
	set := testSet()
	for name, want := range map[string]bool{"web-0": true, "web-7": true, "webx-0": false, "my-web-0": false, "web-a": false} {
		if got := isMemberOf(set, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name}}); got != want {
			t.Errorf("isMemberOf(%q) = %v, want %v", name, got, want)
		}
	}
}

// The pod of an ordinal: its name, DNS identity, labels, owner, and the
// claim mounted in place of the template's volume of the same name.
func TestNewPod(t *testing.T) {
	set := testSet()
	pod := newPod(set, 3, "web-abc")
	if pod.Name != "web-3" || pod.Namespace != "ns" || pod.Spec.Hostname != "web-3" || pod.Spec.Subdomain != "nginx" {
		t.Errorf("pod %s/%s hostname %q subdomain %q", pod.Namespace, pod.Name, pod.Spec.Hostname, pod.Spec.Subdomain)
	}
	want := map[string]string{"app": "web", "tier": "front", appsv1.StatefulSetPodNameLabel: "web-3",
		appsv1.PodIndexLabel: "3", appsv1.ControllerRevisionHashLabelKey: "web-abc"}
	if !equalMaps(pod.Labels, want) {
		t.Errorf("labels %v, want %v", pod.Labels, want)
	}
	if ref := metav1.GetControllerOf(pod); ref == nil || ref.UID != "set-uid" || ref.Kind != "StatefulSet" || !ptr.Deref(ref.BlockOwnerDeletion, false) {
		t.Errorf("controller %+v", ref)
	}
	var names []string
	for _, v := range pod.Spec.Volumes {
		names = append(names, v.Name)
	}
	if !slices.Equal(names, []string{"www", "cache"}) || pod.Spec.Volumes[0].PersistentVolumeClaim == nil ||
		pod.Spec.Volumes[0].PersistentVolumeClaim.ClaimName != "www-web-3" || pod.Spec.Volumes[1].EmptyDir == nil {
		t.Errorf("volumes %+v", pod.Spec.Volumes)
	}
	if set.Spec.Template.Spec.Volumes[0].EmptyDir == nil || set.Spec.Template.Labels[appsv1.StatefulSetPodNameLabel] != "" {
		t.Error("newPod changed the set's template")
	}
	if !identityMatches(set, pod) {
		t.Error("a new pod does not match its identity")
	}
	pod.Labels[appsv1.PodIndexLabel] = "4"
	if identityMatches(set, pod) {
		t.Error("a pod with another index label matches its identity")
	}
}

func TestClaimsOf(t *testing.T) {
	claims := claimsOf(testSet(), 1)
	if len(claims) != 1 {
		t.Fatalf("%d claims", len(claims))
	}
	c := claims[0]
	if c.Name != "www-web-1" || c.Namespace != "ns" || !equalMaps(c.Labels, map[string]string{"app": "web", "kind": "data"}) ||
		!c.Spec.Resources.Requests.Storage().Equal(resource.MustParse("1Gi")) {
		t.Errorf("claim %s/%s labels %v spec %+v", c.Namespace, c.Name, c.Labels, c.Spec)
	}
}

// claimOwners follows the retention policy: the set owns its replicas'
// claims under whenDeleted Delete, a condemned pod its claims under
// whenScaled Delete, nobody under Retain.
func TestClaimOwners(t *testing.T) {
	const retain, del = appsv1.RetainPersistentVolumeClaimRetentionPolicyType, appsv1.DeletePersistentVolumeClaimRetentionPolicyType
	pod := func(ordinal int) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: podName(testSet(), ordinal), UID: "pod-uid"}}
	}
	tests := []struct {
		name                string
		whenDeleted, scaled appsv1.PersistentVolumeClaimRetentionPolicyType
		ordinal             int
		before              []metav1.OwnerReference
		want                []string // owner UIDs
	}{
		{name: "retain: a replica's claim", whenDeleted: retain, scaled: retain, ordinal: 0},
		{name: "retain drops references made under Delete", whenDeleted: retain, scaled: retain, ordinal: 5,
			before: []metav1.OwnerReference{{Kind: "StatefulSet", Name: "web", UID: "set-uid"}, {APIVersion: "v1", Kind: "Pod", Name: "web-5", UID: "pod-uid"}}},
		{name: "whenDeleted: a replica's claim", whenDeleted: del, scaled: retain, ordinal: 1, want: []string{"set-uid"}},
		{name: "whenDeleted: a condemned claim stays the set's", whenDeleted: del, scaled: retain, ordinal: 2, want: []string{"set-uid"}},
		{name: "whenScaled: a replica's claim", whenDeleted: retain, scaled: del, ordinal: 1},
		{name: "whenScaled: a condemned claim goes with its pod", whenDeleted: retain, scaled: del, ordinal: 2, want: []string{"pod-uid"}},
		{name: "both: a condemned claim moves from the set to its pod", whenDeleted: del, scaled: del, ordinal: 2,
			before: []metav1.OwnerReference{{Kind: "StatefulSet", Name: "web", UID: "set-uid"}}, want: []string{"pod-uid"}},
		{name: "both: a replica's claim scaled back up moves back to the set", whenDeleted: del, scaled: del, ordinal: 1,
			before: []metav1.OwnerReference{{APIVersion: "v1", Kind: "Pod", Name: "web-1", UID: "pod-uid"}}, want: []string{"set-uid"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			set := testSet()
			set.Spec.PersistentVolumeClaimRetentionPolicy = &appsv1.StatefulSetPersistentVolumeClaimRetentionPolicy{WhenDeleted: tc.whenDeleted, WhenScaled: tc.scaled}
			claim := claimsOf(set, tc.ordinal)[0]
			claim.OwnerReferences = tc.before
			changed := claimOwners(claim, set, tc.ordinal, pod(tc.ordinal))
			var got []string
			for _, r := range claim.OwnerReferences {
				got = append(got, string(r.UID))
				if ptr.Deref(r.Controller, false) {
					t.Errorf("reference %+v is a controller reference", r)
				}
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("owners %v, want %v", got, tc.want)
			}
			if wantChanged := !slices.Equal(uids(tc.before), tc.want); changed != wantChanged {
				t.Errorf("changed = %v, want %v", changed, wantChanged)
			}
			if claimOwners(claim, set, tc.ordinal, pod(tc.ordinal)) {
				t.Error("a second pass changed the references again")
			}
		})
	}
}

func uids(refs []metav1.OwnerReference) []string {
	var out []string
	for _, r := range refs {
		out = append(out, string(r.UID))
	}
	return out
}

// Below the partition a new pod is made at the current revision.
func TestVersionedPod(t *testing.T) {
	set := testSet()
	set.Spec.Replicas = ptr.To[int32](4)
	set.Spec.Ordinals = &appsv1.StatefulSetOrdinals{Start: 10}
	set.Spec.UpdateStrategy = appsv1.StatefulSetUpdateStrategy{Type: appsv1.RollingUpdateStatefulSetStrategyType,
		RollingUpdate: &appsv1.RollingUpdateStatefulSetStrategy{Partition: ptr.To[int32](2)}}
	currentSet := set.DeepCopy()
	currentSet.Spec.Template.Spec.Containers[0].Image = "busybox:old"
	current := &appsv1.ControllerRevision{ObjectMeta: metav1.ObjectMeta{Name: "web-old"}}
	update := &appsv1.ControllerRevision{ObjectMeta: metav1.ObjectMeta{Name: "web-new"}}
	c := &Controller{}
	for ordinal, want := range map[int]string{10: "busybox:old", 11: "busybox:old", 12: "busybox", 13: "busybox"} {
		p := c.versionedPod(set, currentSet, ordinal, current, update)
		rev := map[string]string{"busybox:old": "web-old", "busybox": "web-new"}[want]
		if p.Spec.Containers[0].Image != want || revisionOf(p) != rev {
			t.Errorf("ordinal %d: image %s revision %s, want %s %s", ordinal, p.Spec.Containers[0].Image, revisionOf(p), want, rev)
		}
	}
	set.Spec.UpdateStrategy = appsv1.StatefulSetUpdateStrategy{Type: appsv1.OnDeleteStatefulSetStrategyType}
	if p := c.versionedPod(set, currentSet, 10, current, update); revisionOf(p) != "web-new" {
		t.Errorf("OnDelete: a new pod at %s, want the update revision", revisionOf(p))
	}
}

func equalMaps(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}
