package apiserver

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	metricsv1beta1 "k8s.io/metrics/pkg/apis/metrics/v1beta1"
	"k8s.io/utils/ptr"

	"github.com/minik8s/minik8s/pkg/kubelet/stats"
	"github.com/minik8s/minik8s/pkg/registry"
	"github.com/minik8s/minik8s/pkg/registry/kinds"
	"github.com/minik8s/minik8s/pkg/storage"
)

// memStore is a storage.Store in memory with what reads need: Get and
// List (at one revision). The metrics API only reads.
type memStore struct {
	storage.Store // the rest panics: not used here
	kvs           map[string][]byte
}

func (m *memStore) Get(_ context.Context, key string) (*storage.KV, error) {
	v, ok := m.kvs[key]
	if !ok {
		return nil, storage.ErrNotFound
	}
	return &storage.KV{Key: key, Value: v, ModRevision: 1}, nil
}

func (m *memStore) List(_ context.Context, prefix string, _ storage.ListOptions) (*storage.ListResult, error) {
	out := &storage.ListResult{Revision: 1}
	for k, v := range m.kvs {
		if strings.HasPrefix(k, prefix) {
			out.KVs = append(out.KVs, storage.KV{Key: k, Value: v, ModRevision: 1})
		}
	}
	sort.Slice(out.KVs, func(i, j int) bool { return out.KVs[i].Key < out.KVs[j].Key })
	return out, nil
}

// fakeSummaries answers for nodes from a table and counts the reads.
type fakeSummaries struct {
	mu        sync.Mutex
	summaries map[string]*stats.Summary
	reads     map[string]int
}

func (f *fakeSummaries) Summary(_ context.Context, node *corev1.Node) (*stats.Summary, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.reads[node.Name]++
	s, ok := f.summaries[node.Name]
	if !ok {
		return nil, errors.New("connection refused")
	}
	return s, nil
}

func (f *fakeSummaries) readsOf(node string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.reads[node]
}

// usageFor is a summary entry of cpu millicores and memory MiB; a negative
// cpu leaves the rate out, as a kubelet does before its second sample.
func usageFor(at time.Time, milliCPU int64, mib uint64) (*stats.CPUStats, *stats.MemoryStats) {
	cpu := &stats.CPUStats{Time: metav1.NewTime(at), UsageCoreNanoSeconds: ptr.To[uint64](1e12)}
	if milliCPU >= 0 {
		cpu.UsageNanoCores = ptr.To(uint64(milliCPU) * 1e6)
	}
	return cpu, &stats.MemoryStats{Time: metav1.NewTime(at), WorkingSetBytes: ptr.To(mib << 20)}
}

func containerStats(at time.Time, name string, milliCPU int64, mib uint64) stats.ContainerStats {
	cpu, mem := usageFor(at, milliCPU, mib)
	return stats.ContainerStats{Name: name, CPU: cpu, Memory: mem}
}

type metricsEnv struct {
	t       *testing.T
	srv     *httptest.Server
	src     *fakeSummaries
	now     time.Time
	nowMu   sync.Mutex
	sampled time.Time
}

func (e *metricsEnv) clock() time.Time {
	e.nowMu.Lock()
	defer e.nowMu.Unlock()
	return e.now
}

func (e *metricsEnv) step(d time.Duration) {
	e.nowMu.Lock()
	e.now = e.now.Add(d)
	e.nowMu.Unlock()
}

