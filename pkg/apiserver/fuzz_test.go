package apiserver

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/minik8s/minik8s/pkg/registry"
	"github.com/minik8s/minik8s/pkg/registry/kinds"
)

// fuzzPod is the stored object the fuzzed patches apply to.
func fuzzPod() *corev1.Pod {
	return &corev1.Pod{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: metav1.ObjectMeta{
			Name: "web", Namespace: "default", UID: "4b1a0f5e-0000-4000-8000-000000000001", ResourceVersion: "42",
			Generation: 1, CreationTimestamp: metav1.NewTime(time.Unix(1700000000, 0)),
			Labels: map[string]string{"app": "web"}, Annotations: map[string]string{"note": "x"},
			Finalizers: []string{"example.com/hold"},
		},
		Spec: corev1.PodSpec{
			Containers: []corev1.Container{{
				Name: "web", Image: "nginx:1.25", Args: []string{"-g", "daemon off;"},
				Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: 80, Protocol: corev1.ProtocolTCP}},
				Env:   []corev1.EnvVar{{Name: "A", Value: "1"}, {Name: "B", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}}}},
				Resources: corev1.ResourceRequirements{
					Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse("64Mi")},
					Limits:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")},
				},
				ReadinessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/", Port: intstr.FromString("http")}}},
				VolumeMounts:   []corev1.VolumeMount{{Name: "data", MountPath: "/data"}},
			}, {Name: "sidecar", Image: "busybox", Command: []string{"sleep", "inf"}}},
			InitContainers: []corev1.Container{{Name: "init", Image: "busybox"}},
			Volumes:        []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}},
			Tolerations:    []corev1.Toleration{{Key: "k", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}},
		},
		Status: corev1.PodStatus{
			Phase:             corev1.PodRunning,
			Conditions:        []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}},
			ContainerStatuses: []corev1.ContainerStatus{{Name: "web", Ready: true, RestartCount: 2, State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}},
		},
	}
}

