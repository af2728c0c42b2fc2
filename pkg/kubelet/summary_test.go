package kubelet

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"

	"k8s.io/utils/ptr"

	"github.com/minik8s/minik8s/pkg/kubelet/stats"
)

// statsProvider runs no pods and reports a fixed summary, or err.
type statsProvider struct {
	noPods
	summary stats.Summary
	err     error
}

func (p statsProvider) Summary(context.Context) (*stats.Summary, error) {
	if p.err != nil {
		return nil, p.err
	}
	s := p.summary
	return &s, nil
}

func getSummary(t *testing.T, p Provider) (int, string) {
	t.Helper()
	cfg := startTestServer(t, p)
	cert, err := tls.X509KeyPair(cfg.CertData, cfg.KeyData)
	if err != nil {
		t.Fatal(err)
	}
	client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{
		InsecureSkipVerify: true, Certificates: []tls.Certificate{cert}}}} //nolint:gosec // self-signed test server
	resp, err := client.Get(cfg.Host + "/stats/summary?only_cpu_and_memory=true")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

func TestServerStatsSummary(t *testing.T) {
	t.Run("provider with stats", func(t *testing.T) {
		p := statsProvider{summary: stats.Summary{
			Node: stats.NodeStats{CPU: &stats.CPUStats{UsageNanoCores: ptr.To[uint64](5e8)}},
			Pods: []stats.PodStats{{PodRef: stats.PodReference{Namespace: "ns", Name: "p", UID: "u"},
				Containers: []stats.ContainerStats{{Name: "c", Memory: &stats.MemoryStats{WorkingSetBytes: ptr.To[uint64](1 << 20)}}}}},
		}}
		code, body := getSummary(t, p)
		if code != http.StatusOK {
			t.Fatalf("GET /stats/summary = %d %q", code, body)
		}
		var got stats.Summary
		if err := json.Unmarshal([]byte(body), &got); err != nil {
			t.Fatal(err)
		}
		if got.Node.NodeName != "n" {
			t.Errorf("nodeName = %q, want the kubelet's node name filled in", got.Node.NodeName)
		}
		if got.Node.CPU == nil || *got.Node.CPU.UsageNanoCores != 5e8 {
			t.Errorf("node cpu = %+v", got.Node.CPU)
		}
		if len(got.Pods) != 1 || got.Pods[0].PodRef.Name != "p" || *got.Pods[0].Containers[0].Memory.WorkingSetBytes != 1<<20 {
			t.Errorf("pods = %+v", got.Pods)
		}
		// Kubernetes' JSON names, as metrics-server reads them.
		for _, field := range []string{`"nodeName":"n"`, `"usageNanoCores":500000000`, `"podRef":{"name":"p","namespace":"ns","uid":"u"}`, `"workingSetBytes":1048576`} {
			if !strings.Contains(body, field) {
				t.Errorf("summary %s lacks %s", body, field)
			}
		}
	})
	t.Run("provider without stats", func(t *testing.T) {
		if code, body := getSummary(t, streamProvider{}); code != http.StatusNotImplemented || !strings.Contains(body, "does not support stats") {
			t.Errorf("GET /stats/summary = %d %q, want 501", code, body)
		}
	})
	t.Run("provider failing", func(t *testing.T) {
		if code, body := getSummary(t, statsProvider{err: errors.New("cgroups are gone")}); code != http.StatusInternalServerError || !strings.Contains(body, "cgroups are gone") {
			t.Errorf("GET /stats/summary = %d %q, want 500", code, body)
		}
	})
}
