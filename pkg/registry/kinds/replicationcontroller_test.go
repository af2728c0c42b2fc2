package kinds

import (
	"maps"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"

	"github.com/minik8s/minik8s/pkg/registry"
)

func validReplicationController() *corev1.ReplicationController {
	t := podTemplate(appLabels(), "")
	return defaulted(&corev1.ReplicationController{
		ObjectMeta: nsMeta("web"),
		Spec:       corev1.ReplicationControllerSpec{Selector: appLabels(), Template: &t},
	})
}

func TestReplicationControllerDefaults(t *testing.T) {
	// Selector and labels left out: both are the template's labels.
	tpl := podTemplate(map[string]string{"app": "web", "tier": "front"}, "")
	rc := defaulted(&corev1.ReplicationController{ObjectMeta: nsMeta("web"), Spec: corev1.ReplicationControllerSpec{Template: &tpl}})
	if !maps.Equal(rc.Spec.Selector, tpl.Labels) || !maps.Equal(rc.Labels, tpl.Labels) {
		t.Errorf("selector %v, labels %v, want both %v", rc.Spec.Selector, rc.Labels, tpl.Labels)
	}
	if ptr.Deref(rc.Spec.Replicas, -1) != 1 {
		t.Errorf("replicas = %v, want 1", rc.Spec.Replicas)
	}
	if rc.Spec.Template.Spec.RestartPolicy != corev1.RestartPolicyAlways || rc.Spec.Template.Spec.DNSPolicy != corev1.DNSClusterFirst {
		t.Errorf("pod template not defaulted: %+v", rc.Spec.Template.Spec)
	}
	// What the user set stays; a narrower selector is kept.
	own := defaulted(&corev1.ReplicationController{
		ObjectMeta: nsMeta("web"),
		Spec:       corev1.ReplicationControllerSpec{Replicas: ptr.To[int32](0), Selector: appLabels(), Template: &tpl},
	})
	if *own.Spec.Replicas != 0 || !maps.Equal(own.Spec.Selector, appLabels()) {
		t.Errorf("user's replicas/selector changed: %v %v", *own.Spec.Replicas, own.Spec.Selector)
	}
	// No template: nothing to default from, and nothing panics.
	bare := defaulted(&corev1.ReplicationController{ObjectMeta: nsMeta("web")})
	if bare.Spec.Selector != nil || bare.Labels != nil {
		t.Errorf("defaults without a template: %+v", bare)
	}
}

func TestValidateReplicationController(t *testing.T) {
	rc := validReplicationController()
	runCreateCases(t, []createCase{
		{name: "valid", obj: rc, namespaced: true},
		{name: "selector narrower than the labels", obj: mutate(rc, func(r *corev1.ReplicationController) {
			r.Spec.Template.Labels["tier"] = "front"
		}), namespaced: true},
		{name: "selector does not match the template", obj: mutate(rc, func(r *corev1.ReplicationController) {
			r.Spec.Selector = map[string]string{"app": "other"}
		}), namespaced: true, want: []string{"spec.template.metadata.labels"}},
		{name: "no selector nor template labels", obj: mutate(rc, func(r *corev1.ReplicationController) {
			r.Spec.Selector, r.Spec.Template.Labels = nil, nil
		}), namespaced: true, want: []string{"spec.selector"}},
		{name: "bad selector key", obj: mutate(rc, func(r *corev1.ReplicationController) {
			r.Spec.Selector = map[string]string{"bad key": "x"}
			r.Spec.Template.Labels = map[string]string{"bad key": "x"}
		}), namespaced: true, want: []string{"spec.selector.matchLabels", "spec.template.metadata.labels"}},
		{name: "no template", obj: mutate(rc, func(r *corev1.ReplicationController) { r.Spec.Template = nil }),
			namespaced: true, want: []string{"spec.template"}},
		{name: "negative replicas", obj: mutate(rc, func(r *corev1.ReplicationController) { r.Spec.Replicas = ptr.To[int32](-1) }),
			namespaced: true, want: []string{"spec.replicas"}},
		{name: "negative minReadySeconds", obj: mutate(rc, func(r *corev1.ReplicationController) { r.Spec.MinReadySeconds = -1 }),
			namespaced: true, want: []string{"spec.minReadySeconds"}},
		{name: "restartPolicy Never", obj: mutate(rc, func(r *corev1.ReplicationController) {
			r.Spec.Template.Spec.RestartPolicy = corev1.RestartPolicyNever
		}), namespaced: true, want: []string{"spec.template.spec.restartPolicy"}},
		{name: "activeDeadlineSeconds", obj: mutate(rc, func(r *corev1.ReplicationController) {
			r.Spec.Template.Spec.ActiveDeadlineSeconds = ptr.To[int64](10)
		}), namespaced: true, want: []string{"spec.template.spec.activeDeadlineSeconds"}},
	})
}

// Unlike a ReplicaSet's, a ReplicationController's selector may change,
// as long as it still matches the template.
func TestReplicationControllerUpdate(t *testing.T) {
	rc := stored(validReplicationController())
	runUpdateCases(t, []updateCase{
		{name: "selector change", old: rc, obj: change(rc, func(r *corev1.ReplicationController) {
			r.Spec.Selector = map[string]string{"app": "web2"}
			r.Spec.Template.Labels = map[string]string{"app": "web2"}
		}), namespaced: true},
		{name: "selector no longer matching", old: rc, obj: change(rc, func(r *corev1.ReplicationController) {
			r.Spec.Selector = map[string]string{"app": "web2"}
		}), namespaced: true, want: []string{"spec.template.metadata.labels"}},
	})
}

func TestReplicationControllerScale(t *testing.T) {
	rc := validReplicationController()
	rc.Status.Replicas = 1
	res := resourceFor(rc)
	s, err := registry.ScaleOf(res, rc)
	if err != nil {
		t.Fatal(err)
	}
	if s.Spec.Replicas != 1 || s.Status.Replicas != 1 || s.Status.Selector != "app=web" {
		t.Errorf("scale = %+v, want spec 1, status 1, selector app=web", s)
	}
	res.Scale.Set(rc, 3)
	if *rc.Spec.Replicas != 3 {
		t.Errorf("replicas after scale = %d, want 3", *rc.Spec.Replicas)
	}
	if got := res.FieldLabels(rc)["status.replicas"]; got != "1" {
		t.Errorf("status.replicas field label = %q, want 1", got)
	}
}

func TestReplicationControllerCells(t *testing.T) {
	tpl := imagesTemplate("nginx", "sidecar")
	runCellCases(t, []cellCase{
		{
			name: "replicationcontroller",
			gk:   schema.GroupKind{Kind: "ReplicationController"},
			obj: &corev1.ReplicationController{
				ObjectMeta: objMeta("web"),
				Spec:       corev1.ReplicationControllerSpec{Replicas: ptr.To(int32(3)), Selector: map[string]string{"app": "web"}, Template: &tpl},
				Status:     corev1.ReplicationControllerStatus{Replicas: 2, ReadyReplicas: 1},
			},
			want: map[string]interface{}{
				"Name": "web", "Desired": int64(3), "Current": int64(2), "Ready": int64(1), "Age": "10m",
				"Containers": "nginx,sidecar", "Images": "nginx:1,sidecar:1", "Selector": "app=web",
			},
		},
		{
			name: "replicationcontroller without template",
			gk:   schema.GroupKind{Kind: "ReplicationController"},
			obj:  &corev1.ReplicationController{ObjectMeta: objMeta("bare")},
			want: map[string]interface{}{"Desired": int64(1), "Containers": "", "Selector": "<none>"},
		},
	})
}
