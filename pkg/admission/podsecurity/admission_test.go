package podsecurity

import (
	"context"
	"fmt"
	"reflect"
	"slices"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"

	"github.com/minik8s/minik8s/pkg/admission"
)

func TestPolicyFor(t *testing.T) {
	lv := func(l Level, v string) LevelVersion { return LevelVersion{l, v} }
	priv := lv(LevelPrivileged, VersionLatest)
	cases := []struct {
		name   string
		labels map[string]string
		want   Policy
		errs   []string
	}{
		{"unlabelled", nil, DefaultPolicy, nil},
		{"other labels", map[string]string{"team": "a"}, DefaultPolicy, nil},
		{"enforce sets warn", map[string]string{EnforceLevelLabel: "restricted", EnforceVersionLabel: "v1.30"},
			Policy{Enforce: lv(LevelRestricted, "v1.30"), Audit: priv, Warn: lv(LevelRestricted, "v1.30")}, nil},
		{"warn version kept", map[string]string{EnforceLevelLabel: "baseline", WarnVersionLabel: "v1.25"},
			Policy{Enforce: lv(LevelBaseline, VersionLatest), Audit: priv, Warn: lv(LevelBaseline, "v1.25")}, nil},
		{"explicit warn wins", map[string]string{EnforceLevelLabel: "restricted", WarnLevelLabel: "baseline"},
			Policy{Enforce: lv(LevelRestricted, VersionLatest), Audit: priv, Warn: lv(LevelBaseline, VersionLatest)}, nil},
		{"warn stricter than enforce", map[string]string{EnforceLevelLabel: "baseline", WarnLevelLabel: "restricted", AuditLevelLabel: "restricted", AuditVersionLabel: "v1.0"},
			Policy{Enforce: lv(LevelBaseline, VersionLatest), Audit: lv(LevelRestricted, "v1.0"), Warn: lv(LevelRestricted, VersionLatest)}, nil},
		{"invalid enforce fails closed", map[string]string{EnforceLevelLabel: "strict"},
			Policy{Enforce: lv(LevelRestricted, VersionLatest), Audit: priv, Warn: priv},
			[]string{`metadata.labels[pod-security.kubernetes.io/enforce]: Invalid value: "strict": must be one of privileged, baseline, restricted`}},
		{"invalid warn and audit fail open", map[string]string{WarnLevelLabel: "x", AuditLevelLabel: "y", EnforceLevelLabel: "baseline"},
			Policy{Enforce: lv(LevelBaseline, VersionLatest), Audit: priv, Warn: priv},
			[]string{
				`metadata.labels[pod-security.kubernetes.io/audit]: Invalid value: "y": must be one of privileged, baseline, restricted`,
				`metadata.labels[pod-security.kubernetes.io/warn]: Invalid value: "x": must be one of privileged, baseline, restricted`,
			}},
		{"invalid versions", map[string]string{EnforceLevelLabel: "baseline", EnforceVersionLabel: "1.30", AuditVersionLabel: "v1.05", WarnVersionLabel: "v2.0"},
			Policy{Enforce: lv(LevelBaseline, VersionLatest), Audit: priv, Warn: lv(LevelBaseline, VersionLatest)},
			[]string{
				`metadata.labels[pod-security.kubernetes.io/enforce-version]: Invalid value: "1.30": must be "latest" or "v1.x"`,
				`metadata.labels[pod-security.kubernetes.io/audit-version]: Invalid value: "v1.05": must be "latest" or "v1.x"`,
				`metadata.labels[pod-security.kubernetes.io/warn-version]: Invalid value: "v2.0": must be "latest" or "v1.x"`,
			}},
		{"v1.0 and big minors", map[string]string{EnforceVersionLabel: "v1.0", WarnVersionLabel: "v1.99"},
			Policy{Enforce: lv(LevelPrivileged, "v1.0"), Audit: priv, Warn: lv(LevelPrivileged, "v1.99")}, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, errs := PolicyFor(tc.labels)
			if got != tc.want {
				t.Errorf("policy %+v, want %+v", got, tc.want)
			}
			var msgs []string
			for _, e := range errs {
				msgs = append(msgs, e.Error())
			}
			if !slices.Equal(msgs, tc.errs) {
				t.Errorf("errors %q, want %q", msgs, tc.errs)
			}
		})
	}
}

