package integration

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"

	"github.com/minik8s/minik8s/pkg/serviceaccount"
)

// tokenClient is a client of c that authenticates with a bearer token.
func tokenClient(c *cluster, token string) kubernetes.Interface {
	return kubernetes.NewForConfigOrDie(&rest.Config{Host: c.cp.URL, BearerToken: token,
		TLSClientConfig: rest.TLSClientConfig{CAData: c.cp.Bundle.CAPEM}})
}

// whoami is `kubectl auth whoami` as client.
func whoami(ctx context.Context, client kubernetes.Interface) (authenticationv1.UserInfo, error) {
	r, err := client.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
	if err != nil {
		return authenticationv1.UserInfo{}, err
	}
	return r.Status.UserInfo, nil
}

// jwtClaims decodes a token's claims, unverified.
func jwtClaims(t *testing.T, token string) map[string]any {
	t.Helper()
	parts := strings.Split(token, ".")
	if len(parts) != 3 {
		t.Fatalf("%q is not a JWT", token)
	}
	data, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(data, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

func TestServiceAccountTokens(t *testing.T) {
	c := startCluster(t)
	ctx := ctxT(t)
	k := newKubectl(t, c)
	const ns = "sa-tokens"
	if _, err := c.client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	// The namespace has its default service account at once, and the
	// cluster CA soon.
	sa, err := c.client.CoreV1().ServiceAccounts(ns).Get(ctx, "default", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("default service account of a new namespace: %v", err)
	}
	waitFor(t, "kube-root-ca.crt", func(ctx context.Context) (bool, error) {
		cm, err := c.client.CoreV1().ConfigMaps(ns).Get(ctx, "kube-root-ca.crt", metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return false, nil
		}
		if err != nil {
			return false, err
		}
		if cm.Data["ca.crt"] != string(c.cp.Bundle.CAPEM) {
			t.Fatalf("kube-root-ca.crt holds %q, want the cluster CA", cm.Data["ca.crt"])
		}
		return true, nil
	})
	for _, sys := range []string{"default", "kube-system"} {
		if _, err := c.client.CoreV1().ServiceAccounts(sys).Get(ctx, "default", metav1.GetOptions{}); err != nil {
			t.Errorf("default service account of %s: %v", sys, err)
		}
	}

	// kubectl create token, then who am I with it.
	token := strings.TrimSpace(k.ok(t, "create", "token", "default", "-n", ns, "--duration", "10m"))
	claims := jwtClaims(t, token)
	if claims["iss"] != serviceaccount.DefaultIssuer || claims["sub"] != "system:serviceaccount:"+ns+":default" {
		t.Errorf("claims %v", claims)
	}
	if exp, iat := claims["exp"].(float64), claims["iat"].(float64); exp-iat != 600 {
		t.Errorf("token lives %vs, want 600", exp-iat)
	}
	saClient := tokenClient(c, token)
	me, err := whoami(ctx, saClient)
	if err != nil {
		t.Fatalf("whoami with the token: %v", err)
	}
	wantGroups := []string{"system:serviceaccounts", "system:serviceaccounts:" + ns, "system:authenticated"}
	if me.Username != "system:serviceaccount:"+ns+":default" || me.UID != string(sa.UID) || !slices.Equal(me.Groups, wantGroups) {
		t.Errorf("whoami = %+v, want system:serviceaccount:%s:default, uid %s, groups %v", me, ns, sa.UID, wantGroups)
	}

	// No rights until bound to a role.
	_, err = saClient.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
	wantForbidden(t, "list pods without a binding", err, `User "system:serviceaccount:`+ns+`:default" cannot list resource "pods"`)
	rb := &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "default-view"},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: "default", Namespace: ns}},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "view"},
	}
	if _, err := c.client.RbacV1().RoleBindings(ns).Create(ctx, rb, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitAllowed(t, "list pods as a viewer", func() error {
		_, err := saClient.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
		return err
	})

	// Tokens for another audience are not the apiserver's.
	other := strings.TrimSpace(k.ok(t, "create", "token", "default", "-n", ns, "--audience", "vault"))
	if aud := jwtClaims(t, other)["aud"]; !slices.Equal(toStrings(aud), []string{"vault"}) {
		t.Errorf("aud = %v, want [vault]", aud)
	}
	if _, err := whoami(ctx, tokenClient(c, other)); !apierrors.IsUnauthorized(err) {
		t.Errorf("a token for audience vault: %v, want 401", err)
	}
	// The API's rules on what may be asked.
	if out := k.fails(t, "create", "token", "nobody", "-n", ns); !strings.Contains(out, `serviceaccounts "nobody" not found`) {
		t.Errorf("token of a missing account: %s", out)
	}
	if out := k.fails(t, "create", "token", "default", "-n", ns, "--duration", "5m"); !strings.Contains(out, "may not specify a duration less than 10 minutes") {
		t.Errorf("a 5m token: %s", out)
	}
	tr, err := c.client.CoreV1().ServiceAccounts(ns).CreateToken(ctx, "default", &authenticationv1.TokenRequest{}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if left := time.Until(tr.Status.ExpirationTimestamp.Time); left < 59*time.Minute || left > 61*time.Minute {
		t.Errorf("a default token expires in %v, want an hour", left)
	}
	if aud := jwtClaims(t, tr.Status.Token)["aud"]; !slices.Equal(toStrings(aud), []string{serviceaccount.DefaultIssuer}) {
		t.Errorf("default aud = %v", aud)
	}

	// A pod without serviceAccountName runs as default, with the token,
	// the CA and the namespace mounted in every container.
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec: corev1.PodSpec{
			InitContainers: []corev1.Container{{Name: "init", Image: "busybox"}},
			Containers: []corev1.Container{
				{Name: "app", Image: "nginx"},
				{Name: "own", Image: "nginx", VolumeMounts: []corev1.VolumeMount{{Name: "mine", MountPath: serviceaccount.MountPath}}},
			},
			Volumes: []corev1.Volume{{Name: "mine", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}},
		},
	}
	pod, err = c.client.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	checkTokenVolume(t, pod, "init", "app")

	// A token bound to the pod works while the pod exists.
	bound := strings.TrimSpace(k.ok(t, "create", "token", "default", "-n", ns, "--bound-object-kind", "Pod", "--bound-object-name", "web"))
	pc := jwtClaims(t, bound)["kubernetes.io"].(map[string]any)["pod"].(map[string]any)
	if pc["name"] != "web" || pc["uid"] != string(pod.UID) {
		t.Errorf("pod claim %v", pc)
	}
	boundClient := tokenClient(c, bound)
	if me, err := whoami(ctx, boundClient); err != nil || me.Username != "system:serviceaccount:"+ns+":default" {
		t.Fatalf("whoami with the pod's token: %+v %v", me, err)
	}
	if out := k.fails(t, "create", "token", "default", "-n", ns, "--bound-object-kind", "Pod", "--bound-object-name", "web", "--bound-object-uid", "not-its-uid"); !strings.Contains(out, "does not match the UID in record") {
		t.Errorf("a token bound to a stale pod UID: %s", out)
	}
	if err := c.client.CoreV1().Pods(ns).Delete(ctx, "web", metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the pod's token to stop working", func(ctx context.Context) (bool, error) {
		_, err := whoami(ctx, boundClient)
		return apierrors.IsUnauthorized(err), nil
	})

	// automountServiceAccountToken: false, on the pod or on the account.
	noToken := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "no-token"},
		Spec: corev1.PodSpec{AutomountServiceAccountToken: ptr.To(false),
			Containers: []corev1.Container{{Name: "app", Image: "nginx"}}},
	}
	if got, err := c.client.CoreV1().Pods(ns).Create(ctx, noToken, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	} else if len(got.Spec.Volumes) != 0 || len(got.Spec.Containers[0].VolumeMounts) != 0 {
		t.Errorf("automountServiceAccountToken false got volumes %v, mounts %v", got.Spec.Volumes, got.Spec.Containers[0].VolumeMounts)
	}
	quiet := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "quiet"}, AutomountServiceAccountToken: ptr.To(false),
		ImagePullSecrets: []corev1.LocalObjectReference{{Name: "regcred"}}}
	if _, err := c.client.CoreV1().ServiceAccounts(ns).Create(ctx, quiet, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	asQuiet := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "as-quiet"},
		Spec:       corev1.PodSpec{ServiceAccountName: "quiet", Containers: []corev1.Container{{Name: "app", Image: "nginx"}}},
	}
	if got, err := c.client.CoreV1().Pods(ns).Create(ctx, asQuiet, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	} else {
		if len(got.Spec.Volumes) != 0 || got.Spec.DeprecatedServiceAccount != "quiet" {
			t.Errorf("a pod of an account without automount: volumes %v, serviceAccount %q", got.Spec.Volumes, got.Spec.DeprecatedServiceAccount)
		}
		if len(got.Spec.ImagePullSecrets) != 1 || got.Spec.ImagePullSecrets[0].Name != "regcred" {
			t.Errorf("imagePullSecrets = %v, want the account's", got.Spec.ImagePullSecrets)
		}
	}

	// A missing account refuses the pod, in kube-apiserver's words.
	orphan := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "orphan"},
		Spec:       corev1.PodSpec{ServiceAccountName: "missing", Containers: []corev1.Container{{Name: "app", Image: "nginx"}}},
	}
	_, err = c.client.CoreV1().Pods(ns).Create(ctx, orphan, metav1.CreateOptions{})
	wantForbidden(t, "a pod of a missing account", err,
		`pods "orphan" is forbidden: error looking up service account `+ns+`/missing: serviceaccount "missing" not found`)

	// The default account and the CA come back when deleted, and tokens
	// of the deleted account stop working.
	if err := c.client.CoreV1().ServiceAccounts(ns).Delete(ctx, "default", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := c.client.CoreV1().ConfigMaps(ns).Delete(ctx, "kube-root-ca.crt", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "a new default service account", func(ctx context.Context) (bool, error) {
		again, err := c.client.CoreV1().ServiceAccounts(ns).Get(ctx, "default", metav1.GetOptions{})
		return err == nil && again.UID != sa.UID, nil
	})
	waitFor(t, "kube-root-ca.crt again", func(ctx context.Context) (bool, error) {
		_, err := c.client.CoreV1().ConfigMaps(ns).Get(ctx, "kube-root-ca.crt", metav1.GetOptions{})
		return err == nil, nil
	})
	if _, err := whoami(ctx, saClient); !apierrors.IsUnauthorized(err) {
		t.Errorf("a token of the deleted account: %v, want 401", err)
	}

	// A pod created right after its namespace is admitted.
	if _, err := c.client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "sa-fresh"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	fresh := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "first"}, Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "nginx"}}}}
	if got, err := c.client.CoreV1().Pods("sa-fresh").Create(ctx, fresh, metav1.CreateOptions{}); err != nil {
		t.Errorf("a pod in a namespace just created: %v", err)
	} else {
		checkTokenVolume(t, got, "app")
	}
}

