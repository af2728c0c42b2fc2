package kubelet

import (
	"context"
	"encoding/json"
	"net/http"

	"github.com/minik8s/minik8s/pkg/kubelet/stats"
)

// StatsProvider reports the node's and its pods' resource use, served as
// GET /stats/summary (what `kubectl top` and the HPA read, through the
// apiserver's metrics.k8s.io API).
type StatsProvider interface {
	// Summary measures the node and the pods running on it now. CPU rates
	// (usageNanoCores) may be missing where the provider has no earlier
	// sample to compare with.
	Summary(ctx context.Context) (*stats.Summary, error)
}

// serveStatsSummary answers GET /stats/summary. Kubernetes' query
// (?only_cpu_and_memory=true, as metrics-server asks) is accepted; cpu and
// memory are all a minik8s summary holds anyway.
func (k *Kubelet) serveStatsSummary(w http.ResponseWriter, r *http.Request) {
	sp, ok := k.cfg.Provider.(StatsProvider)
	if !ok {
		notImplemented(w, "stats")
		return
	}
	summary, err := sp.Summary(r.Context())
	if err != nil {
		k.log.Warn("stats summary", "err", err)
		http.Error(w, "Internal Error: failed to get node and pod stats: "+err.Error(), http.StatusInternalServerError)
		return
	}
	if summary.Node.NodeName == "" {
		summary.Node.NodeName = k.cfg.NodeName
	}
	if summary.Pods == nil {
		summary.Pods = []stats.PodStats{}
	}
	data, err := json.Marshal(summary)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(data)
}
