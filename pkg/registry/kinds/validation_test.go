package kinds

import (
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	batchv1 "k8s.io/api/batch/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	networkingv1 "k8s.io/api/networking/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"

	"github.com/minik8s/minik8s/pkg/registry/validation"
)

func intOrStr(s string) intstr.IntOrString { return intstr.FromString(s) }

type createCase struct {
	name       string
	obj        runtime.Object
	namespaced bool
	want       []string // empty: must be valid
}

// mutate returns a deep copy of obj changed by f.
func mutate[T runtime.Object](obj T, f func(T)) T {
	c := obj.DeepCopyObject().(T)
	f(c)
	return c
}

func runCreateCases(t *testing.T, cases []createCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			checkErrors(t, validate(tc.obj, tc.namespaced), tc.want)
		})
	}
}

func TestValidateValidObjects(t *testing.T) {
	runCreateCases(t, []createCase{
		{name: "pod", obj: validPod(), namespaced: true},
		{name: "service", obj: validService(), namespaced: true},
		{name: "headless service without ports", obj: defaulted(&corev1.Service{
			ObjectMeta: nsMeta("db"), Spec: corev1.ServiceSpec{ClusterIP: "None", Selector: appLabels()},
		}), namespaced: true},
		{name: "nodeport service", obj: defaulted(&corev1.Service{
			ObjectMeta: nsMeta("np"), Spec: corev1.ServiceSpec{
				Type: corev1.ServiceTypeNodePort, Ports: []corev1.ServicePort{{Port: 80, NodePort: 30080}},
			},
		}), namespaced: true},
		{name: "external name service", obj: defaulted(&corev1.Service{
			ObjectMeta: nsMeta("ext"), Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeExternalName, ExternalName: "db.example.com."},
		}), namespaced: true},
		{name: "deployment", obj: validDeployment(), namespaced: true},
		{name: "replicaset", obj: validReplicaSet(), namespaced: true},
		{name: "job", obj: validJob(), namespaced: true},
		{name: "cronjob", obj: validCronJob(), namespaced: true},
		{name: "hpa", obj: validHPA(), namespaced: true},
		{name: "ingress", obj: validIngress(), namespaced: true},
		{name: "pv", obj: validPV()},
		{name: "pvc", obj: validPVC(), namespaced: true},
		{name: "storageclass", obj: validStorageClass()},
		{name: "endpointslice", obj: validEndpointSlice(), namespaced: true},
		{name: "endpoints", obj: validEndpoints(), namespaced: true},
		{name: "lease", obj: validLease(), namespaced: true},
		{name: "node", obj: validNode()},
		{name: "namespace", obj: defaulted(&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team-a"}})},
		{name: "configmap", obj: defaulted(&corev1.ConfigMap{
			ObjectMeta: nsMeta("cfg"), Data: map[string]string{"app.properties": "x=1", "LOG_LEVEL": "debug"},
			BinaryData: map[string][]byte{"logo.png": {1, 2}},
		}), namespaced: true},
		{name: "tls secret", obj: defaulted(&corev1.Secret{
			ObjectMeta: nsMeta("tls"), Type: corev1.SecretTypeTLS,
			Data: map[string][]byte{"tls.crt": []byte("c"), "tls.key": []byte("k")},
		}), namespaced: true},
		{name: "opaque secret from stringData", obj: defaulted(&corev1.Secret{
			ObjectMeta: nsMeta("creds"), StringData: map[string]string{"password": "s3cr3t"},
		}), namespaced: true},
		{name: "serviceaccount", obj: defaulted(&corev1.ServiceAccount{ObjectMeta: nsMeta("builder")}), namespaced: true},
		{name: "event", obj: defaulted(&corev1.Event{
			ObjectMeta:     nsMeta("web.17a8b2c3d4e5f6a7"),
			InvolvedObject: corev1.ObjectReference{Kind: "Pod", Namespace: "default", Name: "web"},
			Type:           corev1.EventTypeNormal, Reason: "Scheduled", Count: 1,
		}), namespaced: true},
		{name: "event about a node", obj: &corev1.Event{
			ObjectMeta:     nsMeta("node-1.abc"),
			InvolvedObject: corev1.ObjectReference{Kind: "Node", Name: "node-1"},
		}, namespaced: true},
		{name: "unknown kind with path-segment name", obj: &networkingv1.NetworkPolicy{
			ObjectMeta: metav1.ObjectMeta{Name: "system:controller:job-controller"},
		}},
		{name: "not an object with metadata", obj: &metav1.Status{}},
	})
}

func TestValidateObjectMeta(t *testing.T) {
	runCreateCases(t, []createCase{
		{name: "missing name", obj: mutate(validPod(), func(p *corev1.Pod) { p.Name = "" }), namespaced: true,
			want: []string{"metadata.name: Required value: name or generateName is required"}},
		{name: "pod name not a subdomain", obj: mutate(validPod(), func(p *corev1.Pod) { p.Name = "Web_1" }), namespaced: true,
			want: []string{"metadata.name: a lowercase RFC 1123 subdomain"}},
		{name: "pod name with dots is fine", obj: mutate(validPod(), func(p *corev1.Pod) { p.Name = "web.v1" }), namespaced: true},
		{name: "service name must be a label", obj: mutate(validService(), func(s *corev1.Service) { s.Name = "web.v1" }), namespaced: true,
			want: []string{"metadata.name: must not contain dots"}},
		{name: "namespace name must be a label", obj: defaulted(&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team.a"}}),
			want: []string{"metadata.name"}},
		{name: "event name may contain uppercase", obj: &corev1.Event{
			ObjectMeta: nsMeta("Web.Abc"), InvolvedObject: corev1.ObjectReference{Namespace: "default"},
		}, namespaced: true},
		{name: "event name may not contain slash", obj: &corev1.Event{
			ObjectMeta: nsMeta("a/b"), InvolvedObject: corev1.ObjectReference{Namespace: "default"},
		}, namespaced: true, want: []string{"metadata.name"}},
		{name: "namespaced kind without namespace", obj: mutate(validPod(), func(p *corev1.Pod) { p.Namespace = "" }), namespaced: true,
			want: []string{"metadata.namespace: Required value"}},
		{name: "bad namespace name", obj: mutate(validPod(), func(p *corev1.Pod) { p.Namespace = "Default" }), namespaced: true,
			want: []string{"metadata.namespace"}},
		{name: "cluster-scoped kind with namespace", obj: mutate(validNode(), func(n *corev1.Node) { n.Namespace = "default" }),
			want: []string{"metadata.namespace: Forbidden: not allowed on this type"}},
		{name: "bad label key", obj: mutate(validPod(), func(p *corev1.Pod) { p.Labels = map[string]string{"-bad": "x"} }), namespaced: true,
			want: []string{"metadata.labels"}},
		{name: "bad label value", obj: mutate(validPod(), func(p *corev1.Pod) { p.Labels = map[string]string{"app": "has space"} }), namespaced: true,
			want: []string{"metadata.labels"}},
		{name: "annotations too large", obj: mutate(validPod(), func(p *corev1.Pod) {
			p.Annotations = map[string]string{"big": strings.Repeat("x", 256*1024)}
		}), namespaced: true, want: []string{"metadata.annotations: Too long"}},
		{name: "bad annotation key", obj: mutate(validPod(), func(p *corev1.Pod) { p.Annotations = map[string]string{"a b": ""} }), namespaced: true,
			want: []string{"metadata.annotations"}},
		{name: "unknown kind gets meta checks", obj: &storagev1.CSIDriver{ObjectMeta: metav1.ObjectMeta{Name: "x", Namespace: "default"}},
			want: []string{"metadata.namespace"}},
	})
}

func TestValidatePod(t *testing.T) {
	pod := validPod()
	runCreateCases(t, []createCase{
		{name: "no containers", obj: mutate(pod, func(p *corev1.Pod) { p.Spec.Containers = nil }), namespaced: true,
			want: []string{"spec.containers: Required value"}},
		{name: "missing image", obj: mutate(pod, func(p *corev1.Pod) { p.Spec.Containers[0].Image = "" }), namespaced: true,
			want: []string{"spec.containers[0].image: Required value"}},
		{name: "image with whitespace", obj: mutate(pod, func(p *corev1.Pod) { p.Spec.Containers[0].Image = " nginx" }), namespaced: true,
			want: []string{"spec.containers[0].image"}},
		{name: "bad container name", obj: mutate(pod, func(p *corev1.Pod) { p.Spec.Containers[0].Name = "Bad_Name" }), namespaced: true,
			want: []string{`spec.containers[0].name: Invalid value: "Bad_Name": a lowercase RFC 1123 label must consist of`}},
		{name: "duplicate container names", obj: mutate(pod, func(p *corev1.Pod) {
			p.Spec.InitContainers = []corev1.Container{{Name: "app", Image: "busybox", ImagePullPolicy: corev1.PullAlways}}
		}), namespaced: true, want: []string{`spec.containers[0].name: Duplicate value: "app"`}},
		{name: "container port out of range", obj: mutate(pod, func(p *corev1.Pod) { p.Spec.Containers[0].Ports[0].ContainerPort = 70000 }), namespaced: true,
			want: []string{"spec.containers[0].ports[0].containerPort: must be between 1 and 65535, inclusive"}},
		{name: "container port missing", obj: mutate(pod, func(p *corev1.Pod) { p.Spec.Containers[0].Ports[0].ContainerPort = 0 }), namespaced: true,
			want: []string{"spec.containers[0].ports[0].containerPort: Required value"}},
		{name: "bad port protocol", obj: mutate(pod, func(p *corev1.Pod) { p.Spec.Containers[0].Ports[0].Protocol = "HTTP" }), namespaced: true,
			want: []string{`spec.containers[0].ports[0].protocol: Unsupported value: "HTTP"`}},
		{name: "duplicate port names", obj: mutate(pod, func(p *corev1.Pod) {
			p.Spec.Containers[0].Ports = append(p.Spec.Containers[0].Ports, corev1.ContainerPort{Name: "http", ContainerPort: 81, Protocol: corev1.ProtocolTCP})
		}), namespaced: true, want: []string{"spec.containers[0].ports[1].name: Duplicate value"}},
		{name: "requests above limits", obj: mutate(pod, func(p *corev1.Pod) {
			p.Spec.Containers[0].Resources.Requests[corev1.ResourceCPU] = resource.MustParse("2")
		}), namespaced: true, want: []string{`spec.containers[0].resources.requests: Invalid value: "2": must be less than or equal to cpu limit of 500m`}},
		{name: "negative quantity", obj: mutate(pod, func(p *corev1.Pod) {
			p.Spec.Containers[0].Resources.Limits[corev1.ResourceMemory] = resource.MustParse("-1")
		}), namespaced: true, want: []string{"spec.containers[0].resources.limits[memory]: must be greater than or equal to 0"}},
		{name: "bad resource name", obj: mutate(pod, func(p *corev1.Pod) {
			p.Spec.Containers[0].Resources.Limits["gpu"] = resource.MustParse("1")
		}), namespaced: true, want: []string{"spec.containers[0].resources.limits[gpu]"}},
		{name: "extended resource name", obj: mutate(pod, func(p *corev1.Pod) {
			p.Spec.Containers[0].Resources.Limits["nvidia.com/gpu"] = resource.MustParse("1")
		}), namespaced: true},
		{name: "bad restart policy", obj: mutate(pod, func(p *corev1.Pod) { p.Spec.RestartPolicy = "Sometimes" }), namespaced: true,
			want: []string{`spec.restartPolicy: Unsupported value: "Sometimes": supported values: "Always", "OnFailure", "Never"`}},
		{name: "bad dns policy", obj: mutate(pod, func(p *corev1.Pod) { p.Spec.DNSPolicy = "Google" }), namespaced: true,
			want: []string{"spec.dnsPolicy"}},
		{name: "dns none without config", obj: mutate(pod, func(p *corev1.Pod) { p.Spec.DNSPolicy = corev1.DNSNone }), namespaced: true,
			want: []string{"spec.dnsConfig: Required value"}},
		{name: "bad pull policy", obj: mutate(pod, func(p *corev1.Pod) { p.Spec.Containers[0].ImagePullPolicy = "Sometimes" }), namespaced: true,
			want: []string{"spec.containers[0].imagePullPolicy"}},
		{name: "mount of unknown volume", obj: mutate(pod, func(p *corev1.Pod) { p.Spec.Containers[0].VolumeMounts[0].Name = "nope" }), namespaced: true,
			want: []string{`spec.containers[0].volumeMounts[0].name: Not found: "nope"`}},
		{name: "mount without path", obj: mutate(pod, func(p *corev1.Pod) { p.Spec.Containers[0].VolumeMounts[0].MountPath = "" }), namespaced: true,
			want: []string{"spec.containers[0].volumeMounts[0].mountPath: Required value"}},
		{name: "duplicate volumes", obj: mutate(pod, func(p *corev1.Pod) { p.Spec.Volumes = append(p.Spec.Volumes, p.Spec.Volumes[0]) }), namespaced: true,
			want: []string{`spec.volumes[1].name: Duplicate value: "data"`}},
		{name: "two volume sources", obj: mutate(pod, func(p *corev1.Pod) {
			p.Spec.Volumes[0].HostPath = &corev1.HostPathVolumeSource{Path: "/tmp", Type: ptr.To(corev1.HostPathUnset)}
		}), namespaced: true, want: []string{"spec.volumes[0]: Forbidden: may not specify more than 1 volume type"}},
		{name: "configmap volume without name", obj: mutate(pod, func(p *corev1.Pod) {
			p.Spec.Volumes[0].VolumeSource = corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{DefaultMode: ptr.To[int32](0644)}}
		}), namespaced: true, want: []string{"spec.volumes[0].configMap.name: Required value"}},
		{name: "bad default mode", obj: mutate(pod, func(p *corev1.Pod) {
			p.Spec.Volumes[0].VolumeSource = corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "s", DefaultMode: ptr.To[int32](01000)}}
		}), namespaced: true, want: []string{"spec.volumes[0].secret.defaultMode"}},
		{name: "pvc volume without claim", obj: mutate(pod, func(p *corev1.Pod) {
			p.Spec.Volumes[0].VolumeSource = corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{}}
		}), namespaced: true, want: []string{"spec.volumes[0].persistentVolumeClaim.claimName: Required value"}},
		{name: "env without name", obj: mutate(pod, func(p *corev1.Pod) { p.Spec.Containers[0].Env[0].Name = "" }), namespaced: true,
			want: []string{"spec.containers[0].env[0].name: Required value"}},
		{name: "env value and valueFrom", obj: mutate(pod, func(p *corev1.Pod) { p.Spec.Containers[0].Env[1].Value = "x" }), namespaced: true,
			want: []string{"spec.containers[0].env[1].valueFrom"}},
		{name: "env unsupported fieldPath", obj: mutate(pod, func(p *corev1.Pod) {
			p.Spec.Containers[0].Env[1].ValueFrom.FieldRef.FieldPath = "spec.nope"
		}), namespaced: true, want: []string{"spec.containers[0].env[1].valueFrom.fieldRef.fieldPath: Unsupported value"}},
		{name: "env label fieldPath", obj: mutate(pod, func(p *corev1.Pod) {
			p.Spec.Containers[0].Env[1].ValueFrom.FieldRef.FieldPath = "metadata.labels['app']"
		}), namespaced: true},
		{name: "probe without handler", obj: mutate(pod, func(p *corev1.Pod) {
			p.Spec.Containers[0].ReadinessProbe.TCPSocket = nil
		}), namespaced: true, want: []string{"spec.containers[0].readinessProbe: Required value: must specify a handler type"}},
		{name: "liveness success threshold", obj: mutate(pod, func(p *corev1.Pod) {
			p.Spec.Containers[0].LivenessProbe = p.Spec.Containers[0].ReadinessProbe.DeepCopy()
			p.Spec.Containers[0].LivenessProbe.SuccessThreshold = 2
		}), namespaced: true, want: []string{"spec.containers[0].livenessProbe.successThreshold: Invalid value: 2: must be 1"}},
		{name: "probe named port invalid", obj: mutate(pod, func(p *corev1.Pod) {
			p.Spec.Containers[0].ReadinessProbe.TCPSocket.Port = intOrStr("not_valid")
		}), namespaced: true, want: []string{"spec.containers[0].readinessProbe.tcpSocket.port"}},
		{name: "init container probe", obj: mutate(pod, func(p *corev1.Pod) {
			p.Spec.InitContainers = []corev1.Container{{Name: "init", Image: "busybox", ImagePullPolicy: corev1.PullAlways,
				ReadinessProbe: p.Spec.Containers[0].ReadinessProbe.DeepCopy()}}
		}), namespaced: true, want: []string{"spec.initContainers[0].readinessProbe: Forbidden"}},
		{name: "sidecar init container with probe", obj: mutate(pod, func(p *corev1.Pod) {
			p.Spec.InitContainers = []corev1.Container{{Name: "proxy", Image: "envoy", ImagePullPolicy: corev1.PullAlways,
				RestartPolicy:  ptr.To(corev1.ContainerRestartPolicyAlways),
				ReadinessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"true"}}}, TimeoutSeconds: 1, PeriodSeconds: 10, SuccessThreshold: 1, FailureThreshold: 3}}}
		}), namespaced: true},
		{name: "bad toleration", obj: mutate(pod, func(p *corev1.Pod) {
			p.Spec.Tolerations = append(p.Spec.Tolerations, corev1.Toleration{Key: "k", Operator: corev1.TolerationOpExists, Value: "v"})
		}), namespaced: true, want: []string{"spec.tolerations[2].operator: Invalid value"}},
		{name: "tolerationSeconds without NoExecute", obj: mutate(pod, func(p *corev1.Pod) {
			p.Spec.Tolerations = append(p.Spec.Tolerations, corev1.Toleration{Key: "k", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule, TolerationSeconds: ptr.To[int64](5)})
		}), namespaced: true, want: []string{"spec.tolerations[2].effect"}},
		{name: "bad node selector", obj: mutate(pod, func(p *corev1.Pod) { p.Spec.NodeSelector = map[string]string{"a b": "c"} }), namespaced: true,
			want: []string{"spec.nodeSelector"}},
		{name: "bad activeDeadlineSeconds", obj: mutate(pod, func(p *corev1.Pod) { p.Spec.ActiveDeadlineSeconds = ptr.To[int64](0) }), namespaced: true,
			want: []string{"spec.activeDeadlineSeconds"}},
		{name: "bad service account name", obj: mutate(pod, func(p *corev1.Pod) { p.Spec.ServiceAccountName = "Bad_SA" }), namespaced: true,
			want: []string{"spec.serviceAccountName"}},
		{name: "hostNetwork hostPort mismatch", obj: mutate(pod, func(p *corev1.Pod) {
			p.Spec.HostNetwork = true
			p.Spec.Containers[0].Ports[0].HostPort = 8080
		}), namespaced: true, want: []string{"spec.containers[0].ports[0].hostPort: Invalid value: 8080: must match `containerPort` when `hostNetwork` is true"}},
	})
	// PodTemplates are not served: their template is checked as the
	// workloads' templates are.
	checkErrors(t, validation.PodTemplateSpec(&corev1.PodTemplateSpec{}, field.NewPath("template")), []string{"template.spec.containers: Required value"})
}

