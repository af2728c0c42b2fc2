package kinds

import (
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
)

type updateCase struct {
	name       string
	old, obj   runtime.Object
	namespaced bool
	want       []string // empty: the update must be accepted
}

// stored returns obj as the registry would have stored it: with a
// resourceVersion and a UID.
func stored[T runtime.Object](obj T) T {
	m, err := meta.Accessor(obj)
	if err != nil {
		panic(err)
	}
	m.SetResourceVersion("42")
	m.SetUID("8d6a2e5c-0000-4000-8000-000000000001")
	return obj
}

// change returns an update of old made by f (old itself is not modified).
func change[T runtime.Object](old T, f func(T)) T {
	return mutate(old, f)
}

func runUpdateCases(t *testing.T, cases []updateCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			checkErrors(t, validateUpdate(tc.obj, tc.old, tc.namespaced), tc.want)
		})
	}
}

func TestValidateUpdateMeta(t *testing.T) {
	pod := stored(validPod())
	runUpdateCases(t, []updateCase{
		{name: "no-op update", old: pod, obj: change(pod, func(p *corev1.Pod) {}), namespaced: true},
		{name: "label change", old: pod, obj: change(pod, func(p *corev1.Pod) { p.Labels = map[string]string{"tier": "frontend"} }), namespaced: true},
		{name: "missing resourceVersion", old: pod, obj: change(pod, func(p *corev1.Pod) { p.ResourceVersion = "" }), namespaced: true,
			want: []string{"metadata.resourceVersion: must be specified for an update"}},
		{name: "rename", old: pod, obj: change(pod, func(p *corev1.Pod) { p.Name = "other" }), namespaced: true,
			want: []string{"metadata.name: field is immutable"}},
		{name: "update also runs create checks", old: pod, obj: change(pod, func(p *corev1.Pod) { p.Labels = map[string]string{"a": "b c"} }), namespaced: true,
			want: []string{"metadata.labels"}},
		{name: "unknown kind", old: &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Name: "x", ResourceVersion: "1", UID: "a"}},
			obj:  &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Name: "x", ResourceVersion: "1", UID: "b"}},
			want: []string{"metadata.uid: field is immutable"}},
	})
}

func TestValidatePodUpdate(t *testing.T) {
	pod := stored(validPod())
	withDeadline := change(pod, func(p *corev1.Pod) { p.Spec.ActiveDeadlineSeconds = ptr.To[int64](600) })
	gated := change(pod, func(p *corev1.Pod) { p.Spec.SchedulingGates = []corev1.PodSchedulingGate{{Name: "example.com/wait"}} })
	runUpdateCases(t, []updateCase{
		{name: "image change", old: pod, obj: change(pod, func(p *corev1.Pod) { p.Spec.Containers[0].Image = "nginx:1.28" }), namespaced: true},
		{name: "set activeDeadlineSeconds", old: pod, obj: withDeadline, namespaced: true},
		{name: "lower activeDeadlineSeconds", old: withDeadline, obj: change(withDeadline, func(p *corev1.Pod) { p.Spec.ActiveDeadlineSeconds = ptr.To[int64](60) }), namespaced: true},
		{name: "raise activeDeadlineSeconds", old: withDeadline, obj: change(withDeadline, func(p *corev1.Pod) { p.Spec.ActiveDeadlineSeconds = ptr.To[int64](6000) }), namespaced: true,
			want: []string{"spec.activeDeadlineSeconds: must be less than or equal to previous value"}},
		{name: "add toleration", old: pod, obj: change(pod, func(p *corev1.Pod) {
			p.Spec.Tolerations = append(p.Spec.Tolerations, corev1.Toleration{Key: "dedicated", Operator: corev1.TolerationOpEqual, Value: "gpu", Effect: corev1.TaintEffectNoSchedule})
		}), namespaced: true},
		{name: "change tolerationSeconds", old: pod, obj: change(pod, func(p *corev1.Pod) { p.Spec.Tolerations[0].TolerationSeconds = ptr.To[int64](10) }), namespaced: true},
		{name: "remove toleration", old: pod, obj: change(pod, func(p *corev1.Pod) { p.Spec.Tolerations = p.Spec.Tolerations[:1] }), namespaced: true,
			want: []string{"spec.tolerations: Forbidden"}},
		{name: "remove scheduling gate", old: gated, obj: change(gated, func(p *corev1.Pod) { p.Spec.SchedulingGates = nil }), namespaced: true},
		{name: "add scheduling gate", old: pod, obj: gated, namespaced: true,
			want: []string{"spec: Forbidden: pod updates may not change fields other than"}},
		{name: "change container port", old: pod, obj: change(pod, func(p *corev1.Pod) { p.Spec.Containers[0].Ports[0].ContainerPort = 8080 }), namespaced: true,
			want: []string{"spec: Forbidden: pod updates may not change fields other than `spec.containers[*].image`,`spec.initContainers[*].image`,`spec.activeDeadlineSeconds`"}},
		{name: "set nodeName", old: pod, obj: change(pod, func(p *corev1.Pod) { p.Spec.NodeName = "node-1" }), namespaced: true,
			want: []string{"spec: Forbidden"}},
		{name: "add container", old: pod, obj: change(pod, func(p *corev1.Pod) {
			p.Spec.Containers = append(p.Spec.Containers, corev1.Container{Name: "side", Image: "busybox", ImagePullPolicy: corev1.PullAlways,
				TerminationMessagePolicy: corev1.TerminationMessageReadFile})
		}), namespaced: true, want: []string{"spec: Forbidden"}},
		{name: "status change", old: pod, obj: change(pod, func(p *corev1.Pod) { p.Status.Phase = corev1.PodRunning; p.Status.PodIP = "10.244.1.5" }), namespaced: true},
	})
}

