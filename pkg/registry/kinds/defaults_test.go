package kinds

import (
	"math"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	batchv1 "k8s.io/api/batch/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/diff"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
)

func podSpec(containers ...corev1.Container) corev1.PodSpec {
	return corev1.PodSpec{Containers: containers}
}

func template(labels map[string]string) corev1.PodTemplateSpec {
	return corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: labels},
		Spec:       podSpec(corev1.Container{Name: "c", Image: "nginx:1.27"}),
	}
}

// TestDefault checks, per kind, that the expected fields are filled.
func TestDefault(t *testing.T) {
	tests := []struct {
		name  string
		obj   runtime.Object
		check func(t *testing.T, obj runtime.Object)
	}{
		{
			name: "pod",
			obj: &corev1.Pod{
				ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "default"},
				Spec: corev1.PodSpec{
					Containers: []corev1.Container{{
						Name:  "app",
						Image: "nginx",
						Ports: []corev1.ContainerPort{{ContainerPort: 80}},
						Env: []corev1.EnvVar{{Name: "POD", ValueFrom: &corev1.EnvVarSource{
							FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"},
						}}},
						LivenessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{
							HTTPGet: &corev1.HTTPGetAction{Port: intstr.FromInt32(80)},
						}},
						Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{
							corev1.ResourceCPU:    resource.MustParse("500m"),
							corev1.ResourceMemory: resource.MustParse("128Mi"),
						}},
					}, {
						Name:  "sidecar",
						Image: "busybox:1.36",
					}},
					Volumes: []corev1.Volume{
						{Name: "scratch"},
						{Name: "cm", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
							LocalObjectReference: corev1.LocalObjectReference{Name: "cfg"},
						}}},
						{Name: "sec", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "s"}}},
						{Name: "hp", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/tmp"}}},
						{Name: "img", VolumeSource: corev1.VolumeSource{Image: &corev1.ImageVolumeSource{Reference: "quay.io/crio/artifact:v2"}}},
						{Name: "img-latest", VolumeSource: corev1.VolumeSource{Image: &corev1.ImageVolumeSource{Reference: "busybox"}}},
					},
				},
			},
			check: func(t *testing.T, obj runtime.Object) {
				p := obj.(*corev1.Pod)
				s := p.Spec
				expect(t, "restartPolicy", s.RestartPolicy, corev1.RestartPolicyAlways)
				expect(t, "dnsPolicy", s.DNSPolicy, corev1.DNSClusterFirst)
				expect(t, "schedulerName", s.SchedulerName, "default-scheduler")
				expect(t, "terminationGracePeriodSeconds", *s.TerminationGracePeriodSeconds, int64(30))
				expect(t, "securityContext", s.SecurityContext != nil, true)
				expect(t, "enableServiceLinks", *s.EnableServiceLinks, true)
				expect(t, "serviceAccountName", s.ServiceAccountName, "default")
				expect(t, "serviceAccount", s.DeprecatedServiceAccount, "default")
				expect(t, "priority", *s.Priority, int32(0))
				expect(t, "preemptionPolicy", *s.PreemptionPolicy, corev1.PreemptLowerPriority)
				expect(t, "tolerations", len(s.Tolerations), 2)
				expect(t, "toleration seconds", *s.Tolerations[0].TolerationSeconds, int64(300))
				c := s.Containers[0]
				expect(t, "imagePullPolicy untagged", c.ImagePullPolicy, corev1.PullAlways)
				expect(t, "imagePullPolicy tagged", s.Containers[1].ImagePullPolicy, corev1.PullIfNotPresent)
				expect(t, "terminationMessagePath", c.TerminationMessagePath, "/dev/termination-log")
				expect(t, "terminationMessagePolicy", c.TerminationMessagePolicy, corev1.TerminationMessageReadFile)
				expect(t, "port protocol", c.Ports[0].Protocol, corev1.ProtocolTCP)
				expect(t, "fieldRef apiVersion", c.Env[0].ValueFrom.FieldRef.APIVersion, "v1")
				lp := c.LivenessProbe
				expect(t, "probe", [4]int32{lp.TimeoutSeconds, lp.PeriodSeconds, lp.SuccessThreshold, lp.FailureThreshold}, [4]int32{1, 10, 1, 3})
				expect(t, "httpGet path", lp.HTTPGet.Path, "/")
				expect(t, "httpGet scheme", lp.HTTPGet.Scheme, corev1.URISchemeHTTP)
				req := c.Resources.Requests[corev1.ResourceCPU]
				expect(t, "requests from limits", req.String(), "500m")
				expect(t, "emptyDir default", s.Volumes[0].EmptyDir != nil, true)
				expect(t, "configMap defaultMode", *s.Volumes[1].ConfigMap.DefaultMode, int32(420))
				expect(t, "secret defaultMode", *s.Volumes[2].Secret.DefaultMode, int32(420))
				expect(t, "hostPath type", *s.Volumes[3].HostPath.Type, corev1.HostPathUnset)
				expect(t, "image volume pullPolicy tagged", s.Volumes[4].Image.PullPolicy, corev1.PullIfNotPresent)
				expect(t, "image volume pullPolicy untagged", s.Volumes[5].Image.PullPolicy, corev1.PullAlways)
				expect(t, "phase", p.Status.Phase, corev1.PodPending)
				expect(t, "qos", p.Status.QOSClass, corev1.PodQOSBurstable)
			},
		},
		{
			name: "pod keeps user values",
			obj: &corev1.Pod{Spec: corev1.PodSpec{
				RestartPolicy:      corev1.RestartPolicyNever,
				ServiceAccountName: "builder",
				PriorityClassName:  "system-node-critical",
				Tolerations:        []corev1.Toleration{{Operator: corev1.TolerationOpExists}},
				Containers: []corev1.Container{{
					Name: "c", Image: "reg.example.com:5000/app@sha256:abc", ImagePullPolicy: corev1.PullNever,
					Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{
						corev1.ResourceCPU:    resource.MustParse("1"),
						corev1.ResourceMemory: resource.MustParse("1Gi"),
					}},
				}},
			}},
			check: func(t *testing.T, obj runtime.Object) {
				p := obj.(*corev1.Pod)
				expect(t, "restartPolicy", p.Spec.RestartPolicy, corev1.RestartPolicyNever)
				expect(t, "serviceAccountName", p.Spec.ServiceAccountName, "builder")
				expect(t, "priority", *p.Spec.Priority, int32(2000001000))
				expect(t, "tolerations", len(p.Spec.Tolerations), 1)
				expect(t, "imagePullPolicy", p.Spec.Containers[0].ImagePullPolicy, corev1.PullNever)
				expect(t, "qos", p.Status.QOSClass, corev1.PodQOSGuaranteed)
			},
		},
		{
			name: "pod best effort, digest image, host network",
			obj: &corev1.Pod{Spec: corev1.PodSpec{
				HostNetwork: true,
				Containers: []corev1.Container{{
					Name: "c", Image: "nginx@sha256:abc",
					Ports: []corev1.ContainerPort{{ContainerPort: 8080}},
				}},
			}},
			check: func(t *testing.T, obj runtime.Object) {
				p := obj.(*corev1.Pod)
				expect(t, "imagePullPolicy", p.Spec.Containers[0].ImagePullPolicy, corev1.PullIfNotPresent)
				expect(t, "hostPort", p.Spec.Containers[0].Ports[0].HostPort, int32(8080))
				expect(t, "qos", p.Status.QOSClass, corev1.PodQOSBestEffort)
			},
		},
		{
			name: "service",
			obj: &corev1.Service{Spec: corev1.ServiceSpec{
				Ports: []corev1.ServicePort{{Port: 80}, {Name: "https", Port: 443, TargetPort: intstr.FromString("web")}},
			}},
			check: func(t *testing.T, obj runtime.Object) {
				s := obj.(*corev1.Service).Spec
				expect(t, "type", s.Type, corev1.ServiceTypeClusterIP)
				expect(t, "sessionAffinity", s.SessionAffinity, corev1.ServiceAffinityNone)
				expect(t, "protocol", s.Ports[0].Protocol, corev1.ProtocolTCP)
				expect(t, "targetPort", s.Ports[0].TargetPort, intstr.FromInt32(80))
				expect(t, "named targetPort kept", s.Ports[1].TargetPort, intstr.FromString("web"))
				expect(t, "internalTrafficPolicy", *s.InternalTrafficPolicy, corev1.ServiceInternalTrafficPolicyCluster)
				expect(t, "ipFamilyPolicy", *s.IPFamilyPolicy, corev1.IPFamilyPolicySingleStack)
				expect(t, "ipFamilies", s.IPFamilies, []corev1.IPFamily{corev1.IPv4Protocol})
				expect(t, "externalTrafficPolicy", s.ExternalTrafficPolicy, corev1.ServiceExternalTrafficPolicy(""))
			},
		},
		{
			name: "service load balancer with client IP affinity",
			obj: &corev1.Service{Spec: corev1.ServiceSpec{
				Type:            corev1.ServiceTypeLoadBalancer,
				SessionAffinity: corev1.ServiceAffinityClientIP,
				ClusterIP:       "fd00::10",
				Ports:           []corev1.ServicePort{{Port: 80}},
			}},
			check: func(t *testing.T, obj runtime.Object) {
				s := obj.(*corev1.Service).Spec
				expect(t, "timeout", *s.SessionAffinityConfig.ClientIP.TimeoutSeconds, int32(10800))
				expect(t, "externalTrafficPolicy", s.ExternalTrafficPolicy, corev1.ServiceExternalTrafficPolicyCluster)
				expect(t, "allocateLoadBalancerNodePorts", *s.AllocateLoadBalancerNodePorts, true)
				expect(t, "clusterIPs", s.ClusterIPs, []string{"fd00::10"})
				expect(t, "ipFamilies", s.IPFamilies, []corev1.IPFamily{corev1.IPv6Protocol})
			},
		},
		{
			name: "service external name",
			obj:  &corev1.Service{Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeExternalName, ExternalName: "example.com"}},
			check: func(t *testing.T, obj runtime.Object) {
				s := obj.(*corev1.Service).Spec
				expect(t, "ipFamilyPolicy", s.IPFamilyPolicy == nil, true)
				expect(t, "internalTrafficPolicy", s.InternalTrafficPolicy == nil, true)
			},
		},
		{
			name: "deployment",
			obj: &appsv1.Deployment{Spec: appsv1.DeploymentSpec{
				Template: template(map[string]string{"app": "web"}),
			}},
			check: func(t *testing.T, obj runtime.Object) {
				d := obj.(*appsv1.Deployment)
				expect(t, "replicas", *d.Spec.Replicas, int32(1))
				expect(t, "strategy", d.Spec.Strategy.Type, appsv1.RollingUpdateDeploymentStrategyType)
				expect(t, "maxUnavailable", *d.Spec.Strategy.RollingUpdate.MaxUnavailable, intstr.FromString("25%"))
				expect(t, "maxSurge", *d.Spec.Strategy.RollingUpdate.MaxSurge, intstr.FromString("25%"))
				expect(t, "revisionHistoryLimit", *d.Spec.RevisionHistoryLimit, int32(10))
				expect(t, "progressDeadlineSeconds", *d.Spec.ProgressDeadlineSeconds, int32(600))
				ts := d.Spec.Template.Spec
				expect(t, "template restartPolicy", ts.RestartPolicy, corev1.RestartPolicyAlways)
				expect(t, "template imagePullPolicy", ts.Containers[0].ImagePullPolicy, corev1.PullIfNotPresent)
				// Pod-only defaults are not applied to templates.
				expect(t, "template enableServiceLinks", ts.EnableServiceLinks == nil, true)
				expect(t, "template serviceAccountName", ts.ServiceAccountName, "")
				expect(t, "template tolerations", len(ts.Tolerations), 0)
			},
		},
		{
			name: "deployment recreate",
			obj:  &appsv1.Deployment{Spec: appsv1.DeploymentSpec{Strategy: appsv1.DeploymentStrategy{Type: appsv1.RecreateDeploymentStrategyType}}},
			check: func(t *testing.T, obj runtime.Object) {
				d := obj.(*appsv1.Deployment)
				expect(t, "rollingUpdate", d.Spec.Strategy.RollingUpdate == nil, true)
			},
		},
		{
			name: "replicaset",
			obj:  &appsv1.ReplicaSet{Spec: appsv1.ReplicaSetSpec{Template: template(nil)}},
			check: func(t *testing.T, obj runtime.Object) {
				rs := obj.(*appsv1.ReplicaSet)
				expect(t, "replicas", *rs.Spec.Replicas, int32(1))
				expect(t, "template dnsPolicy", rs.Spec.Template.Spec.DNSPolicy, corev1.DNSClusterFirst)
			},
		},
		{
			name: "job",
			obj: &batchv1.Job{Spec: batchv1.JobSpec{Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "batch"}},
				Spec: corev1.PodSpec{
					RestartPolicy: corev1.RestartPolicyNever,
					Containers:    []corev1.Container{{Name: "c", Image: "busybox"}},
				},
			}}},
			check: func(t *testing.T, obj runtime.Object) {
				j := obj.(*batchv1.Job)
				expect(t, "parallelism", *j.Spec.Parallelism, int32(1))
				expect(t, "completions", *j.Spec.Completions, int32(1))
				expect(t, "backoffLimit", *j.Spec.BackoffLimit, int32(6))
				expect(t, "completionMode", *j.Spec.CompletionMode, batchv1.NonIndexedCompletion)
				expect(t, "suspend", *j.Spec.Suspend, false)
				expect(t, "podReplacementPolicy", *j.Spec.PodReplacementPolicy, batchv1.TerminatingOrFailed)
				expect(t, "labels from template", j.Labels["app"], "batch")
				expect(t, "restartPolicy kept", j.Spec.Template.Spec.RestartPolicy, corev1.RestartPolicyNever)
			},
		},
		{
			name: "job work queue and per-index backoff",
			obj: &batchv1.Job{Spec: batchv1.JobSpec{
				Parallelism:          ptr.To[int32](3),
				BackoffLimitPerIndex: ptr.To[int32](1),
				PodFailurePolicy: &batchv1.PodFailurePolicy{Rules: []batchv1.PodFailurePolicyRule{{
					Action:          batchv1.PodFailurePolicyActionIgnore,
					OnPodConditions: []batchv1.PodFailurePolicyOnPodConditionsPattern{{Type: corev1.DisruptionTarget}},
				}}},
			}},
			check: func(t *testing.T, obj runtime.Object) {
				j := obj.(*batchv1.Job)
				expect(t, "parallelism", *j.Spec.Parallelism, int32(3))
				expect(t, "completions", j.Spec.Completions == nil, true)
				expect(t, "backoffLimit", *j.Spec.BackoffLimit, int32(math.MaxInt32))
				expect(t, "podReplacementPolicy", *j.Spec.PodReplacementPolicy, batchv1.Failed)
				expect(t, "condition status", j.Spec.PodFailurePolicy.Rules[0].OnPodConditions[0].Status, corev1.ConditionTrue)
			},
		},
		{
			name: "cronjob",
			obj: &batchv1.CronJob{Spec: batchv1.CronJobSpec{
				Schedule:    "*/5 * * * *",
				JobTemplate: batchv1.JobTemplateSpec{Spec: batchv1.JobSpec{Template: template(nil)}},
			}},
			check: func(t *testing.T, obj runtime.Object) {
				c := obj.(*batchv1.CronJob)
				expect(t, "concurrencyPolicy", c.Spec.ConcurrencyPolicy, batchv1.AllowConcurrent)
				expect(t, "suspend", *c.Spec.Suspend, false)
				expect(t, "successfulJobsHistoryLimit", *c.Spec.SuccessfulJobsHistoryLimit, int32(3))
				expect(t, "failedJobsHistoryLimit", *c.Spec.FailedJobsHistoryLimit, int32(1))
				expect(t, "job template backoffLimit untouched", c.Spec.JobTemplate.Spec.BackoffLimit == nil, true)
				expect(t, "pod template defaulted", c.Spec.JobTemplate.Spec.Template.Spec.SchedulerName, "default-scheduler")
			},
		},
		{
			name: "hpa",
			obj:  &autoscalingv2.HorizontalPodAutoscaler{Spec: autoscalingv2.HorizontalPodAutoscalerSpec{MaxReplicas: 5}},
			check: func(t *testing.T, obj runtime.Object) {
				h := obj.(*autoscalingv2.HorizontalPodAutoscaler)
				expect(t, "minReplicas", *h.Spec.MinReplicas, int32(1))
				expect(t, "metrics", len(h.Spec.Metrics), 1)
				m := h.Spec.Metrics[0]
				expect(t, "metric", m.Resource.Name, corev1.ResourceCPU)
				expect(t, "utilization", *m.Resource.Target.AverageUtilization, int32(80))
				expect(t, "behavior untouched", h.Spec.Behavior == nil, true)
			},
		},
		{
			name: "hpa behavior",
			obj: &autoscalingv2.HorizontalPodAutoscaler{Spec: autoscalingv2.HorizontalPodAutoscalerSpec{
				Behavior: &autoscalingv2.HorizontalPodAutoscalerBehavior{
					ScaleDown: &autoscalingv2.HPAScalingRules{StabilizationWindowSeconds: ptr.To[int32](60)},
				},
			}},
			check: func(t *testing.T, obj runtime.Object) {
				b := obj.(*autoscalingv2.HorizontalPodAutoscaler).Spec.Behavior
				expect(t, "scaleUp policies", len(b.ScaleUp.Policies), 2)
				expect(t, "scaleUp window", *b.ScaleUp.StabilizationWindowSeconds, int32(0))
				expect(t, "scaleDown window kept", *b.ScaleDown.StabilizationWindowSeconds, int32(60))
				expect(t, "scaleDown select", *b.ScaleDown.SelectPolicy, autoscalingv2.MaxChangePolicySelect)
				expect(t, "scaleDown policies", len(b.ScaleDown.Policies), 1)
			},
		},
		{
			name: "namespace",
			obj:  &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team-a"}},
			check: func(t *testing.T, obj runtime.Object) {
				ns := obj.(*corev1.Namespace)
				expect(t, "phase", ns.Status.Phase, corev1.NamespaceActive)
				expect(t, "finalizers", ns.Spec.Finalizers, []corev1.FinalizerName{"kubernetes"})
				expect(t, "name label", ns.Labels["kubernetes.io/metadata.name"], "team-a")
			},
		},
		{
			name: "namespace being deleted keeps finalizers removed",
			obj: &corev1.Namespace{
				ObjectMeta: metav1.ObjectMeta{Name: "gone", DeletionTimestamp: &metav1.Time{}},
				Status:     corev1.NamespaceStatus{Phase: corev1.NamespaceTerminating},
			},
			check: func(t *testing.T, obj runtime.Object) {
				expect(t, "finalizers", len(obj.(*corev1.Namespace).Spec.Finalizers), 0)
			},
		},
		{
			name: "node",
			obj: &corev1.Node{Status: corev1.NodeStatus{Capacity: corev1.ResourceList{
				corev1.ResourceCPU: resource.MustParse("4"),
			}}},
			check: func(t *testing.T, obj runtime.Object) {
				a := obj.(*corev1.Node).Status.Allocatable[corev1.ResourceCPU]
				expect(t, "allocatable", a.String(), "4")
			},
		},
		{
			name: "secret",
			obj:  &corev1.Secret{StringData: map[string]string{"user": "admin"}, Data: map[string][]byte{"x": []byte("y")}},
			check: func(t *testing.T, obj runtime.Object) {
				s := obj.(*corev1.Secret)
				expect(t, "type", s.Type, corev1.SecretTypeOpaque)
				expect(t, "stringData merged", string(s.Data["user"]), "admin")
				expect(t, "data kept", string(s.Data["x"]), "y")
				expect(t, "stringData cleared", s.StringData == nil, true)
			},
		},
		{
			name: "persistent volume",
			obj:  &corev1.PersistentVolume{},
			check: func(t *testing.T, obj runtime.Object) {
				pv := obj.(*corev1.PersistentVolume)
				expect(t, "reclaimPolicy", pv.Spec.PersistentVolumeReclaimPolicy, corev1.PersistentVolumeReclaimRetain)
				expect(t, "volumeMode", *pv.Spec.VolumeMode, corev1.PersistentVolumeFilesystem)
				expect(t, "phase", pv.Status.Phase, corev1.VolumePending)
			},
		},
		{
			name: "persistent volume claim",
			obj:  &corev1.PersistentVolumeClaim{},
			check: func(t *testing.T, obj runtime.Object) {
				pvc := obj.(*corev1.PersistentVolumeClaim)
				expect(t, "volumeMode", *pvc.Spec.VolumeMode, corev1.PersistentVolumeFilesystem)
				expect(t, "phase", pvc.Status.Phase, corev1.ClaimPending)
			},
		},
		{
			name: "storage class",
			obj:  &storagev1.StorageClass{Provisioner: "example.com/nfs"},
			check: func(t *testing.T, obj runtime.Object) {
				sc := obj.(*storagev1.StorageClass)
				expect(t, "reclaimPolicy", *sc.ReclaimPolicy, corev1.PersistentVolumeReclaimDelete)
				expect(t, "volumeBindingMode", *sc.VolumeBindingMode, storagev1.VolumeBindingImmediate)
			},
		},
		{
			name: "endpoints",
			obj: &corev1.Endpoints{Subsets: []corev1.EndpointSubset{{
				Ports: []corev1.EndpointPort{{Port: 80}},
			}}},
			check: func(t *testing.T, obj runtime.Object) {
				expect(t, "protocol", obj.(*corev1.Endpoints).Subsets[0].Ports[0].Protocol, corev1.ProtocolTCP)
			},
		},
		{
			name: "endpoint slice",
			obj:  &discoveryv1.EndpointSlice{Ports: []discoveryv1.EndpointPort{{Port: ptr.To[int32](80)}}},
			check: func(t *testing.T, obj runtime.Object) {
				p := obj.(*discoveryv1.EndpointSlice).Ports[0]
				expect(t, "protocol", *p.Protocol, corev1.ProtocolTCP)
				expect(t, "name", *p.Name, "")
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			defaultObject(tc.obj)
			tc.check(t, tc.obj)

			// Idempotence: a second pass must not change anything.
			again := tc.obj.DeepCopyObject()
			defaultObject(again)
			if !equality.Semantic.DeepEqual(tc.obj, again) {
				t.Errorf("Default is not idempotent:\n%s", diff.Diff(tc.obj, again))
			}
		})
	}
}

// TestDefaultNoOp checks kinds without defaults, unknown kinds and nil.
func TestDefaultNoOp(t *testing.T) {
	objs := []runtime.Object{
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "c"}, Data: map[string]string{"a": "b"}},
		&coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "l"}},
		&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "sa"}},
		&metav1.Status{Message: "unknown kind"},
	}
	for _, obj := range objs {
		before := obj.DeepCopyObject()
		defaultObject(obj)
		if !equality.Semantic.DeepEqual(before, obj) {
			t.Errorf("%T changed:\n%s", obj, diff.Diff(before, obj))
		}
	}
	defaultObject(nil)
	defaultObject((*corev1.Pod)(nil))
}

func expect[T any](t *testing.T, what string, got, want T) {
	t.Helper()
	if !equality.Semantic.DeepEqual(got, want) {
		t.Errorf("%s: got %v, want %v", what, got, want)
	}
}