// fuzzSeeds are the seed corpus: valid bodies, near misses and the shapes
// that once broke Kubernetes' own decoders.
var fuzzSeeds = []struct {
	op          uint8 // see FuzzDecode
	contentType string
	body        string
}{
	{0, "application/json", `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p","labels":{"a":"b"}},"spec":{"containers":[{"name":"c","image":"busybox","resources":{"limits":{"cpu":"1e3","memory":"1Ei"}}}]}}`},
	{0, "application/json", `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p"},"spec":{"containers":[{"name":"c","image":"i","ports":[{"containerPort":99999999999}]}]}}`},
	{0, "application/json", `{"kind":"Pod","metadata":{"name":"p","name":"q"},"bogus":true,"spec":{}}`},
	{0, "application/json", `{"apiVersion":"v1","kind":"Pod","spec":{"containers":[{"name":"c","image":"i","resources":{"requests":{"cpu":"9999999999999999999999999999999999999999999Ei"}}}]}}`},
	{0, "application/json", `{"metadata":{"creationTimestamp":"not-a-time","deletionGracePeriodSeconds":-1,"ownerReferences":[{}]}}`},
	{0, "application/json", `{"spec":{"containers":[{"name":"c","image":"i","livenessProbe":{"tcpSocket":{"port":"x"}},"readinessProbe":{"httpGet":{"port":-1}}}]}}`},
	{0, "application/json", `null`},
	{0, "application/json", `[]`},
	{0, "application/json", `"x"`},
	{0, "application/json", `{"apiVersion":7}`},
	{0, "application/json", strings.Repeat("[", 10001) + strings.Repeat("]", 10001)},
	{0, "application/json; charset=utf-8", "\xef\xbb\xbf{}"},
	{0, "application/yaml", "apiVersion: v1\nkind: Pod\nmetadata:\n  name: p\nspec:\n  containers:\n  - name: c\n    image: busybox\n"},
	{0, "application/yaml", "a: &a [*a, *a]\nb: *a\n"},
	{0, "application/yaml", "metadata:\n  name: p\n  name: q\n"},
	{0, "application/yaml", "- 1\n- 2\n"},
	{0, "application/yaml", "spec: {containers: [{name: c, image: i, resources: {limits: {cpu: .5e-3}}}]}\n"},
	{0, "text/yaml", "!!binary AAAA"},
	{0, "application/x-yaml", "? [1]\n: 2\n"},
	{0, "text/plain", "x"},
	{0, "", `{}`},
	{0, ";;;", `{}`},
	{0, "application/vnd.kubernetes.protobuf", "k8s\x00\n\x09\n\x02v1\x12\x03Pod\x12\x00"},
	{0, "application/vnd.kubernetes.protobuf", "k8s\x00\xff\xff\xff"},
	// 21<<3: table.All[21], the first resource after Builtin's 21, DNSRecord.
	{21 << 3, "application/json", `{"apiVersion":"minik8s.io/v1","kind":"DNSRecord","metadata":{"name":"r"},"spec":{"host":"minik8s.com","paths":[{"path":"p","service":"s","port":"http"},{"path":"/q","service":"t","port":8080}]}}`},
	{21 << 3, "application/json", `{"spec":{"host":"*.A","paths":[{"path":"/a;b","port":1e99},{"port":"x;y"},{"port":null},{"port":[1]}]}}`},
	{21 << 3, "application/vnd.kubernetes.protobuf", "k8s\x00\n\x18\n\rminik8s.io/v1\x12\tDNSRecord\x12\x00"},
	{1, "", `[{"op":"replace","path":"/spec/containers/0/image","value":"nginx:1.26"}]`},
	{1, "", `[{"op":"add","path":"/metadata/labels/b","value":"c"},{"op":"remove","path":"/spec/containers/1"}]`},
	{1, "", `[{"op":"copy","from":"/spec","path":"/metadata/annotations/x"},{"op":"move","from":"/spec/containers/0","path":"/spec/containers/-"}]`},
	{1, "", `[{"op":"add","path":"/spec/containers/-1","value":{}}]`},
	{1, "", `[{"op":"add","path":"/spec/containers/99999999999999999999","value":{}}]`},
	{1, "", `[{"op":"test","path":"/metadata/name","value":"web"},{"op":"replace","path":"","value":null}]`},
	{1, "", `[{"op":"remove","path":"/"}]`},
	{1, "", `[{"op":"replace","path":"/metadata/resourceVersion","value":"1"}]`},
	{1, "", `[{"op":"replace","path":"/status/phase","value":"Failed"},{"op":"replace","path":"/spec/nodeName","value":"n"}]`},
	{1, "", `[{"op":"bogus"}]`},
	{1, "", `{"op":"add"}`},
	{1, "", `[{"op":"add","path":"~2","value":1}]`},
	{2, "", `{"metadata":{"labels":{"app":null,"b":"c"}},"spec":{"containers":null}}`},
	{2, "", `{"spec":{"containers":[{"name":"web","image":"x"}]}}`},
	{2, "", `{"metadata":{"name":"other"}}`},
	{2, "", `null`},
	{2, "", `[1]`},
	{2, "", `{"kind":"Service","apiVersion":"v2"}`},
	{3, "", `{"spec":{"containers":[{"name":"web","image":"nginx:1.26"}]}}`},
	{3, "", `{"spec":{"containers":[{"name":"web","$patch":"delete"}]}}`},
	{3, "", `{"spec":{"$setElementOrder/containers":[{"name":"sidecar"},{"name":"web"}],"containers":[{"name":"web","env":[{"name":"A","$patch":"delete"}]}]}}`},
	{3, "", `{"spec":{"containers":[{"name":"web","$retainKeys":["name"],"image":"x"}]}}`},
	{3, "", `{"$patch":"replace","metadata":{"name":"web"}}`},
	{3, "", `{"metadata":{"$deleteFromPrimitiveList/finalizers":["example.com/hold"]}}`},
	{3, "", `{"spec":{"containers":{"$patch":"merge"}}}`},
	{3, "", `{"spec":{"$setElementOrder/containers":7}}`},
	{3, "", `{"spec":{"containers":[{"$patch":"delete"}, 7, null]}}`},
	{3, "", `{"spec":{"volumes":[{"name":"data","$patch":"replace"}],"tolerations":[{"$patch":"delete"}]}}`},
	{3, "", `{"$retainKeys":"x"}`},
	// Found by fuzzing: a merge key that is not a scalar panicked strategicpatch.
	{3, "", `{"spec":{"containers":[{"name":[]}]}}`},
	{4, "application/json", `{"kind":"DeleteOptions","apiVersion":"v1","gracePeriodSeconds":-5,"propagationPolicy":"Orphan","preconditions":{"uid":"x","resourceVersion":"1"}}`},
	{4, "application/json", `{"orphanDependents":true,"dryRun":["All","x"]}`},
	{4, "application/json", `{"propagationPolicy":"Sideways"}`},
	{4, "application/vnd.kubernetes.protobuf", "k8s\x00\n\x00"},
	{5, "", "labelSelector=a+in+(b,c),d!=e,!f&fieldSelector=metadata.name%3Dx&limit=5&continue=eyJ2IjoibWV0YS5rOHMuaW8vdjEiLCJydiI6Miwic3RhcnQiOiJ4In0"},
	{5, "", "labelSelector=a+in+(&resourceVersion=abc&resourceVersionMatch=Exact&sendInitialEvents=maybe"},
	{5, "", "fieldSelector=spec.nodeName%3D%3D,status.phase!%3DRunning&timeoutSeconds=-1&limit=-3"},
	{5, "", "continue=%ff%fe&limit=99999999999999999999"},
	{6, "", `{"spec":{"replicas":-1}}`},
	{6, "", `{"spec":{"replicas":3},"metadata":{"name":"other"}}`},
	{7, "application/json", `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"web","resourceVersion":"42"},"spec":{"containers":[{"name":"web","image":"nginx:1.26"}]}}`},
	{7, "application/json", `{"metadata":{"name":"web","uid":"x","finalizers":["a","b"]},"spec":{"nodeName":"n","containers":[]}}`},
}

