package quota

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"
)

func container(name string, requests, limits corev1.ResourceList) corev1.Container {
	return corev1.Container{Name: name, Resources: corev1.ResourceRequirements{Requests: requests, Limits: limits}}
}

func pod(containers ...corev1.Container) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns"}, Spec: corev1.PodSpec{Containers: containers}}
}

var now = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func TestUsage(t *testing.T) {
	terminal := pod(container("c", Parse("cpu", "1"), nil))
	terminal.Status.Phase = corev1.PodSucceeded
	gone := pod(container("c", Parse("cpu", "1"), nil))
	gone.DeletionTimestamp = &metav1.Time{Time: now.Add(-time.Minute)}
	gone.DeletionGracePeriodSeconds = ptr.To[int64](30)
	leaving := gone.DeepCopy()
	leaving.DeletionGracePeriodSeconds = ptr.To[int64](120)
	lb := &corev1.Service{Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, Ports: []corev1.ServicePort{{Port: 80}, {Port: 443}}}}
	np := &corev1.Service{Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeNodePort, Ports: []corev1.ServicePort{{Port: 80}}}}
	claim := &corev1.PersistentVolumeClaim{Spec: corev1.PersistentVolumeClaimSpec{StorageClassName: ptr.To("fast"),
		Resources: corev1.VolumeResourceRequirements{Requests: Parse("storage", "5Gi")}}}
	core := func(r string) schema.GroupResource { return schema.GroupResource{Resource: r} }
	for _, tc := range []struct {
		name string
		gr   schema.GroupResource
		obj  runtime.Object
		want corev1.ResourceList
	}{
		{"best effort pod", core("pods"), pod(container("c", nil, nil)), Parse("count/pods", "1", "pods", "1")},
		{"pod with requests and limits", core("pods"),
			pod(container("a", Parse("cpu", "250m", "memory", "64Mi"), Parse("cpu", "500m")), container("b", Parse("cpu", "250m", "hugepages-2Mi", "2Mi", "example.com/gpu", "1"), nil)),
			Parse("count/pods", "1", "pods", "1", "cpu", "500m", "requests.cpu", "500m", "limits.cpu", "500m", "memory", "64Mi", "requests.memory", "64Mi",
				"hugepages-2Mi", "2Mi", "requests.hugepages-2Mi", "2Mi", "requests.example.com/gpu", "1")},
		{"terminal pod counts as an object only", core("pods"), terminal, Parse("count/pods", "1")},
		{"pod deleted past its grace", core("pods"), gone, Parse("count/pods", "1")},
		{"pod within its grace", core("pods"), leaving, Parse("count/pods", "1", "pods", "1", "cpu", "1", "requests.cpu", "1")},
		{"load balancer", core("services"), lb, Parse("services", "1", "count/services", "1", "services.loadbalancers", "1", "services.nodeports", "2")},
		{"node port", core("services"), np, Parse("services", "1", "count/services", "1", "services.loadbalancers", "0", "services.nodeports", "1")},
		{"claim", core("persistentvolumeclaims"), claim, Parse("persistentvolumeclaims", "1", "count/persistentvolumeclaims", "1", "requests.storage", "5Gi",
			"fast.storageclass.storage.k8s.io/requests.storage", "5Gi", "fast.storageclass.storage.k8s.io/persistentvolumeclaims", "1")},
		{"configmap", core("configmaps"), &corev1.ConfigMap{}, Parse("configmaps", "1", "count/configmaps", "1")},
		{"replication controller, by name only", core("replicationcontrollers"), &metav1.PartialObjectMetadata{},
			Parse("replicationcontrollers", "1", "count/replicationcontrollers", "1")},
		{"other group", schema.GroupResource{Group: "apps", Resource: "replicasets"}, &metav1.PartialObjectMetadata{}, Parse("count/replicasets.apps", "1")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := For(tc.gr).Usage(tc.obj, now); !Equals(got, tc.want) {
				t.Errorf("usage %v, want %v", PrettyPrint(got), PrettyPrint(tc.want))
			}
		})
	}
}

func TestTrackedAndGroupResources(t *testing.T) {
	names := ResourceNames(Parse("pods", "1", "requests.cpu", "1", "services.nodeports", "1", "count/replicasets.apps", "1",
		"secrets", "1", "replicationcontrollers", "1", "requests.storage", "1", "requests.example.com/gpu", "1"))
	if got := For(schema.GroupResource{Resource: "pods"}).Tracked(names); len(got) != 3 {
		t.Errorf("pods track %v, want pods, requests.cpu, requests.example.com/gpu", got)
	}
	var grs []string
	for _, gr := range GroupResources(names) {
		grs = append(grs, gr.String())
	}
	want := "persistentvolumeclaims,pods,replicasets.apps,replicationcontrollers,secrets,services"
	if got := strings.Join(grs, ","); got != want {
		t.Errorf("group resources %s, want %s", got, want)
	}
}

