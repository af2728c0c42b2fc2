package apiserver

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	metricsv1beta1 "k8s.io/metrics/pkg/apis/metrics/v1beta1"

	"github.com/minik8s/minik8s/pkg/kubelet/stats"
	"github.com/minik8s/minik8s/pkg/registry"
)

// The resource metrics API, metrics.k8s.io/v1beta1 (`kubectl top`, the
// HPA), is built in, as if metrics-server were aggregated: PodMetrics and
// NodeMetrics, get and list, with label and field selectors (those of pods
// and nodes). A request reads the pods or nodes it is about from storage,
// asks their kubelets for /stats/summary (kubeletURL's address and port,
// the kubelet client certificate, as proxy.go does) and answers with their
// cpu rate (usageNanoCores) and memory working set. Summaries are cached
// per node for Config.MetricsCacheTTL so that many requests cost a kubelet
// one read per TTL; concurrent requests for a node share one read.
// NotReady nodes are not asked; a node whose kubelet fails is left out
// (and asked again after a few seconds), as metrics-server leaves out what
// it could not scrape.

// DefaultMetricsCacheTTL is how long a kubelet's summary is served from
// the cache: about metrics-server's 15s resolution, under the HPA's 15s
// sync period.
const DefaultMetricsCacheTTL = 10 * time.Second

// summaryErrorTTL is how long a kubelet's failure is remembered, so that
// a dead kubelet does not slow every request down.
const summaryErrorTTL = 3 * time.Second

// summaryTimeout bounds one read of a kubelet's summary.
const summaryTimeout = 10 * time.Second

// The resources in metrics-server's words ("nodemetrics.metrics.k8s.io
// "x" not found").
var (
	nodeMetricsResource = metricsv1beta1.Resource("nodemetrics")
	podMetricsResource  = metricsv1beta1.Resource("podmetrics")
)

// summarySource reads a node's kubelet summary.
type summarySource interface {
	Summary(ctx context.Context, node *corev1.Node) (*stats.Summary, error)
}

// kubeletSummaries reads summaries from the kubelets' HTTPS servers.
type kubeletSummaries struct{ client *http.Client }

func (k kubeletSummaries) Summary(ctx context.Context, node *corev1.Node) (*stats.Summary, error) {
	loc, err := nodeKubeletURL(node, "/stats/summary", url.Values{"only_cpu_and_memory": {"true"}})
	if err != nil {
		return nil, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, loc.String(), nil)
	if err != nil {
		return nil, err
	}
	resp, err := k.client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("kubelet of node %s: %w", node.Name, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<10))
		return nil, fmt.Errorf("kubelet of node %s: %s: %s", node.Name, resp.Status, body)
	}
	var s stats.Summary
	if err := json.NewDecoder(io.LimitReader(resp.Body, 64<<20)).Decode(&s); err != nil {
		return nil, fmt.Errorf("kubelet of node %s: decode summary: %w", node.Name, err)
	}
	return &s, nil
}

// summaryCache keeps each node's last summary for ttl (a failure for
// summaryErrorTTL) and lets concurrent requests share one read.
type summaryCache struct {
	src summarySource
	ttl time.Duration
	now func() time.Time

	mu      sync.Mutex
	entries map[string]*summaryEntry // by node name
}

type summaryEntry struct {
	done    chan struct{} // closed when the read below is over
	at      time.Time
	summary *stats.Summary
	err     error
}

func newSummaryCache(src summarySource, ttl time.Duration, now func() time.Time) *summaryCache {
	return &summaryCache{src: src, ttl: ttl, now: now, entries: map[string]*summaryEntry{}}
}

