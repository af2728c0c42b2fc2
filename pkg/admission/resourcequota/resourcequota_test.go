package resourcequota

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/minik8s/minik8s/pkg/admission"
	"github.com/minik8s/minik8s/pkg/quota"
)

// fakeQuotas stores quotas with resourceVersions; conflicts makes the
// next writes fail as if another writer had charged the quota first.
type fakeQuotas struct {
	quotas    map[string]*corev1.ResourceQuota
	conflicts int
	// raced is charged to the quota when a conflict is played.
	raced  corev1.ResourceList
	writes int
}

func (f *fakeQuotas) Get(context.Context, schema.GroupVersionResource, string, string) (runtime.Object, error) {
	return nil, errors.New("not used")
}

func (f *fakeQuotas) List(_ context.Context, gvr schema.GroupVersionResource, _ string) ([]runtime.Object, error) {
	var out []runtime.Object
	for _, q := range f.quotas {
		out = append(out, q.DeepCopy())
	}
	return out, nil
}

func (f *fakeQuotas) UpdateStatus(_ context.Context, _ schema.GroupVersionResource, obj runtime.Object) (runtime.Object, error) {
	q := obj.(*corev1.ResourceQuota)
	stored := f.quotas[q.Name]
	if f.conflicts > 0 {
		f.conflicts--
		stored.Status.Used = quota.Add(stored.Status.Used, f.raced)
		stored.ResourceVersion = bump(stored.ResourceVersion)
	}
	if q.ResourceVersion != stored.ResourceVersion {
		return nil, apierrors.NewConflict(quotasGVR.GroupResource(), q.Name, errors.New("changed"))
	}
	f.writes++
	q = q.DeepCopy()
	q.ResourceVersion = bump(q.ResourceVersion)
	f.quotas[q.Name] = q
	return q, nil
}

func bump(rv string) string {
	n, _ := strconv.Atoi(rv)
	return strconv.Itoa(n + 1)
}

func newQuota(name string, hard, used corev1.ResourceList, scopes ...corev1.ResourceQuotaScope) *corev1.ResourceQuota {
	return &corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", ResourceVersion: "1"},
		Spec:   corev1.ResourceQuotaSpec{Hard: hard, Scopes: scopes},
		Status: corev1.ResourceQuotaStatus{Hard: hard, Used: used}}
}

func newPod(cpu string) *corev1.Pod {
	c := corev1.Container{Name: "c"}
	if cpu != "" {
		c.Resources.Requests = quota.Parse("cpu", cpu)
	}
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns"}, Spec: corev1.PodSpec{Containers: []corev1.Container{c}}}
}