func TestValidateService(t *testing.T) {
	svc := validService()
	runCreateCases(t, []createCase{
		{name: "no ports", obj: mutate(svc, func(s *corev1.Service) { s.Spec.Ports = nil }), namespaced: true,
			want: []string{"spec.ports: Required value"}},
		{name: "port out of range", obj: mutate(svc, func(s *corev1.Service) { s.Spec.Ports[0].Port = 0 }), namespaced: true,
			want: []string{"spec.ports[0].port: Invalid value: 0: must be between 1 and 65535, inclusive"}},
		{name: "unnamed port among several", obj: mutate(svc, func(s *corev1.Service) { s.Spec.Ports[1].Name = "" }), namespaced: true,
			want: []string{"spec.ports[1].name: Required value"}},
		{name: "duplicate port names", obj: mutate(svc, func(s *corev1.Service) { s.Spec.Ports[1].Name = "http" }), namespaced: true,
			want: []string{`spec.ports[1].name: Duplicate value: "http"`}},
		{name: "bad port name", obj: mutate(svc, func(s *corev1.Service) { s.Spec.Ports[1].Name = "HTTPS" }), namespaced: true,
			want: []string{"spec.ports[1].name"}},
		{name: "duplicate port and protocol", obj: mutate(svc, func(s *corev1.Service) { s.Spec.Ports[1].Port = 80 }), namespaced: true,
			want: []string{"spec.ports[1]: Duplicate value"}},
		{name: "bad type", obj: mutate(svc, func(s *corev1.Service) { s.Spec.Type = "Internal" }), namespaced: true,
			want: []string{`spec.type: Unsupported value: "Internal"`}},
		{name: "nodePort on ClusterIP", obj: mutate(svc, func(s *corev1.Service) { s.Spec.Ports[0].NodePort = 30001 }), namespaced: true,
			want: []string{"spec.ports[0].nodePort: Forbidden: may not be used when `type` is 'ClusterIP'"}},
		{name: "nodePort out of range", obj: mutate(svc, func(s *corev1.Service) {
			s.Spec.Type = corev1.ServiceTypeNodePort
			s.Spec.ExternalTrafficPolicy = corev1.ServiceExternalTrafficPolicyCluster
			s.Spec.Ports[0].NodePort = 80
		}), namespaced: true, want: []string{"spec.ports[0].nodePort: Invalid value: 80: provided port is not in the valid range. The range of valid ports is 30000-32767"}},
		{name: "duplicate nodePort", obj: mutate(svc, func(s *corev1.Service) {
			s.Spec.Type = corev1.ServiceTypeNodePort
			s.Spec.ExternalTrafficPolicy = corev1.ServiceExternalTrafficPolicyCluster
			s.Spec.Ports[0].NodePort = 30080
			s.Spec.Ports[1].NodePort = 30080
		}), namespaced: true, want: []string{"spec.ports[1].nodePort: Duplicate value"}},
		{name: "bad clusterIP", obj: mutate(svc, func(s *corev1.Service) { s.Spec.ClusterIP = "10.0.0"; s.Spec.ClusterIPs = nil }), namespaced: true,
			want: []string{"spec.clusterIP"}},
		{name: "headless NodePort", obj: mutate(svc, func(s *corev1.Service) {
			s.Spec.Type = corev1.ServiceTypeNodePort
			s.Spec.ExternalTrafficPolicy = corev1.ServiceExternalTrafficPolicyCluster
			s.Spec.ClusterIP = "None"
		}), namespaced: true, want: []string{"spec.clusterIP"}},
		{name: "bad targetPort name", obj: mutate(svc, func(s *corev1.Service) { s.Spec.Ports[1].TargetPort = intOrStr("bad_name") }), namespaced: true,
			want: []string{"spec.ports[1].targetPort"}},
		{name: "bad session affinity", obj: mutate(svc, func(s *corev1.Service) { s.Spec.SessionAffinity = "Cookie" }), namespaced: true,
			want: []string{"spec.sessionAffinity"}},
		{name: "externalName missing", obj: defaulted(&corev1.Service{ObjectMeta: nsMeta("ext"), Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeExternalName}}),
			namespaced: true, want: []string{"spec.externalName: Required value"}},
		{name: "externalName with clusterIP", obj: defaulted(&corev1.Service{ObjectMeta: nsMeta("ext"), Spec: corev1.ServiceSpec{
			Type: corev1.ServiceTypeExternalName, ExternalName: "example.com", ClusterIP: "10.0.0.1",
		}}), namespaced: true, want: []string{"spec.clusterIP: Forbidden"}},
		{name: "external traffic policy on ClusterIP", obj: mutate(svc, func(s *corev1.Service) { s.Spec.ExternalTrafficPolicy = "Local" }), namespaced: true,
			want: []string{"spec.externalTrafficPolicy"}},
		{name: "bad selector", obj: mutate(svc, func(s *corev1.Service) { s.Spec.Selector = map[string]string{"app": "a b"} }), namespaced: true,
			want: []string{"spec.selector"}},
	})
}

