package prometheus

import (
	"fmt"
	"slices"
	"strconv"
	"time"

	"sigs.k8s.io/yaml"
)

// The parts of Prometheus' configuration file we write. Field names are
// prometheus.yml's (https://prometheus.io/docs/prometheus/2.42/configuration/configuration/).
type (
	promConfig struct {
		Global        globalConfig   `json:"global"`
		ScrapeConfigs []scrapeConfig `json:"scrape_configs"`
	}
	globalConfig struct {
		ScrapeInterval     string `json:"scrape_interval"`
		ScrapeTimeout      string `json:"scrape_timeout"`
		EvaluationInterval string `json:"evaluation_interval"`
	}
	scrapeConfig struct {
		JobName             string               `json:"job_name"`
		Scheme              string               `json:"scheme,omitempty"`
		MetricsPath         string               `json:"metrics_path,omitempty"`
		TLSConfig           *tlsConfig           `json:"tls_config,omitempty"`
		StaticConfigs       []staticConfig       `json:"static_configs,omitempty"`
		KubernetesSDConfigs []kubernetesSDConfig `json:"kubernetes_sd_configs,omitempty"`
		RelabelConfigs      []relabelConfig      `json:"relabel_configs,omitempty"`
	}
	tlsConfig struct {
		CAFile   string `json:"ca_file,omitempty"`
		CertFile string `json:"cert_file,omitempty"`
		KeyFile  string `json:"key_file,omitempty"`
	}
	staticConfig struct {
		Targets []string `json:"targets"`
	}
	kubernetesSDConfig struct {
		APIServer string     `json:"api_server"`
		Role      string     `json:"role"`
		TLSConfig *tlsConfig `json:"tls_config,omitempty"`
	}
	// relabelConfig leaves out what is Prometheus' default: regex (.*),
	// replacement $1, action replace.
	relabelConfig struct {
		SourceLabels []string `json:"source_labels,omitempty"`
		Regex        string   `json:"regex,omitempty"`
		TargetLabel  string   `json:"target_label,omitempty"`
		Replacement  string   `json:"replacement,omitempty"`
		Action       string   `json:"action,omitempty"`
	}
)

// The scrape jobs, by job label.
const (
	JobPrometheus       = "prometheus"
	JobAPIServer        = "apiserver"
	JobKubelet          = "kubelet"
	JobKubeletCadvisor  = "kubelet-cadvisor"
	JobNodeExporter     = "node-exporter"
	JobPods             = "pods"
	JobServiceEndpoints = "service-endpoints"
)

const header = "# Written by minik8s (pkg/prometheus) at every start: changes here are lost.\n"

// configFile is prometheus.yml for cfg (completed): every job finds its
// targets in our API (kubernetes_sd_configs), as Prometheus' own
// Kubernetes example does, except Prometheus and the apiserver, whose
// addresses we know.
func configFile(cfg Config, tls tlsFiles) ([]byte, error) {
	api, err := apiserverAddress(cfg.APIServer)
	if err != nil {
		return nil, err
	}
	// Our identity, towards the apiserver only: pods and node exporters
	// get no client certificate.
	apiTLS := &tlsConfig{CAFile: tls.CA, CertFile: tls.Cert, KeyFile: tls.Key}
	sd := func(role string) []kubernetesSDConfig {
		return []kubernetesSDConfig{{APIServer: cfg.APIServer, Role: role, TLSConfig: apiTLS}}
	}
	// A node's labels, and its name as the node label (its instance label
	// is its name too: the node role sets it).
	nodeLabels := []relabelConfig{
		{Action: "labelmap", Regex: "__meta_kubernetes_node_label_(.+)"},
		{SourceLabels: []string{"__meta_kubernetes_node_name"}, TargetLabel: "node"},
	}
	// The kubelets are scraped through the apiserver's proxy: Prometheus
	// needs to reach only the apiserver, as itself, and the kubelets'
	// serving certificates and client authorization stay the apiserver's
	// business.
	throughAPIServer := func(job, path string) scrapeConfig {
		return scrapeConfig{JobName: job, Scheme: "https", TLSConfig: apiTLS, KubernetesSDConfigs: sd("node"),
			RelabelConfigs: slices.Concat(nodeLabels, []relabelConfig{
				{TargetLabel: "__address__", Replacement: api},
				{SourceLabels: []string{"__meta_kubernetes_node_name"}, Regex: "(.+)", TargetLabel: "__metrics_path__",
					Replacement: "/api/v1/nodes/${1}/proxy" + path},
			}),
		}
	}
	exporter := strconv.Itoa(cfg.NodeExporterPort)
	timeout := min(cfg.ScrapeInterval, 10*time.Second)
	c := promConfig{
		Global: globalConfig{ScrapeInterval: promDuration(cfg.ScrapeInterval), ScrapeTimeout: promDuration(timeout),
			EvaluationInterval: promDuration(cfg.ScrapeInterval)},
		ScrapeConfigs: []scrapeConfig{
			{JobName: JobPrometheus, StaticConfigs: []staticConfig{{Targets: []string{localAddress(cfg.Listen)}}}},
			{JobName: JobAPIServer, Scheme: "https", TLSConfig: apiTLS, StaticConfigs: []staticConfig{{Targets: []string{api}}}},
			throughAPIServer(JobKubelet, "/metrics"),
			throughAPIServer(JobKubeletCadvisor, "/metrics/cadvisor"),
			{JobName: JobNodeExporter, KubernetesSDConfigs: sd("node"),
				RelabelConfigs: slices.Concat([]relabelConfig{
					// Nodes without an InternalIP have no node exporter we know of.
					{SourceLabels: []string{"__meta_kubernetes_node_address_InternalIP"}, Regex: ".+", Action: "keep"},
					{SourceLabels: []string{"__meta_kubernetes_node_address_InternalIP"}, Regex: "(.+)", TargetLabel: "__address__",
						Replacement: "${1}:" + exporter},
					{SourceLabels: []string{"__meta_kubernetes_node_address_InternalIP"}, Regex: "(.*:.*)", TargetLabel: "__address__",
						Replacement: "[${1}]:" + exporter},
				}, nodeLabels)},
			{JobName: JobPods, KubernetesSDConfigs: sd("pod"), RelabelConfigs: podRelabeling()},
			{JobName: JobServiceEndpoints, KubernetesSDConfigs: sd("endpointslice"), RelabelConfigs: serviceRelabeling()},
		},
	}
	out, err := yaml.Marshal(c)
	if err != nil {
		return nil, fmt.Errorf("prometheus config: %w", err)
	}
	return append([]byte(header), out...), nil
}

