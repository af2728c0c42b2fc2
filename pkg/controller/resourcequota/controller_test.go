package resourcequota

import (
	"context"
	"log/slog"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	fakediscovery "k8s.io/client-go/discovery/fake"
	"k8s.io/client-go/kubernetes/fake"
	metadatafake "k8s.io/client-go/metadata/fake"
	"k8s.io/client-go/tools/record"

	"github.com/minik8s/minik8s/pkg/controller/kit"
	"github.com/minik8s/minik8s/pkg/quota"
)

func meta(name string) metav1.ObjectMeta { return metav1.ObjectMeta{Name: name, Namespace: "ns"} }

func podWith(name, cpu string, phase corev1.PodPhase) *corev1.Pod {
	p := &corev1.Pod{ObjectMeta: meta(name), Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c"}}}, Status: corev1.PodStatus{Phase: phase}}
	if cpu != "" {
		p.Spec.Containers[0].Resources.Requests = quota.Parse("cpu", cpu)
	}
	return p
}

// The controller writes each quota's hard limits and what the namespace
// uses of them, within the quota's scopes, counting other resources
// through metadata, and recounts when an object goes.
func TestRecount(t *testing.T) {
	quotas := []*corev1.ResourceQuota{
		{ObjectMeta: meta("all"), Spec: corev1.ResourceQuotaSpec{Hard: quota.Parse("pods", "10", "requests.cpu", "4",
			"services.loadbalancers", "2", "configmaps", "5", "count/widgets.example.com", "3")}},
		{ObjectMeta: meta("best-effort"), Spec: corev1.ResourceQuotaSpec{Hard: quota.Parse("pods", "10"),
			Scopes: []corev1.ResourceQuotaScope{corev1.ResourceQuotaScopeBestEffort}}},
	}
	objs := []runtime.Object{
		podWith("a", "500m", corev1.PodRunning), podWith("b", "", corev1.PodPending), podWith("done", "1", corev1.PodSucceeded),
		&corev1.Service{ObjectMeta: meta("lb"), Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer}},
		&corev1.ConfigMap{ObjectMeta: meta("cm")},
	}
	for _, q := range quotas {
		objs = append(objs, q)
	}
	client := fake.NewClientset(objs...)
	client.Discovery().(*fakediscovery.FakeDiscovery).Resources = []*metav1.APIResourceList{{GroupVersion: "v1", APIResources: []metav1.APIResource{
		{Name: "configmaps", Namespaced: true, Kind: "ConfigMap", Verbs: metav1.Verbs{"list", "watch"}}}}}
	scheme := runtime.NewScheme()
	if err := metav1.AddMetaToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	cm := &metav1.PartialObjectMetadata{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"}, ObjectMeta: meta("cm")}
	kc := kit.NewContext(client)
	kc.Metadata = metadatafake.NewSimpleMetadataClient(scheme, cm)
	kc.Recorder = record.NewFakeRecorder(10)
	kc.Logger = slog.New(slog.DiscardHandler)
	c, err := New(kc, Config{Workers: 1})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- kit.Run(ctx, kc, kit.Part{Name: "resourcequota", Start: c.Start}) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	}()

	waitUsed := func(name string, want corev1.ResourceList) {
		t.Helper()
		got := &corev1.ResourceQuota{}
		err := wait.PollUntilContextTimeout(ctx, 10*time.Millisecond, 10*time.Second, true, func(ctx context.Context) (bool, error) {
			q, err := client.CoreV1().ResourceQuotas("ns").Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return false, nil
			}
			got = q
			return quota.Equals(got.Status.Hard, got.Spec.Hard) && quota.Equals(got.Status.Used, want), nil
		})
		if err != nil {
			t.Fatalf("quota %s: used %s, want %s", name, quota.PrettyPrint(got.Status.Used), quota.PrettyPrint(want))
		}
	}
	waitUsed("all", quota.Parse("pods", "2", "requests.cpu", "500m", "services.loadbalancers", "1", "configmaps", "1", "count/widgets.example.com", "0"))
	waitUsed("best-effort", quota.Parse("pods", "1"))

	if err := client.CoreV1().Pods("ns").Delete(ctx, "a", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitUsed("all", quota.Parse("pods", "1", "requests.cpu", "0", "services.loadbalancers", "1", "configmaps", "1", "count/widgets.example.com", "0"))
}
