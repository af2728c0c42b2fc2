package kubelet

import (
	"context"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/minik8s/minik8s/pkg/kubelet/stats"
)

// The kubelet's Prometheus endpoints, on its HTTPS server with the same
// client-certificate rules as /stats/summary (Prometheus reaches them
// through the apiserver's node proxy, /api/v1/nodes/{node}/proxy/metrics
// and .../proxy/metrics/cadvisor, as Kubernetes' kubernetes_sd examples do):
//
//	GET /metrics           the kubelet's own series (kubelet_running_pods,
//	                       kubelet_running_containers, kubelet_node_name) and
//	                       the Go and process collectors
//	GET /metrics/cadvisor  cAdvisor's container_* and machine_* series, built
//	                       from the StatsProvider's Summary on each scrape
//
// Each kubelet has registries of its own (several kubelets share a test
// process); nothing is registered globally.

// metricsTimeout bounds what one scrape of /metrics asks the provider.
const metricsTimeout = 10 * time.Second

// newMetricsHandler serves GET /metrics from a registry of this kubelet's.
func (k *Kubelet) newMetricsHandler() http.Handler {
	reg := prometheus.NewRegistry()
	reg.MustRegister(
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		newKubeletCollector(k),
	)
	return promhttp.HandlerFor(reg, k.promhttpOpts())
}

func (k *Kubelet) promhttpOpts() promhttp.HandlerOpts {
	return promhttp.HandlerOpts{
		ErrorLog:      slog.NewLogLogger(k.log.Handler(), slog.LevelWarn),
		ErrorHandling: promhttp.ContinueOnError,
	}
}

// kubeletCollector reports the kubelet's pods as the provider runs them,
// read anew on each scrape.
type kubeletCollector struct {
	k                 *Kubelet
	nodeName          *prometheus.Desc
	runningPods       *prometheus.Desc
	runningContainers *prometheus.Desc
}

func newKubeletCollector(k *Kubelet) *kubeletCollector {
	return &kubeletCollector{
		k:                 k,
		nodeName:          prometheus.NewDesc("kubelet_node_name", "The node's name. The count is always 1.", []string{"node"}, nil),
		runningPods:       prometheus.NewDesc("kubelet_running_pods", "Number of pods that have a running pod sandbox", nil, nil),
		runningContainers: prometheus.NewDesc("kubelet_running_containers", "Number of containers currently running", []string{"container_state"}, nil),
	}
}

func (c *kubeletCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.nodeName
	ch <- c.runningPods
	ch <- c.runningContainers
}

func (c *kubeletCollector) Collect(ch chan<- prometheus.Metric) {
	ch <- prometheus.MustNewConstMetric(c.nodeName, prometheus.GaugeValue, 1, c.k.cfg.NodeName)
	ctx, cancel := context.WithTimeout(context.Background(), metricsTimeout)
	defer cancel()
	pods, err := c.k.cfg.Provider.GetPods(ctx)
	if err != nil {
		c.k.log.Warn("metrics: list the provider's pods", "err", err)
		return
	}
	running, containers := countRunning(pods)
	ch <- prometheus.MustNewConstMetric(c.runningPods, prometheus.GaugeValue, float64(running))
	for _, state := range []string{"running", "exited"} {
		ch <- prometheus.MustNewConstMetric(c.runningContainers, prometheus.GaugeValue, float64(containers[state]), state)
	}
}

// countRunning counts the pods that have not finished and their
// containers by the kubelet's container_state: running, or exited (a
// container that ended, or one waiting to restart after it did).
func countRunning(pods []*corev1.Pod) (running int, containers map[string]int) {
	containers = map[string]int{}
	for _, pod := range pods {
		if pod == nil || terminal(pod.Status.Phase) {
			continue
		}
		running++
		for _, list := range [][]corev1.ContainerStatus{pod.Status.InitContainerStatuses, pod.Status.ContainerStatuses, pod.Status.EphemeralContainerStatuses} {
			for _, cs := range list {
				switch {
				case cs.State.Running != nil:
					containers["running"]++
				case cs.State.Terminated != nil, cs.LastTerminationState.Terminated != nil:
					containers["exited"]++
				}
			}
		}
	}
	return running, containers
}

