package podenv

import (
	"context"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/utils/ptr"
)

func TestExpand(t *testing.T) {
	vars := MappingFor(map[string]string{"A": "a", "B": "b$(A)", "EMPTY": ""})
	for _, tc := range []struct{ in, want string }{
		{"plain", "plain"},
		{"$(A)", "a"},
		{"x$(A)y$(A)", "xaya"},
		{"$(B)", "b$(A)"}, // no recursion
		{"$(UNDEFINED)", "$(UNDEFINED)"},
		{"$$(A)", "$(A)"},
		{"$$$(A)", "$a"},
		{"$(A", "$(A"},
		{"$A", "$A"},
		{"trailing $", "trailing $"},
		{"$(EMPTY)x", "x"},
		{"$()", "$()"},
		{"ü$(A)ü", "üaü"},
	} {
		if got := Expand(tc.in, vars); got != tc.want {
			t.Errorf("Expand(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestContainerEnv(t *testing.T) {
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "cfg"},
		Data: map[string]string{"COLOR": "blue", "SIZE": "3"}}
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "creds"},
		Data: map[string][]byte{"PASSWORD": []byte("hunter2")}}
	pod := testPod("web", "c1")
	pod.Annotations = map[string]string{"team": "infra"}
	pod.Spec.ServiceAccountName = "robot"
	pod.Spec.Containers[0].Resources = corev1.ResourceRequirements{
		Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("250m"), corev1.ResourceMemory: resource.MustParse("64Mi")},
		Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("128Mi")},
	}
	field := func(path string) *corev1.EnvVarSource {
		return &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: path}}
	}
	res := func(r, divisor string) *corev1.EnvVarSource {
		s := &corev1.ResourceFieldSelector{Resource: r}
		if divisor != "" {
			s.Divisor = resource.MustParse(divisor)
		}
		return &corev1.EnvVarSource{ResourceFieldRef: s}
	}
	cmKey := func(name, key string, opt bool) *corev1.EnvVarSource {
		return &corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{
			LocalObjectReference: corev1.LocalObjectReference{Name: name}, Key: key, Optional: ptr.To(opt)}}
	}
	secretKey := func(name, key string, opt bool) *corev1.EnvVarSource {
		return &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
			LocalObjectReference: corev1.LocalObjectReference{Name: name}, Key: key, Optional: ptr.To(opt)}}
	}
	allocatable := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("4"), corev1.ResourceMemory: resource.MustParse("8Gi")}
	tests := []struct {
		name    string
		env     []corev1.EnvVar
		envFrom []corev1.EnvFromSource
		want    []string // in order; nil with wantErr
		wantErr string
	}{
		{name: "values and expansion", env: []corev1.EnvVar{
			{Name: "A", Value: "1"}, {Name: "B", Value: "$(A)-$(C)"}, {Name: "C", Value: "3"}, {Name: "D", Value: "$$(A)"},
		}, want: []string{"A=1", "B=1-$(C)", "C=3", "D=$(A)"}},
		{name: "field refs", env: []corev1.EnvVar{
			{Name: "NAME", ValueFrom: field("metadata.name")},
			{Name: "NS", ValueFrom: field("metadata.namespace")},
			{Name: "UID", ValueFrom: field("metadata.uid")},
			{Name: "APP", ValueFrom: field("metadata.labels['app']")},
			{Name: "TEAM", ValueFrom: field("metadata.annotations['team']")},
			{Name: "NODE", ValueFrom: field("spec.nodeName")},
			{Name: "SA", ValueFrom: field("spec.serviceAccountName")},
			{Name: "POD_IP", ValueFrom: field("status.podIP")},
			{Name: "HOST_IP", ValueFrom: field("status.hostIP")},
			{Name: "LABELS", ValueFrom: field("metadata.labels")},
			{Name: "URL", Value: "http://$(POD_IP):80"},
		}, want: []string{"NAME=web", "NS=default", "UID=uid-web", "APP=web", "TEAM=infra", "NODE=node1", "SA=robot",
			"POD_IP=10.244.0.7", "HOST_IP=192.168.1.10", `LABELS=app="web"`, "URL=http://10.244.0.7:80"}},
		{name: "bad field", env: []corev1.EnvVar{{Name: "X", ValueFrom: field("spec.bogus")}}, wantErr: "unsupported fieldPath: spec.bogus"},
		{name: "resources", env: []corev1.EnvVar{
			{Name: "CPU_REQ", ValueFrom: res("requests.cpu", "")},
			{Name: "CPU_REQ_M", ValueFrom: res("requests.cpu", "1m")},
			{Name: "CPU_LIM", ValueFrom: res("limits.cpu", "")},
			{Name: "MEM_LIM_MI", ValueFrom: res("limits.memory", "1Mi")},
			{Name: "MEM_REQ", ValueFrom: res("requests.memory", "")},
		}, want: []string{"CPU_REQ=1", "CPU_REQ_M=250", "CPU_LIM=4", "MEM_LIM_MI=128", "MEM_REQ=67108864"}},
		{name: "configmap and secret keys", env: []corev1.EnvVar{
			{Name: "COLOR", ValueFrom: cmKey("cfg", "COLOR", false)},
			{Name: "PW", ValueFrom: secretKey("creds", "PASSWORD", false)},
			{Name: "OPT", ValueFrom: cmKey("cfg", "MISSING", true)},
			{Name: "OPT2", ValueFrom: cmKey("nope", "X", true)},
		}, want: []string{"COLOR=blue", "PW=hunter2"}},
		{name: "missing key", env: []corev1.EnvVar{{Name: "X", ValueFrom: cmKey("cfg", "MISSING", false)}},
			wantErr: "couldn't find key MISSING in ConfigMap default/cfg"},
		{name: "missing configmap", env: []corev1.EnvVar{{Name: "X", ValueFrom: cmKey("nope", "X", false)}},
			wantErr: `configmap "nope" not found`},
		{name: "missing secret key", env: []corev1.EnvVar{{Name: "X", ValueFrom: secretKey("creds", "USER", false)}},
			wantErr: "couldn't find key USER in Secret default/creds"},
		{name: "envFrom with prefix, env overrides", envFrom: []corev1.EnvFromSource{
			{Prefix: "CFG_", ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "cfg"}}},
			{SecretRef: &corev1.SecretEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "creds"}}},
			{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "nope"}, Optional: ptr.To(true)}},
		}, env: []corev1.EnvVar{{Name: "CFG_SIZE", Value: "big-$(CFG_COLOR)"}},
			want: []string{"CFG_COLOR=blue", "CFG_SIZE=big-blue", "PASSWORD=hunter2"}},
		{name: "envFrom missing", envFrom: []corev1.EnvFromSource{
			{SecretRef: &corev1.SecretEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "nope"}}},
		}, wantErr: `secret "nope" not found`},
	}
	client := fake.NewClientset(cm, secret)
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := pod.Spec.Containers[0].DeepCopy()
			c.Env, c.EnvFrom = tc.env, tc.envFrom
			ec := &Context{Pod: pod, PodIP: "10.244.0.7", HostIP: "192.168.1.10", Allocatable: allocatable,
				Objects: NewObjects(context.Background(), client, "default")}
			got, _, err := ContainerEnv(c, ec)
			if tc.wantErr != "" {
				if err == nil || err.Error() != tc.wantErr {
					t.Fatalf("err = %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("env =\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(tc.want, "\n"))
			}
		})
	}
}