// FuzzDecode drives a request body through what the server does with it
// before storage: media type conversion, decoding with field validation,
// the three patch types against a stored Pod, DeleteOptions and list
// options, defaulting, validation and table rendering. None of it may
// panic; every failure must be an API error a client can read.
//
// op&7 picks the path: 0 create body (of the kind op>>3 picks), 1 JSON
// patch, 2 merge patch, 3 strategic merge patch (of the Pod), 4
// DeleteOptions body, 5 list query string, 6 /scale merge patch, 7 update
// body (Pod). directive%3 picks fieldValidation.
func FuzzDecode(f *testing.F) {
	for _, s := range fuzzSeeds {
		for directive := uint8(0); directive < 3; directive++ {
			f.Add(s.op, directive, s.contentType, []byte(s.body))
		}
	}
	scheme, err := registry.NewScheme()
	if err != nil {
		f.Fatal(err)
	}
	table, err := registry.NewTable(scheme, kinds.All())
	if err != nil {
		f.Fatal(err)
	}
	podRes, ok := table.Lookup(corev1.SchemeGroupVersion.WithResource("pods"))
	if !ok {
		f.Fatal("no pods resource")
	}
	var scaled *registry.Resource
	for _, r := range table.All {
		if r.Scale != nil {
			scaled = r
			break
		}
	}
	s := &Server{scheme: scheme, codecs: serializer.NewCodecFactory(scheme), table: table, now: time.Now}
	directives := []string{metav1.FieldValidationStrict, metav1.FieldValidationWarn, metav1.FieldValidationIgnore}

	f.Fuzz(func(t *testing.T, op, directive uint8, contentType string, body []byte) {
		dir := directives[int(directive)%len(directives)]
		req := httptest.NewRequest(http.MethodPost, "/api/v1/namespaces/default/pods", bytes.NewReader(body))
		if contentType != "" {
			req.Header.Set("Content-Type", contentType)
		}
		current := fuzzPod()
		switch op & 7 {
		case 0:
			res := table.All[int(op>>3)%len(table.All)]
			js, err := s.bodyJSON(req, body, res.GroupVersionKind())
			if err != nil {
				checkAPIError(t, err)
				return
			}
			obj := res.New()
			if _, err := decodeInto(js, res.GroupVersionKind(), obj, dir); err != nil {
				checkAPIError(t, err)
				return
			}
			admit(t, s, res, obj, nil)
		case 1, 2, 3:
			pt := []types.PatchType{types.JSONPatchType, types.MergePatchType, types.StrategicMergePatchType}[op&7-1]
			patched, err := applyPatch(pt, current, body)
			if err != nil {
				checkAPIError(t, err)
				return
			}
			obj := podRes.New()
			if _, err := decodeInto(patched, podRes.GroupVersionKind(), obj, dir); err != nil {
				checkAPIError(t, err)
				return
			}
			admit(t, s, podRes, obj, current)
		case 4:
			req.Method = http.MethodDelete
			if _, err := s.deleteOptionsFrom(req); err != nil {
				checkAPIError(t, err)
			}
		case 5:
			req = httptest.NewRequest(http.MethodGet, "/api/v1/pods", nil)
			req.URL.RawQuery = string(body)
			opts, err := s.listOptions(req)
			if err != nil {
				checkAPIError(t, err)
				return
			}
			if _, err := parseSelection(podRes, opts); err != nil {
				checkAPIError(t, err)
			}
			if opts.Continue != "" {
				if _, err := decodeContinue(opts.Continue, "/registry/pods/"); err != nil {
					checkAPIError(t, err)
				}
			}
		case 6:
			if scaled == nil {
				return
			}
			obj := scaled.New()
			scale, err := registry.ScaleOf(scaled, obj)
			if err != nil {
				t.Fatal(err)
			}
			patched, err := applyPatch(types.MergePatchType, scale, body)
			if err != nil {
				checkAPIError(t, err)
				return
			}
			desired := scale.DeepCopy()
			if _, err := decodeInto(patched, scale.GroupVersionKind(), desired, metav1.FieldValidationStrict); err != nil {
				checkAPIError(t, err)
				return
			}
			if _, err := applyScale(scaled, obj, desired); err != nil {
				checkAPIError(t, err)
			}
		case 7:
			js, err := s.bodyJSON(req, body, podRes.GroupVersionKind())
			if err != nil {
				checkAPIError(t, err)
				return
			}
			obj := podRes.New()
			if _, err := decodeInto(js, podRes.GroupVersionKind(), obj, dir); err != nil {
				checkAPIError(t, err)
				return
			}
			admit(t, s, podRes, obj, current)
		}
	})
}