// serveCadvisorMetrics answers GET /metrics/cadvisor: one Summary per
// scrape, so the values are fresh and pods that are gone are gone.
// Providers without stats answer 501, as /stats/summary does.
func (k *Kubelet) serveCadvisorMetrics(w http.ResponseWriter, r *http.Request) {
	sp, ok := k.cfg.Provider.(StatsProvider)
	if !ok {
		notImplemented(w, "stats")
		return
	}
	// A registry per scrape: the collector reads within the request's
	// context, and a client that goes away stops the read.
	reg := prometheus.NewRegistry()
	reg.MustRegister(newCadvisorCollector(r.Context(), k, sp))
	promhttp.HandlerFor(reg, k.promhttpOpts()).ServeHTTP(w, r)
}

// cadvisorLabels are cAdvisor's label names, then extra: every container_*
// series carries them, empty where unknown (Prometheus drops empty labels).
func cadvisorLabels(extra ...string) []string {
	return append([]string{"container", "id", "image", "name", "namespace", "pod"}, extra...)
}

// cadvisorCollector turns a Summary into cAdvisor's series, as the
// kubelet's cAdvisor publishes them:
//
//   - the node's root cgroup: id="/", the other labels empty;
//   - each pod's cgroup: namespace and pod, container="";
//   - each running container: namespace, pod, container, and, from the pod's
//     status, image and name (the runtime's container ID, as cAdvisor names
//     containerd containers).
//
// The Summary carries no cgroup paths, so a pod's and a container's id are
// left empty; it carries no network or filesystem figures, so those series
// are not published. machine_* come from the Node's capacity and system info.
type cadvisorCollector struct {
	ctx context.Context
	k   *Kubelet
	sp  StatsProvider

	cpu, workingSet, usage, rss, startTime *prometheus.Desc
	scrapeError, cpuCores, memoryBytes     *prometheus.Desc
}

func newCadvisorCollector(ctx context.Context, k *Kubelet, sp StatsProvider) *cadvisorCollector {
	container := func(name, help string, extra ...string) *prometheus.Desc {
		return prometheus.NewDesc(name, help, cadvisorLabels(extra...), nil)
	}
	machine := []string{"boot_id", "machine_id", "system_uuid"}
	return &cadvisorCollector{
		ctx: ctx, k: k, sp: sp,
		// cAdvisor with per-cpu stats off, as the kubelet runs it: cpu="total".
		cpu:         container("container_cpu_usage_seconds_total", "Cumulative cpu time consumed in seconds.", "cpu"),
		workingSet:  container("container_memory_working_set_bytes", "Current working set in bytes."),
		usage:       container("container_memory_usage_bytes", "Current memory usage in bytes, including all memory regardless of when it was accessed"),
		rss:         container("container_memory_rss", "Size of RSS in bytes."),
		startTime:   container("container_start_time_seconds", "Start time of the container since unix epoch in seconds."),
		scrapeError: prometheus.NewDesc("container_scrape_error", "1 if there was an error while getting container metrics, 0 otherwise", nil, nil),
		cpuCores:    prometheus.NewDesc("machine_cpu_cores", "Number of logical CPU cores.", machine, nil),
		memoryBytes: prometheus.NewDesc("machine_memory_bytes", "Amount of memory installed on the machine.", machine, nil),
	}
}

func (c *cadvisorCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.cpu, c.workingSet, c.usage, c.rss, c.startTime, c.scrapeError, c.cpuCores, c.memoryBytes} {
		ch <- d
	}
}

func (c *cadvisorCollector) Collect(ch chan<- prometheus.Metric) {
	c.collectMachine(ch)
	summary, err := c.sp.Summary(c.ctx)
	if err != nil || summary == nil {
		// cAdvisor's way: the scrape succeeds and says it failed.
		if err != nil && c.ctx.Err() == nil {
			c.k.log.Warn("metrics/cadvisor: stats summary", "err", err)
		}
		ch <- prometheus.MustNewConstMetric(c.scrapeError, prometheus.GaugeValue, 1)
		return
	}
	ch <- prometheus.MustNewConstMetric(c.scrapeError, prometheus.GaugeValue, 0)
	node := summary.Node
	c.collectCgroup(ch, node.StartTime, node.CPU, node.Memory, "", "/", "", "", "", "")
	for _, ps := range summary.Pods {
		ns, name := ps.PodRef.Namespace, ps.PodRef.Name
		c.collectCgroup(ch, ps.StartTime, ps.CPU, ps.Memory, "", "", "", "", ns, name)
		pod := c.apiPod(ps.PodRef)
		for _, cs := range ps.Containers {
			image, id := containerIdentity(pod, cs.Name)
			c.collectCgroup(ch, cs.StartTime, cs.CPU, cs.Memory, cs.Name, "", image, id, ns, name)
		}
	}
}