func TestValidateWorkloadUpdates(t *testing.T) {
	d, rs := stored(validDeployment()), stored(validReplicaSet())
	job := stored(validJob())
	jobWithSelector := change(job, func(j *batchv1.Job) {
		uid := map[string]string{"batch.kubernetes.io/controller-uid": string(j.UID)}
		j.Spec.Selector = &metav1.LabelSelector{MatchLabels: uid}
		j.Spec.Template.Labels = uid
	})
	suspended := change(job, func(j *batchv1.Job) { j.Spec.Suspend = ptr.To(true) })
	runUpdateCases(t, []updateCase{
		{name: "deployment scale and new image", old: d, obj: change(d, func(d *appsv1.Deployment) {
			d.Spec.Replicas = ptr.To[int32](5)
			d.Spec.Template.Spec.Containers[0].Image = "nginx:1.28"
		}), namespaced: true},
		{name: "deployment selector change", old: d, obj: change(d, func(d *appsv1.Deployment) {
			d.Spec.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web", "v": "2"}}
			d.Spec.Template.Labels = map[string]string{"app": "web", "v": "2"}
		}), namespaced: true, want: []string{"spec.selector: field is immutable"}},
		{name: "replicaset selector change", old: rs, obj: change(rs, func(r *appsv1.ReplicaSet) {
			r.Spec.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}
		}), namespaced: true, want: []string{"spec.selector: field is immutable"}},
		{name: "job gets generated selector and labels", old: job, obj: jobWithSelector, namespaced: true},
		{name: "job selector change", old: jobWithSelector, obj: change(jobWithSelector, func(j *batchv1.Job) {
			j.Spec.Selector.MatchLabels = map[string]string{"x": "y"}
			j.Spec.Template.Labels = map[string]string{"x": "y"}
		}), namespaced: true, want: []string{"spec.selector: field is immutable", "spec.template: field is immutable"}},
		{name: "job template change", old: job, obj: change(job, func(j *batchv1.Job) { j.Spec.Template.Spec.Containers[0].Image = "busybox:2" }), namespaced: true,
			want: []string{"spec.template: Invalid value: \"<pod template>\": field is immutable"}},
		{name: "job parallelism and suspend change", old: job, obj: change(job, func(j *batchv1.Job) {
			j.Spec.Parallelism = ptr.To[int32](0)
			j.Spec.Suspend = ptr.To(true)
		}), namespaced: true},
		{name: "job completions change", old: job, obj: change(job, func(j *batchv1.Job) { j.Spec.Completions = ptr.To[int32](3) }), namespaced: true,
			want: []string{"spec.completions: field is immutable"}},
		{name: "suspended job scheduling directives", old: suspended, obj: change(suspended, func(j *batchv1.Job) {
			j.Spec.Template.Spec.NodeSelector = map[string]string{"pool": "batch"}
		}), namespaced: true},
	})
}