// fakeObjects serves namespaces and pods from memory.
type fakeObjects struct {
	namespaces map[string]*corev1.Namespace
	pods       []*corev1.Pod
}

func (f *fakeObjects) Get(_ context.Context, gvr schema.GroupVersionResource, _, name string) (runtime.Object, error) {
	if ns, ok := f.namespaces[name]; ok && gvr == namespacesGVR {
		return ns, nil
	}
	return nil, apierrors.NewNotFound(gvr.GroupResource(), name)
}

func (f *fakeObjects) List(_ context.Context, gvr schema.GroupVersionResource, namespace string) ([]runtime.Object, error) {
	var out []runtime.Object
	for _, p := range f.pods {
		if gvr == podsGVR && p.Namespace == namespace {
			out = append(out, p)
		}
	}
	return out, nil
}

func objectsWith(namespaces ...*corev1.Namespace) *fakeObjects {
	f := &fakeObjects{namespaces: map[string]*corev1.Namespace{}}
	for _, ns := range namespaces {
		f.namespaces[ns.Name] = ns
	}
	return f
}

func namespace(name string, labels map[string]string) *corev1.Namespace {
	return &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}}
}

func podAttrs(op admission.Operation, ns string, pod, old *corev1.Pod) *admission.Attributes {
	pod.Namespace = ns
	a := &admission.Attributes{Resource: podsGVR, Kind: corev1.SchemeGroupVersion.WithKind("Pod"), Operation: op,
		Namespace: ns, Name: pod.Name, Object: pod}
	if old != nil {
		old.Namespace = ns
		a.OldObject = old
	}
	return a
}

const busyboxRestricted = `allowPrivilegeEscalation != false (container "c" must set securityContext.allowPrivilegeEscalation=false), ` +
	`unrestricted capabilities (container "c" must set securityContext.capabilities.drop=["ALL"]), ` +
	`runAsNonRoot != true (pod or container "c" must set securityContext.runAsNonRoot=true), ` +
	`seccompProfile (pod or container "c" must set securityContext.seccompProfile.type to "RuntimeDefault" or "Localhost")`