// get returns the node's summary, read now unless a fresh one is cached
// or being read.
func (c *summaryCache) get(ctx context.Context, node *corev1.Node) (*stats.Summary, error) {
	c.mu.Lock()
	e := c.entries[node.Name]
	if e != nil && !c.fresh(e) {
		e = nil
	}
	if e == nil {
		e = &summaryEntry{done: make(chan struct{})}
		c.entries[node.Name] = e
		c.prune()
		// The read outlives a caller that goes away: others may wait on it.
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), summaryTimeout)
		go func() {
			defer cancel()
			s, err := c.src.Summary(rctx, node.DeepCopy())
			c.mu.Lock()
			e.summary, e.err, e.at = s, err, c.now()
			c.mu.Unlock()
			close(e.done)
		}()
	}
	c.mu.Unlock()
	select {
	case <-e.done:
		return e.summary, e.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// fresh reports whether e is being read or may still be served; c.mu held.
func (c *summaryCache) fresh(e *summaryEntry) bool {
	select {
	case <-e.done:
	default:
		return true
	}
	ttl := c.ttl
	if e.err != nil {
		ttl = summaryErrorTTL
	}
	return c.now().Sub(e.at) < ttl
}

// prune drops entries long expired (nodes that are gone); c.mu held.
func (c *summaryCache) prune() {
	for name, e := range c.entries {
		select {
		case <-e.done:
			if c.now().Sub(e.at) > 10*max(c.ttl, summaryErrorTTL) {
				delete(c.entries, name)
			}
		default:
		}
	}
}

// newMetricsCodecs encodes metrics.k8s.io objects (JSON, YAML, protobuf)
// and the meta.k8s.io ones (Status, Table).
func newMetricsCodecs() serializer.CodecFactory {
	scheme := k8sruntime.NewScheme()
	if err := metricsv1beta1.AddToScheme(scheme); err != nil {
		panic(err) // static registration; cannot fail
	}
	metav1.AddToGroupVersion(scheme, schema.GroupVersion{Version: "v1"})
	return serializer.NewCodecFactory(scheme)
}

// addMetricsAPI puts metrics.k8s.io/v1beta1 in the discovery documents,
// after the groups of the resource table, where Kubernetes lists the
// aggregated ones.
func (d *discovery) addMetricsAPI() {
	gv := metricsv1beta1.SchemeGroupVersion
	v := metav1.GroupVersionForDiscovery{GroupVersion: gv.String(), Version: gv.Version}
	g := &metav1.APIGroup{TypeMeta: metav1.TypeMeta{Kind: "APIGroup", APIVersion: "v1"}, Name: gv.Group,
		Versions: []metav1.GroupVersionForDiscovery{v}, PreferredVersion: v}
	d.byGroup[gv.Group] = g
	d.orderGroups()
	verbs := metav1.Verbs{"get", "list"}
	d.resources[gv] = &metav1.APIResourceList{
		TypeMeta: metav1.TypeMeta{Kind: "APIResourceList", APIVersion: "v1"}, GroupVersion: gv.String(),
		APIResources: []metav1.APIResource{
			{Name: "nodes", SingularName: "nodemetrics", Namespaced: false, Kind: "NodeMetrics", Verbs: verbs},
			{Name: "pods", SingularName: "podmetrics", Namespaced: true, Kind: "PodMetrics", Verbs: verbs},
		},
	}
}

// serveResourceMetrics answers /apis/metrics.k8s.io/v1beta1/...
func (s *Server) serveResourceMetrics(w http.ResponseWriter, r *http.Request, info requestInfo) {
	if err := s.resourceMetrics(w, r, info); err != nil {
		writeError(w, err)
	}
}

func (s *Server) resourceMetrics(w http.ResponseWriter, r *http.Request, info requestInfo) error {
	var gr schema.GroupResource
	switch {
	case s.summaries == nil || info.Version != metricsv1beta1.SchemeGroupVersion.Version || info.Subresource != "":
		return errNoSuchResource()
	case info.Resource == "nodes" && info.Namespace == "":
		gr = nodeMetricsResource
	case info.Resource == "pods" && (info.Namespace != "" || info.Name == ""):
		gr = podMetricsResource
	default:
		return errNoSuchResource()
	}
	if info.Verb != "get" && info.Verb != "list" {
		return apierrors.NewMethodNotSupported(gr, info.Verb)
	}
	out, err := negotiate(s.metricsCodecs, r.Header.Get("Accept"), true)
	if err != nil {
		return err
	}
	opts, err := s.listOptions(r)
	if err != nil {
		return err
	}
	ctx := r.Context()
	var items []k8sruntime.Object
	if gr == nodeMetricsResource {
		items, err = s.nodeMetrics(ctx, info.Name, opts)
	} else {
		items, err = s.podMetrics(ctx, info.Namespace, info.Name, opts)
	}
	if err != nil {
		return err
	}
	var obj k8sruntime.Object
	switch {
	case out.kind == outputTable:
		obj, err = metricsTable(items, tableOptionsFrom(r))
	case out.kind == outputMetadata && info.Verb == "get":
		obj, err = partialMetadata(items[0])
	case out.kind == outputMetadata:
		list := &metav1.PartialObjectMetadataList{TypeMeta: metav1.TypeMeta{APIVersion: "meta.k8s.io/v1", Kind: "PartialObjectMetadataList"}}
		for _, it := range items {
			pm, err := partialMetadata(it)
			if err != nil {
				return err
			}
			list.Items = append(list.Items, *pm)
		}
		obj = list
	case info.Verb == "get":
		obj = items[0]
	case gr == nodeMetricsResource:
		list := &metricsv1beta1.NodeMetricsList{TypeMeta: metav1.TypeMeta{APIVersion: metricsv1beta1.SchemeGroupVersion.String(), Kind: "NodeMetricsList"},
			Items: []metricsv1beta1.NodeMetrics{}}
		for _, it := range items {
			list.Items = append(list.Items, *it.(*metricsv1beta1.NodeMetrics))
		}
		obj = list
	default:
		list := &metricsv1beta1.PodMetricsList{TypeMeta: metav1.TypeMeta{APIVersion: metricsv1beta1.SchemeGroupVersion.String(), Kind: "PodMetricsList"},
			Items: []metricsv1beta1.PodMetrics{}}
		for _, it := range items {
			list.Items = append(list.Items, *it.(*metricsv1beta1.PodMetrics))
		}
		obj = list
	}
	if err != nil {
		return err
	}
	encode(w, http.StatusOK, out, obj)
	return nil
}

// nodeMetrics are the metrics of node name, or of the nodes opts select.
func (s *Server) nodeMetrics(ctx context.Context, name string, opts *metav1.ListOptions) ([]k8sruntime.Object, error) {
	nodesRes, _ := s.table.Lookup(corev1.SchemeGroupVersion.WithResource("nodes"))
	var nodes []*corev1.Node
	if name != "" {
		obj, _, err := s.get(ctx, nodesRes, "", name)
		if apierrors.IsNotFound(err) {
			return nil, apierrors.NewNotFound(nodeMetricsResource, name)
		} else if err != nil {
			return nil, err
		}
		nodes = append(nodes, obj.(*corev1.Node))
	} else {
		lr, err := s.list(ctx, nodesRes, "", &metav1.ListOptions{LabelSelector: opts.LabelSelector, FieldSelector: opts.FieldSelector})
		if err != nil {
			return nil, err
		}
		for _, obj := range lr.items {
			nodes = append(nodes, obj.(*corev1.Node))
		}
	}
	summaries := s.summariesOf(ctx, nodes)
	now := metav1.NewTime(s.now())
	items := []k8sruntime.Object{}
	for _, node := range nodes {
		sum := summaries[node.Name]
		if sum == nil {
			continue
		}
		cpu, mem, at, ok := usageOf(sum.Node.CPU, sum.Node.Memory)
		if !ok {
			continue
		}
		items = append(items, &metricsv1beta1.NodeMetrics{
			ObjectMeta: metav1.ObjectMeta{Name: node.Name, Labels: node.Labels, CreationTimestamp: now},
			Timestamp:  at, Window: metav1.Duration{Duration: s.summaries.ttl},
			Usage: corev1.ResourceList{corev1.ResourceCPU: cpu, corev1.ResourceMemory: mem},
		})
	}
	if name != "" && len(items) == 0 {
		return nil, apierrors.NewNotFound(nodeMetricsResource, name)
	}
	if name != "" {
		setMetricsTypeMeta(items[0], "NodeMetrics")
	}
	return items, nil
}

// podMetrics are the metrics of pod ns/name, or of the pods opts select in
// ns (all namespaces when empty). Only pods whose every running container
// has cpu and memory figures are reported, as metrics-server does.
func (s *Server) podMetrics(ctx context.Context, ns, name string, opts *metav1.ListOptions) ([]k8sruntime.Object, error) {
	podsRes, _ := s.table.Lookup(corev1.SchemeGroupVersion.WithResource("pods"))
	nodesRes, _ := s.table.Lookup(corev1.SchemeGroupVersion.WithResource("nodes"))
	var pods []*corev1.Pod
	if name != "" {
		obj, _, err := s.get(ctx, podsRes, ns, name)
		if apierrors.IsNotFound(err) {
			return nil, apierrors.NewNotFound(podMetricsResource, name)
		} else if err != nil {
			return nil, err
		}
		pods = append(pods, obj.(*corev1.Pod))
	} else {
		lr, err := s.list(ctx, podsRes, ns, &metav1.ListOptions{LabelSelector: opts.LabelSelector, FieldSelector: opts.FieldSelector})
		if err != nil {
			return nil, err
		}
		for _, obj := range lr.items {
			pods = append(pods, obj.(*corev1.Pod))
		}
	}
	var nodes []*corev1.Node
	seen := map[string]bool{}
	for _, pod := range pods {
		if n := pod.Spec.NodeName; n != "" && pod.Status.Phase == corev1.PodRunning && !seen[n] {
			seen[n] = true
			obj, _, err := s.get(ctx, nodesRes, "", n)
			if err != nil {
				continue // a node that is gone has no metrics to give
			}
			nodes = append(nodes, obj.(*corev1.Node))
		}
	}
	summaries := s.summariesOf(ctx, nodes)
	now := metav1.NewTime(s.now())
	items := []k8sruntime.Object{}
	for _, pod := range pods {
		sum := summaries[pod.Spec.NodeName]
		if sum == nil || pod.Status.Phase != corev1.PodRunning {
			continue
		}
		var ps *stats.PodStats
		for i := range sum.Pods {
			ref := sum.Pods[i].PodRef
			if ref.Namespace == pod.Namespace && ref.Name == pod.Name && (ref.UID == "" || ref.UID == string(pod.UID)) {
				ps = &sum.Pods[i]
			}
		}
		if ps == nil || len(ps.Containers) == 0 {
			continue
		}
		pm := &metricsv1beta1.PodMetrics{
			ObjectMeta: metav1.ObjectMeta{Name: pod.Name, Namespace: pod.Namespace, Labels: pod.Labels, CreationTimestamp: now},
			Window:     metav1.Duration{Duration: s.summaries.ttl},
		}
		complete := true
		for _, c := range ps.Containers {
			cpu, mem, at, ok := usageOf(c.CPU, c.Memory)
			if !ok {
				complete = false
				break
			}
			if pm.Timestamp.IsZero() || at.Before(&pm.Timestamp) {
				pm.Timestamp = at
			}
			pm.Containers = append(pm.Containers, metricsv1beta1.ContainerMetrics{
				Name: c.Name, Usage: corev1.ResourceList{corev1.ResourceCPU: cpu, corev1.ResourceMemory: mem},
			})
		}
		if complete {
			items = append(items, pm)
		}
	}
	if name != "" && len(items) == 0 {
		return nil, apierrors.NewNotFound(podMetricsResource, name)
	}
	if name != "" {
		setMetricsTypeMeta(items[0], "PodMetrics")
	}
	return items, nil
}

// summariesOf reads the Ready nodes' summaries at once, through the
// cache; a node that fails is missing from the result.
func (s *Server) summariesOf(ctx context.Context, nodes []*corev1.Node) map[string]*stats.Summary {
	var mu sync.Mutex
	var wg sync.WaitGroup
	out := map[string]*stats.Summary{}
	for _, node := range nodes {
		if !nodeIsReady(node) {
			continue
		}
		wg.Go(func() {
			sum, err := s.summaries.get(ctx, node)
			if err != nil {
				if ctx.Err() == nil {
					s.log.Warn("resource metrics: read kubelet summary", "node", node.Name, "err", err)
				}
				return
			}
			mu.Lock()
			out[node.Name] = sum
			mu.Unlock()
		})
	}
	wg.Wait()
	return out
}

func nodeIsReady(node *corev1.Node) bool {
	for _, c := range node.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// usageOf is the cpu rate and memory working set of a summary entry, as
// metrics-server reports them, and when they were measured; ok is false
// when either is missing.
func usageOf(cpu *stats.CPUStats, mem *stats.MemoryStats) (cpuQ, memQ resource.Quantity, at metav1.Time, ok bool) {
	if cpu == nil || cpu.UsageNanoCores == nil || mem == nil || mem.WorkingSetBytes == nil {
		return cpuQ, memQ, at, false
	}
	cpuQ = *resource.NewScaledQuantity(int64(*cpu.UsageNanoCores), resource.Nano)
	memQ = *resource.NewQuantity(int64(*mem.WorkingSetBytes), resource.BinarySI)
	at = cpu.Time
	if at.IsZero() {
		at = mem.Time
	}
	return cpuQ, memQ, at, true
}

func setMetricsTypeMeta(obj k8sruntime.Object, kind string) {
	obj.GetObjectKind().SetGroupVersionKind(metricsv1beta1.SchemeGroupVersion.WithKind(kind))
}

// metricsTable renders metrics for `kubectl get`: name, cpu (millicores),
// memory (MiB) and window; a pod's usage is its containers' sum.
func metricsTable(items []k8sruntime.Object, opts tableOptions) (*metav1.Table, error) {
	t := &metav1.Table{
		TypeMeta: metav1.TypeMeta{APIVersion: "meta.k8s.io/v1", Kind: "Table"},
		ColumnDefinitions: []metav1.TableColumnDefinition{
			{Name: "Name", Type: "string", Format: "name", Description: metav1.ObjectMeta{}.SwaggerDoc()["name"]},
			{Name: "CPU", Type: "string", Description: "CPU usage (cores, averaged over the window)"},
			{Name: "Memory", Type: "string", Description: "Memory working set"},
			{Name: "Window", Type: "string", Description: "The interval the usage was averaged over"},
		},
		Rows: make([]metav1.TableRow, 0, len(items)),
	}
	for _, obj := range items {
		var usage corev1.ResourceList
		var window time.Duration
		switch m := obj.(type) {
		case *metricsv1beta1.NodeMetrics:
			usage, window = m.Usage, m.Window.Duration
		case *metricsv1beta1.PodMetrics:
			usage, window = corev1.ResourceList{}, m.Window.Duration
			for _, c := range m.Containers {
				for name, q := range c.Usage {
					sum := usage[name]
					sum.Add(q)
					usage[name] = sum
				}
			}
		}
		meta, err := partialMetadata(obj)
		if err != nil {
			return nil, err
		}
		row := metav1.TableRow{Cells: []any{
			meta.Name, fmt.Sprintf("%dm", usage.Cpu().MilliValue()), fmt.Sprintf("%dMi", usage.Memory().Value()/(1<<20)), window.String(),
		}}
		switch opts.includeObject {
		case metav1.IncludeNone:
		case metav1.IncludeObject:
			row.Object.Object = obj
		default:
			row.Object.Object = meta
		}
		t.Rows = append(t.Rows, row)
	}
	return t, nil
}

// servesMetricsAPI reports whether the table has what the metrics API
// reads: pods and nodes.
func servesMetricsAPI(table *registry.Table) bool {
	_, pods := table.Lookup(corev1.SchemeGroupVersion.WithResource("pods"))
	_, nodes := table.Lookup(corev1.SchemeGroupVersion.WithResource("nodes"))
	return pods && nodes
}