func TestValidate(t *testing.T) {
	podsGVR := corev1.SchemeGroupVersion.WithResource("pods")
	cmGVR := corev1.SchemeGroupVersion.WithResource("configmaps")
	for _, tc := range []struct {
		name      string
		quotas    []*corev1.ResourceQuota
		gvr       schema.GroupVersionResource
		obj       runtime.Object
		dryRun    bool
		conflicts int
		raced     corev1.ResourceList
		// wantErr is part of the 403's message; "" admits.
		wantErr string
		// wantUsed is each quota's used afterwards.
		wantUsed map[string]corev1.ResourceList
	}{
		{name: "no quota", gvr: podsGVR, obj: newPod("")},
		{name: "charged", gvr: podsGVR, obj: newPod("200m"),
			quotas:   []*corev1.ResourceQuota{newQuota("q", quota.Parse("pods", "2", "requests.cpu", "1"), quota.Parse("pods", "1", "requests.cpu", "500m"))},
			wantUsed: map[string]corev1.ResourceList{"q": quota.Parse("pods", "2", "requests.cpu", "700m")}},
		{name: "exceeded", gvr: podsGVR, obj: newPod("200m"),
			quotas:   []*corev1.ResourceQuota{newQuota("q", quota.Parse("pods", "2", "requests.cpu", "1"), quota.Parse("pods", "2", "requests.cpu", "500m"))},
			wantErr:  `pods "p" is forbidden: exceeded quota: q, requested: pods=1, used: pods=2, limited: pods=2`,
			wantUsed: map[string]corev1.ResourceList{"q": quota.Parse("pods", "2", "requests.cpu", "500m")}},
		{name: "one of two quotas exceeded charges neither", gvr: podsGVR, obj: newPod("600m"),
			quotas: []*corev1.ResourceQuota{newQuota("a", quota.Parse("pods", "5"), quota.Parse("pods", "0")),
				newQuota("b", quota.Parse("requests.cpu", "1"), quota.Parse("requests.cpu", "500m"))},
			wantErr:  "exceeded quota: b, requested: requests.cpu=600m, used: requests.cpu=500m, limited: requests.cpu=1",
			wantUsed: map[string]corev1.ResourceList{"a": quota.Parse("pods", "0"), "b": quota.Parse("requests.cpu", "500m")}},
		{name: "must specify", gvr: podsGVR, obj: newPod(""),
			quotas:  []*corev1.ResourceQuota{newQuota("q", quota.Parse("requests.cpu", "1"), quota.Parse("requests.cpu", "0"))},
			wantErr: "failed quota: q: must specify requests.cpu for: c"},
		{name: "status unknown", gvr: podsGVR, obj: newPod(""),
			quotas:  []*corev1.ResourceQuota{newQuota("q", quota.Parse("pods", "1"), nil)},
			wantErr: "status unknown for quota: q, resources: pods"},
		{name: "not measured yet: no status.hard", gvr: podsGVR, obj: newPod(""),
			quotas: []*corev1.ResourceQuota{{ObjectMeta: metav1.ObjectMeta{Name: "q", Namespace: "ns"}, Spec: corev1.ResourceQuotaSpec{Hard: quota.Parse("pods", "0")}}}},
		{name: "out of scope", gvr: podsGVR, obj: newPod("1"),
			quotas:   []*corev1.ResourceQuota{newQuota("q", quota.Parse("pods", "0"), quota.Parse("pods", "0"), corev1.ResourceQuotaScopeBestEffort)},
			wantUsed: map[string]corev1.ResourceList{"q": quota.Parse("pods", "0")}},
		{name: "count of another resource", gvr: cmGVR, obj: &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cm", Namespace: "ns"}},
			quotas:   []*corev1.ResourceQuota{newQuota("q", quota.Parse("configmaps", "3", "count/configmaps", "3", "pods", "1"), quota.Parse("configmaps", "1", "count/configmaps", "1", "pods", "1"))},
			wantUsed: map[string]corev1.ResourceList{"q": quota.Parse("configmaps", "2", "count/configmaps", "2", "pods", "1")}},
		{name: "dry run charges nothing", gvr: podsGVR, obj: newPod(""), dryRun: true,
			quotas:   []*corev1.ResourceQuota{newQuota("q", quota.Parse("pods", "2"), quota.Parse("pods", "0"))},
			wantUsed: map[string]corev1.ResourceList{"q": quota.Parse("pods", "0")}},
		{name: "a conflict is tried again on the new usage", gvr: podsGVR, obj: newPod(""), conflicts: 1, raced: quota.Parse("pods", "1"),
			quotas:   []*corev1.ResourceQuota{newQuota("q", quota.Parse("pods", "3"), quota.Parse("pods", "1"))},
			wantUsed: map[string]corev1.ResourceList{"q": quota.Parse("pods", "3")}},
		{name: "the race lost for the last unit", gvr: podsGVR, obj: newPod(""), conflicts: 1, raced: quota.Parse("pods", "1"),
			quotas:   []*corev1.ResourceQuota{newQuota("q", quota.Parse("pods", "2"), quota.Parse("pods", "1"))},
			wantErr:  "exceeded quota: q, requested: pods=1, used: pods=2, limited: pods=2",
			wantUsed: map[string]corev1.ResourceList{"q": quota.Parse("pods", "2")}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := &fakeQuotas{quotas: map[string]*corev1.ResourceQuota{}, conflicts: tc.conflicts, raced: tc.raced}
			for _, q := range tc.quotas {
				f.quotas[q.Name] = q
			}
			p := &Plugin{Now: func() time.Time { return time.Unix(0, 0) }, Retries: 3}
			m, _ := metav1Object(tc.obj)
			a := &admission.Attributes{Resource: tc.gvr, Operation: admission.Create, Namespace: "ns", Name: m, Object: tc.obj, DryRun: tc.dryRun}
			r := p.Validate(context.Background(), a, f)
			switch {
			case tc.wantErr == "" && r.Err != nil:
				t.Errorf("refused: %v", r.Err)
			case tc.wantErr != "" && (!apierrors.IsForbidden(r.Err) || !strings.Contains(r.Err.Error(), tc.wantErr)):
				t.Errorf("got %v, want 403 %q", r.Err, tc.wantErr)
			}
			for name, want := range tc.wantUsed {
				if got := f.quotas[name].Status.Used; !quota.Equals(got, want) {
					t.Errorf("quota %s used %s, want %s", name, quota.PrettyPrint(got), quota.PrettyPrint(want))
				}
			}
		})
	}
}

func metav1Object(obj runtime.Object) (string, bool) {
	m, ok := obj.(metav1.Object)
	if !ok {
		return "", false
	}
	return m.GetName(), true
}

// An update is charged only what it adds: a service becoming a load
// balancer.
func TestValidateUpdate(t *testing.T) {
	f := &fakeQuotas{quotas: map[string]*corev1.ResourceQuota{
		"q": newQuota("q", quota.Parse("services", "5", "services.loadbalancers", "1"), quota.Parse("services", "2", "services.loadbalancers", "1"))}}
	old := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "s", Namespace: "ns"}, Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeClusterIP}}
	lb := old.DeepCopy()
	lb.Spec.Type = corev1.ServiceTypeLoadBalancer
	a := &admission.Attributes{Resource: corev1.SchemeGroupVersion.WithResource("services"), Operation: admission.Update,
		Namespace: "ns", Name: "s", Object: lb, OldObject: old}
	r := New().Validate(context.Background(), a, f)
	if r.Err == nil || !strings.Contains(r.Err.Error(), "exceeded quota: q, requested: services.loadbalancers=1") {
		t.Errorf("a second load balancer: %v", r.Err)
	}
	a.Object = old.DeepCopy()
	a.Object.(*corev1.Service).Labels = map[string]string{"a": "b"}
	if r := New().Validate(context.Background(), a, f); r.Err != nil || f.writes != 0 {
		t.Errorf("a label change: %v, %d writes", r.Err, f.writes)
	}
}