func TestPods(t *testing.T) {
	objects := objectsWith(
		namespace("open", nil),
		namespace("strict", map[string]string{EnforceLevelLabel: "restricted"}),
		namespace("pinned", map[string]string{EnforceLevelLabel: "restricted", EnforceVersionLabel: "v1.30"}),
		namespace("base", map[string]string{EnforceLevelLabel: "baseline", WarnLevelLabel: "restricted", AuditLevelLabel: "restricted"}),
		namespace("warned", map[string]string{WarnLevelLabel: "restricted"}),
		namespace("broken", map[string]string{EnforceLevelLabel: "bogus"}),
	)
	privileged := podWith(func(p *corev1.Pod) { sc(p, 0).Privileged = ptr.To(true) })
	hostNet := podWith(func(p *corev1.Pod) { p.Spec.HostNetwork = true })
	cases := []struct {
		name        string
		ns          string
		pod         *corev1.Pod
		err         string
		warnings    []string
		annotations map[string]string
	}{
		{name: "unlabelled namespace", ns: "open", pod: privileged,
			annotations: map[string]string{EnforcePolicyAnnotation: "privileged:latest"}},
		{name: "restricted refuses busybox", ns: "strict", pod: podWith(nil),
			err:         `pods "p" is forbidden: violates PodSecurity "restricted:latest": ` + busyboxRestricted,
			annotations: map[string]string{EnforcePolicyAnnotation: "restricted:latest"}},
		{name: "restricted admits a compliant pod", ns: "strict", pod: restrictedPod(),
			annotations: map[string]string{EnforcePolicyAnnotation: "restricted:latest"}},
		{name: "version quoted as labelled", ns: "pinned", pod: podWith(nil),
			err:         `pods "p" is forbidden: violates PodSecurity "restricted:v1.30": ` + busyboxRestricted,
			annotations: map[string]string{EnforcePolicyAnnotation: "restricted:v1.30"}},
		{name: "baseline refuses privileged", ns: "base", pod: privileged,
			err: `pods "p" is forbidden: violates PodSecurity "baseline:latest": privileged (container "c" must not set securityContext.privileged=true)`,
			annotations: map[string]string{EnforcePolicyAnnotation: "baseline:latest",
				AuditViolationsAnnotation: `would violate PodSecurity "restricted:latest": privileged (container "c" must not set securityContext.privileged=true), ` + busyboxRestricted}},
		{name: "baseline refuses hostNetwork", ns: "base", pod: hostNet,
			err: `pods "p" is forbidden: violates PodSecurity "baseline:latest": host namespaces (hostNetwork=true)`,
			annotations: map[string]string{EnforcePolicyAnnotation: "baseline:latest",
				AuditViolationsAnnotation: `would violate PodSecurity "restricted:latest": host namespaces (hostNetwork=true), ` + busyboxRestricted}},
		{name: "baseline admits busybox with warning and audit", ns: "base", pod: podWith(nil),
			warnings: []string{`would violate PodSecurity "restricted:latest": ` + busyboxRestricted},
			annotations: map[string]string{EnforcePolicyAnnotation: "baseline:latest",
				AuditViolationsAnnotation: `would violate PodSecurity "restricted:latest": ` + busyboxRestricted}},
		{name: "warn only", ns: "warned", pod: podWith(nil),
			warnings:    []string{`would violate PodSecurity "restricted:latest": ` + busyboxRestricted},
			annotations: map[string]string{EnforcePolicyAnnotation: "privileged:latest"}},
		{name: "invalid label enforces restricted", ns: "broken", pod: podWith(nil),
			err: `pods "p" is forbidden: violates PodSecurity "restricted:latest": ` + busyboxRestricted,
			annotations: map[string]string{EnforcePolicyAnnotation: "restricted:latest",
				ErrorAnnotation: `Failed to parse policy: metadata.labels[pod-security.kubernetes.io/enforce]: Invalid value: "bogus": must be one of privileged, baseline, restricted`}},
		{name: "missing namespace", ns: "gone", pod: podWith(nil), err: `Internal error occurred: failed to lookup namespace "gone"`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := New().Validate(context.Background(), podAttrs(admission.Create, tc.ns, tc.pod.DeepCopy(), nil), objects)
			checkResult(t, r, tc.err, tc.warnings, tc.annotations)
			if tc.err != "" && !apierrors.IsForbidden(r.Err) && !apierrors.IsInternalError(r.Err) {
				t.Errorf("error %v is not a 403", r.Err)
			}
		})
	}
}

func checkResult(t *testing.T, r admission.Result, err string, warnings []string, annotations map[string]string) {
	t.Helper()
	switch {
	case err == "" && r.Err != nil:
		t.Errorf("refused: %v", r.Err)
	case err != "" && (r.Err == nil || r.Err.Error() != err):
		t.Errorf("error:\n got %v\nwant %s", r.Err, err)
	}
	if !slices.Equal(r.Warnings, warnings) {
		t.Errorf("warnings:\n got %q\nwant %q", r.Warnings, warnings)
	}
	if len(annotations) == 0 {
		annotations = nil
	}
	if !reflect.DeepEqual(r.AuditAnnotations, annotations) {
		t.Errorf("annotations:\n got %q\nwant %q", r.AuditAnnotations, annotations)
	}
}

func TestPodUpdates(t *testing.T) {
	objects := objectsWith(namespace("strict", map[string]string{EnforceLevelLabel: "restricted"}))
	old := podWith(nil)
	// An update that changes nothing checked is not evaluated: a pod
	// admitted before the namespace was labelled can still be labelled.
	relabelled := old.DeepCopy()
	relabelled.Labels = map[string]string{"a": "b"}
	r := New().Validate(context.Background(), podAttrs(admission.Update, "strict", relabelled, old.DeepCopy()), objects)
	checkResult(t, r, "", nil, nil)
	// A new image is.
	newImage := old.DeepCopy()
	newImage.Spec.Containers[0].Image = "busybox:2"
	r = New().Validate(context.Background(), podAttrs(admission.Update, "strict", newImage, old.DeepCopy()), objects)
	checkResult(t, r, `pods "p" is forbidden: violates PodSecurity "restricted:latest": `+busyboxRestricted, nil,
		map[string]string{EnforcePolicyAnnotation: "restricted:latest"})
	// Subresources are not checked.
	a := podAttrs(admission.Update, "strict", newImage, old.DeepCopy())
	a.Subresource = "status"
	checkResult(t, New().Validate(context.Background(), a, objects), "", nil, nil)
}

