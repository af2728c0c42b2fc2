package integration

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// busyboxRestricted is what restricted forbids in a plain busybox pod
// whose container is "c", as Kubernetes says it.
const busyboxRestricted = `allowPrivilegeEscalation != false (container "c" must set securityContext.allowPrivilegeEscalation=false), ` +
	`unrestricted capabilities (container "c" must set securityContext.capabilities.drop=["ALL"]), ` +
	`runAsNonRoot != true (pod or container "c" must set securityContext.runAsNonRoot=true), ` +
	`seccompProfile (pod or container "c" must set securityContext.seccompProfile.type to "RuntimeDefault" or "Localhost")`

const busyboxPodYAML = `apiVersion: v1
kind: Pod
metadata:
  name: busybox
spec:
  containers:
  - name: c
    image: busybox
    command: ["sleep", "3600"]
`

const busyboxDeploymentYAML = `apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
spec:
  replicas: 1
  selector:
    matchLabels: {app: web}
  template:
    metadata:
      labels: {app: web}
    spec:
      containers:
      - name: c
        image: busybox
        command: ["sleep", "3600"]
`

// TestPodSecurity: Pod Security Admission as Kubernetes has it — namespace
// labels enforce (403 with Kubernetes' message), warn (a Warning kubectl
// prints) and audit (an audit annotation) the Pod Security Standards;
// workload templates are warned about, never refused; label values are
// validated.
func TestPodSecurity(t *testing.T) {
	c := startClusterWith(t, apiServerOnly)
	ctx := ctxT(t)
	k := newKubectl(t, c)
	namespace := func(name string, labels map[string]string) {
		t.Helper()
		if _, err := c.client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{
			ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}}, metav1.CreateOptions{}); err != nil {
			t.Fatalf("namespace %s: %v", name, err)
		}
	}
	pod := func(name string, mutate func(*corev1.Pod)) *corev1.Pod {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox", Command: []string{"sleep", "3600"}}}}}
		if mutate != nil {
			mutate(p)
		}
		return p
	}
	refused := func(ns string, p *corev1.Pod, want string) {
		t.Helper()
		_, err := c.client.CoreV1().Pods(ns).Create(ctx, p, metav1.CreateOptions{})
		if !apierrors.IsForbidden(err) || err.Error() != want {
			t.Errorf("pod %s/%s: got %v\nwant 403 %s", ns, p.Name, err, want)
		}
	}
	admitted := func(ns string, p *corev1.Pod) {
		t.Helper()
		if _, err := c.client.CoreV1().Pods(ns).Create(ctx, p, metav1.CreateOptions{}); err != nil {
			t.Errorf("pod %s/%s: %v", ns, p.Name, err)
		}
	}

	// enforce=restricted refuses a plain busybox pod, with Kubernetes'
	// message, and admits one that asks for what restricted wants.
	namespace("psa-restricted", map[string]string{"pod-security.kubernetes.io/enforce": "restricted"})
	refused("psa-restricted", pod("busybox", nil),
		`pods "busybox" is forbidden: violates PodSecurity "restricted:latest": `+busyboxRestricted)
	admitted("psa-restricted", pod("compliant", func(p *corev1.Pod) {
		p.Spec.SecurityContext = &corev1.PodSecurityContext{
			RunAsNonRoot:   ptr.To(true),
			RunAsUser:      ptr.To[int64](1000),
			SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
		}
		p.Spec.Containers[0].SecurityContext = &corev1.SecurityContext{
			AllowPrivilegeEscalation: ptr.To(false),
			Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
		}
	}))
	// A dry run is refused as well.
	_, err := c.client.CoreV1().Pods("psa-restricted").Create(ctx, pod("dry", nil), metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
	if !apierrors.IsForbidden(err) {
		t.Errorf("dry-run pod: %v, want 403", err)
	}
	// kubectl says it as Kubernetes' kubectl does.
	_, stderr, err := k.runWithInput(t, busyboxPodYAML, "apply", "-n", "psa-restricted", "-f", "-")
	if err == nil || !strings.Contains(stderr, `Error from server (Forbidden): error when creating "STDIN": pods "busybox" is forbidden: violates PodSecurity "restricted:latest": allowPrivilegeEscalation != false`) {
		t.Errorf("kubectl apply of busybox in a restricted namespace: %v\n%s", err, stderr)
	}

	// enforce=baseline refuses privileged containers and host namespaces,
	// and admits busybox.
	namespace("psa-baseline", map[string]string{"pod-security.kubernetes.io/enforce": "baseline"})
	refused("psa-baseline", pod("privileged", func(p *corev1.Pod) {
		p.Spec.Containers[0].SecurityContext = &corev1.SecurityContext{Privileged: ptr.To(true)}
	}), `pods "privileged" is forbidden: violates PodSecurity "baseline:latest": privileged (container "c" must not set securityContext.privileged=true)`)
	refused("psa-baseline", pod("hostnet", func(p *corev1.Pod) { p.Spec.HostNetwork = true }),
		`pods "hostnet" is forbidden: violates PodSecurity "baseline:latest": host namespaces (hostNetwork=true)`)
	admitted("psa-baseline", pod("busybox", nil))

	// warn=restricted admits busybox with a warning kubectl prints.
	namespace("psa-warn", map[string]string{"pod-security.kubernetes.io/warn": "restricted"})
	stdout, stderr, err := k.runWithInput(t, busyboxPodYAML, "apply", "-n", "psa-warn", "-f", "-")
	if err != nil || stdout != "pod/busybox created\n" {
		t.Fatalf("kubectl apply in a warn namespace: %v\n%s%s", err, stdout, stderr)
	}
	if want := `Warning: would violate PodSecurity "restricted:latest": ` + busyboxRestricted + "\n"; stderr != want {
		t.Errorf("kubectl apply printed\n%s\nwant\n%s", stderr, want)
	}

	// Workloads are never refused, but their pod templates are warned
	// about at the enforce level.
	stdout, stderr, err = k.runWithInput(t, busyboxDeploymentYAML, "apply", "-n", "psa-restricted", "-f", "-")
	if err != nil || stdout != "deployment.apps/web created\n" {
		t.Fatalf("kubectl apply of a deployment in a restricted namespace: %v\n%s%s", err, stdout, stderr)
	}
	if want := `Warning: would violate PodSecurity "restricted:latest": ` + busyboxRestricted + "\n"; stderr != want {
		t.Errorf("kubectl apply of a deployment printed\n%s\nwant\n%s", stderr, want)
	}
	if _, err := c.client.AppsV1().Deployments("psa-restricted").Get(ctx, "web", metav1.GetOptions{}); err != nil {
		t.Errorf("the deployment was not created: %v", err)
	}

	// Invalid label values are refused, on create and on update.
	_, err = c.client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "psa-bad",
		Labels: map[string]string{"pod-security.kubernetes.io/enforce": "bogus"}}}, metav1.CreateOptions{})
	if want := `Namespace "psa-bad" is invalid: metadata.labels[pod-security.kubernetes.io/enforce]: Invalid value: "bogus": must be one of privileged, baseline, restricted`; !apierrors.IsInvalid(err) || err.Error() != want {
		t.Errorf("namespace with an invalid level: %v\nwant 422 %s", err, want)
	}
	_, stderr, err = k.run(t, "label", "ns", "psa-baseline", "pod-security.kubernetes.io/warn-version=1.30")
	if err == nil || !strings.Contains(stderr, `metadata.labels[pod-security.kubernetes.io/warn-version]: Invalid value: "1.30": must be "latest" or "v1.x"`) {
		t.Errorf("kubectl label with an invalid version: %v\n%s", err, stderr)
	}
	k.ok(t, "label", "ns", "psa-baseline", "pod-security.kubernetes.io/warn-version=v1.30")

	// Tightening the enforce level warns of the pods already there.
	_, stderr, err = k.run(t, "label", "--overwrite", "ns", "psa-baseline", "pod-security.kubernetes.io/enforce=restricted")
	if err != nil || !strings.Contains(stderr, `Warning: existing pods in namespace "psa-baseline" violate the new PodSecurity enforce level "restricted:latest"`) ||
		!strings.Contains(stderr, "Warning: busybox: allowPrivilegeEscalation != false, unrestricted capabilities, runAsNonRoot != true, seccompProfile") {
		t.Errorf("kubectl label enforce=restricted: %v\n%s", err, stderr)
	}

	// audit=restricted admits busybox and says what it would violate in
	// the audit log.
	namespace("psa-audit", map[string]string{"pod-security.kubernetes.io/audit": "restricted"})
	admitted("psa-audit", pod("busybox", nil))
	want := `would violate PodSecurity "restricted:latest": ` + busyboxRestricted
	deadline := time.Now().Add(10 * time.Second)
	for {
		var got string
		for _, ev := range auditEvents(t, c) {
			if ev.Verb == "create" && ev.ObjectRef != nil && ev.ObjectRef.Resource == "pods" && ev.ObjectRef.Namespace == "psa-audit" {
				got = ev.Annotations["pod-security.kubernetes.io/audit-violations"]
				if ev.Annotations["pod-security.kubernetes.io/enforce-policy"] != "privileged:latest" {
					t.Errorf("enforce-policy annotation: %q", ev.Annotations)
				}
			}
		}
		if got == want {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("audit annotation %q, want %q", got, want)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
