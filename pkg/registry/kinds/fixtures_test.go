package kinds

import (
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	batchv1 "k8s.io/api/batch/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	networkingv1 "k8s.io/api/networking/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"
)

// The fixtures below are valid objects as a user would write them; they
// are passed through their kind's defaults, as the apiserver does.

func defaulted[T runtime.Object](obj T) T {
	defaultObject(obj)
	return obj
}

func nsMeta(name string) metav1.ObjectMeta {
	return metav1.ObjectMeta{Name: name, Namespace: "default"}
}

func appLabels() map[string]string { return map[string]string{"app": "web"} }

func podTemplate(labels map[string]string, restart corev1.RestartPolicy) corev1.PodTemplateSpec {
	return corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: labels},
		Spec: corev1.PodSpec{
			RestartPolicy: restart,
			Containers:    []corev1.Container{{Name: "app", Image: "nginx:1.27"}},
		},
	}
}

func validPod() *corev1.Pod {
	return defaulted(&corev1.Pod{
		ObjectMeta: nsMeta("web"),
		Spec: corev1.PodSpec{
			Containers: []corev1.Container{{
				Name:  "app",
				Image: "nginx:1.27",
				Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: 80}},
				Env: []corev1.EnvVar{
					{Name: "MODE", Value: "prod"},
					{Name: "POD_NAME", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}}},
				},
				Resources: corev1.ResourceRequirements{
					Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m")},
					Limits:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("500m"), corev1.ResourceMemory: resource.MustParse("128Mi")},
				},
				VolumeMounts: []corev1.VolumeMount{{Name: "data", MountPath: "/data"}},
				ReadinessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{
					TCPSocket: &corev1.TCPSocketAction{Port: intOrStr("http")},
				}},
			}},
			Volumes:      []corev1.Volume{{Name: "data"}},
			NodeSelector: map[string]string{"kubernetes.io/os": "linux"},
		},
	})
}

func validService() *corev1.Service {
	return defaulted(&corev1.Service{
		ObjectMeta: nsMeta("web"),
		Spec: corev1.ServiceSpec{
			Selector: appLabels(),
			Ports:    []corev1.ServicePort{{Name: "http", Port: 80}, {Name: "https", Port: 443, TargetPort: intOrStr("https")}},
		},
	})
}

func validDeployment() *appsv1.Deployment {
	return defaulted(&appsv1.Deployment{
		ObjectMeta: nsMeta("web"),
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](3),
			Selector: &metav1.LabelSelector{MatchLabels: appLabels()},
			Template: podTemplate(appLabels(), ""),
		},
	})
}

func validReplicaSet() *appsv1.ReplicaSet {
	return defaulted(&appsv1.ReplicaSet{
		ObjectMeta: nsMeta("web-abc"),
		Spec: appsv1.ReplicaSetSpec{
			Selector: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
				{Key: "app", Operator: metav1.LabelSelectorOpIn, Values: []string{"web"}},
			}},
			Template: podTemplate(appLabels(), ""),
		},
	})
}

func validJob() *batchv1.Job {
	return defaulted(&batchv1.Job{
		ObjectMeta: nsMeta("pi"),
		Spec:       batchv1.JobSpec{Template: podTemplate(nil, corev1.RestartPolicyNever)},
	})
}

func validCronJob() *batchv1.CronJob {
	return defaulted(&batchv1.CronJob{
		ObjectMeta: nsMeta("hello"),
		Spec: batchv1.CronJobSpec{
			Schedule: "*/5 * * * *",
			JobTemplate: batchv1.JobTemplateSpec{Spec: batchv1.JobSpec{
				Template: podTemplate(nil, corev1.RestartPolicyOnFailure),
			}},
		},
	})
}

func validHPA() *autoscalingv2.HorizontalPodAutoscaler {
	return defaulted(&autoscalingv2.HorizontalPodAutoscaler{
		ObjectMeta: nsMeta("web"),
		Spec: autoscalingv2.HorizontalPodAutoscalerSpec{
			ScaleTargetRef: autoscalingv2.CrossVersionObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "web"},
			MaxReplicas:    5,
		},
	})
}

func validIngress() *networkingv1.Ingress {
	return defaulted(&networkingv1.Ingress{
		ObjectMeta: nsMeta("web"),
		Spec: networkingv1.IngressSpec{
			IngressClassName: ptr.To("nginx"),
			Rules: []networkingv1.IngressRule{{
				Host: "*.example.com",
				IngressRuleValue: networkingv1.IngressRuleValue{HTTP: &networkingv1.HTTPIngressRuleValue{
					Paths: []networkingv1.HTTPIngressPath{{
						Path:     "/",
						PathType: ptr.To(networkingv1.PathTypePrefix),
						Backend: networkingv1.IngressBackend{Service: &networkingv1.IngressServiceBackend{
							Name: "web", Port: networkingv1.ServiceBackendPort{Number: 80},
						}},
					}},
				}},
			}},
			TLS: []networkingv1.IngressTLS{{Hosts: []string{"www.example.com"}, SecretName: "web-tls"}},
		},
	})
}

