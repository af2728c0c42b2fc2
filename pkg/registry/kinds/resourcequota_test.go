package kinds

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/minik8s/minik8s/pkg/quota"
)

func TestResourceQuotaValidation(t *testing.T) {
	newQuota := func(hard corev1.ResourceList, scopes ...corev1.ResourceQuotaScope) *corev1.ResourceQuota {
		return &corev1.ResourceQuota{ObjectMeta: nsMeta("q"), Spec: corev1.ResourceQuotaSpec{Hard: hard, Scopes: scopes}}
	}
	selector := func(hard corev1.ResourceList, reqs ...corev1.ScopedResourceSelectorRequirement) *corev1.ResourceQuota {
		q := newQuota(hard)
		q.Spec.ScopeSelector = &corev1.ScopeSelector{MatchExpressions: reqs}
		return q
	}
	for _, tc := range []struct {
		name string
		q    *corev1.ResourceQuota
		want []string
	}{
		{"valid", newQuota(quota.Parse("pods", "10", "requests.cpu", "2", "count/replicasets.apps", "3", "requests.example.com/gpu", "1",
			"gold.storageclass.storage.k8s.io/requests.storage", "1Gi")), nil},
		{"unknown name", newQuota(quota.Parse("gpus", "1")), []string{"spec.hard[gpus]: must be a standard resource for quota"}},
		{"negative", newQuota(quota.Parse("cpu", "-1")), []string{"spec.hard[cpu]"}},
		{"fractional count", newQuota(quota.Parse("pods", "1500m")), []string{"spec.hard[pods]: must be an integer"}},
		{"scope on pods and cpu", newQuota(quota.Parse("pods", "1", "cpu", "1"), corev1.ResourceQuotaScopeNotTerminating), nil},
		{"BestEffort limits pods alone", newQuota(quota.Parse("pods", "1", "cpu", "1"), corev1.ResourceQuotaScopeBestEffort),
			[]string{"spec.scopes: unsupported scope applied to resource"}},
		{"conflicting", newQuota(quota.Parse("pods", "1"), corev1.ResourceQuotaScopeTerminating, corev1.ResourceQuotaScopeNotTerminating),
			[]string{"spec.scopes: conflicting scopes"}},
		{"unknown scope", newQuota(quota.Parse("pods", "1"), "Sometimes"), []string{"spec.scopes: unsupported scope"}},
		{"priority class selector", selector(quota.Parse("pods", "1"), corev1.ScopedResourceSelectorRequirement{
			ScopeName: corev1.ResourceQuotaScopePriorityClass, Operator: corev1.ScopeSelectorOpIn, Values: []string{"high"}}), nil},
		{"In without values", selector(quota.Parse("pods", "1"), corev1.ScopedResourceSelectorRequirement{
			ScopeName: corev1.ResourceQuotaScopePriorityClass, Operator: corev1.ScopeSelectorOpIn}), []string{"spec.scopeSelector.matchExpressions[0].values"}},
		{"Terminating with In", selector(quota.Parse("pods", "1"), corev1.ScopedResourceSelectorRequirement{
			ScopeName: corev1.ResourceQuotaScopeTerminating, Operator: corev1.ScopeSelectorOpIn, Values: []string{"x"}}),
			[]string{"spec.scopeSelector.matchExpressions[0].operator"}},
	} {
		t.Run(tc.name, func(t *testing.T) { checkErrors(t, validate(defaulted(tc.q), true), tc.want) })
	}
}

func TestLimitRangeDefaultsAndValidation(t *testing.T) {
	lr := defaulted(&corev1.LimitRange{ObjectMeta: nsMeta("l"), Spec: corev1.LimitRangeSpec{Limits: []corev1.LimitRangeItem{{
		Type: corev1.LimitTypeContainer, Max: quota.Parse("cpu", "2"), Min: quota.Parse("memory", "64Mi"), Default: quota.Parse("memory", "256Mi")}}}})
	item := lr.Spec.Limits[0]
	if q := item.Default[corev1.ResourceCPU]; q.String() != "2" {
		t.Errorf("default cpu %s, want max 2", q.String())
	}
	if q := item.DefaultRequest[corev1.ResourceMemory]; q.String() != "256Mi" {
		t.Errorf("default memory request %s, want the default limit 256Mi", q.String())
	}
	checkErrors(t, validate(lr, true), nil)

	for _, tc := range []struct {
		name string
		item corev1.LimitRangeItem
		want []string
	}{
		{"min above max", corev1.LimitRangeItem{Type: corev1.LimitTypePod, Min: quota.Parse("cpu", "2"), Max: quota.Parse("cpu", "1")},
			[]string{"spec.limits[0].min[cpu]: min value 2 is greater than max value 1"}},
		{"default above max", corev1.LimitRangeItem{Type: corev1.LimitTypeContainer, Max: quota.Parse("cpu", "1"), Default: quota.Parse("cpu", "2")},
			[]string{"spec.limits[0].default[cpu]: default value 2 is greater than max value 1"}},
		{"request above limit", corev1.LimitRangeItem{Type: corev1.LimitTypeContainer, Default: quota.Parse("cpu", "1"), DefaultRequest: quota.Parse("cpu", "2")},
			[]string{"spec.limits[0].defaultRequest[cpu]: default request value 2 is greater than default limit value 1"}},
		{"pod defaults", corev1.LimitRangeItem{Type: corev1.LimitTypePod, Default: quota.Parse("cpu", "1")}, []string{"spec.limits[0].default"}},
		{"ratio below 1", corev1.LimitRangeItem{Type: corev1.LimitTypePod, MaxLimitRequestRatio: quota.Parse("cpu", "500m")},
			[]string{"spec.limits[0].maxLimitRequestRatio[cpu]: ratio 500m is less than 1"}},
		{"unknown type", corev1.LimitRangeItem{Type: "Node"}, []string{"spec.limits[0].type"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			lr := &corev1.LimitRange{ObjectMeta: nsMeta("l"), Spec: corev1.LimitRangeSpec{Limits: []corev1.LimitRangeItem{tc.item}}}
			checkErrors(t, validate(defaulted(lr), true), tc.want)
		})
	}
}

func TestQuotaCells(t *testing.T) {
	q := &corev1.ResourceQuota{ObjectMeta: objMeta("q"), Status: corev1.ResourceQuotaStatus{
		Hard: quota.Parse("pods", "10", "requests.cpu", "2", "limits.cpu", "4"),
		Used: quota.Parse("pods", "1", "requests.cpu", "500m", "limits.cpu", "1")}}
	runCellCases(t, []cellCase{{name: "quota", gk: schema.GroupKind{Kind: "ResourceQuota"}, obj: q, want: map[string]interface{}{
		"Name": "q", "Age": "10m", "Request": "pods: 1/10, requests.cpu: 500m/2", "Limit": "limits.cpu: 1/4"}}})
	lr := &corev1.LimitRange{ObjectMeta: objMeta("l")}
	runCellCases(t, []cellCase{{name: "limit range", gk: schema.GroupKind{Kind: "LimitRange"}, obj: lr,
		want: map[string]interface{}{"Name": "l", "Created At": "2025-06-01T11:50:00Z"}}})
}
