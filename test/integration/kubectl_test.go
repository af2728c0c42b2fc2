package integration

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/utils/ptr"
)

// kubectlExample is what a test needs to know about one manifest.
type kubectlExample struct {
	file       string
	apiVersion string
	kind       string
	name       string
	namespace  string
	stringData bool
	// podVolumes: a Pod whose manifest lists volumes.
	podVolumes bool
}

// ref is how kubectl names the object in its output: kind.group/name.
func (o kubectlExample) ref() string {
	kind := strings.ToLower(o.kind)
	if group, _, ok := strings.Cut(o.apiVersion, "/"); ok {
		kind += "." + group
	}
	return kind + "/" + o.name
}

// readKubectlExamples parses every manifest in examples/, in the order kubectl
// reads a directory (lexical).
func readKubectlExamples(t *testing.T) []kubectlExample {
	t.Helper()
	dir := examplesPath(t)
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []kubectlExample
	for _, e := range entries {
		if e.IsDir() || !(strings.HasSuffix(e.Name(), ".yaml") || strings.HasSuffix(e.Name(), ".yml") || strings.HasSuffix(e.Name(), ".json")) {
			continue
		}
		data, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		// A file may hold several objects ("---"), as users write them.
		docs := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
		for {
			doc, err := docs.Read()
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatalf("%s: %v", e.Name(), err)
			}
			if len(bytes.TrimSpace(doc)) == 0 {
				continue
			}
			js, err := utilyaml.ToJSON(doc)
			if err != nil {
				t.Fatalf("%s: %v", e.Name(), err)
			}
			var m struct {
				APIVersion string `json:"apiVersion"`
				Kind       string `json:"kind"`
				Metadata   struct {
					Name      string `json:"name"`
					Namespace string `json:"namespace"`
				} `json:"metadata"`
				StringData map[string]string `json:"stringData"`
				Spec       struct {
					Volumes []json.RawMessage `json:"volumes"`
				} `json:"spec"`
			}
			if err := json.Unmarshal(js, &m); err != nil {
				t.Fatalf("%s: %v", e.Name(), err)
			}
			if m.Kind == "" || m.Metadata.Name == "" {
				continue // only comments
			}
			out = append(out, kubectlExample{
				file: e.Name(), apiVersion: m.APIVersion, kind: m.Kind, name: m.Metadata.Name,
				namespace: m.Metadata.Namespace, stringData: len(m.StringData) > 0,
				podVolumes: m.Kind == "Pod" && len(m.Spec.Volumes) > 0,
			})
		}
	}
	if len(out) == 0 {
		t.Fatal("no examples found")
	}
	return out
}

