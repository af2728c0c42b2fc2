package kinds

import (
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
)

func validDaemonSet() *appsv1.DaemonSet {
	return defaulted(&appsv1.DaemonSet{
		ObjectMeta: nsMeta("agent"),
		Spec: appsv1.DaemonSetSpec{
			Selector: &metav1.LabelSelector{MatchLabels: appLabels()},
			Template: podTemplate(appLabels(), ""),
		},
	})
}

func TestDaemonSetDefaults(t *testing.T) {
	ds := validDaemonSet()
	us := ds.Spec.UpdateStrategy
	if us.Type != appsv1.RollingUpdateDaemonSetStrategyType || us.RollingUpdate == nil ||
		us.RollingUpdate.MaxUnavailable.String() != "1" || us.RollingUpdate.MaxSurge.String() != "0" {
		t.Errorf("update strategy defaulted to %+v, want RollingUpdate maxUnavailable 1 maxSurge 0", us)
	}
	if ptr.Deref(ds.Spec.RevisionHistoryLimit, -1) != 10 {
		t.Errorf("revisionHistoryLimit = %v, want 10", ds.Spec.RevisionHistoryLimit)
	}
	if ds.Spec.Template.Spec.RestartPolicy != corev1.RestartPolicyAlways || ds.Spec.Template.Spec.DNSPolicy != corev1.DNSClusterFirst {
		t.Errorf("pod template not defaulted: %+v", ds.Spec.Template.Spec)
	}
	onDelete := defaulted(mutate(ds, func(d *appsv1.DaemonSet) {
		d.Spec.UpdateStrategy = appsv1.DaemonSetUpdateStrategy{Type: appsv1.OnDeleteDaemonSetStrategyType}
	}))
	if onDelete.Spec.UpdateStrategy.RollingUpdate != nil {
		t.Errorf("OnDelete got a rollingUpdate: %+v", onDelete.Spec.UpdateStrategy)
	}
}

func TestValidateDaemonSet(t *testing.T) {
	ru := func(unavailable, surge intstr.IntOrString) func(*appsv1.DaemonSet) {
		return func(d *appsv1.DaemonSet) {
			d.Spec.UpdateStrategy.RollingUpdate = &appsv1.RollingUpdateDaemonSet{MaxUnavailable: &unavailable, MaxSurge: &surge}
		}
	}
	runCreateCases(t, []createCase{
		{name: "valid", obj: validDaemonSet(), namespaced: true},
		{name: "surge instead of unavailable", obj: mutate(validDaemonSet(), ru(intstr.FromInt32(0), intstr.FromString("25%"))), namespaced: true},
		{name: "on delete", obj: mutate(validDaemonSet(), func(d *appsv1.DaemonSet) {
			d.Spec.UpdateStrategy = appsv1.DaemonSetUpdateStrategy{Type: appsv1.OnDeleteDaemonSetStrategyType}
		}), namespaced: true},
		{name: "no selector", obj: mutate(validDaemonSet(), func(d *appsv1.DaemonSet) { d.Spec.Selector = nil }),
			namespaced: true, want: []string{"spec.selector"}},
		{name: "selector does not match the template", obj: mutate(validDaemonSet(), func(d *appsv1.DaemonSet) {
			d.Spec.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"app": "other"}}
		}), namespaced: true, want: []string{"spec.template.metadata.labels"}},
		{name: "restartPolicy Never", obj: mutate(validDaemonSet(), func(d *appsv1.DaemonSet) {
			d.Spec.Template.Spec.RestartPolicy = corev1.RestartPolicyNever
		}), namespaced: true, want: []string{"spec.template.spec.restartPolicy"}},
		{name: "unknown strategy", obj: mutate(validDaemonSet(), func(d *appsv1.DaemonSet) {
			d.Spec.UpdateStrategy.Type = "Recreate"
		}), namespaced: true, want: []string{"spec.updateStrategy.type"}},
		{name: "rolling update without parameters", obj: mutate(validDaemonSet(), func(d *appsv1.DaemonSet) {
			d.Spec.UpdateStrategy.RollingUpdate = nil
		}), namespaced: true, want: []string{"spec.updateStrategy.rollingUpdate"}},
		{name: "both zero", obj: mutate(validDaemonSet(), ru(intstr.FromInt32(0), intstr.FromString("0%"))),
			namespaced: true, want: []string{"spec.updateStrategy.rollingUpdate.maxUnavailable"}},
		{name: "both non-zero", obj: mutate(validDaemonSet(), ru(intstr.FromInt32(1), intstr.FromInt32(1))),
			namespaced: true, want: []string{"spec.updateStrategy.rollingUpdate.maxSurge"}},
		{name: "over 100%", obj: mutate(validDaemonSet(), ru(intstr.FromString("150%"), intstr.FromInt32(0))),
			namespaced: true, want: []string{"spec.updateStrategy.rollingUpdate.maxUnavailable"}},
		{name: "negative", obj: mutate(validDaemonSet(), ru(intstr.FromInt32(-1), intstr.FromInt32(0))),
			namespaced: true, want: []string{"spec.updateStrategy.rollingUpdate.maxUnavailable"}},
		{name: "not a percentage", obj: mutate(validDaemonSet(), ru(intstr.FromInt32(0), intstr.FromString("half"))),
			namespaced: true, want: []string{"spec.updateStrategy.rollingUpdate.maxSurge"}},
		{name: "negative minReadySeconds", obj: mutate(validDaemonSet(), func(d *appsv1.DaemonSet) { d.Spec.MinReadySeconds = -1 }),
			namespaced: true, want: []string{"spec.minReadySeconds"}},
	})
}