func TestScopes(t *testing.T) {
	best := pod(container("c", nil, nil))
	burst := pod(container("c", Parse("cpu", "1"), nil))
	deadline := pod(container("c", nil, nil))
	deadline.Spec.ActiveDeadlineSeconds = ptr.To[int64](60)
	high := pod(container("c", nil, nil))
	high.Spec.PriorityClassName = "high"
	scoped := func(scopes ...corev1.ResourceQuotaScope) *corev1.ResourceQuota {
		return &corev1.ResourceQuota{Spec: corev1.ResourceQuotaSpec{Scopes: scopes}}
	}
	selected := func(op corev1.ScopeSelectorOperator, values ...string) *corev1.ResourceQuota {
		return &corev1.ResourceQuota{Spec: corev1.ResourceQuotaSpec{ScopeSelector: &corev1.ScopeSelector{MatchExpressions: []corev1.ScopedResourceSelectorRequirement{
			{ScopeName: corev1.ResourceQuotaScopePriorityClass, Operator: op, Values: values}}}}}
	}
	pods := For(schema.GroupResource{Resource: "pods"})
	for _, tc := range []struct {
		name string
		q    *corev1.ResourceQuota
		obj  runtime.Object
		want bool
	}{
		{"no scope", scoped(), burst, true},
		{"BestEffort, best effort pod", scoped(corev1.ResourceQuotaScopeBestEffort), best, true},
		{"BestEffort, burstable pod", scoped(corev1.ResourceQuotaScopeBestEffort), burst, false},
		{"NotBestEffort, burstable pod", scoped(corev1.ResourceQuotaScopeNotBestEffort), burst, true},
		{"Terminating, pod with deadline", scoped(corev1.ResourceQuotaScopeTerminating), deadline, true},
		{"Terminating, pod without", scoped(corev1.ResourceQuotaScopeTerminating), best, false},
		{"NotTerminating and BestEffort", scoped(corev1.ResourceQuotaScopeNotTerminating, corev1.ResourceQuotaScopeBestEffort), best, true},
		{"PriorityClass In high", selected(corev1.ScopeSelectorOpIn, "high"), high, true},
		{"PriorityClass In low", selected(corev1.ScopeSelectorOpIn, "low"), high, false},
		{"PriorityClass NotIn high, no class", selected(corev1.ScopeSelectorOpNotIn, "high"), best, true},
		{"PriorityClass Exists", selected(corev1.ScopeSelectorOpExists), best, false},
		{"PriorityClass DoesNotExist", selected(corev1.ScopeSelectorOpDoesNotExist), best, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got, err := pods.MatchesScopes(tc.q, tc.obj); err != nil || got != tc.want {
				t.Errorf("matches %v (%v), want %v", got, err, tc.want)
			}
		})
	}
	if ok, _ := For(schema.GroupResource{Resource: "configmaps"}).MatchesScopes(scoped(corev1.ResourceQuotaScopeBestEffort), &corev1.ConfigMap{}); ok {
		t.Error("a scoped quota matches a configmap")
	}
}

func TestConstraints(t *testing.T) {
	pods := For(schema.GroupResource{Resource: "pods"})
	p := pod(container("app", Parse("cpu", "1"), nil), container("side", nil, nil))
	err := pods.Constraints([]corev1.ResourceName{"pods", "requests.cpu", "limits.memory"}, p)
	want := "must specify requests.cpu for: side; limits.memory for: app,side"
	if err == nil || err.Error() != want {
		t.Errorf("constraints: %v, want %q", err, want)
	}
	if err := pods.Constraints([]corev1.ResourceName{"pods", "requests.storage"}, p); err != nil {
		t.Errorf("constraints of a quota on pods alone: %v", err)
	}
}

func TestArithmetic(t *testing.T) {
	used, hard := Parse("pods", "3", "cpu", "1"), Parse("pods", "2", "cpu", "2", "memory", "1Gi")
	if got := Exceeded(used, hard); len(got) != 1 || got[0] != "pods" {
		t.Errorf("exceeded %v, want [pods]", got)
	}
	if got := PrettyPrint(Add(Parse("cpu", "500m"), Parse("cpu", "500m", "pods", "1"))); got != "cpu=1,pods=1" {
		t.Errorf("add: %s", got)
	}
	if got := PrettyPrint(Subtract(Parse("cpu", "1"), Parse("cpu", "250m"))); got != "cpu=750m" {
		t.Errorf("subtract: %s", got)
	}
	if gr, ok := CountedResource("count/deployments.apps"); !ok || gr != (schema.GroupResource{Group: "apps", Resource: "deployments"}) {
		t.Errorf("count/deployments.apps names %v", gr)
	}
	if CountName(schema.GroupResource{Resource: "secrets"}) != "count/secrets" {
		t.Error("count name of secrets")
	}
}
