package kinds

import (
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"
)

// validStatefulSet is the StatefulSet of the Kubernetes tutorial: a web
// server whose pods mount a claim made from the template "www".
func validStatefulSet() *appsv1.StatefulSet {
	tmpl := podTemplate(appLabels(), "")
	tmpl.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "www", MountPath: "/usr/share/nginx/html"}}
	return defaulted(&appsv1.StatefulSet{
		ObjectMeta: nsMeta("web"),
		Spec: appsv1.StatefulSetSpec{
			ServiceName: "nginx",
			Replicas:    ptr.To[int32](3),
			Selector:    &metav1.LabelSelector{MatchLabels: appLabels()},
			Template:    tmpl,
			VolumeClaimTemplates: []corev1.PersistentVolumeClaim{{
				ObjectMeta: metav1.ObjectMeta{Name: "www"},
				Spec: corev1.PersistentVolumeClaimSpec{
					AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
					Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{
						corev1.ResourceStorage: resource.MustParse("1Gi"),
					}},
				},
			}},
		},
	})
}

func TestStatefulSetDefaults(t *testing.T) {
	ss := &appsv1.StatefulSet{Spec: appsv1.StatefulSetSpec{
		Template:             template(nil),
		VolumeClaimTemplates: []corev1.PersistentVolumeClaim{{ObjectMeta: metav1.ObjectMeta{Name: "data"}}},
	}}
	defaultObject(ss)
	spec := ss.Spec
	expect(t, "podManagementPolicy", spec.PodManagementPolicy, appsv1.OrderedReadyPodManagement)
	expect(t, "updateStrategy.type", spec.UpdateStrategy.Type, appsv1.RollingUpdateStatefulSetStrategyType)
	if spec.UpdateStrategy.RollingUpdate == nil || ptr.Deref(spec.UpdateStrategy.RollingUpdate.Partition, -1) != 0 {
		t.Errorf("rollingUpdate = %+v, want partition 0", spec.UpdateStrategy.RollingUpdate)
	}
	expect(t, "replicas", ptr.Deref(spec.Replicas, -1), int32(1))
	expect(t, "revisionHistoryLimit", ptr.Deref(spec.RevisionHistoryLimit, -1), int32(10))
	expect(t, "retention policy", *spec.PersistentVolumeClaimRetentionPolicy, appsv1.StatefulSetPersistentVolumeClaimRetentionPolicy{
		WhenDeleted: appsv1.RetainPersistentVolumeClaimRetentionPolicyType, WhenScaled: appsv1.RetainPersistentVolumeClaimRetentionPolicyType,
	})
	expect(t, "claim volumeMode", ptr.Deref(spec.VolumeClaimTemplates[0].Spec.VolumeMode, ""), corev1.PersistentVolumeFilesystem)
	expect(t, "template restartPolicy", spec.Template.Spec.RestartPolicy, corev1.RestartPolicyAlways)

	// OnDelete gets no rollingUpdate; an explicit partition stays.
	onDelete := &appsv1.StatefulSet{Spec: appsv1.StatefulSetSpec{Template: template(nil),
		UpdateStrategy: appsv1.StatefulSetUpdateStrategy{Type: appsv1.OnDeleteStatefulSetStrategyType}}}
	defaultObject(onDelete)
	if onDelete.Spec.UpdateStrategy.RollingUpdate != nil {
		t.Errorf("OnDelete got rollingUpdate %+v", onDelete.Spec.UpdateStrategy.RollingUpdate)
	}
	partitioned := &appsv1.StatefulSet{Spec: appsv1.StatefulSetSpec{Template: template(nil),
		UpdateStrategy: appsv1.StatefulSetUpdateStrategy{Type: appsv1.RollingUpdateStatefulSetStrategyType,
			RollingUpdate: &appsv1.RollingUpdateStatefulSetStrategy{Partition: ptr.To[int32](2)}}}}
	defaultObject(partitioned)
	expect(t, "explicit partition", *partitioned.Spec.UpdateStrategy.RollingUpdate.Partition, int32(2))
}