// newMetricsEnv serves a cluster of four nodes — n1 and n2 Ready, n3
// NotReady, n4 Ready with a kubelet that fails — and their pods.
func newMetricsEnv(t *testing.T) *metricsEnv {
	t.Helper()
	e := &metricsEnv{t: t, now: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)}
	e.sampled = e.now.Add(-2 * time.Second)
	store := &memStore{kvs: map[string][]byte{}}
	s, err := New(Config{Store: store, Now: e.clock, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	put := func(resource string, obj interface {
		GetNamespace() string
		GetName() string
	}) {
		res, _ := s.table.Lookup(corev1.SchemeGroupVersion.WithResource(resource))
		data, err := json.Marshal(obj)
		if err != nil {
			t.Fatal(err)
		}
		store.kvs[objectKey(res, obj.GetNamespace(), obj.GetName())] = data
	}
	ready := func(status corev1.ConditionStatus) corev1.NodeStatus {
		return corev1.NodeStatus{Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: status}}}
	}
	for _, n := range []*corev1.Node{
		{ObjectMeta: metav1.ObjectMeta{Name: "n1", Labels: map[string]string{"zone": "a"}}, Status: ready(corev1.ConditionTrue)},
		{ObjectMeta: metav1.ObjectMeta{Name: "n2", Labels: map[string]string{"zone": "b"}}, Status: ready(corev1.ConditionTrue)},
		{ObjectMeta: metav1.ObjectMeta{Name: "n3"}, Status: ready(corev1.ConditionFalse)},
		{ObjectMeta: metav1.ObjectMeta{Name: "n4"}, Status: ready(corev1.ConditionTrue)},
	} {
		put("nodes", n)
	}
	pod := func(ns, name, node string, phase corev1.PodPhase) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: types.UID("uid-" + name), Labels: map[string]string{"app": name}},
			Spec: corev1.PodSpec{NodeName: node}, Status: corev1.PodStatus{Phase: phase}}
	}
	for _, p := range []*corev1.Pod{
		pod("default", "web", "n1", corev1.PodRunning),
		pod("default", "db", "n2", corev1.PodRunning),
		pod("kube-system", "dns", "n1", corev1.PodRunning),
		pod("default", "pending", "", corev1.PodPending),
		pod("default", "partial", "n2", corev1.PodRunning),  // a container has no cpu rate yet
		pod("default", "renamed", "n1", corev1.PodRunning),  // the kubelet runs another pod of that name
		pod("default", "stranded", "n4", corev1.PodRunning), // its kubelet fails
		pod("default", "asleep", "n3", corev1.PodRunning),   // its node is NotReady
	} {
		put("pods", p)
	}
	at := e.sampled
	ref := func(ns, name string) stats.PodReference {
		return stats.PodReference{Namespace: ns, Name: name, UID: "uid-" + name}
	}
	n1CPU, n1Mem := usageFor(at, 1500, 2048)
	n2CPU, n2Mem := usageFor(at, 250, 1024)
	n3CPU, n3Mem := usageFor(at, 1, 1)
	e.src = &fakeSummaries{reads: map[string]int{}, summaries: map[string]*stats.Summary{
		"n1": {Node: stats.NodeStats{NodeName: "n1", CPU: n1CPU, Memory: n1Mem}, Pods: []stats.PodStats{
			{PodRef: ref("default", "web"), Containers: []stats.ContainerStats{containerStats(at, "app", 200, 64), containerStats(at, "sidecar", 5, 16)}},
			{PodRef: ref("kube-system", "dns"), Containers: []stats.ContainerStats{containerStats(at, "coredns", 3, 20)}},
			{PodRef: stats.PodReference{Namespace: "default", Name: "renamed", UID: "an-older-pod"}, Containers: []stats.ContainerStats{containerStats(at, "c", 1, 1)}},
		}},
		"n2": {Node: stats.NodeStats{NodeName: "n2", CPU: n2CPU, Memory: n2Mem}, Pods: []stats.PodStats{
			{PodRef: ref("default", "db"), Containers: []stats.ContainerStats{containerStats(at, "postgres", 120, 256)}},
			{PodRef: ref("default", "partial"), Containers: []stats.ContainerStats{containerStats(at, "a", 10, 10), containerStats(at, "b", -1, 10)}},
		}},
		"n3": {Node: stats.NodeStats{NodeName: "n3", CPU: n3CPU, Memory: n3Mem}, Pods: []stats.PodStats{
			{PodRef: ref("default", "asleep"), Containers: []stats.ContainerStats{containerStats(at, "c", 1, 1)}},
		}},
	}}
	s.summaries = newSummaryCache(e.src, DefaultMetricsCacheTTL, e.clock)
	e.srv = httptest.NewServer(s.Handler())
	t.Cleanup(e.srv.Close)
	return e
}