// checkTokenVolume checks that pod has Kubernetes' kube-api-access
// volume, mounted read-only at the service account path in the named
// containers only.
func checkTokenVolume(t *testing.T, pod *corev1.Pod, mountedIn ...string) {
	t.Helper()
	if pod.Spec.ServiceAccountName != "default" || pod.Spec.DeprecatedServiceAccount != "default" {
		t.Errorf("serviceAccountName %q serviceAccount %q, want default", pod.Spec.ServiceAccountName, pod.Spec.DeprecatedServiceAccount)
	}
	var vol *corev1.Volume
	for i := range pod.Spec.Volumes {
		if strings.HasPrefix(pod.Spec.Volumes[i].Name, "kube-api-access-") {
			if vol != nil {
				t.Fatalf("two kube-api-access volumes: %v", pod.Spec.Volumes)
			}
			vol = &pod.Spec.Volumes[i]
		}
	}
	if vol == nil || len(vol.Name) != len("kube-api-access-")+5 || vol.Projected == nil {
		t.Fatalf("no kube-api-access-xxxxx projected volume: %v", pod.Spec.Volumes)
	}
	want := &corev1.ProjectedVolumeSource{
		DefaultMode: ptr.To[int32](0o644),
		Sources: []corev1.VolumeProjection{
			{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Path: "token", ExpirationSeconds: ptr.To[int64](3607)}},
			{ConfigMap: &corev1.ConfigMapProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "kube-root-ca.crt"},
				Items: []corev1.KeyToPath{{Key: "ca.crt", Path: "ca.crt"}}}},
			{DownwardAPI: &corev1.DownwardAPIProjection{Items: []corev1.DownwardAPIVolumeFile{{Path: "namespace",
				FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "metadata.namespace"}}}}},
		},
	}
	gotJSON, _ := json.Marshal(vol.Projected)
	wantJSON, _ := json.Marshal(want)
	if string(gotJSON) != string(wantJSON) {
		t.Errorf("projected volume\n got %s\nwant %s", gotJSON, wantJSON)
	}
	for _, list := range [][]corev1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
		for _, ctr := range list {
			has := slices.ContainsFunc(ctr.VolumeMounts, func(m corev1.VolumeMount) bool {
				return m.Name == vol.Name && m.ReadOnly && m.MountPath == serviceaccount.MountPath && m.SubPath == ""
			})
			if has != slices.Contains(mountedIn, ctr.Name) {
				t.Errorf("container %s mounts %v", ctr.Name, ctr.VolumeMounts)
			}
		}
	}
}

func toStrings(v any) []string {
	var out []string
	switch x := v.(type) {
	case string:
		out = append(out, x)
	case []any:
		for _, e := range x {
			s, _ := e.(string)
			out = append(out, s)
		}
	}
	return out
}