func TestValidateDaemonSetUpdate(t *testing.T) {
	old := mutate(validDaemonSet(), func(d *appsv1.DaemonSet) { d.ResourceVersion = "7" })
	changed := mutate(old, func(d *appsv1.DaemonSet) {
		d.Spec.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web", "tier": "x"}}
		d.Spec.Template.Labels = map[string]string{"app": "web", "tier": "x"}
	})
	checkErrors(t, validateUpdate(changed, old, true), []string{"spec.selector"})
	image := mutate(old, func(d *appsv1.DaemonSet) { d.Spec.Template.Spec.Containers[0].Image = "nginx:1.28" })
	checkErrors(t, validateUpdate(image, old, true), nil)
}

// The template generation starts at 1 and counts template changes only,
// whatever the client sends.
func TestDaemonSetTemplateGeneration(t *testing.T) {
	r := daemonSets()
	ds := validDaemonSet()
	r.PrepareForCreate(ds)
	if got := ds.Annotations[AnnotationTemplateGeneration]; got != "1" {
		t.Fatalf("template generation on create = %q, want 1", got)
	}
	steps := []struct {
		name   string
		change func(*appsv1.DaemonSet)
		want   string
	}{
		{"min ready seconds", func(d *appsv1.DaemonSet) { d.Spec.MinReadySeconds = 5 }, "1"},
		{"image", func(d *appsv1.DaemonSet) { d.Spec.Template.Spec.Containers[0].Image = "nginx:2" }, "2"},
		{"annotation dropped by the client", func(d *appsv1.DaemonSet) { delete(d.Annotations, AnnotationTemplateGeneration) }, "2"},
		{"annotation forged by the client", func(d *appsv1.DaemonSet) { d.Annotations[AnnotationTemplateGeneration] = "40" }, "2"},
		{"template label", func(d *appsv1.DaemonSet) { d.Spec.Template.Labels["v"] = "2" }, "3"},
	}
	for _, s := range steps {
		next := mutate(ds, s.change)
		r.PrepareForUpdate(next, ds)
		if got := next.Annotations[AnnotationTemplateGeneration]; got != s.want {
			t.Fatalf("after %s: template generation %q, want %s", s.name, got, s.want)
		}
		ds = next
	}
}