func TestValidateWorkloads(t *testing.T) {
	d, rs, job, cj := validDeployment(), validReplicaSet(), validJob(), validCronJob()
	runCreateCases(t, []createCase{
		{name: "deployment without selector", obj: mutate(d, func(d *appsv1.Deployment) { d.Spec.Selector = nil }), namespaced: true,
			want: []string{"spec.selector: Required value"}},
		{name: "deployment empty selector", obj: mutate(d, func(d *appsv1.Deployment) { d.Spec.Selector = &metav1.LabelSelector{} }), namespaced: true,
			want: []string{"spec.selector: empty selector is invalid for deployment"}},
		{name: "deployment selector mismatch", obj: mutate(d, func(d *appsv1.Deployment) { d.Spec.Template.Labels = map[string]string{"app": "other"} }), namespaced: true,
			want: []string{"spec.template.metadata.labels: Invalid value: {\"app\":\"other\"}: `selector` does not match template `labels`"}},
		{name: "deployment negative replicas", obj: mutate(d, func(d *appsv1.Deployment) { d.Spec.Replicas = ptr.To[int32](-1) }), namespaced: true,
			want: []string{"spec.replicas: Invalid value: -1: must be greater than or equal to 0"}},
		{name: "deployment restartPolicy", obj: mutate(d, func(d *appsv1.Deployment) { d.Spec.Template.Spec.RestartPolicy = corev1.RestartPolicyNever }), namespaced: true,
			want: []string{`spec.template.spec.restartPolicy: Unsupported value: "Never": supported values: "Always"`}},
		{name: "deployment template container missing image", obj: mutate(d, func(d *appsv1.Deployment) { d.Spec.Template.Spec.Containers[0].Image = "" }), namespaced: true,
			want: []string{"spec.template.spec.containers[0].image: Required value"}},
		{name: "deployment bad strategy", obj: mutate(d, func(d *appsv1.Deployment) { d.Spec.Strategy.Type = "BlueGreen" }), namespaced: true,
			want: []string{"spec.strategy.type"}},
		{name: "deployment recreate with rollingUpdate", obj: mutate(d, func(d *appsv1.Deployment) { d.Spec.Strategy.Type = appsv1.RecreateDeploymentStrategyType }), namespaced: true,
			want: []string{"spec.strategy.rollingUpdate: Forbidden"}},
		{name: "deployment both zero", obj: mutate(d, func(d *appsv1.Deployment) {
			d.Spec.Strategy.RollingUpdate.MaxSurge = ptr.To(intstr.FromInt32(0))
			d.Spec.Strategy.RollingUpdate.MaxUnavailable = ptr.To(intstr.FromString("0%"))
		}), namespaced: true, want: []string{"spec.strategy.rollingUpdate.maxUnavailable: Invalid value: \"0%\": may not be 0 when `maxSurge` is 0"}},
		{name: "deployment bad percent", obj: mutate(d, func(d *appsv1.Deployment) {
			d.Spec.Strategy.RollingUpdate.MaxSurge = ptr.To(intstr.FromString("25"))
		}), namespaced: true, want: []string{"spec.strategy.rollingUpdate.maxSurge"}},
		{name: "deployment maxUnavailable over 100%", obj: mutate(d, func(d *appsv1.Deployment) {
			d.Spec.Strategy.RollingUpdate.MaxUnavailable = ptr.To(intstr.FromString("150%"))
		}), namespaced: true, want: []string{"spec.strategy.rollingUpdate.maxUnavailable: Invalid value: \"150%\": must not be greater than 100%"}},
		{name: "deployment progress deadline", obj: mutate(d, func(d *appsv1.Deployment) { d.Spec.MinReadySeconds = 700 }), namespaced: true,
			want: []string{"spec.progressDeadlineSeconds: must be greater than minReadySeconds"}},
		{name: "replicaset selector mismatch", obj: mutate(rs, func(r *appsv1.ReplicaSet) { r.Spec.Template.Labels = nil }), namespaced: true,
			want: []string{"spec.template.metadata.labels"}},
		{name: "replicaset bad selector operator", obj: mutate(rs, func(r *appsv1.ReplicaSet) { r.Spec.Selector.MatchExpressions[0].Operator = "Like" }), namespaced: true,
			want: []string{"spec.selector.matchExpressions[0].operator"}},
		{name: "job restartPolicy Always", obj: mutate(job, func(j *batchv1.Job) { j.Spec.Template.Spec.RestartPolicy = corev1.RestartPolicyAlways }), namespaced: true,
			want: []string{`spec.template.spec.restartPolicy: Unsupported value: "Always": supported values: "OnFailure", "Never"`}},
		{name: "job negative parallelism", obj: mutate(job, func(j *batchv1.Job) { j.Spec.Parallelism = ptr.To[int32](-1) }), namespaced: true,
			want: []string{"spec.parallelism"}},
		{name: "job negative backoffLimit", obj: mutate(job, func(j *batchv1.Job) { j.Spec.BackoffLimit = ptr.To[int32](-1) }), namespaced: true,
			want: []string{"spec.backoffLimit"}},
		{name: "job manual selector required", obj: mutate(job, func(j *batchv1.Job) { j.Spec.ManualSelector = ptr.To(true) }), namespaced: true,
			want: []string{"spec.selector: Required value"}},
		{name: "job selector mismatch", obj: mutate(job, func(j *batchv1.Job) {
			j.Spec.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"batch.kubernetes.io/controller-uid": "abc"}}
		}), namespaced: true, want: []string{"spec.template.metadata.labels: Invalid value"}},
		{name: "job indexed without completions", obj: mutate(job, func(j *batchv1.Job) {
			j.Spec.CompletionMode = ptr.To(batchv1.IndexedCompletion)
			j.Spec.Completions = nil
		}), namespaced: true, want: []string{"spec.completions: Required value"}},
		{name: "job pod failure policy needs Never", obj: mutate(job, func(j *batchv1.Job) {
			j.Spec.Template.Spec.RestartPolicy = corev1.RestartPolicyOnFailure
			j.Spec.PodFailurePolicy = &batchv1.PodFailurePolicy{}
		}), namespaced: true, want: []string{"spec.template.spec.restartPolicy"}},
		{name: "cronjob missing schedule", obj: mutate(cj, func(c *batchv1.CronJob) { c.Spec.Schedule = "" }), namespaced: true,
			want: []string{"spec.schedule: Required value"}},
		{name: "cronjob bad schedule", obj: mutate(cj, func(c *batchv1.CronJob) { c.Spec.Schedule = "61 * * * *" }), namespaced: true,
			want: []string{`spec.schedule: Invalid value: "61 * * * *": end of range (61) above maximum (59)`}},
		{name: "cronjob wrong field count", obj: mutate(cj, func(c *batchv1.CronJob) { c.Spec.Schedule = "* * *" }), namespaced: true,
			want: []string{"spec.schedule: expected exactly 5 fields"}},
		{name: "cronjob TZ in schedule", obj: mutate(cj, func(c *batchv1.CronJob) { c.Spec.Schedule = "TZ=UTC 0 * * * *" }), namespaced: true,
			want: []string{"spec.schedule: cannot use TZ or CRON_TZ in schedule, use timeZone field instead"}},
		{name: "cronjob descriptor", obj: mutate(cj, func(c *batchv1.CronJob) { c.Spec.Schedule = "@hourly" }), namespaced: true},
		{name: "cronjob time zone", obj: mutate(cj, func(c *batchv1.CronJob) { c.Spec.TimeZone = ptr.To("Europe/Paris") }), namespaced: true},
		{name: "cronjob bad time zone", obj: mutate(cj, func(c *batchv1.CronJob) { c.Spec.TimeZone = ptr.To("Mars/Olympus") }), namespaced: true,
			want: []string{"spec.timeZone"}},
		{name: "cronjob bad concurrency", obj: mutate(cj, func(c *batchv1.CronJob) { c.Spec.ConcurrencyPolicy = "Sometimes" }), namespaced: true,
			want: []string{"spec.concurrencyPolicy"}},
		{name: "cronjob name too long", obj: mutate(cj, func(c *batchv1.CronJob) { c.Name = strings.Repeat("a", 53) }), namespaced: true,
			want: []string{"metadata.name: must be no more than 52 characters"}},
		{name: "cronjob job template restartPolicy", obj: mutate(cj, func(c *batchv1.CronJob) {
			c.Spec.JobTemplate.Spec.Template.Spec.RestartPolicy = corev1.RestartPolicyAlways
		}), namespaced: true, want: []string{"spec.jobTemplate.spec.template.spec.restartPolicy: Unsupported value"}},
	})
}