func TestServiceEnv(t *testing.T) {
	svc := func(ns, name, ip string, ports ...corev1.ServicePort) *corev1.Service {
		return &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
			Spec: corev1.ServiceSpec{ClusterIP: ip, Ports: ports}}
	}
	client := fake.NewClientset(
		svc("default", "kubernetes", "10.96.0.1", corev1.ServicePort{Name: "https", Port: 443, Protocol: corev1.ProtocolTCP}),
		svc("apps", "my-db", "10.96.0.20", corev1.ServicePort{Port: 5432}, corev1.ServicePort{Name: "metrics", Port: 9187, Protocol: corev1.ProtocolTCP}),
		svc("apps", "headless", corev1.ClusterIPNone, corev1.ServicePort{Port: 80}),
		svc("other", "elsewhere", "10.96.0.30", corev1.ServicePort{Port: 80}),
	)
	pod := testPod("p", "c")
	pod.Namespace = "apps"
	env, err := ServiceEnv(context.Background(), client, pod)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"KUBERNETES_SERVICE_HOST":       "10.96.0.1",
		"KUBERNETES_SERVICE_PORT":       "443",
		"KUBERNETES_SERVICE_PORT_HTTPS": "443",
		"KUBERNETES_PORT":               "tcp://10.96.0.1:443",
		"KUBERNETES_PORT_443_TCP":       "tcp://10.96.0.1:443",
		"KUBERNETES_PORT_443_TCP_PROTO": "tcp",
		"KUBERNETES_PORT_443_TCP_PORT":  "443",
		"KUBERNETES_PORT_443_TCP_ADDR":  "10.96.0.1",
		"MY_DB_SERVICE_HOST":            "10.96.0.20",
		"MY_DB_SERVICE_PORT":            "5432",
		"MY_DB_SERVICE_PORT_METRICS":    "9187",
		"MY_DB_PORT":                    "tcp://10.96.0.20:5432",
		"MY_DB_PORT_5432_TCP":           "tcp://10.96.0.20:5432",
		"MY_DB_PORT_5432_TCP_PROTO":     "tcp",
		"MY_DB_PORT_5432_TCP_PORT":      "5432",
		"MY_DB_PORT_5432_TCP_ADDR":      "10.96.0.20",
		"MY_DB_PORT_9187_TCP":           "tcp://10.96.0.20:9187",
		"MY_DB_PORT_9187_TCP_PROTO":     "tcp",
		"MY_DB_PORT_9187_TCP_PORT":      "9187",
		"MY_DB_PORT_9187_TCP_ADDR":      "10.96.0.20",
	}
	for k, v := range want {
		if env[k] != v {
			t.Errorf("%s = %q, want %q", k, env[k], v)
		}
	}
	if len(env) != len(want) {
		t.Errorf("got %d variables, want %d: %v", len(env), len(want), env)
	}

	pod.Spec.EnableServiceLinks = ptr.To(false)
	env, err = ServiceEnv(context.Background(), client, pod)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := env["MY_DB_SERVICE_HOST"]; ok || env["KUBERNETES_SERVICE_HOST"] != "10.96.0.1" {
		t.Errorf("enableServiceLinks=false: %v", env)
	}
}

// testPod is a pod of the named containers, as local's tests build it.
func testPod(name string, containers ...string) *corev1.Pod {
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name, UID: types.UID("uid-" + name),
			Labels: map[string]string{"app": name}},
		Spec: corev1.PodSpec{
			NodeName: "node1", RestartPolicy: corev1.RestartPolicyAlways,
			TerminationGracePeriodSeconds: ptr.To[int64](30),
		},
	}
	for _, c := range containers {
		pod.Spec.Containers = append(pod.Spec.Containers, corev1.Container{Name: c, Image: "busybox", ImagePullPolicy: corev1.PullIfNotPresent})
	}
	return pod
}