// annotated are the rules of the prometheus.io/ annotations of an object
// whose meta labels start with prefix (__meta_kubernetes_pod_,
// __meta_kubernetes_service_): scrape=true keeps the target, scheme
// (http or https) and path replace the defaults.
func annotated(prefix string) []relabelConfig {
	a := prefix + "annotation_prometheus_io_"
	return []relabelConfig{
		{SourceLabels: []string{a + "scrape"}, Regex: "true", Action: "keep"},
		{SourceLabels: []string{a + "scheme"}, Regex: "(https?)", TargetLabel: "__scheme__"},
		{SourceLabels: []string{a + "path"}, Regex: "(.+)", TargetLabel: "__metrics_path__"},
	}
}

// podRelabeling keeps the running pods annotated prometheus.io/scrape:
// "true" (not their init containers), at prometheus.io/port when it is
// set, labelled with their labels, namespace, pod and container. The port
// rules are Prometheus' example's, for IPv6 and IPv4 pod IPs.
func podRelabeling() []relabelConfig {
	rules := annotated("__meta_kubernetes_pod_")
	return append(rules,
		relabelConfig{SourceLabels: []string{"__meta_kubernetes_pod_phase"}, Regex: "Running", Action: "keep"},
		relabelConfig{SourceLabels: []string{"__meta_kubernetes_pod_container_init"}, Regex: "true", Action: "drop"},
		relabelConfig{SourceLabels: []string{"__meta_kubernetes_pod_annotation_prometheus_io_port", "__meta_kubernetes_pod_ip"},
			Regex: `(\d+);(([A-Fa-f0-9]{1,4}::?){1,7}[A-Fa-f0-9]{1,4})`, TargetLabel: "__address__", Replacement: "[$2]:$1"},
		relabelConfig{SourceLabels: []string{"__meta_kubernetes_pod_annotation_prometheus_io_port", "__meta_kubernetes_pod_ip"},
			Regex: `(\d+);((([0-9]+?)(\.|$)){4})`, TargetLabel: "__address__", Replacement: "$2:$1"},
		relabelConfig{Action: "labelmap", Regex: "__meta_kubernetes_pod_label_(.+)"},
		relabelConfig{SourceLabels: []string{"__meta_kubernetes_namespace"}, TargetLabel: "namespace"},
		relabelConfig{SourceLabels: []string{"__meta_kubernetes_pod_name"}, TargetLabel: "pod"},
		relabelConfig{SourceLabels: []string{"__meta_kubernetes_pod_container_name"}, TargetLabel: "container"},
		relabelConfig{SourceLabels: []string{"__meta_kubernetes_pod_node_name"}, TargetLabel: "node"},
	)
}

// serviceRelabeling keeps the endpoints of Services annotated
// prometheus.io/scrape: "true", at prometheus.io/port when it is set,
// labelled with the Service's labels, namespace, service and, for
// endpoints that are pods, pod and node.
func serviceRelabeling() []relabelConfig {
	rules := annotated("__meta_kubernetes_service_")
	return append(rules,
		relabelConfig{SourceLabels: []string{"__address__", "__meta_kubernetes_service_annotation_prometheus_io_port"},
			Regex: `(.+?)(?::\d+)?;(\d+)`, TargetLabel: "__address__", Replacement: "$1:$2"},
		relabelConfig{Action: "labelmap", Regex: "__meta_kubernetes_service_label_(.+)"},
		relabelConfig{SourceLabels: []string{"__meta_kubernetes_namespace"}, TargetLabel: "namespace"},
		relabelConfig{SourceLabels: []string{"__meta_kubernetes_service_name"}, TargetLabel: "service"},
		relabelConfig{SourceLabels: []string{"__meta_kubernetes_pod_name"}, TargetLabel: "pod"},
		relabelConfig{SourceLabels: []string{"__meta_kubernetes_pod_node_name"}, TargetLabel: "node"},
	)
}

// promDuration writes d as Prometheus' durations read it, in the largest
// unit that holds it exactly (d is at least a millisecond).
func promDuration(d time.Duration) string {
	for _, u := range []struct {
		unit   time.Duration
		suffix string
	}{{24 * time.Hour, "d"}, {time.Hour, "h"}, {time.Minute, "m"}, {time.Second, "s"}} {
		if d%u.unit == 0 {
			return strconv.FormatInt(int64(d/u.unit), 10) + u.suffix
		}
	}
	return strconv.FormatInt(d.Milliseconds(), 10) + "ms"
}