func TestValidateCoreUpdates(t *testing.T) {
	svc := stored(validService())
	svc.Spec.ClusterIP, svc.Spec.ClusterIPs = "10.96.0.10", []string{"10.96.0.10"}
	cm := stored(defaulted(&corev1.ConfigMap{ObjectMeta: nsMeta("cfg"), Data: map[string]string{"k": "v"}}))
	frozenCM := change(cm, func(c *corev1.ConfigMap) { c.Immutable = ptr.To(true) })
	secret := stored(defaulted(&corev1.Secret{ObjectMeta: nsMeta("s"), Data: map[string][]byte{"k": []byte("v")}, Immutable: ptr.To(true)}))
	pvc := stored(validPVC())
	bound := change(pvc, func(p *corev1.PersistentVolumeClaim) {
		p.Spec.VolumeName = "pv0001"
		p.Status.Phase = corev1.ClaimBound
		p.Status.Capacity = corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}
	})
	pv := stored(validPV())
	sc := stored(validStorageClass())
	es := stored(validEndpointSlice())
	node := stored(validNode())
	newNode := stored(defaulted(&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-2"}}))
	runUpdateCases(t, []updateCase{
		{name: "service port change", old: svc, obj: change(svc, func(s *corev1.Service) { s.Spec.Ports[0].Port = 8080; s.Spec.Ports[0].TargetPort = intOrStr("http") }), namespaced: true},
		{name: "service clusterIP change", old: svc, obj: change(svc, func(s *corev1.Service) { s.Spec.ClusterIP = "10.96.0.11"; s.Spec.ClusterIPs = []string{"10.96.0.11"} }), namespaced: true,
			want: []string{`spec.clusterIP: Invalid value: "10.96.0.11": field is immutable`}},
		{name: "service clusterIP dropped", old: svc, obj: change(svc, func(s *corev1.Service) { s.Spec.ClusterIP = ""; s.Spec.ClusterIPs = nil }), namespaced: true,
			want: []string{"spec.clusterIP: field is immutable"}},
		{name: "service to ExternalName", old: svc, obj: change(svc, func(s *corev1.Service) {
			s.Spec = corev1.ServiceSpec{Type: corev1.ServiceTypeExternalName, ExternalName: "db.example.com", SessionAffinity: corev1.ServiceAffinityNone}
		}), namespaced: true},
		{name: "configmap data change", old: cm, obj: change(cm, func(c *corev1.ConfigMap) { c.Data["k"] = "w" }), namespaced: true},
		{name: "immutable configmap data change", old: frozenCM, obj: change(frozenCM, func(c *corev1.ConfigMap) { c.Data["k"] = "w" }), namespaced: true,
			want: []string{"data: Forbidden: field is immutable when `immutable` is set"}},
		{name: "immutable configmap unfrozen", old: frozenCM, obj: change(frozenCM, func(c *corev1.ConfigMap) { c.Immutable = ptr.To(false) }), namespaced: true,
			want: []string{"immutable: Forbidden"}},
		{name: "immutable secret data change", old: secret, obj: change(secret, func(s *corev1.Secret) { s.Data["k2"] = []byte("x") }), namespaced: true,
			want: []string{"data: Forbidden"}},
		{name: "secret type change", old: secret, obj: change(secret, func(s *corev1.Secret) { s.Type = corev1.SecretTypeBasicAuth; s.Data["username"] = nil }), namespaced: true,
			want: []string{"type: field is immutable"}},
		{name: "pvc binding", old: pvc, obj: change(pvc, func(p *corev1.PersistentVolumeClaim) { p.Spec.VolumeName = "pv0001" }), namespaced: true},
		{name: "pvc resize unbound", old: pvc, obj: change(pvc, func(p *corev1.PersistentVolumeClaim) {
			p.Spec.Resources.Requests[corev1.ResourceStorage] = resource.MustParse("2Gi")
		}), namespaced: true, want: []string{"spec: Forbidden: spec is immutable after creation except resources.requests"}},
		{name: "pvc grow bound", old: bound, obj: change(bound, func(p *corev1.PersistentVolumeClaim) {
			p.Spec.Resources.Requests[corev1.ResourceStorage] = resource.MustParse("2Gi")
		}), namespaced: true},
		{name: "pvc shrink bound", old: bound, obj: change(bound, func(p *corev1.PersistentVolumeClaim) {
			p.Spec.Resources.Requests[corev1.ResourceStorage] = resource.MustParse("500Mi")
		}), namespaced: true, want: []string{"spec.resources.requests.storage: Forbidden: field can not be less than status.capacity"}},
		{name: "pvc access mode change", old: bound, obj: change(bound, func(p *corev1.PersistentVolumeClaim) {
			p.Spec.AccessModes = []corev1.PersistentVolumeAccessMode{corev1.ReadWriteMany}
		}), namespaced: true, want: []string{"spec: Forbidden"}},
		{name: "pv capacity and claimRef change", old: pv, obj: change(pv, func(p *corev1.PersistentVolume) {
			p.Spec.Capacity[corev1.ResourceStorage] = resource.MustParse("10Gi")
			p.Spec.ClaimRef = &corev1.ObjectReference{Namespace: "default", Name: "data"}
		})},
		{name: "pv source change", old: pv, obj: change(pv, func(p *corev1.PersistentVolume) { p.Spec.HostPath.Path = "/other" }),
			want: []string{"spec.persistentvolumesource: Forbidden: spec.persistentvolumesource is immutable after creation"}},
		{name: "storageclass label change", old: sc, obj: change(sc, func(s *storagev1.StorageClass) { s.Labels = map[string]string{"a": "b"} })},
		{name: "storageclass parameters change", old: sc, obj: change(sc, func(s *storagev1.StorageClass) { s.Parameters["type"] = "hdd" }),
			want: []string{"parameters: Forbidden: updates to parameters are forbidden."}},
		{name: "storageclass provisioner and policy change", old: sc, obj: change(sc, func(s *storagev1.StorageClass) {
			s.Provisioner = "example.com/other"
			s.ReclaimPolicy = ptr.To(corev1.PersistentVolumeReclaimRetain)
		}), want: []string{"provisioner: Forbidden", "reclaimPolicy: Forbidden"}},
		{name: "node pod CIDR assigned", old: newNode, obj: change(newNode, func(n *corev1.Node) {
			n.Spec.PodCIDR, n.Spec.PodCIDRs = "10.244.2.0/24", []string{"10.244.2.0/24"}
		})},
		{name: "node pod CIDR changed", old: node, obj: change(node, func(n *corev1.Node) {
			n.Spec.PodCIDR, n.Spec.PodCIDRs = "10.244.9.0/24", []string{"10.244.9.0/24"}
		}), want: []string{"spec.podCIDR: Forbidden", "spec.podCIDRs: Forbidden"}},
		{name: "node taint and status change", old: node, obj: change(node, func(n *corev1.Node) {
			n.Spec.Taints = nil
			n.Spec.Unschedulable = true
			n.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}
		})},
		{name: "endpointslice address type change", old: es, obj: change(es, func(e *discoveryv1.EndpointSlice) {
			e.AddressType = discoveryv1.AddressTypeIPv6
			e.Endpoints[0].Addresses = []string{"fd00::5"}
		}), namespaced: true, want: []string{"addressType: field is immutable"}},
	})
}