func (e *metricsEnv) do(method, path, accept string) (int, []byte) {
	e.t.Helper()
	req, err := http.NewRequest(method, e.srv.URL+path, nil)
	if err != nil {
		e.t.Fatal(err)
	}
	if accept != "" {
		req.Header.Set("Accept", accept)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, body
}

// nodeRows is "name cpu memory" per item.
func nodeRows(l *metricsv1beta1.NodeMetricsList) []string {
	var out []string
	for _, m := range l.Items {
		out = append(out, m.Name+" "+m.Usage.Cpu().String()+" "+m.Usage.Memory().String())
	}
	return out
}

// podRows is "ns/name container=cpu,memory..." per item.
func podRows(l *metricsv1beta1.PodMetricsList) []string {
	var out []string
	for _, m := range l.Items {
		row := m.Namespace + "/" + m.Name
		for _, c := range m.Containers {
			row += " " + c.Name + "=" + c.Usage.Cpu().String() + "," + c.Usage.Memory().String()
		}
		out = append(out, row)
	}
	return out
}

var (
	rowN1        = "n1 1500m 2Gi"
	rowN2        = "n2 250m 1Gi"
	rowWeb       = "default/web app=200m,64Mi sidecar=5m,16Mi"
	rowDB        = "default/db postgres=120m,256Mi"
	rowDNS       = "kube-system/dns coredns=3m,20Mi"
	metricsAPIV1 = "/apis/metrics.k8s.io/v1beta1"
)

func TestResourceMetricsLists(t *testing.T) {
	e := newMetricsEnv(t)
	for _, tc := range []struct {
		name, path string
		want       []string
	}{
		{"all nodes: NotReady and failing ones left out", "/nodes", []string{rowN1, rowN2}},
		{"nodes by label", "/nodes?labelSelector=zone%3Db", []string{rowN2}},
		{"nodes by field", "/nodes?fieldSelector=metadata.name%3Dn1", []string{rowN1}},
		{"pods of a namespace: only those with every container measured", "/namespaces/default/pods", []string{rowDB, rowWeb}},
		{"pods of all namespaces", "/pods", []string{rowDB, rowWeb, rowDNS}},
		{"pods by label", "/namespaces/default/pods?labelSelector=app+in+(web,pending)", []string{rowWeb}},
		{"pods by field", "/pods?fieldSelector=spec.nodeName%3Dn1", []string{rowWeb, rowDNS}},
		{"no pods", "/namespaces/empty/pods", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, body := e.do("GET", metricsAPIV1+tc.path, "")
			if code != http.StatusOK {
				t.Fatalf("GET %s = %d %s", tc.path, code, body)
			}
			var got []string
			if strings.Contains(tc.path, "/nodes") {
				var l metricsv1beta1.NodeMetricsList
				if err := json.Unmarshal(body, &l); err != nil || l.Kind != "NodeMetricsList" || l.APIVersion != "metrics.k8s.io/v1beta1" {
					t.Fatalf("decode %s: %v %s", body, err, l.Kind)
				}
				got = nodeRows(&l)
			} else {
				var l metricsv1beta1.PodMetricsList
				if err := json.Unmarshal(body, &l); err != nil || l.Kind != "PodMetricsList" {
					t.Fatalf("decode %s: %v", body, err)
				}
				got = podRows(&l)
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("GET %s:\n got %q\nwant %q", tc.path, got, tc.want)
			}
		})
	}
}