func TestValidateStatefulSet(t *testing.T) {
	ss := validStatefulSet()
	runCreateCases(t, []createCase{
		{name: "valid, mounting its claim template", obj: ss, namespaced: true},
		{name: "parallel, OnDelete, ordinals", namespaced: true, obj: mutate(ss, func(s *appsv1.StatefulSet) {
			s.Spec.PodManagementPolicy = appsv1.ParallelPodManagement
			s.Spec.UpdateStrategy = appsv1.StatefulSetUpdateStrategy{Type: appsv1.OnDeleteStatefulSetStrategyType}
			s.Spec.Ordinals = &appsv1.StatefulSetOrdinals{Start: 5}
		})},
		{name: "no selector", namespaced: true, obj: mutate(ss, func(s *appsv1.StatefulSet) { s.Spec.Selector = nil }),
			want: []string{"spec.selector"}},
		{name: "empty selector", namespaced: true, obj: mutate(ss, func(s *appsv1.StatefulSet) { s.Spec.Selector = &metav1.LabelSelector{} }),
			want: []string{"spec.selector: empty selector is invalid for statefulset"}},
		{name: "selector does not match the template", namespaced: true, obj: mutate(ss, func(s *appsv1.StatefulSet) {
			s.Spec.Template.Labels = map[string]string{"app": "db"}
		}), want: []string{"spec.template.metadata.labels: `selector` does not match template `labels`"}},
		{name: "restartPolicy Never", namespaced: true, obj: mutate(ss, func(s *appsv1.StatefulSet) {
			s.Spec.Template.Spec.RestartPolicy = corev1.RestartPolicyNever
		}), want: []string{"spec.template.spec.restartPolicy: Unsupported value: \"Never\""}},
		{name: "activeDeadlineSeconds", namespaced: true, obj: mutate(ss, func(s *appsv1.StatefulSet) {
			s.Spec.Template.Spec.ActiveDeadlineSeconds = ptr.To[int64](10)
		}), want: []string{"spec.template.spec.activeDeadlineSeconds"}},
		{name: "mount of a volume that is neither a volume nor a claim template", namespaced: true, obj: mutate(ss, func(s *appsv1.StatefulSet) {
			s.Spec.Template.Spec.Containers[0].VolumeMounts[0].Name = "cache"
		}), want: []string{"spec.template.spec.containers[0].volumeMounts[0].name"}},
		{name: "negative replicas and ordinals", namespaced: true, obj: mutate(ss, func(s *appsv1.StatefulSet) {
			s.Spec.Replicas = ptr.To[int32](-1)
			s.Spec.Ordinals = &appsv1.StatefulSetOrdinals{Start: -1}
			s.Spec.MinReadySeconds = -1
		}), want: []string{"spec.replicas", "spec.ordinals.start", "spec.minReadySeconds"}},
		{name: "unknown pod management policy", namespaced: true, obj: mutate(ss, func(s *appsv1.StatefulSet) { s.Spec.PodManagementPolicy = "Random" }),
			want: []string{"spec.podManagementPolicy: must be 'OrderedReady' or 'Parallel'"}},
		{name: "unknown update strategy", namespaced: true, obj: mutate(ss, func(s *appsv1.StatefulSet) {
			s.Spec.UpdateStrategy = appsv1.StatefulSetUpdateStrategy{Type: "Recreate"}
		}), want: []string{"spec.updateStrategy: must be 'RollingUpdate' or 'OnDelete'"}},
		{name: "OnDelete with rollingUpdate", namespaced: true, obj: mutate(ss, func(s *appsv1.StatefulSet) {
			s.Spec.UpdateStrategy.Type = appsv1.OnDeleteStatefulSetStrategyType
		}), want: []string{"spec.updateStrategy.rollingUpdate: only allowed for updateStrategy 'RollingUpdate'"}},
		{name: "negative partition", namespaced: true, obj: mutate(ss, func(s *appsv1.StatefulSet) {
			s.Spec.UpdateStrategy.RollingUpdate.Partition = ptr.To[int32](-1)
		}), want: []string{"spec.updateStrategy.rollingUpdate.partition"}},
		{name: "unknown retention policy", namespaced: true, obj: mutate(ss, func(s *appsv1.StatefulSet) {
			s.Spec.PersistentVolumeClaimRetentionPolicy.WhenScaled = "Keep"
		}), want: []string{"spec.persistentVolumeClaimRetentionPolicy.whenScaled: Unsupported value: \"Keep\""}},
		{name: "claim template without access modes or storage", namespaced: true, obj: mutate(ss, func(s *appsv1.StatefulSet) {
			s.Spec.VolumeClaimTemplates[0].Spec.AccessModes = nil
			s.Spec.VolumeClaimTemplates[0].Spec.Resources.Requests = nil
		}), want: []string{"spec.volumeClaimTemplates[0].spec.accessModes", "spec.volumeClaimTemplates[0].spec.resources[storage]"}},
		{name: "claim templates without a name, or twice the same", namespaced: true, obj: mutate(ss, func(s *appsv1.StatefulSet) {
			s.Spec.VolumeClaimTemplates = append(s.Spec.VolumeClaimTemplates, s.Spec.VolumeClaimTemplates[0], s.Spec.VolumeClaimTemplates[0])
			s.Spec.VolumeClaimTemplates[2].Name = ""
		}), want: []string{"spec.volumeClaimTemplates[1].metadata.name: Duplicate value", "spec.volumeClaimTemplates[2].metadata.name: Required"}},
	})
}