func validPV() *corev1.PersistentVolume {
	return defaulted(&corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: "pv0001"},
		Spec: corev1.PersistentVolumeSpec{
			Capacity:    corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("5Gi")},
			AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			PersistentVolumeSource: corev1.PersistentVolumeSource{
				HostPath: &corev1.HostPathVolumeSource{Path: "/mnt/data"},
			},
			StorageClassName: "manual",
		},
	})
}

func validPVC() *corev1.PersistentVolumeClaim {
	return defaulted(&corev1.PersistentVolumeClaim{
		ObjectMeta: nsMeta("data"),
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes:      []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			StorageClassName: ptr.To("manual"),
			Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{
				corev1.ResourceStorage: resource.MustParse("1Gi"),
			}},
		},
	})
}

func validStorageClass() *storagev1.StorageClass {
	return defaulted(&storagev1.StorageClass{
		ObjectMeta:  metav1.ObjectMeta{Name: "standard"},
		Provisioner: "example.com/hostpath",
		Parameters:  map[string]string{"type": "ssd"},
	})
}

func validEndpointSlice() *discoveryv1.EndpointSlice {
	return defaulted(&discoveryv1.EndpointSlice{
		ObjectMeta:  metav1.ObjectMeta{Name: "web-abcde", Namespace: "default", Labels: map[string]string{discoveryv1.LabelServiceName: "web"}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Endpoints: []discoveryv1.Endpoint{{
			Addresses:  []string{"10.244.1.5"},
			Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true)},
			NodeName:   ptr.To("node-1"),
		}},
		Ports: []discoveryv1.EndpointPort{{Name: ptr.To("http"), Port: ptr.To[int32](80)}},
	})
}

func validEndpoints() *corev1.Endpoints {
	return defaulted(&corev1.Endpoints{
		ObjectMeta: nsMeta("web"),
		Subsets: []corev1.EndpointSubset{{
			Addresses: []corev1.EndpointAddress{{IP: "10.244.1.5", NodeName: ptr.To("node-1")}},
			Ports:     []corev1.EndpointPort{{Name: "http", Port: 80}, {Name: "https", Port: 443}},
		}},
	})
}

func validLease() *coordinationv1.Lease {
	return defaulted(&coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Name: "kube-scheduler", Namespace: "kube-system"},
		Spec: coordinationv1.LeaseSpec{
			HolderIdentity:       ptr.To("node-1_abc"),
			LeaseDurationSeconds: ptr.To[int32](15),
			LeaseTransitions:     ptr.To[int32](0),
		},
	})
}

func validNode() *corev1.Node {
	return defaulted(&corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: "node-1", Labels: map[string]string{"kubernetes.io/hostname": "node-1"}},
		Spec: corev1.NodeSpec{
			PodCIDR:  "10.244.1.0/24",
			PodCIDRs: []string{"10.244.1.0/24"},
			Taints:   []corev1.Taint{{Key: "node-role.kubernetes.io/control-plane", Effect: corev1.TaintEffectNoSchedule}},
		},
		Status: corev1.NodeStatus{Capacity: corev1.ResourceList{
			corev1.ResourceCPU: resource.MustParse("4"), corev1.ResourcePods: resource.MustParse("110"),
		}},
	})
}

// paths returns the field paths of errs.
func paths(errs field.ErrorList) []string {
	out := make([]string, 0, len(errs))
	for _, e := range errs {
		out = append(out, e.Field)
	}
	return out
}

// checkErrors asserts that errs is empty when want is empty, and otherwise
// that every wanted entry matches some error. A wanted entry is either a
// field path, or "path: substring" to also match the error text.
func checkErrors(t *testing.T, errs field.ErrorList, want []string) {
	t.Helper()
	if len(want) == 0 {
		if len(errs) != 0 {
			t.Errorf("expected no errors, got:\n%s", errs.ToAggregate())
		}
		return
	}
	if len(errs) == 0 {
		t.Errorf("expected errors at %v, got none", want)
		return
	}
	for _, w := range want {
		found := false
		for _, e := range errs {
			if e.Field == w || (strings.Contains(w, ": ") && strings.HasPrefix(w, e.Field+": ") && strings.Contains(e.Error(), strings.TrimPrefix(w, e.Field+": "))) {
				found = true
				break
			}
		}
		if !found {
			t.Errorf("no error matching %q; got:\n%s", w, strings.Join(errorStrings(errs), "\n"))
		}
	}
}

func errorStrings(errs field.ErrorList) []string {
	out := make([]string, 0, len(errs))
	for _, e := range errs {
		out = append(out, e.Error())
	}
	return out
}
