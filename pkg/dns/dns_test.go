package dns

import (
	"context"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/clientcmd"
)

func testConfig(t *testing.T) Config {
	t.Helper()
	return Config{
		Binary: "/bin/true", Dir: t.TempDir(), APIServer: "https://127.0.0.1:6443",
		CAPEM: []byte("ca"), CertPEM: []byte("cert"), KeyPEM: []byte("key"), Upstream: "-",
	}
}

func TestCorefile(t *testing.T) {
	for _, tc := range []struct {
		name string
		tune func(*Config)
		want []string
		not  []string
	}{{
		name: "defaults",
		want: []string{
			".:10053 {\n",
			"    ready 127.0.0.1:18181\n",
			"    health 127.0.0.1:18080\n",
			"    kubernetes cluster.local in-addr.arpa ip6.arpa {\n" +
				"        kubeconfig /k/coredns.kubeconfig coredns\n" +
				"        pods insecure\n" +
				"        fallthrough in-addr.arpa ip6.arpa\n" +
				"        ttl 30\n    }\n",
			"    cache 30 {\n        disable success cluster.local\n        disable denial cluster.local\n    }\n", "    loop\n", "    reload\n", "    errors\n",
		},
		not: []string{"bind", "forward", "acl", "prometheus"},
	}, {
		name: "bound, upstream, acl, no health",
		tune: func(c *Config) {
			c.Listen, c.Upstream, c.HealthAddress, c.ReadyAddress = "127.0.0.1:5353", "/etc/resolv.conf", "-", "127.0.0.1:9"
			c.AllowNets, c.ClusterDomain = []string{"10.244.0.0/16", "127.0.0.0/8"}, "example.internal"
			c.MetricsAddress = "127.0.0.1:9153"
		},
		want: []string{
			"    prometheus 127.0.0.1:9153\n",
			".:5353 {\n", "    bind 127.0.0.1\n", "    ready 127.0.0.1:9\n", "    forward . /etc/resolv.conf\n",
			"    acl {\n        allow net 10.244.0.0/16 127.0.0.0/8\n        block\n    }\n",
			"    kubernetes example.internal in-addr.arpa ip6.arpa {\n",
		},
		not: []string{"health"},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := testConfig(t)
			if tc.tune != nil {
				tc.tune(&cfg)
			}
			if err := cfg.complete(); err != nil {
				t.Fatal(err)
			}
			got := corefile(cfg, "/k/coredns.kubeconfig")
			for _, w := range tc.want {
				if !strings.Contains(got, w) {
					t.Errorf("Corefile lacks %q:\n%s", w, got)
				}
			}
			for _, n := range tc.not {
				if strings.Contains(got, n) {
					t.Errorf("Corefile has %q:\n%s", n, got)
				}
			}
			if !strings.HasSuffix(got, "}\n") || strings.Count(got, "{") != strings.Count(got, "}") {
				t.Errorf("unbalanced Corefile:\n%s", got)
			}
		})
	}
}