// collectCgroup sends one cgroup's series, those the summary has figures
// for. labels are the values of cadvisorLabels().
func (c *cadvisorCollector) collectCgroup(ch chan<- prometheus.Metric, start metav1.Time, cpu *stats.CPUStats, mem *stats.MemoryStats, labels ...string) {
	gauge := func(d *prometheus.Desc, v *uint64) {
		if v != nil {
			ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, float64(*v), labels...)
		}
	}
	if cpu != nil && cpu.UsageCoreNanoSeconds != nil {
		seconds := float64(*cpu.UsageCoreNanoSeconds) / float64(time.Second)
		ch <- prometheus.MustNewConstMetric(c.cpu, prometheus.CounterValue, seconds, append(labels[:len(labels):len(labels)], "total")...)
	}
	if mem != nil {
		gauge(c.workingSet, mem.WorkingSetBytes)
		gauge(c.usage, mem.UsageBytes)
		gauge(c.rss, mem.RSSBytes)
	}
	if !start.IsZero() {
		ch <- prometheus.MustNewConstMetric(c.startTime, prometheus.GaugeValue, float64(start.Unix()), labels...)
	}
}

// collectMachine reports the node's capacity as the machine's, with its
// system info's ids; nothing when the Node cannot be read.
func (c *cadvisorCollector) collectMachine(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(c.ctx, metricsTimeout)
	defer cancel()
	node, err := c.k.client.CoreV1().Nodes().Get(ctx, c.k.cfg.NodeName, metav1.GetOptions{})
	if err != nil {
		if !apierrors.IsNotFound(err) && ctx.Err() == nil {
			c.k.log.Warn("metrics/cadvisor: read the node", "err", err)
		}
		return
	}
	info := node.Status.NodeInfo
	ids := []string{info.BootID, info.MachineID, info.SystemUUID}
	if q, ok := node.Status.Capacity[corev1.ResourceCPU]; ok {
		ch <- prometheus.MustNewConstMetric(c.cpuCores, prometheus.GaugeValue, float64(q.MilliValue())/1000, ids...)
	}
	if q, ok := node.Status.Capacity[corev1.ResourceMemory]; ok {
		ch <- prometheus.MustNewConstMetric(c.memoryBytes, prometheus.GaugeValue, float64(q.Value()), ids...)
	}
}

// apiPod is the pod the summary entry measures, from the kubelet's cache;
// nil when the API has no such pod (or another under that name).
func (c *cadvisorCollector) apiPod(ref stats.PodReference) *corev1.Pod {
	pod, err := c.k.pods.Pods(ref.Namespace).Get(ref.Name)
	if err != nil || (ref.UID != "" && string(pod.UID) != ref.UID) {
		return nil
	}
	return pod
}

// containerIdentity is a container's image and runtime ID (cAdvisor's
// image and name labels), from the pod's status; the image from its spec
// when there is no status yet. Empty when unknown.
func containerIdentity(pod *corev1.Pod, container string) (image, id string) {
	if pod == nil {
		return "", ""
	}
	for _, list := range [][]corev1.ContainerStatus{pod.Status.ContainerStatuses, pod.Status.InitContainerStatuses, pod.Status.EphemeralContainerStatuses} {
		for _, cs := range list {
			if cs.Name == container {
				// "containerd://<id>": cAdvisor names the container by <id>.
				_, after, found := strings.Cut(cs.ContainerID, "://")
				if !found {
					after = cs.ContainerID
				}
				return cs.Image, after
			}
		}
	}
	for _, c := range pod.Spec.Containers {
		if c.Name == container {
			return c.Image, ""
		}
	}
	for _, c := range pod.Spec.InitContainers {
		if c.Name == container {
			return c.Image, ""
		}
	}
	return "", ""
}
