package integration

import (
	"context"
	"slices"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/minik8s/minik8s/pkg/apiserver/authz"
)

// The scheduler, the controllers and the add-ons act as identities of
// their own, each allowed what it does and refused the rest: a
// Deployment still becomes running pods, and the audit log names who
// wrote each object.
func TestComponentIdentities(t *testing.T) {
	c := startCluster(t)
	ctx := ctxT(t)
	startSimulatedNodes(t, c, 1)

	labels := map[string]string{"app": "who"}
	dep := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "who", Namespace: "default"},
		Spec: appsv1.DeploymentSpec{Replicas: ptr.To[int32](2), Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox"}}}}}}
	if _, err := c.client.AppsV1().Deployments("default").Create(ctx, dep, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the deployment's 2 pods bound and running", func(ctx context.Context) (bool, error) {
		pods, err := c.client.CoreV1().Pods("default").List(ctx, metav1.ListOptions{LabelSelector: "app=who"})
		if err != nil || len(pods.Items) != 2 {
			return false, err
		}
		for _, p := range pods.Items {
			if p.Spec.NodeName == "" || p.Status.Phase != corev1.PodRunning {
				return false, nil
			}
		}
		return true, nil
	})

	// Each controller has its service account in kube-system.
	for _, sa := range []string{"deployment-controller", "replicaset-controller"} {
		if _, err := c.client.CoreV1().ServiceAccounts("kube-system").Get(ctx, sa, metav1.GetOptions{}); err != nil {
			t.Errorf("service account kube-system/%s: %v", sa, err)
		}
	}
	// Who wrote what, from the audit log.
	writers := map[string][]string{}
	for _, ev := range auditEvents(t, c) {
		if ev.ObjectRef == nil || ev.ResponseStatus == nil || ev.ResponseStatus.Code >= 300 {
			continue
		}
		key := ev.Verb + " " + ev.ObjectRef.Resource
		if ev.ObjectRef.Subresource != "" {
			key += "/" + ev.ObjectRef.Subresource
		}
		if !slices.Contains(writers[key], ev.User.Username) {
			writers[key] = append(writers[key], ev.User.Username)
		}
	}
	for key, want := range map[string]string{
		"create replicasets":        "system:serviceaccount:kube-system:deployment-controller",
		"create pods":               "system:serviceaccount:kube-system:replicaset-controller",
		"create pods/binding":       authz.UserScheduler,
		"update deployments/status": "system:serviceaccount:kube-system:deployment-controller",
	} {
		if got := writers[key]; !slices.Equal(got, []string{want}) {
			t.Errorf("audit log: %s by %v, want only %s", key, got, want)
		}
	}

	// What each identity may and may not do.
	controller := func(sa string) (string, []string) {
		return "system:serviceaccount:kube-system:" + sa, []string{"system:serviceaccounts", "system:serviceaccounts:kube-system", "system:authenticated"}
	}
	type ask struct {
		verb, group, resource, sub, ns string
		allowed                        bool
	}
	for _, tc := range []struct {
		user string
		asks []ask
	}{
		{authz.UserScheduler, []ask{{"create", "", "pods", "binding", "default", true}, {"patch", "", "pods", "status", "default", true},
			{"get", "", "secrets", "", "kube-system", false}, {"delete", "", "nodes", "", "", false}, {"create", "", "pods", "", "default", false}}},
		{authz.UserControllerManager, []ask{{"list", "", "secrets", "", "", true}, {"create", "", "serviceaccounts", "token", "kube-system", true},
			{"get", "", "secrets", "", "kube-system", false}, {"delete", "", "pods", "", "default", false}}},
		{"replicaset-controller", []ask{{"create", "", "pods", "", "default", true}, {"update", "apps", "replicasets", "status", "default", true},
			{"list", "", "secrets", "", "", false}, {"create", "apps", "deployments", "", "default", false}, {"delete", "", "nodes", "", "", false}}},
		{"replication-controller", []ask{{"create", "", "pods", "", "default", true}, {"update", "", "replicationcontrollers", "status", "default", true},
			{"update", "", "replicationcontrollers", "finalizers", "default", true}, {"patch", "", "replicationcontrollers", "", "default", false},
			{"update", "apps", "replicasets", "status", "default", false}, {"list", "", "secrets", "", "", false}}},
		{"namespace-controller", []ask{{"deletecollection", "", "secrets", "", "team", true}, {"create", "", "pods", "", "default", false}}},
		{"certificate-controller", []ask{{"approve", "certificates.k8s.io", "signers", "", "", false}}},
		{authz.UserGateway, []ask{{"update", "networking.k8s.io", "ingresses", "status", "default", true}, {"list", "", "secrets", "", "", false}}},
		{authz.UserPrometheus, []ask{{"get", "", "nodes", "proxy", "", true}, {"list", "", "pods", "", "", true},
			{"list", "", "secrets", "", "", false}, {"create", "", "pods", "", "default", false}}},
		{authz.UserFunctions, []ask{{"update", "apps", "deployments", "scale", "default", true}, {"get", "", "secrets", "", "default", false}}},
	} {
		user, groups := tc.user, []string(nil)
		if !slices.Contains([]string{authz.UserScheduler, authz.UserControllerManager, authz.UserGateway, authz.UserPrometheus, authz.UserFunctions}, user) {
			user, groups = controller(user)
		}
		for _, a := range tc.asks {
			sar, err := c.client.AuthorizationV1().SubjectAccessReviews().Create(ctx, &authorizationv1.SubjectAccessReview{
				Spec: authorizationv1.SubjectAccessReviewSpec{User: user, Groups: groups, ResourceAttributes: &authorizationv1.ResourceAttributes{
					Verb: a.verb, Group: a.group, Resource: a.resource, Subresource: a.sub, Namespace: a.ns}}}, metav1.CreateOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if sar.Status.Allowed != a.allowed {
				t.Errorf("%s %s %s/%s in %q: allowed=%v, want %v (%s)", user, a.verb, a.resource, a.sub, a.ns, sar.Status.Allowed, a.allowed, sar.Status.Reason)
			}
		}
	}
}