func TestResourceMetricsGet(t *testing.T) {
	e := newMetricsEnv(t)
	code, body := e.do("GET", metricsAPIV1+"/nodes/n1", "")
	var nm metricsv1beta1.NodeMetrics
	if err := json.Unmarshal(body, &nm); code != http.StatusOK || err != nil {
		t.Fatalf("GET nodes/n1 = %d %s", code, body)
	}
	if nm.Kind != "NodeMetrics" || nm.Name != "n1" || nm.Labels["zone"] != "a" || !nm.Timestamp.Time.Equal(e.sampled) ||
		nm.Window.Duration != DefaultMetricsCacheTTL || nm.Usage.Cpu().MilliValue() != 1500 || nm.Usage.Memory().Value() != 2<<30 {
		t.Errorf("node metrics %+v", nm)
	}
	code, body = e.do("GET", metricsAPIV1+"/namespaces/default/pods/web", "")
	var pm metricsv1beta1.PodMetrics
	if err := json.Unmarshal(body, &pm); code != http.StatusOK || err != nil {
		t.Fatalf("GET pods/web = %d %s", code, body)
	}
	if pm.Kind != "PodMetrics" || pm.Namespace != "default" || pm.Labels["app"] != "web" || len(pm.Containers) != 2 ||
		pm.Containers[0].Usage.Cpu().MilliValue() != 200 || pm.Containers[1].Usage.Memory().Value() != 16<<20 {
		t.Errorf("pod metrics %+v", pm)
	}

	for _, tc := range []struct {
		method, path string
		code         int
		message      string
	}{
		{"GET", "/nodes/n3", http.StatusNotFound, `nodemetrics.metrics.k8s.io "n3" not found`},
		{"GET", "/nodes/nope", http.StatusNotFound, `nodemetrics.metrics.k8s.io "nope" not found`},
		{"GET", "/namespaces/default/pods/pending", http.StatusNotFound, `podmetrics.metrics.k8s.io "pending" not found`},
		{"GET", "/namespaces/default/pods/partial", http.StatusNotFound, `podmetrics.metrics.k8s.io "partial" not found`},
		{"GET", "/namespaces/other/pods/web", http.StatusNotFound, `podmetrics.metrics.k8s.io "web" not found`},
		{"GET", "/nodes?watch=true", http.StatusMethodNotAllowed, "watch is not supported"},
		{"POST", "/namespaces/default/pods", http.StatusMethodNotAllowed, "create is not supported"},
		{"DELETE", "/nodes/n1", http.StatusMethodNotAllowed, "delete is not supported"},
		{"GET", "/pods?labelSelector=a+b", http.StatusBadRequest, "unable to parse requirement"},
		{"GET", "/pods?fieldSelector=spec.bogus%3D1", http.StatusBadRequest, "field label not supported"},
		{"GET", "/namespaces/default/nodes", http.StatusNotFound, ""},
		{"GET", "/namespaces/default/pods/web/status", http.StatusNotFound, ""},
		{"GET", "/deployments", http.StatusNotFound, ""},
		{"GET", "/apis/metrics.k8s.io/v1/nodes", http.StatusNotFound, ""},
	} {
		path := metricsAPIV1 + tc.path
		if strings.HasPrefix(tc.path, "/apis/") {
			path = tc.path
		}
		code, body := e.do(tc.method, path, "")
		var st metav1.Status
		_ = json.Unmarshal(body, &st)
		if code != tc.code || st.Kind != "Status" || !strings.Contains(st.Message, tc.message) {
			t.Errorf("%s %s = %d %s, want %d %q", tc.method, tc.path, code, body, tc.code, tc.message)
		}
	}
}

func TestResourceMetricsTable(t *testing.T) {
	e := newMetricsEnv(t)
	code, body := e.do("GET", metricsAPIV1+"/namespaces/default/pods", "application/json;as=Table;v=v1;g=meta.k8s.io,application/json")
	var table metav1.Table
	if err := json.Unmarshal(body, &table); code != http.StatusOK || err != nil || table.Kind != "Table" {
		t.Fatalf("GET pods as a table = %d %s", code, body)
	}
	var rows []string
	for _, r := range table.Rows {
		var cells []string
		for _, c := range r.Cells {
			cells = append(cells, c.(string))
		}
		rows = append(rows, strings.Join(cells, " "))
	}
	if want := []string{"db 120m 256Mi 10s", "web 205m 80Mi 10s"}; !slices.Equal(rows, want) {
		t.Errorf("rows %q, want %q", rows, want)
	}
	if len(table.ColumnDefinitions) != 4 || table.ColumnDefinitions[1].Name != "CPU" {
		t.Errorf("columns %+v", table.ColumnDefinitions)
	}
}