func TestWriteFiles(t *testing.T) {
	s, err := New(testConfig(t))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.writeFiles(); err != nil {
		t.Fatal(err)
	}
	kc, err := clientcmd.LoadFromFile(s.kubeconfigPath)
	if err != nil {
		t.Fatal(err)
	}
	ctx := kc.Contexts[kubeconfigContext]
	if ctx == nil || kc.CurrentContext != kubeconfigContext {
		t.Fatalf("kubeconfig context %q missing: %+v", kubeconfigContext, kc)
	}
	if c := kc.Clusters[ctx.Cluster]; c == nil || c.Server != "https://127.0.0.1:6443" || string(c.CertificateAuthorityData) != "ca" {
		t.Errorf("cluster = %+v", c)
	}
	if u := kc.AuthInfos[ctx.AuthInfo]; u == nil || string(u.ClientCertificateData) != "cert" || string(u.ClientKeyData) != "key" || ctx.AuthInfo != User {
		t.Errorf("user %q = %+v", ctx.AuthInfo, u)
	}
	corefile, err := os.ReadFile(filepath.Join(s.cfg.Dir, "Corefile"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(corefile), "kubeconfig "+s.kubeconfigPath+" "+kubeconfigContext+"\n") {
		t.Errorf("Corefile does not name the kubeconfig:\n%s", corefile)
	}
	if st, _ := os.Stat(s.kubeconfigPath); st.Mode().Perm() != 0o600 {
		t.Errorf("kubeconfig mode %v, want 0600", st.Mode().Perm())
	}
}

func TestNewValidates(t *testing.T) {
	for name, tune := range map[string]func(*Config){
		"no dir":        func(c *Config) { c.Dir = "" },
		"no credential": func(c *Config) { c.KeyPEM = nil },
		"bad listen":    func(c *Config) { c.Listen = "10053" },
	} {
		t.Run(name, func(t *testing.T) {
			cfg := testConfig(t)
			tune(&cfg)
			if _, err := New(cfg); err == nil {
				t.Error("New accepted a bad config")
			}
		})
	}
}

func TestAddresses(t *testing.T) {
	for _, tc := range []struct{ cidr, want string }{
		{"10.96.0.0/12", "10.96.0.10"}, {"172.20.0.0/16", "172.20.0.10"}, {"fd00:10:96::/108", "fd00:10:96::a"},
	} {
		got, err := ServiceIP(tc.cidr)
		if err != nil || got.String() != tc.want {
			t.Errorf("ServiceIP(%s) = %v, %v; want %s", tc.cidr, got, err, tc.want)
		}
	}
	if _, err := ServiceIP("10.96.0.0/30"); err == nil {
		t.Error("ServiceIP of a /30 should fail")
	}
}

func TestStartRestartsAndStops(t *testing.T) {
	cfg := testConfig(t)
	runs := filepath.Join(cfg.Dir, "runs")
	script := filepath.Join(t.TempDir(), "coredns")
	// Exits at once twice, then stays up until signalled.
	body := "#!/bin/sh\necho run >> " + runs + "\n[ $(wc -l < " + runs + ") -ge 3 ] && exec sleep 60\nexit 1\n"
	if err := os.WriteFile(script, []byte(body), 0o755); err != nil {
		t.Fatal(err)
	}
	cfg.Binary, cfg.RestartBackoff = script, 10*time.Millisecond
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Start(ctx) }()
	deadline := time.Now().Add(10 * time.Second)
	for {
		data, _ := os.ReadFile(runs)
		if strings.Count(string(data), "run") >= 3 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("restarts: %q", data)
		}
		time.Sleep(10 * time.Millisecond)
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Start did not return after ctx ended")
	}
}

// kube-dns carries CoreDNS's metrics port and Prometheus' annotations
// (naming the port on the host) only when CoreDNS serves metrics.
func TestKubeDNSMetrics(t *testing.T) {
	ip := netip.MustParseAddr("10.96.0.10")
	svc := KubeDNS(ip, 10053, 19153)
	if len(svc.Ports) != 3 || svc.Ports[2].Name != MetricsPortName || svc.Ports[2].Port != 9153 || svc.Ports[2].TargetPort != 19153 ||
		svc.Ports[2].Protocol != corev1.ProtocolTCP {
		t.Errorf("ports = %+v", svc.Ports)
	}
	if svc.Annotations["prometheus.io/scrape"] != "true" || svc.Annotations["prometheus.io/port"] != "19153" {
		t.Errorf("annotations = %v", svc.Annotations)
	}
	off := KubeDNS(ip, 10053, 0)
	if len(off.Ports) != 2 || off.Annotations["prometheus.io/scrape"] != "false" {
		t.Errorf("without metrics: ports %+v, annotations %v", off.Ports, off.Annotations)
	}
}