// kubectlExampleChecks says, for every file in examples/, what the object it
// describes looks like through the API once applied. A new example without
// an entry here fails TestKubectlApplyExamples: every example is exercised.
var kubectlExampleChecks = map[string]func(t *testing.T, c *cluster){
	"00-namespace.yaml": func(t *testing.T, c *cluster) {
		ns, err := c.client.CoreV1().Namespaces().Get(ctxT(t), "demo", metav1.GetOptions{})
		if err != nil || ns.Labels["team"] != "platform" || ns.Status.Phase != corev1.NamespaceActive {
			t.Fatalf("namespace demo: %v %+v", err, ns)
		}
	},
	"configmap.yaml": func(t *testing.T, c *cluster) {
		cm, err := c.client.CoreV1().ConfigMaps("demo").Get(ctxT(t), "web-config", metav1.GetOptions{})
		if err != nil || cm.Data["greeting"] != "hello from minik8s" || cm.Data["index.html"] != "<h1>minik8s</h1>\n" {
			t.Fatalf("configmap web-config: %v %+v", err, cm)
		}
	},
	"cronjob.yaml": func(t *testing.T, c *cluster) {
		cj, err := c.client.BatchV1().CronJobs("demo").Get(ctxT(t), "tick", metav1.GetOptions{})
		if err != nil || cj.Spec.Schedule != "*/5 * * * *" || cj.Spec.JobTemplate.Spec.Template.Spec.Containers[0].Image != "busybox:latest" {
			t.Fatalf("cronjob tick: %v %+v", err, cj)
		}
	},
	"daemonset.yaml": func(t *testing.T, c *cluster) {
		ds, err := c.client.AppsV1().DaemonSets("demo").Get(ctxT(t), "node-agent", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		ctr, ru := ds.Spec.Template.Spec.Containers, ds.Spec.UpdateStrategy.RollingUpdate
		if len(ctr) != 1 || ctr[0].Image != "busybox:latest" || ctr[0].Env[0].ValueFrom.FieldRef.FieldPath != "spec.nodeName" ||
			ru == nil || ru.MaxUnavailable.IntValue() != 1 || ru.MaxSurge.IntValue() != 0 || ds.Spec.Selector.MatchLabels["app"] != "node-agent" {
			t.Fatalf("daemonset node-agent: %+v", ds.Spec)
		}
	},
	"deployment.yaml": func(t *testing.T, c *cluster) {
		d, err := c.client.AppsV1().Deployments("demo").Get(ctxT(t), "web", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		ctr := d.Spec.Template.Spec.Containers
		if *d.Spec.Replicas != 3 || len(ctr) != 1 || ctr[0].Image != "busybox:latest" || len(ctr[0].Env) != 1 ||
			ctr[0].Env[0].ValueFrom.ConfigMapKeyRef.Name != "web-config" || d.Spec.Selector.MatchLabels["app"] != "web" {
			t.Fatalf("deployment web: %+v", d.Spec)
		}
	},
	"dns-gateway.yaml": func(t *testing.T, c *cluster) {
		for _, name := range []string{"a", "b"} {
			if _, err := c.client.AppsV1().Deployments("default").Get(ctxT(t), name, metav1.GetOptions{}); err != nil {
				t.Fatal(err)
			}
			if svc, err := c.client.CoreV1().Services("default").Get(ctxT(t), name, metav1.GetOptions{}); err != nil || svc.Spec.ClusterIP == "" {
				t.Fatalf("service %s: %v", name, err)
			}
		}
		out := newKubectl(t, c).ok(t, "get", "dnsrecord", "gateway", "-o", "jsonpath={.spec.host} {.spec.paths[*].path} {.spec.paths[1].port}")
		if out != "minik8s.com /path1 /path2 http" {
			t.Fatalf("dnsrecord gateway: %q", out)
		}
	},
	"hpa.yaml": func(t *testing.T, c *cluster) {
		h, err := c.client.AutoscalingV2().HorizontalPodAutoscalers("demo").Get(ctxT(t), "web", metav1.GetOptions{})
		if err != nil || h.Spec.MaxReplicas != 5 || *h.Spec.MinReplicas != 1 || h.Spec.ScaleTargetRef.Name != "web" ||
			*h.Spec.Metrics[0].Resource.Target.AverageUtilization != 60 {
			t.Fatalf("hpa web: %v %+v", err, h)
		}
	},
	"ingress.yaml": func(t *testing.T, c *cluster) {
		ing, err := c.client.NetworkingV1().Ingresses("demo").Get(ctxT(t), "web", metav1.GetOptions{})
		if err != nil || ing.Spec.Rules[0].Host != "web.minik8s.local" || ing.Spec.Rules[0].HTTP.Paths[0].Backend.Service.Port.Name != "http" {
			t.Fatalf("ingress web: %v %+v", err, ing)
		}
	},
	"job.yaml": func(t *testing.T, c *cluster) {
		j, err := c.client.BatchV1().Jobs("demo").Get(ctxT(t), "pi", metav1.GetOptions{})
		if err != nil || *j.Spec.Completions != 2 || *j.Spec.Parallelism != 1 || *j.Spec.BackoffLimit != 3 {
			t.Fatalf("job pi: %v %+v", err, j)
		}
	},
	"pod-multi-container.yaml": func(t *testing.T, c *cluster) {
		p, err := c.client.CoreV1().Pods("demo").Get(ctxT(t), "mypod", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		ctr := p.Spec.Containers
		if len(ctr) != 2 || ctr[0].Name != "c1" || ctr[1].Name != "c2" || !ctr[1].Resources.Limits.Cpu().Equal(resource.MustParse("200m")) ||
			p.Spec.Volumes[0].EmptyDir == nil {
			t.Fatalf("pod mypod: %+v", p.Spec)
		}
	},
	"pvc.yaml": func(t *testing.T, c *cluster) {
		pvc, err := c.client.CoreV1().PersistentVolumeClaims("demo").Get(ctxT(t), "data", metav1.GetOptions{})
		if err != nil || !pvc.Spec.Resources.Requests.Storage().Equal(resource.MustParse("1Gi")) {
			t.Fatalf("pvc data: %v %+v", err, pvc)
		}
	},
	"secret.yaml": func(t *testing.T, c *cluster) {
		s, err := c.client.CoreV1().Secrets("demo").Get(ctxT(t), "web-credentials", metav1.GetOptions{})
		// stringData is write-only: the server folds it into data.
		if err != nil || string(s.Data["username"]) != "admin" || string(s.Data["password"]) != "s3cr3t-passw0rd" || len(s.StringData) != 0 {
			t.Fatalf("secret web-credentials: %v %+v", err, s)
		}
	},
	"service-clusterip.yaml": func(t *testing.T, c *cluster) {
		d, err := c.client.AppsV1().Deployments("default").Get(ctxT(t), "web", metav1.GetOptions{})
		if err != nil || *d.Spec.Replicas != 3 {
			t.Fatalf("deployment web: %v %+v", err, d)
		}
		svc, err := c.client.CoreV1().Services("default").Get(ctxT(t), "web", metav1.GetOptions{})
		if err != nil || svc.Spec.ClusterIP == "" || svc.Spec.Ports[0].TargetPort != intstr.FromString("http") {
			t.Fatalf("service web: %v %+v", err, svc)
		}
		np, err := c.client.CoreV1().Services("default").Get(ctxT(t), "web-nodeport", metav1.GetOptions{})
		if err != nil || np.Spec.Type != corev1.ServiceTypeNodePort || np.Spec.Ports[0].NodePort != 30080 {
			t.Fatalf("service web-nodeport: %v %+v", err, np)
		}
	},
	"service.yaml": func(t *testing.T, c *cluster) {
		svc, err := c.client.CoreV1().Services("demo").Get(ctxT(t), "web", metav1.GetOptions{})
		if err != nil || svc.Spec.Type != corev1.ServiceTypeClusterIP || svc.Spec.Ports[0].Port != 80 ||
			svc.Spec.Ports[0].TargetPort != intstr.FromString("http") || svc.Spec.Ports[0].Protocol != corev1.ProtocolTCP {
			t.Fatalf("service web: %v %+v", err, svc)
		}
	},
}

// applyExamplesWithKubectl applies examples/ and returns the parsed manifests.
func applyExamplesWithKubectl(t *testing.T, k *kubectlCLI) []kubectlExample {
	t.Helper()
	k.ok(t, "apply", "-f", examplesPath(t))
	return readKubectlExamples(t)
}

// TestKubectlApplyExamples: apply creates, re-apply is a no-op, an edited
// manifest configures, and what the manifest drops the server drops too.
func TestKubectlApplyExamples(t *testing.T) {
	c := startCluster(t)
	k := newKubectl(t, c)
	examples := readKubectlExamples(t)
	dir := examplesPath(t)

	for _, ex := range examples {
		if kubectlExampleChecks[ex.file] == nil {
			t.Errorf("examples/%s has no check in kubectlExampleChecks: every example must be exercised", ex.file)
		}
	}

	var want []string
	for _, ex := range examples {
		want = append(want, ex.ref()+" created")
	}
	if got := outputLines(k.ok(t, "apply", "-f", dir)); !slices.Equal(got, want) {
		t.Fatalf("first apply printed\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	var files []string
	refs := map[string][]string{}
	for _, ex := range examples {
		if refs[ex.file] == nil {
			files = append(files, ex.file)
		}
		refs[ex.file] = append(refs[ex.file], ex.ref())
	}
	for _, file := range files {
		t.Run(file, func(t *testing.T) {
			kubectlExampleChecks[file](t, c)
			// Every example is readable back through kubectl from its file.
			args := []string{"get", "-f", filepath.Join(dir, file), "-o", "name"}
			if got, want := strings.TrimSpace(k.ok(t, args...)), strings.Join(refs[file], "\n"); got != want {
				t.Fatalf("kubectl get -f %s -o name = %q, want %q", file, got, want)
			}
		})
	}

	secret, err := c.client.CoreV1().Secrets("demo").Get(ctxT(t), "web-credentials", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// Applying the same files again changes nothing. A Secret written with
	// stringData reports "configured", as with upstream kubectl and
	// kube-apiserver (kubernetes/kubernetes#87736): the server folds
	// stringData into data, so the 3-way patch always carries stringData.
	// The patch is a no-op on the server, so the Secret's resourceVersion
	// stays put. So does a Pod whose manifest lists volumes: the
	// ServiceAccount admission added kube-api-access to its volumes and
	// mounts, so the patch carries $setElementOrder for those lists, as
	// against kube-apiserver.
	want = want[:0]
	for _, ex := range examples {
		verb := "unchanged"
		if (ex.kind == "Secret" && ex.stringData) || ex.podVolumes {
			verb = "configured"
		}
		want = append(want, ex.ref()+" "+verb)
	}
	if got := outputLines(k.ok(t, "apply", "-f", dir)); !slices.Equal(got, want) {
		t.Fatalf("second apply printed\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	again, err := c.client.CoreV1().Secrets("demo").Get(ctxT(t), "web-credentials", metav1.GetOptions{})
	if err != nil || again.ResourceVersion != secret.ResourceVersion {
		t.Fatalf("re-applied secret was rewritten: resourceVersion %s -> %s (%v)", secret.ResourceVersion, again.ResourceVersion, err)
	}

	// An edited copy of deployment.yaml: more replicas and a sidecar.
	orig, err := os.ReadFile(filepath.Join(dir, "deployment.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	edit := func(s, old, new string) string {
		t.Helper()
		if !strings.Contains(s, old) {
			t.Fatalf("deployment.yaml no longer contains %q", old)
		}
		return strings.Replace(s, old, new, 1)
	}
	scaled := edit(string(orig), "replicas: 3", "replicas: 5")
	withSidecar := edit(scaled, "      containers:\n", "      containers:\n      - name: sidecar\n        image: busybox:latest\n        command: [\"sleep\", \"3600\"]\n")
	tmp := t.TempDir()
	if got := k.ok(t, "apply", "-f", writeTestFile(t, tmp, "deployment.yaml", withSidecar)); got != "deployment.apps/web configured\n" {
		t.Fatalf("apply of an edited deployment printed %q", got)
	}
	d, err := c.client.AppsV1().Deployments("demo").Get(ctxT(t), "web", metav1.GetOptions{})
	if err != nil || *d.Spec.Replicas != 5 || deploymentContainers(d) != "sidecar,web" || d.Generation != 2 {
		t.Fatalf("after apply: %v replicas=%d containers=%s generation=%d", err, *d.Spec.Replicas, deploymentContainers(d), d.Generation)
	}

	// Someone else labels the deployment; the manifest then drops the sidecar
	// and the env var. The 3-way merge against last-applied removes what the
	// manifest used to set and keeps what it never owned.
	if _, err := c.client.AppsV1().Deployments("demo").Patch(ctxT(t), "web", types.MergePatchType,
		[]byte(`{"metadata":{"labels":{"owner":"ops"}}}`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	noEnv := edit(scaled, "        env:\n        - name: GREETING\n          valueFrom:\n            configMapKeyRef:\n              name: web-config\n              key: greeting\n", "")
	if got := k.ok(t, "apply", "-f", writeTestFile(t, tmp, "deployment.yaml", noEnv)); got != "deployment.apps/web configured\n" {
		t.Fatalf("apply without sidecar and env printed %q", got)
	}
	d, err = c.client.AppsV1().Deployments("demo").Get(ctxT(t), "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if deploymentContainers(d) != "web" || len(d.Spec.Template.Spec.Containers[0].Env) != 0 || *d.Spec.Replicas != 5 || d.Labels["owner"] != "ops" {
		t.Fatalf("after removing sidecar and env: containers=%s env=%v replicas=%d labels=%v",
			deploymentContainers(d), d.Spec.Template.Spec.Containers[0].Env, *d.Spec.Replicas, d.Labels)
	}
	if got := k.ok(t, "apply", "-f", filepath.Join(tmp, "deployment.yaml")); got != "deployment.apps/web unchanged\n" {
		t.Fatalf("re-apply printed %q", got)
	}

	// A manifest piped on stdin, with two documents.
	piped := "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: piped\n  namespace: demo\ndata:\n  k: v\n---\n" +
		"apiVersion: v1\nkind: ServiceAccount\nmetadata:\n  name: builder\n  namespace: demo\n"
	stdout, stderr, err := k.runWithInput(t, piped, "apply", "-f", "-")
	if err != nil || stdout != "configmap/piped created\nserviceaccount/builder created\n" {
		t.Fatalf("apply -f -: %v %q %q", err, stdout, stderr)
	}
	if cm, err := c.client.CoreV1().ConfigMaps("demo").Get(ctxT(t), "piped", metav1.GetOptions{}); err != nil || cm.Data["k"] != "v" {
		t.Fatalf("piped configmap: %v %+v", err, cm)
	}
}

func deploymentContainers(d *appsv1.Deployment) string {
	var names []string
	for _, c := range d.Spec.Template.Spec.Containers {
		names = append(names, c.Name)
	}
	sort.Strings(names)
	return strings.Join(names, ",")
}

// TestKubectlGet: the server's tables, the output formats, selectors and
// short names.
func TestKubectlGet(t *testing.T) {
	c := startCluster(t)
	k := newKubectl(t, c)
	applyExamplesWithKubectl(t, k)
	ctx := ctxT(t)
	other := testDeployment("other", 1)
	if _, err := c.client.AppsV1().Deployments("demo").Create(ctx, other, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	rs := &appsv1.ReplicaSet{
		ObjectMeta: metav1.ObjectMeta{Name: "web-5d4f8b", Labels: map[string]string{"app": "web"}},
		Spec: appsv1.ReplicaSetSpec{
			Replicas: ptr.To[int32](1),
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "web", Image: "nginx:1.25"}}},
			},
		},
	}
	if _, err := c.client.AppsV1().ReplicaSets("demo").Create(ctx, rs, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	// Rows are matched by pattern: counts that controllers (when there are
	// some) move are matched loosely, what the manifests fix exactly.
	tables := []struct {
		args   []string
		header string
		row    string // a regexp one row must match, fields joined by one space
	}{
		{[]string{"get", "pods", "-n", "demo"}, "NAME READY STATUS RESTARTS AGE", `^mypod [0-2]/2 \S+ \d+ \S+$`},
		{[]string{"get", "pods", "-n", "demo", "-o", "wide"}, "NAME READY STATUS RESTARTS AGE IP NODE NOMINATED NODE READINESS GATES",
			`^mypod [0-2]/2 \S+ \d+ \S+ \S+ \S+ <none> <none>$`},
		{[]string{"get", "pods", "-A"}, "NAMESPACE NAME READY STATUS RESTARTS AGE", `^demo mypod [0-2]/2 \S+ \d+ \S+$`},
		{[]string{"get", "deployments", "-n", "demo"}, "NAME READY UP-TO-DATE AVAILABLE AGE", `^web \d+/3 \d+ \d+ \S+$`},
		{[]string{"get", "deployments", "-A"}, "NAMESPACE NAME READY UP-TO-DATE AVAILABLE AGE", `^demo web \d+/3 \d+ \d+ \S+$`},
		{[]string{"get", "deployments", "-n", "demo", "-o", "wide"}, "NAME READY UP-TO-DATE AVAILABLE AGE CONTAINERS IMAGES SELECTOR",
			`^web \d+/3 \d+ \d+ \S+ web busybox:latest app=web$`},
		{[]string{"get", "services", "-n", "demo"}, "NAME TYPE CLUSTER-IP EXTERNAL-IP PORT(S) AGE", `^web ClusterIP \S+ <none> 80/TCP \S+$`},
		{[]string{"get", "configmaps", "-n", "demo"}, "NAME DATA AGE", `^web-config 2 \S+$`},
		{[]string{"get", "secrets", "-n", "demo"}, "NAME TYPE DATA AGE", `^web-credentials Opaque 2 \S+$`},
		{[]string{"get", "jobs", "-n", "demo"}, "NAME STATUS COMPLETIONS DURATION AGE", `^pi \S+ \d/2 `},
		{[]string{"get", "cronjobs", "-n", "demo"}, "NAME SCHEDULE TIMEZONE SUSPEND ACTIVE LAST SCHEDULE AGE",
			`^tick \*/5 \* \* \* \* <none> False \d+ \S+ \S+$`},
		{[]string{"get", "hpa", "-n", "demo"}, "NAME REFERENCE TARGETS MINPODS MAXPODS REPLICAS AGE",
			`^web Deployment/web cpu: \S+/60% 1 5 \d+ \S+$`},
		{[]string{"get", "ingresses", "-n", "demo"}, "NAME CLASS HOSTS ADDRESS PORTS AGE", `^web <none> web\.minik8s\.local (\S+ )?80 \S+$`},
		{[]string{"get", "pvc", "-n", "demo"}, "NAME STATUS VOLUME CAPACITY ACCESS MODES STORAGECLASS VOLUMEATTRIBUTESCLASS AGE", `^data \S+ `},
		{[]string{"get", "namespaces"}, "NAME STATUS AGE", `^demo Active \S+$`},
	}
	for _, tc := range tables {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			out := k.ok(t, tc.args...)
			ls := outputLines(out)
			if got := strings.Join(tableHeader(out), " "); got != tc.header {
				t.Fatalf("header %q, want %q\n%s", got, tc.header, out)
			}
			re := regexp.MustCompile(tc.row)
			for _, l := range ls[1:] {
				if re.MatchString(strings.Join(strings.Fields(l), " ")) {
					return
				}
			}
			t.Fatalf("no row matching %s in\n%s", tc.row, out)
		})
	}

	t.Run("output formats", func(t *testing.T) {
		want, err := c.client.AppsV1().Deployments("demo").Get(ctx, "web", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for _, format := range []string{"yaml", "json"} {
			js, err := utilyaml.ToJSON([]byte(k.ok(t, "get", "deployment", "web", "-n", "demo", "-o", format)))
			if err != nil {
				t.Fatal(err)
			}
			var got appsv1.Deployment
			if err := json.Unmarshal(js, &got); err != nil {
				t.Fatalf("-o %s: %v", format, err)
			}
			if got.Kind != "Deployment" || got.APIVersion != "apps/v1" || got.UID != want.UID || *got.Spec.Replicas != 3 ||
				got.ResourceVersion != want.ResourceVersion {
				t.Fatalf("-o %s: %+v", format, got)
			}
		}
		if got := k.ok(t, "get", "deployment", "web", "-n", "demo", "-o", "jsonpath={.spec.replicas}"); got != "3" {
			t.Fatalf("jsonpath = %q", got)
		}
		if got := k.ok(t, "get", "deployments", "-n", "demo", "-o", "name"); got != "deployment.apps/other\ndeployment.apps/web\n" {
			t.Fatalf("-o name = %q", got)
		}
		if got := k.ok(t, "get", "deployments", "-n", "demo", "-l", "app=web", "-o", "name"); got != "deployment.apps/web\n" {
			t.Fatalf("-l app=web = %q", got)
		}
		if got := k.ok(t, "get", "deployments", "-n", "demo", "-l", "app!=web", "-o", "name"); got != "deployment.apps/other\n" {
			t.Fatalf("-l app!=web = %q", got)
		}
		if got := k.ok(t, "get", "pods", "-A", "--field-selector", "metadata.name=mypod", "-o", "name"); got != "pod/mypod\n" {
			t.Fatalf("--field-selector = %q", got)
		}
	})

	shortNames := []struct{ short, want string }{
		{"po", "pod/mypod"},
		{"svc", "service/web"},
		{"deploy", "deployment.apps/web"},
		{"cm", "configmap/web-config"},
		{"hpa", "horizontalpodautoscaler.autoscaling/web"},
		{"cj", "cronjob.batch/tick"},
		{"rs", "replicaset.apps/web-5d4f8b"},
		{"pvc", "persistentvolumeclaim/data"},
		{"ing", "ingress.networking.k8s.io/web"},
	}
	for _, sn := range shortNames {
		t.Run("short name "+sn.short, func(t *testing.T) {
			name := sn.want[strings.Index(sn.want, "/")+1:]
			if got := strings.TrimSpace(k.ok(t, "get", sn.short, name, "-n", "demo", "-o", "name")); got != sn.want {
				t.Fatalf("get %s %s = %q, want %q", sn.short, name, got, sn.want)
			}
		})
	}
	t.Run("short name ns", func(t *testing.T) {
		if got := k.ok(t, "get", "ns", "-o", "name"); !slices.Contains(outputLines(got), "namespace/demo") || !slices.Contains(outputLines(got), "namespace/default") {
			t.Fatalf("get ns = %q", got)
		}
	})
	t.Run("empty list", func(t *testing.T) {
		k.ok(t, "create", "namespace", "quiet")
		stdout, stderr, err := k.run(t, "get", "pods", "-n", "quiet")
		if err != nil || stdout != "" || stderr != "No resources found in quiet namespace.\n" {
			t.Fatalf("get pods in an empty namespace: %v %q %q", err, stdout, stderr)
		}
	})
}

// describeHasField says whether describe output has a "Key: value..." line:
// the key, then the value, alone or followed by more words.
func describeHasField(out, key, value string) bool {
	re := regexp.MustCompile(`(?m)^\s*` + regexp.QuoteMeta(key) + `:\s+` + regexp.QuoteMeta(value) + `(\s.*)?$`)
	return re.MatchString(out)
}

// TestKubectlDescribe: describe prints the object's fields and its events.
func TestKubectlDescribe(t *testing.T) {
	c := startCluster(t)
	k := newKubectl(t, c)
	applyExamplesWithKubectl(t, k)
	ctx := ctxT(t)
	d, err := c.client.AppsV1().Deployments("demo").Get(ctx, "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	now := metav1.Now()
	if _, err := c.client.CoreV1().Events("demo").Create(ctx, &corev1.Event{
		ObjectMeta: metav1.ObjectMeta{Name: "web.17f2a"},
		InvolvedObject: corev1.ObjectReference{
			Kind: "Deployment", APIVersion: "apps/v1", Namespace: "demo", Name: "web", UID: d.UID, ResourceVersion: d.ResourceVersion,
		},
		Reason: "ScalingReplicaSet", Message: "Scaled up replica set web-5d4f8b from 0 to 3", Type: corev1.EventTypeNormal,
		Source: corev1.EventSource{Component: "deployment-controller"}, Count: 1, FirstTimestamp: now, LastTimestamp: now,
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	cases := []struct {
		args   []string
		fields [][2]string
		text   []string
	}{
		{
			args: []string{"describe", "deployment", "web", "-n", "demo"},
			fields: [][2]string{
				{"Name", "web"}, {"Namespace", "demo"}, {"Labels", "app=web"}, {"Selector", "app=web"},
				{"Replicas", "3 desired |"},
				{"StrategyType", "RollingUpdate"}, {"Image", "busybox:latest"},
			},
			text: []string{
				"Pod Template:", "Events:", "ScalingReplicaSet", "deployment-controller",
				"Scaled up replica set web-5d4f8b from 0 to 3",
				"<set to the key 'greeting' of config map 'web-config'>",
			},
		},
		{
			args: []string{"describe", "service", "web", "-n", "demo"},
			fields: [][2]string{
				{"Name", "web"}, {"Namespace", "demo"}, {"Selector", "app=web"}, {"Type", "ClusterIP"},
				{"Port", "http  80/TCP"}, {"TargetPort", "http/TCP"}, {"Session Affinity", "None"}, {"Events", "<none>"},
			},
		},
		{
			args:   []string{"describe", "configmap", "web-config", "-n", "demo"},
			fields: [][2]string{{"Name", "web-config"}, {"Namespace", "demo"}, {"Events", "<none>"}},
			text:   []string{"Data\n====", "greeting:\n----\nhello from minik8s", "index.html:\n----\n<h1>minik8s</h1>"},
		},
		{
			args: []string{"describe", "pod", "mypod", "-n", "demo"},
			fields: [][2]string{
				{"Name", "mypod"}, {"Namespace", "demo"}, {"Labels", "app=mypod"},
				{"Image", "busybox:latest"},
			},
			// No node has joined, so the scheduler may already have recorded
			// FailedScheduling: the section is there either way.
			text: []string{"Containers:\n  c1:", "  c2:", "/www from www (rw)", "Events:"},
		},
	}
	for _, tc := range cases {
		t.Run(strings.Join(tc.args[:2], " "), func(t *testing.T) {
			out := k.ok(t, tc.args...)
			for _, f := range tc.fields {
				if !describeHasField(out, f[0], f[1]) {
					t.Errorf("no %q line in\n%s", f[0]+": "+f[1], out)
				}
			}
			for _, s := range tc.text {
				if !strings.Contains(out, s) {
					t.Errorf("no %q in\n%s", s, out)
				}
			}
		})
	}
	// Events of another object do not show up.
	if out := k.ok(t, "describe", "service", "web", "-n", "demo"); strings.Contains(out, "ScalingReplicaSet") {
		t.Fatalf("the deployment's event is shown for the service:\n%s", out)
	}
}

// TestKubectlMutate: patch (three types), label, annotate, scale and edit,
// each checked through client-go.
func TestKubectlMutate(t *testing.T) {
	c := startCluster(t)
	k := newKubectl(t, c)
	applyExamplesWithKubectl(t, k)
	get := func(t *testing.T) *appsv1.Deployment {
		t.Helper()
		d, err := c.client.AppsV1().Deployments("demo").Get(ctxT(t), "web", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return d
	}

	tmp := t.TempDir()
	editor := writeTestFile(t, tmp, "editor.sh", "#!/bin/sh\n"+
		"sed -i -e 's/^  replicas: .*/  replicas: 6/' -e 's/image: busybox:latest/image: busybox:1.36/' \"$1\"\n")
	if err := os.Chmod(editor, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("KUBE_EDITOR", editor)
	t.Setenv("EDITOR", editor)

	steps := []struct {
		name  string
		args  []string
		out   string
		check func(d *appsv1.Deployment) bool
	}{
		{"merge patch", []string{"patch", "deployment", "web", "--type", "merge", "-p", `{"metadata":{"labels":{"patched":"merge"}}}`},
			"deployment.apps/web patched", func(d *appsv1.Deployment) bool { return d.Labels["patched"] == "merge" && d.Labels["app"] == "web" }},
		{"merge patch, no change", []string{"patch", "deployment", "web", "--type=merge", "-p", `{"metadata":{"labels":{"patched":"merge"}}}`},
			"deployment.apps/web patched (no change)", func(d *appsv1.Deployment) bool { return d.Labels["patched"] == "merge" }},
		{"json patch", []string{"patch", "deployment", "web", "--type", "json", "-p", `[{"op":"replace","path":"/spec/replicas","value":2}]`},
			"deployment.apps/web patched", func(d *appsv1.Deployment) bool { return *d.Spec.Replicas == 2 }},
		{"strategic patch (the default) merges containers by name", []string{"patch", "deployment", "web", "-p",
			`{"spec":{"template":{"spec":{"containers":[{"name":"sidecar","image":"busybox:latest"}]}}}}`},
			"deployment.apps/web patched", func(d *appsv1.Deployment) bool { return deploymentContainers(d) == "sidecar,web" }},
		{"strategic patch $patch: delete", []string{"patch", "deployment", "web", "--type", "strategic", "-p",
			`{"spec":{"template":{"spec":{"containers":[{"name":"sidecar","$patch":"delete"}]}}}}`},
			"deployment.apps/web patched", func(d *appsv1.Deployment) bool { return deploymentContainers(d) == "web" }},
		{"label", []string{"label", "deployment", "web", "tier=front"},
			"deployment.apps/web labeled", func(d *appsv1.Deployment) bool { return d.Labels["tier"] == "front" }},
		{"label --overwrite", []string{"label", "deployment", "web", "tier=back", "--overwrite"},
			"deployment.apps/web labeled", func(d *appsv1.Deployment) bool { return d.Labels["tier"] == "back" }},
		{"label removal", []string{"label", "deployment", "web", "tier-"},
			"deployment.apps/web unlabeled", func(d *appsv1.Deployment) bool { _, ok := d.Labels["tier"]; return !ok }},
		{"annotate", []string{"annotate", "deployment", "web", "example.com/note=hello world"},
			"deployment.apps/web annotated", func(d *appsv1.Deployment) bool { return d.Annotations["example.com/note"] == "hello world" }},
		{"scale", []string{"scale", "deployment", "web", "--replicas=4"},
			"deployment.apps/web scaled", func(d *appsv1.Deployment) bool { return *d.Spec.Replicas == 4 }},
		{"scale with a precondition", []string{"scale", "deployment/web", "--current-replicas=4", "--replicas=5"},
			"deployment.apps/web scaled", func(d *appsv1.Deployment) bool { return *d.Spec.Replicas == 5 }},
		{"edit", []string{"edit", "deployment", "web"},
			"deployment.apps/web edited", func(d *appsv1.Deployment) bool {
				return *d.Spec.Replicas == 6 && d.Spec.Template.Spec.Containers[0].Image == "busybox:1.36"
			}},
	}
	for _, s := range steps {
		t.Run(s.name, func(t *testing.T) {
			before := get(t)
			out := k.ok(t, append(s.args, "-n", "demo")...)
			if strings.TrimSpace(out) != s.out {
				t.Fatalf("printed %q, want %q", out, s.out)
			}
			after := get(t)
			if !s.check(after) {
				t.Fatalf("not visible through the API: labels=%v annotations=%v replicas=%d containers=%s",
					after.Labels, after.Annotations, *after.Spec.Replicas, deploymentContainers(after))
			}
			if strings.HasSuffix(s.out, "(no change)") && after.ResourceVersion != before.ResourceVersion {
				t.Fatalf("a no-op patch wrote: resourceVersion %s -> %s", before.ResourceVersion, after.ResourceVersion)
			}
		})
	}

	// kubectl's own refusals.
	if msg := k.fails(t, "label", "deployment", "web", "-n", "demo", "app=other"); !strings.Contains(msg, "'app' already has a value (web), and --overwrite is false") {
		t.Fatalf("label without --overwrite: %q", msg)
	}
	if msg := k.fails(t, "scale", "deployment", "web", "-n", "demo", "--current-replicas=1", "--replicas=2"); !strings.Contains(msg, "Expected replicas to be 1, was 6") {
		t.Fatalf("scale with a wrong precondition: %q", msg)
	}
	// The server's validation answers patches too.
	msg := k.fails(t, "patch", "deployment", "web", "-n", "demo", "--type", "json", "-p", `[{"op":"replace","path":"/spec/replicas","value":-1}]`)
	if !strings.Contains(msg, `The Deployment "web" is invalid: spec.replicas: Invalid value: -1: must be greater than or equal to 0`) {
		t.Fatalf("invalid patch: %q", msg)
	}
}

// TestKubectlDelete: by name, by file and by label; finalizers hold an
// object until they are removed.
func TestKubectlDelete(t *testing.T) {
	c := startCluster(t)
	k := newKubectl(t, c)
	applyExamplesWithKubectl(t, k)
	ctx := ctxT(t)
	for _, name := range []string{"cache-a", "cache-b"} {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"tier": "cache"}}}
		if _, err := c.client.CoreV1().ConfigMaps("demo").Create(ctx, cm, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	dir := examplesPath(t)

	cases := []struct {
		name     string
		args     []string
		out      []string
		get      []string
		notFound string
	}{
		{"deployment by name", []string{"delete", "deployment", "web", "-n", "demo"},
			[]string{`deployment.apps "web" deleted from demo namespace`},
			[]string{"get", "deployment", "web", "-n", "demo"}, `Error from server (NotFound): deployments.apps "web" not found`},
		{"service by file", []string{"delete", "-f", filepath.Join(dir, "service.yaml")},
			[]string{`service "web" deleted from demo namespace`},
			[]string{"get", "-f", filepath.Join(dir, "service.yaml")}, `Error from server (NotFound): services "web" not found`},
		{"configmap by name", []string{"delete", "configmap/web-config", "-n", "demo"},
			[]string{`configmap "web-config" deleted from demo namespace`},
			[]string{"get", "cm", "web-config", "-n", "demo"}, `Error from server (NotFound): configmaps "web-config" not found`},
		{"configmaps by label", []string{"delete", "configmaps", "-n", "demo", "-l", "tier=cache"},
			[]string{`configmap "cache-a" deleted from demo namespace`, `configmap "cache-b" deleted from demo namespace`},
			[]string{"get", "cm", "cache-a", "-n", "demo"}, `Error from server (NotFound): configmaps "cache-a" not found`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := outputLines(k.ok(t, tc.args...)); !slices.Equal(got, tc.out) {
				t.Fatalf("printed %q, want %q", got, tc.out)
			}
			if msg := k.fails(t, tc.get...); strings.TrimSpace(msg) != tc.notFound {
				t.Fatalf("get after delete: %q, want %q", msg, tc.notFound)
			}
		})
	}
	if _, err := c.client.CoreV1().Services("demo").Get(ctx, "web", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("service after delete -f: %v", err)
	}
	// Objects the selector does not match stay.
	if got := k.ok(t, "get", "secrets,pvc", "-n", "demo", "-o", "name"); got != "secret/web-credentials\npersistentvolumeclaim/data\n" {
		t.Fatalf("left after the deletes: %q", got)
	}
	if msg := k.fails(t, "delete", "configmap", "web-config", "-n", "demo"); strings.TrimSpace(msg) != `Error from server (NotFound): configmaps "web-config" not found` {
		t.Fatalf("deleting a missing object: %q", msg)
	}
	if got := k.ok(t, "delete", "configmap", "web-config", "-n", "demo", "--ignore-not-found"); got != "" {
		t.Fatalf("--ignore-not-found printed %q", got)
	}

	t.Run("finalizer", func(t *testing.T) {
		held := writeTestFile(t, t.TempDir(), "held.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: held\n  namespace: demo\n"+
			"  finalizers:\n  - example.com/hold\ndata:\n  a: b\n")
		k.ok(t, "apply", "-f", held)
		if got := k.ok(t, "delete", "-f", held, "--wait=false"); got != "configmap \"held\" deleted from demo namespace\n" {
			t.Fatalf("delete printed %q", got)
		}
		cm, err := c.client.CoreV1().ConfigMaps("demo").Get(ctxT(t), "held", metav1.GetOptions{})
		if err != nil || cm.DeletionTimestamp == nil || !slices.Equal(cm.Finalizers, []string{"example.com/hold"}) {
			t.Fatalf("held configmap: %v %+v", err, cm)
		}
		if got := k.ok(t, "get", "cm", "held", "-n", "demo", "-o", "jsonpath={.metadata.deletionTimestamp}"); got == "" {
			t.Fatal("kubectl get shows no deletionTimestamp")
		}
		if got := k.ok(t, "patch", "cm", "held", "-n", "demo", "--type=merge", "-p", `{"metadata":{"finalizers":null}}`); got != "configmap/held patched\n" {
			t.Fatalf("patch printed %q", got)
		}
		if msg := k.fails(t, "get", "cm", "held", "-n", "demo"); strings.TrimSpace(msg) != `Error from server (NotFound): configmaps "held" not found` {
			t.Fatalf("after removing the finalizer: %q", msg)
		}
	})
}

// TestKubectlDiscovery: api-resources, api-versions, explain and version.
func TestKubectlDiscovery(t *testing.T) {
	c := startCluster(t)
	k := newKubectl(t, c)

	out := k.ok(t, "api-resources")
	if got := strings.Join(tableHeader(out), " "); got != "NAME SHORTNAMES APIVERSION NAMESPACED KIND" {
		t.Fatalf("api-resources header %q", got)
	}
	rows := map[string][]string{}
	for _, l := range outputLines(out)[1:] {
		f := strings.Fields(l)
		rows[f[0]+" "+f[len(f)-3]] = f
	}
	for _, want := range [][]string{
		{"pods", "po", "v1", "true", "Pod"},
		{"deployments", "deploy", "apps/v1", "true", "Deployment"},
		{"namespaces", "ns", "v1", "false", "Namespace"},
		{"secrets", "v1", "true", "Secret"},
		{"horizontalpodautoscalers", "hpa", "autoscaling/v2", "true", "HorizontalPodAutoscaler"},
		{"ingresses", "ing", "networking.k8s.io/v1", "true", "Ingress"},
	} {
		if got := rows[want[0]+" "+want[len(want)-3]]; !slices.Equal(got, want) {
			t.Errorf("api-resources row %v, want %v", got, want)
		}
	}
	if got := outputLines(k.ok(t, "api-resources", "--api-group=apps", "-o", "name")); !slices.Equal(got, []string{"controllerrevisions.apps", "daemonsets.apps", "deployments.apps", "replicasets.apps", "statefulsets.apps"}) {
		t.Errorf("api-resources --api-group=apps: %q", got)
	}
	if got := outputLines(k.ok(t, "api-resources", "--namespaced=false", "-o", "name")); !slices.Contains(got, "namespaces") || slices.Contains(got, "pods") {
		t.Errorf("api-resources --namespaced=false: %q", got)
	}
	versions := outputLines(k.ok(t, "api-versions"))
	for _, gv := range []string{"v1", "apps/v1", "batch/v1", "autoscaling/v2", "networking.k8s.io/v1"} {
		if !slices.Contains(versions, gv) {
			t.Errorf("api-versions lacks %s: %q", gv, versions)
		}
	}

	// explain reads the server's /openapi/v3.
	out = k.ok(t, "explain", "deployment.spec.replicas")
	if !describeHasField(out, "KIND", "Deployment") || !describeHasField(out, "FIELD", "replicas <integer>") || !strings.Contains(out, "Number of desired pods") {
		t.Errorf("explain deployment.spec.replicas:\n%s", out)
	}

	server, err := c.client.Discovery().ServerVersion()
	if err != nil {
		t.Fatal(err)
	}
	stdout, stderr, err := k.run(t, "version")
	if !strings.Contains(stdout, "\nServer Version: "+server.GitVersion+"\n") {
		t.Fatalf("version printed no server version %q:\n%s", server.GitVersion, stdout)
	}
	// The client version comes from -ldflags -X k8s.io/component-base/version...;
	// `go test` does not stamp it, and kubectl then refuses to compare it with
	// the server's. A stamped build must succeed.
	if unstamped := strings.Contains(stdout, "Client Version: v0.0.0-master"); unstamped {
		if err == nil || !strings.Contains(stderr, "client version error") {
			t.Fatalf("unstamped client: err=%v stderr=%q", err, stderr)
		}
	} else if err != nil {
		t.Fatalf("version: %v\n%s", err, stderr)
	}
}

// TestKubectlErrors: what a user sees when the server says no.
func TestKubectlErrors(t *testing.T) {
	c := startCluster(t)
	k := newKubectl(t, c)
	applyExamplesWithKubectl(t, k)
	tmp := t.TempDir()
	file := func(name, content string) string { return writeTestFile(t, tmp, name, content) }

	cases := []struct {
		name string
		args []string
		want []string // substrings of stderr
	}{
		{"unknown resource type", []string{"get", "foo"}, []string{`error: the server doesn't have a resource type "foo"`}},
		{"missing object", []string{"get", "deployment", "nope", "-n", "demo"}, []string{`Error from server (NotFound): deployments.apps "nope" not found`}},
		{"invalid name", []string{"apply", "-f", file("bad-name.yaml",
			"apiVersion: v1\nkind: Pod\nmetadata:\n  name: Bad_Name\nspec:\n  containers:\n  - name: c\n    image: busybox\n")},
			[]string{`The Pod "Bad_Name" is invalid: metadata.name: Invalid value: "Bad_Name": a lowercase RFC 1123 subdomain`}},
		{"invalid spec", []string{"apply", "-f", file("no-image.yaml",
			"apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: broken\n  namespace: demo\nspec:\n  selector:\n    matchLabels: {app: x}\n"+
				"  template:\n    metadata:\n      labels: {app: other}\n    spec:\n      containers:\n      - name: c\n")},
			[]string{`The Deployment "broken" is invalid:`, `spec.template.spec.containers[0].image: Required value`,
				`spec.template.metadata.labels: Invalid value: {"app":"other"}: ` + "`selector` does not match template `labels`"}},
		{"unknown field on create", []string{"apply", "-f", file("unknown-create.yaml",
			"apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: typo\n  namespace: demo\nspec:\n  replicaz: 1\n  selector:\n    matchLabels: {app: x}\n"+
				"  template:\n    metadata:\n      labels: {app: x}\n    spec:\n      containers:\n      - name: c\n        image: busybox\n        imagePullPolicee: Always\n")},
			[]string{`Error from server (BadRequest): error when creating`, `strict decoding error: unknown field "spec.replicaz"`,
				`unknown field "spec.template.spec.containers[0].imagePullPolicee"`}},
		{"unknown field on update", []string{"apply", "-f", file("unknown-update.yaml",
			"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: web-config\n  namespace: demo\nbogus: 1\ndata:\n  a: b\n")},
			[]string{`Error from server (BadRequest): error when applying patch:`, `strict decoding error: unknown field "bogus"`}},
		{"create of an existing object", []string{"create", "-f", filepath.Join(examplesPath(t), "configmap.yaml")},
			[]string{`Error from server (AlreadyExists): error when creating`, `configmaps "web-config" already exists`}},
		{"missing namespace", []string{"apply", "-f", file("elsewhere.yaml",
			"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\n  namespace: nowhere\n")},
			[]string{`Error from server (NotFound): error when creating`, `namespaces "nowhere" not found`}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			msg := k.fails(t, tc.args...)
			for _, w := range tc.want {
				if !strings.Contains(msg, w) {
					t.Errorf("stderr lacks %q:\n%s", w, msg)
				}
			}
		})
	}
	// Nothing of the failed applies was stored, and the good object is intact.
	for _, name := range []string{"broken", "typo"} {
		if _, err := c.client.AppsV1().Deployments("demo").Get(ctxT(t), name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Errorf("deployment %s: %v, want NotFound", name, err)
		}
	}
	kubectlExampleChecks["configmap.yaml"](t, c)
}