func TestResourceMetricsDiscovery(t *testing.T) {
	e := newMetricsEnv(t)
	var groups metav1.APIGroupList
	_, body := e.do("GET", "/apis", "")
	if err := json.Unmarshal(body, &groups); err != nil {
		t.Fatal(err)
	}
	found := false
	for _, g := range groups.Groups {
		if g.Name == "metrics.k8s.io" && g.PreferredVersion.Version == "v1beta1" && len(g.Versions) == 1 {
			found = true
		}
	}
	if !found {
		t.Errorf("/apis has no metrics.k8s.io/v1beta1: %s", body)
	}
	var group metav1.APIGroup
	if _, body = e.do("GET", "/apis/metrics.k8s.io", ""); json.Unmarshal(body, &group) != nil || group.PreferredVersion.GroupVersion != "metrics.k8s.io/v1beta1" {
		t.Errorf("/apis/metrics.k8s.io = %s", body)
	}
	var list metav1.APIResourceList
	if _, body = e.do("GET", metricsAPIV1, ""); json.Unmarshal(body, &list) != nil {
		t.Fatalf("%s = %s", metricsAPIV1, body)
	}
	var got []string
	for _, r := range list.APIResources {
		got = append(got, r.Name+" "+r.Kind+" "+strings.Join(r.Verbs, ","))
		if r.Namespaced != (r.Name == "pods") {
			t.Errorf("%s namespaced = %v", r.Name, r.Namespaced)
		}
	}
	if want := []string{"nodes NodeMetrics get,list", "pods PodMetrics get,list"}; !slices.Equal(got, want) {
		t.Errorf("resources %q, want %q", got, want)
	}
}

func TestResourceMetricsCache(t *testing.T) {
	e := newMetricsEnv(t)
	get := func(path string) {
		t.Helper()
		if code, body := e.do("GET", metricsAPIV1+path, ""); code != http.StatusOK {
			t.Fatalf("GET %s = %d %s", path, code, body)
		}
	}
	reads := func(want map[string]int) {
		t.Helper()
		for node, n := range want {
			if got := e.src.readsOf(node); got != n {
				t.Errorf("kubelet of %s read %d times, want %d", node, got, n)
			}
		}
	}
	for range 5 {
		get("/nodes")
		get("/pods")
		get("/namespaces/default/pods/web")
	}
	// One read per node; the NotReady node is never asked.
	reads(map[string]int{"n1": 1, "n2": 1, "n3": 0, "n4": 1})

	// A failure is retried sooner than a summary expires.
	e.step(summaryErrorTTL)
	get("/nodes")
	reads(map[string]int{"n1": 1, "n2": 1, "n4": 2})
	e.step(DefaultMetricsCacheTTL - summaryErrorTTL)
	get("/nodes")
	reads(map[string]int{"n1": 2, "n2": 2, "n4": 3})
}

// blockingSource answers once released, counting reads.
type blockingSource struct {
	release chan struct{}
	mu      sync.Mutex
	reads   int
}

func (b *blockingSource) Summary(ctx context.Context, node *corev1.Node) (*stats.Summary, error) {
	b.mu.Lock()
	b.reads++
	b.mu.Unlock()
	select {
	case <-b.release:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	return &stats.Summary{Node: stats.NodeStats{NodeName: node.Name}}, nil
}

func TestSummaryCacheSharesARead(t *testing.T) {
	src := &blockingSource{release: make(chan struct{})}
	c := newSummaryCache(src, time.Minute, time.Now)
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n"}}

	// A caller that gives up does not end the read for the others.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := c.get(ctx, node); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled get: %v", err)
	}
	var wg sync.WaitGroup
	errs := make(chan error, 10)
	for range 10 {
		wg.Go(func() {
			s, err := c.get(context.Background(), node)
			if err == nil && s.Node.NodeName != "n" {
				err = errors.New("wrong summary")
			}
			errs <- err
		})
	}
	close(src.release)
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
	src.mu.Lock()
	defer src.mu.Unlock()
	if src.reads != 1 {
		t.Errorf("%d reads, want 1 shared by every caller", src.reads)
	}
}

// TestServerWithoutPodsHasNoMetricsAPI: a table without pods and nodes has
// nothing to measure.
func TestServerWithoutPodsHasNoMetricsAPI(t *testing.T) {
	var resources []*registry.Resource
	for _, r := range kinds.Builtin() {
		if r.Resource != "pods" {
			resources = append(resources, r)
		}
	}
	s, err := New(Config{Store: &memStore{kvs: map[string][]byte{}}, Resources: resources, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(s.Handler())
	defer srv.Close()
	for _, path := range []string{"/apis/metrics.k8s.io/v1beta1", "/apis/metrics.k8s.io/v1beta1/nodes"} {
		resp, err := http.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusNotFound {
			t.Errorf("GET %s = %d, want 404", path, resp.StatusCode)
		}
	}
}