func TestValidateStatefulSetUpdate(t *testing.T) {
	ss := stored(validStatefulSet())
	const forbidden = "spec: updates to statefulset spec for fields other than 'replicas', 'ordinals', 'template', " +
		"'updateStrategy', 'revisionHistoryLimit', 'persistentVolumeClaimRetentionPolicy' and 'minReadySeconds' are forbidden"
	runUpdateCases(t, []updateCase{
		{name: "what may change", old: ss, namespaced: true, obj: change(ss, func(s *appsv1.StatefulSet) {
			s.Spec.Replicas = ptr.To[int32](5)
			s.Spec.Ordinals = &appsv1.StatefulSetOrdinals{Start: 1}
			s.Spec.Template.Spec.Containers[0].Image = "nginx:1.28"
			s.Spec.UpdateStrategy = appsv1.StatefulSetUpdateStrategy{Type: appsv1.OnDeleteStatefulSetStrategyType}
			s.Spec.PersistentVolumeClaimRetentionPolicy.WhenDeleted = appsv1.DeletePersistentVolumeClaimRetentionPolicyType
			s.Spec.MinReadySeconds = 10
			s.Spec.RevisionHistoryLimit = ptr.To[int32](2)
		})},
		{name: "selector", old: ss, namespaced: true, obj: change(ss, func(s *appsv1.StatefulSet) {
			s.Spec.Selector.MatchLabels["tier"] = "web"
			s.Spec.Template.Labels["tier"] = "web"
		}), want: []string{forbidden}},
		{name: "service name", old: ss, namespaced: true, obj: change(ss, func(s *appsv1.StatefulSet) { s.Spec.ServiceName = "other" }),
			want: []string{forbidden}},
		{name: "pod management policy", old: ss, namespaced: true, obj: change(ss, func(s *appsv1.StatefulSet) {
			s.Spec.PodManagementPolicy = appsv1.ParallelPodManagement
		}), want: []string{forbidden}},
		{name: "claim templates", old: ss, namespaced: true, obj: change(ss, func(s *appsv1.StatefulSet) {
			s.Spec.VolumeClaimTemplates[0].Spec.Resources.Requests[corev1.ResourceStorage] = resource.MustParse("2Gi")
		}), want: []string{forbidden}},
		{name: "an allowed change must still be valid", old: ss, namespaced: true, obj: change(ss, func(s *appsv1.StatefulSet) {
			s.Spec.Replicas = ptr.To[int32](-2)
		}), want: []string{"spec.replicas"}},
	})
}

func TestStatefulSetCells(t *testing.T) {
	runCellCases(t, []cellCase{{
		name: "ready of desired, containers and images",
		gk:   schema.GroupKind{Group: "apps", Kind: "StatefulSet"},
		obj: &appsv1.StatefulSet{
			ObjectMeta: objMeta("web"),
			Spec:       appsv1.StatefulSetSpec{Replicas: ptr.To[int32](3), Template: imagesTemplate("nginx", "sidecar")},
			Status:     appsv1.StatefulSetStatus{Replicas: 3, ReadyReplicas: 2},
		},
		want: map[string]interface{}{"Name": "web", "Ready": "2/3", "Age": "10m", "Containers": "nginx,sidecar", "Images": "nginx:1,sidecar:1"},
	}})
	p := printerOf(t, schema.GroupKind{Group: "apps", Kind: "StatefulSet"})
	var names []string
	for _, c := range p.Columns {
		if c.Priority == 0 {
			names = append(names, c.Name)
		}
	}
	expect(t, "columns", names, []string{"Name", "Ready", "Age"})
}