func TestWorkloads(t *testing.T) {
	objects := objectsWith(
		namespace("open", nil),
		namespace("strict", map[string]string{EnforceLevelLabel: "restricted"}),
		namespace("audited", map[string]string{AuditLevelLabel: "baseline"}),
	)
	template := corev1.PodTemplateSpec{Spec: podWith(nil).Spec}
	privileged := corev1.PodTemplateSpec{Spec: podWith(func(p *corev1.Pod) { sc(p, 0).Privileged = ptr.To(true) }).Spec}
	objs := map[string]runtime.Object{
		"deployments":  &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "w"}, Spec: appsv1.DeploymentSpec{Template: template}},
		"replicasets":  &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Name: "w"}, Spec: appsv1.ReplicaSetSpec{Template: template}},
		"statefulsets": &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Name: "w"}, Spec: appsv1.StatefulSetSpec{Template: template}},
		"daemonsets":   &appsv1.DaemonSet{ObjectMeta: metav1.ObjectMeta{Name: "w"}, Spec: appsv1.DaemonSetSpec{Template: template}},
		"jobs":         &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: "w"}, Spec: batchv1.JobSpec{Template: template}},
		"cronjobs": &batchv1.CronJob{ObjectMeta: metav1.ObjectMeta{Name: "w"},
			Spec: batchv1.CronJobSpec{JobTemplate: batchv1.JobTemplateSpec{Spec: batchv1.JobSpec{Template: template}}}},
	}
	for resource, obj := range objs {
		t.Run(resource, func(t *testing.T) {
			for _, op := range []admission.Operation{admission.Create, admission.Update} {
				a := &admission.Attributes{Resource: appsv1.SchemeGroupVersion.WithResource(resource), Operation: op,
					Namespace: "strict", Name: "w", Object: obj}
				// Never refused; warned at the enforce level.
				checkResult(t, New().Validate(context.Background(), a, objects), "",
					[]string{`would violate PodSecurity "restricted:latest": ` + busyboxRestricted}, nil)
				a.Namespace = "open"
				checkResult(t, New().Validate(context.Background(), a, objects), "", nil, nil)
				a.Namespace, a.Subresource = "strict", "scale"
				checkResult(t, New().Validate(context.Background(), a, objects), "", nil, nil)
			}
		})
	}
	d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "w"}, Spec: appsv1.DeploymentSpec{Template: privileged}}
	a := &admission.Attributes{Resource: appsv1.SchemeGroupVersion.WithResource("deployments"), Operation: admission.Create,
		Namespace: "audited", Name: "w", Object: d}
	checkResult(t, New().Validate(context.Background(), a, objects), "", nil, map[string]string{
		AuditViolationsAnnotation: `would violate PodSecurity "baseline:latest": privileged (container "c" must not set securityContext.privileged=true)`,
	})
}