func TestValidateOtherKinds(t *testing.T) {
	hpa, ing, pv, pvc, sc := validHPA(), validIngress(), validPV(), validPVC(), validStorageClass()
	es, ep, lease, node := validEndpointSlice(), validEndpoints(), validLease(), validNode()
	runCreateCases(t, []createCase{
		// HorizontalPodAutoscaler
		{name: "hpa min above max", obj: mutate(hpa, func(h *autoscalingv2.HorizontalPodAutoscaler) { h.Spec.MinReplicas = ptr.To[int32](6) }), namespaced: true,
			want: []string{"spec.maxReplicas: Invalid value: 5: must be greater than or equal to `minReplicas`"}},
		{name: "hpa min zero", obj: mutate(hpa, func(h *autoscalingv2.HorizontalPodAutoscaler) { h.Spec.MinReplicas = ptr.To[int32](0) }), namespaced: true,
			want: []string{"spec.minReplicas"}},
		{name: "hpa max zero", obj: mutate(hpa, func(h *autoscalingv2.HorizontalPodAutoscaler) { h.Spec.MaxReplicas = 0 }), namespaced: true,
			want: []string{"spec.maxReplicas: Invalid value: 0: must be greater than 0"}},
		{name: "hpa no target", obj: mutate(hpa, func(h *autoscalingv2.HorizontalPodAutoscaler) {
			h.Spec.ScaleTargetRef = autoscalingv2.CrossVersionObjectReference{}
		}), namespaced: true,
			want: []string{"spec.scaleTargetRef.kind: Required value", "spec.scaleTargetRef.name: Required value"}},
		{name: "hpa resource metric missing", obj: mutate(hpa, func(h *autoscalingv2.HorizontalPodAutoscaler) { h.Spec.Metrics[0].Resource = nil }), namespaced: true,
			want: []string{"spec.metrics[0].resource: Required value"}},
		{name: "hpa zero utilization", obj: mutate(hpa, func(h *autoscalingv2.HorizontalPodAutoscaler) {
			h.Spec.Metrics[0].Resource.Target.AverageUtilization = ptr.To[int32](0)
		}), namespaced: true, want: []string{"spec.metrics[0].resource.target.averageUtilization"}},
		{name: "hpa bad behavior", obj: mutate(hpa, func(h *autoscalingv2.HorizontalPodAutoscaler) {
			h.Spec.Behavior = &autoscalingv2.HorizontalPodAutoscalerBehavior{ScaleDown: &autoscalingv2.HPAScalingRules{
				StabilizationWindowSeconds: ptr.To[int32](4000),
				Policies:                   []autoscalingv2.HPAScalingPolicy{{Type: "Pods", Value: 0, PeriodSeconds: 60}},
			}}
		}), namespaced: true, want: []string{"spec.behavior.scaleDown.stabilizationWindowSeconds", "spec.behavior.scaleDown.policies[0].value"}},
		// Ingress
		{name: "ingress without pathType", obj: mutate(ing, func(i *networkingv1.Ingress) { i.Spec.Rules[0].HTTP.Paths[0].PathType = nil }), namespaced: true,
			want: []string{"spec.rules[0].http.paths[0].pathType: Required value: pathType must be specified"}},
		{name: "ingress relative path", obj: mutate(ing, func(i *networkingv1.Ingress) { i.Spec.Rules[0].HTTP.Paths[0].Path = "api" }), namespaced: true,
			want: []string{`spec.rules[0].http.paths[0].path: Invalid value: "api": must be an absolute path`}},
		{name: "ingress IP host", obj: mutate(ing, func(i *networkingv1.Ingress) { i.Spec.Rules[0].Host = "10.0.0.1" }), namespaced: true,
			want: []string{"spec.rules[0].host: Invalid value: \"10.0.0.1\": must be a DNS name, not an IP address"}},
		{name: "ingress no backend port", obj: mutate(ing, func(i *networkingv1.Ingress) {
			i.Spec.Rules[0].HTTP.Paths[0].Backend.Service.Port = networkingv1.ServiceBackendPort{}
		}), namespaced: true, want: []string{"spec.rules[0].http.paths[0].backend.service.port: Required value"}},
		{name: "ingress no rules", obj: mutate(ing, func(i *networkingv1.Ingress) { i.Spec.Rules = nil }), namespaced: true,
			want: []string{"spec: either `defaultBackend` or `rules` must be specified"}},
		{name: "ingress empty paths", obj: mutate(ing, func(i *networkingv1.Ingress) { i.Spec.Rules[0].HTTP.Paths = nil }), namespaced: true,
			want: []string{"spec.rules[0].http.paths: Required value"}},
		// PersistentVolume / PersistentVolumeClaim / StorageClass
		{name: "pv no capacity", obj: mutate(pv, func(p *corev1.PersistentVolume) { p.Spec.Capacity = nil }),
			want: []string{"spec.capacity: Required value"}},
		{name: "pv capacity other than storage", obj: mutate(pv, func(p *corev1.PersistentVolume) { p.Spec.Capacity[corev1.ResourceCPU] = resource.MustParse("1") }),
			want: []string{`spec.capacity: Unsupported value: "cpu"`}},
		{name: "pv no access modes", obj: mutate(pv, func(p *corev1.PersistentVolume) { p.Spec.AccessModes = nil }),
			want: []string{"spec.accessModes: Required value"}},
		{name: "pv no source", obj: mutate(pv, func(p *corev1.PersistentVolume) { p.Spec.HostPath = nil }),
			want: []string{"spec: Required value: must specify a volume type"}},
		{name: "pv bad reclaim", obj: mutate(pv, func(p *corev1.PersistentVolume) { p.Spec.PersistentVolumeReclaimPolicy = "Keep" }),
			want: []string{"spec.persistentVolumeReclaimPolicy"}},
		{name: "pvc without storage", obj: mutate(pvc, func(p *corev1.PersistentVolumeClaim) { p.Spec.Resources.Requests = nil }), namespaced: true,
			want: []string{"spec.resources[storage]: Required value"}},
		{name: "pvc zero storage", obj: mutate(pvc, func(p *corev1.PersistentVolumeClaim) {
			p.Spec.Resources.Requests[corev1.ResourceStorage] = resource.MustParse("0")
		}), namespaced: true, want: []string{"spec.resources[storage]: Invalid value"}},
		{name: "pvc bad access mode", obj: mutate(pvc, func(p *corev1.PersistentVolumeClaim) {
			p.Spec.AccessModes = []corev1.PersistentVolumeAccessMode{"ReadWriteSometimes"}
		}),
			namespaced: true, want: []string{"spec.accessModes: Unsupported value"}},
		{name: "storageclass without provisioner", obj: mutate(sc, func(s *storagev1.StorageClass) { s.Provisioner = "" }),
			want: []string{"provisioner: Required value"}},
		{name: "storageclass bad binding mode", obj: mutate(sc, func(s *storagev1.StorageClass) { s.VolumeBindingMode = ptr.To(storagev1.VolumeBindingMode("Later")) }),
			want: []string{"volumeBindingMode"}},
		// EndpointSlice / Endpoints
		{name: "endpointslice bad address type", obj: mutate(es, func(e *discoveryv1.EndpointSlice) { e.AddressType = "IPX" }), namespaced: true,
			want: []string{"addressType: Unsupported value"}},
		{name: "endpointslice bad address", obj: mutate(es, func(e *discoveryv1.EndpointSlice) { e.Endpoints[0].Addresses = []string{"fd00::1"} }), namespaced: true,
			want: []string{"endpoints[0].addresses[0]: Invalid value: \"fd00::1\": must be a valid IPv4 address"}},
		{name: "endpointslice no addresses", obj: mutate(es, func(e *discoveryv1.EndpointSlice) { e.Endpoints[0].Addresses = nil }), namespaced: true,
			want: []string{"endpoints[0].addresses: Required value"}},
		{name: "endpointslice bad port", obj: mutate(es, func(e *discoveryv1.EndpointSlice) { e.Ports[0].Port = ptr.To[int32](0) }), namespaced: true,
			want: []string{"ports[0].port"}},
		{name: "endpoints bad ip", obj: mutate(ep, func(e *corev1.Endpoints) { e.Subsets[0].Addresses[0].IP = "nope" }), namespaced: true,
			want: []string{"subsets[0].addresses[0].ip"}},
		{name: "endpoints unnamed ports", obj: mutate(ep, func(e *corev1.Endpoints) { e.Subsets[0].Ports[1].Name = "" }), namespaced: true,
			want: []string{"subsets[0].ports[1].name: Required value"}},
		// Lease / Node / Namespace
		{name: "lease zero duration", obj: mutate(lease, func(l *coordinationv1.Lease) { l.Spec.LeaseDurationSeconds = ptr.To[int32](0) }), namespaced: true,
			want: []string{"spec.leaseDurationSeconds: Invalid value: 0: must be greater than 0"}},
		{name: "node bad CIDR", obj: mutate(node, func(n *corev1.Node) { n.Spec.PodCIDR = "10.244.1.0"; n.Spec.PodCIDRs = nil }),
			want: []string{"spec.podCIDR"}},
		{name: "node bad taint effect", obj: mutate(node, func(n *corev1.Node) { n.Spec.Taints[0].Effect = "NoWay" }),
			want: []string{"spec.taints[0].effect: Unsupported value"}},
		{name: "namespace bad finalizer", obj: defaulted(&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "ns"}, Spec: corev1.NamespaceSpec{
			Finalizers: []corev1.FinalizerName{"bad finalizer"},
		}}), want: []string{"spec.finalizers[0]"}},
		// ConfigMap / Secret / Event
		{name: "configmap bad key", obj: &corev1.ConfigMap{ObjectMeta: nsMeta("c"), Data: map[string]string{"bad/key": "v"}}, namespaced: true,
			want: []string{`data[bad/key]: Invalid value: "bad/key": a valid config key must consist of alphanumeric characters, '-', '_' or '.'`}},
		{name: "configmap duplicate key", obj: &corev1.ConfigMap{ObjectMeta: nsMeta("c"), Data: map[string]string{"k": "v"}, BinaryData: map[string][]byte{"k": nil}},
			namespaced: true, want: []string{"data[k]: Invalid value: \"k\": duplicate of key present in binaryData"}},
		{name: "configmap too large", obj: &corev1.ConfigMap{ObjectMeta: nsMeta("c"), Data: map[string]string{"k": strings.Repeat("x", corev1.MaxSecretSize+1)}},
			namespaced: true, want: []string{"[]: Too long"}},
		{name: "secret bad key", obj: defaulted(&corev1.Secret{ObjectMeta: nsMeta("s"), Data: map[string][]byte{"a b": nil}}), namespaced: true,
			want: []string{"data[a b]"}},
		{name: "tls secret missing key", obj: defaulted(&corev1.Secret{ObjectMeta: nsMeta("s"), Type: corev1.SecretTypeTLS,
			Data: map[string][]byte{"tls.crt": []byte("c")}}), namespaced: true, want: []string{"data[tls.key]: Required value"}},
		{name: "dockerconfigjson secret bad json", obj: defaulted(&corev1.Secret{ObjectMeta: nsMeta("s"), Type: corev1.SecretTypeDockerConfigJson,
			Data: map[string][]byte{".dockerconfigjson": []byte("{")}}), namespaced: true, want: []string{"data[.dockerconfigjson]"}},
		{name: "service account token secret without annotation", obj: defaulted(&corev1.Secret{ObjectMeta: nsMeta("s"), Type: corev1.SecretTypeServiceAccountToken}),
			namespaced: true, want: []string{"metadata.annotations[kubernetes.io/service-account.name]: Required value"}},
		{name: "event namespace mismatch", obj: &corev1.Event{ObjectMeta: nsMeta("e.1"), InvolvedObject: corev1.ObjectReference{Namespace: "other"}},
			namespaced: true, want: []string{`involvedObject.namespace: Invalid value: "other": does not match event.namespace`}},
	})
}

func TestValidateNil(t *testing.T) {
	if errs := validate(nil, true); len(errs) != 1 {
		t.Errorf("validate(nil) = %v", errs)
	}
	if errs := validate((*corev1.Pod)(nil), true); len(errs) != 1 {
		t.Errorf("validate(nil pod) = %v", errs)
	}
	if errs := validateUpdate(validPod(), &corev1.Service{}, true); len(errs) != 1 {
		t.Errorf("validateUpdate(type mismatch) = %v", errs)
	}
}