// admit runs what create (old nil) or update does with a decoded object,
// then renders it as a table row and encodes it.
func admit(t *testing.T, s *Server, res *registry.Resource, obj, old runtime.Object) {
	t.Helper()
	if old == nil {
		res.ApplyDefaults(obj)
		if res.PrepareForCreate != nil {
			res.PrepareForCreate(obj)
		}
		_ = res.ValidateCreate(obj)
	} else {
		for _, sub := range []subresource{mainResource, statusResource, actionResource} {
			if _, err := s.prepareUpdate(res, obj.DeepCopyObject(), old.DeepCopyObject(), sub); err != nil {
				checkAPIError(t, err)
			}
		}
	}
	p := res.TablePrinter()
	if cells := p.Cells(obj, time.Now()); len(cells) != len(p.Columns) {
		t.Fatalf("%d cells for %d columns", len(cells), len(p.Columns))
	}
	if _, err := encodeStored(res, obj); err != nil {
		t.Fatalf("a decoded object does not encode: %v", err)
	}
}

// checkAPIError fails unless err is an API error with a client status:
// bad input must never look like a server fault.
func checkAPIError(t *testing.T, err error) {
	t.Helper()
	var api apierrors.APIStatus
	if !errors.As(err, &api) {
		t.Fatalf("not an API error: %T %v", err, err)
	}
	st := api.Status()
	if st.Code < 400 || st.Code >= 500 {
		t.Fatalf("bad input answered %d: %v", st.Code, err)
	}
	if _, err := json.Marshal(st); err != nil {
		t.Fatalf("status does not encode: %v", err)
	}
}

// TestJSONPatchLimits: a JSON patch that copies the document into itself
// over and over must be refused, not grow memory exponentially.
func TestJSONPatchLimits(t *testing.T) {
	var ops []string
	ops = append(ops, `{"op":"add","path":"/metadata/annotations/a","value":"`+strings.Repeat("x", 1024)+`"}`)
	for i := 0; i < 16; i++ { // 1 KiB doubled 16 times: 64 MiB
		ops = append(ops, `{"op":"copy","from":"/metadata/annotations","path":"/metadata/labels"}`,
			`{"op":"copy","from":"/metadata/labels","path":"/metadata/annotations/b`+strings.Repeat("c", i)+`"}`)
	}
	_, err := applyPatch(types.JSONPatchType, fuzzPod(), []byte("["+strings.Join(ops, ",")+"]"))
	if err == nil {
		t.Fatal("an exponentially growing JSON patch was applied")
	}
	checkAPIError(t, err)

	many := make([]string, 20000)
	for i := range many {
		many[i] = `{"op":"test","path":"/metadata/name","value":"web"}`
	}
	if _, err := applyPatch(types.JSONPatchType, fuzzPod(), []byte("["+strings.Join(many, ",")+"]")); !apierrors.IsRequestEntityTooLargeError(err) {
		t.Fatalf("a JSON patch of 20000 operations: %v, want 413", err)
	}
}