func TestNamespaces(t *testing.T) {
	nsAttrs := func(op admission.Operation, ns, old *corev1.Namespace) *admission.Attributes {
		a := &admission.Attributes{Resource: namespacesGVR, Kind: corev1.SchemeGroupVersion.WithKind("Namespace"),
			Operation: op, Name: ns.Name, Object: ns}
		if old != nil {
			a.OldObject = old
		}
		return a
	}
	ctx := context.Background()
	objects := objectsWith()
	invalid := `Namespace "n" is invalid: metadata.labels[pod-security.kubernetes.io/enforce]: Invalid value: "strict": must be one of privileged, baseline, restricted`

	r := New().Validate(ctx, nsAttrs(admission.Create, namespace("n", map[string]string{EnforceLevelLabel: "strict"}), nil), objects)
	checkResult(t, r, invalid, nil, nil)
	if !apierrors.IsInvalid(r.Err) {
		t.Errorf("%v is not a 422", r.Err)
	}
	r = New().Validate(ctx, nsAttrs(admission.Create, namespace("n", map[string]string{EnforceLevelLabel: "restricted", WarnVersionLabel: "v1.31"}), nil), objects)
	checkResult(t, r, "", nil, nil)

	// On update, invalid labels are refused only when they change.
	bad := namespace("n", map[string]string{EnforceLevelLabel: "strict"})
	relabelled := bad.DeepCopy()
	relabelled.Labels["team"] = "a"
	checkResult(t, New().Validate(ctx, nsAttrs(admission.Update, relabelled, bad), objects), "", nil, nil)
	checkResult(t, New().Validate(ctx, nsAttrs(admission.Update, bad, namespace("n", nil)), objects), invalid, nil, nil)

	// Tightening the enforce level warns of the pods that violate it,
	// grouped by violations.
	for i, name := range []string{"web-b", "web-a", "web-c"} {
		p := podWith(nil)
		p.Name, p.Namespace = name, "n"
		p.OwnerReferences = []metav1.OwnerReference{{Controller: ptr.To(true), UID: "rs", Name: "web", Kind: "ReplicaSet", APIVersion: "apps/v1"}}
		if i == 2 {
			p.OwnerReferences = nil
		}
		objects.pods = append(objects.pods, p)
	}
	priv := podWith(func(p *corev1.Pod) { sc(p, 0).Privileged = ptr.To(true) })
	priv.Name, priv.Namespace = "root", "n"
	objects.pods = append(objects.pods, priv, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "other", Namespace: "elsewhere"}})
	fine := restrictedPod()
	fine.Name, fine.Namespace = "fine", "n"
	objects.pods = append(objects.pods, fine)

	open := namespace("n", nil)
	strict := namespace("n", map[string]string{EnforceLevelLabel: "restricted"})
	r = New().Validate(ctx, nsAttrs(admission.Update, strict, open), objects)
	checkResult(t, r, "", []string{
		`existing pods in namespace "n" violate the new PodSecurity enforce level "restricted:latest"`,
		"root: privileged, allowPrivilegeEscalation != false, unrestricted capabilities, runAsNonRoot != true, seccompProfile",
		"web-a (and 2 other pods): allowPrivilegeEscalation != false, unrestricted capabilities, runAsNonRoot != true, seccompProfile",
	}, nil)
	baseline := namespace("n", map[string]string{EnforceLevelLabel: "baseline"})
	checkResult(t, New().Validate(ctx, nsAttrs(admission.Update, baseline, open), objects), "", []string{
		`existing pods in namespace "n" violate the new PodSecurity enforce level "baseline:latest"`,
		"root: privileged",
	}, nil)
	// Relaxing, keeping, or going privileged checks nothing.
	checkResult(t, New().Validate(ctx, nsAttrs(admission.Update, baseline, strict), objects), "", nil, nil)
	checkResult(t, New().Validate(ctx, nsAttrs(admission.Update, strict.DeepCopy(), strict), objects), "", nil, nil)
	checkResult(t, New().Validate(ctx, nsAttrs(admission.Update, open, strict), objects), "", nil, nil)

	// Only so many pods are checked.
	few := New()
	few.maxPodsToCheck = 2
	r = few.Validate(ctx, nsAttrs(admission.Update, strict, open), objects)
	if len(r.Warnings) == 0 || r.Warnings[0] != "new PodSecurity enforce level only checked against the first 2 of 5 existing pods" {
		t.Errorf("warnings %q", r.Warnings)
	}
}

func TestOtherResources(t *testing.T) {
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "c", Namespace: "strict"}}
	a := &admission.Attributes{Resource: corev1.SchemeGroupVersion.WithResource("configmaps"), Operation: admission.Create,
		Namespace: "strict", Name: "c", Object: cm}
	checkResult(t, New().Validate(context.Background(), a, objectsWith()), "", nil, nil)
	if got := fmt.Sprint(New().Name()); got != "PodSecurity" {
		t.Errorf("name %q", got)
	}
}
