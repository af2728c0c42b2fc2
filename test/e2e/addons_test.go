package e2e

import (
	"context"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"github.com/minik8s/minik8s/pkg/controlplane"
	"github.com/minik8s/minik8s/pkg/dns"
	"github.com/minik8s/minik8s/pkg/gateway"
	"github.com/minik8s/minik8s/pkg/hostservice"
)

// clusterDNSIP is kube-dns's clusterIP in the default service CIDR.
const clusterDNSIP = "10.96.0.10"

// serviceCIDR is the control plane's default service range.
const serviceCIDR = "10.96.0.0/12"

// newClusterWithAddons is newCluster plus the add-ons `minik8s up` runs:
// the gateway's nginx on the first node (in its namespace, reached at
// its pod gateway, as on a single-node cluster) and CoreDNS on the host,
// reached by pods at the host's LAN address and serving the gateway's
// names. Kubelets give pods kube-dns as their nameserver.
func newClusterWithAddons(t *testing.T, n int) *cluster {
	t.Helper()
	if _, err := dns.FindBinary(); err != nil {
		t.Skipf("needs coredns (make deps installs it): %v", err)
	}
	if _, err := gateway.FindNginx(); err != nil {
		t.Skipf("needs nginx (make deps installs it): %v", err)
	}
	// The apiserver on every address, so pods reach it as default/kubernetes.
	c := startCluster(t, n, func(cfg *controlplane.Config) { cfg.BindAddress = "0.0.0.0" }, true)
	first := c.nodes[c.tag+"-n1"]
	client := kubernetes.NewForConfigOrDie(c.config)
	dyn := dynamic.NewForConfigOrDie(c.config)
	nets := []string{controlplane.DefaultClusterCIDR, c.lan.prefix.String(), "127.0.0.0/8"}

	gwDir := t.TempDir()
	gw, err := gateway.New(gateway.Config{Client: client, Dynamic: dyn, Dir: gwDir, NetNS: first.netns,
		NodeName: first.name, AllowNets: nets, Logger: c.logger()})
	if err != nil {
		t.Fatal(err)
	}
	// The host's LAN address: pods reach it masqueraded as their node.
	hostAddr := c.lan.gateway
	u, err := url.Parse(c.cp.URL)
	if err != nil {
		t.Fatal(err)
	}
	port, _ := strconv.Atoi(u.Port())
	apiService, err := controlplane.KubernetesService(serviceCIDR, int32(port))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{}, 3)
	go func() {
		defer func() { done <- struct{}{} }()
		_ = hostservice.Publish(ctx, hostservice.PublishConfig{Client: client, Service: apiService, Address: hostAddr, Logger: c.logger()})
	}()
	go func() {
		defer func() { done <- struct{}{} }()
		if err := gw.Start(ctx); err != nil {
			t.Errorf("gateway: %v", err)
		}
	}()
	go func() {
		defer func() { done <- struct{}{} }()
		err := dns.RunOnHost(ctx, dns.HostConfig{
			DataDir: t.TempDir(), APIServer: c.cp.URL, Bundle: c.cp.Bundle, Client: client, Address: hostAddr,
			ServiceCIDR: serviceCIDR, ClusterCIDR: controlplane.DefaultClusterCIDR, AllowNets: nets[1:2],
			HostsFile: gw.HostsFile(), Port: freeUDPTCPPort(t), Logger: c.logger(),
		})
		if err != nil {
			t.Errorf("cluster DNS: %v", err)
		}
	}()
	// Registered after the cluster's teardown, so it runs first.
	t.Cleanup(func() {
		cancel()
		<-done
		<-done
		<-done
		if t.Failed() {
			for _, f := range []string{"error.log", "nginx.conf"} {
				b, _ := os.ReadFile(filepath.Join(gwDir, f))
				t.Logf("gateway %s:\n%s", f, b)
			}
		}
	})
	for _, svc := range []struct{ ns, name string }{{"default", "kubernetes"}, {"kube-system", "kube-dns"}, {"kube-system", gateway.ServiceName}} {
		c.waitFor(time.Minute, "service "+svc.ns+"/"+svc.name, func(ctx context.Context) (bool, error) {
			_, err := client.DiscoveryV1().EndpointSlices(svc.ns).Get(ctx, hostservice.SliceName(svc.name), metav1.GetOptions{})
			return err == nil, nil
		})
	}
	return c
}

// freeUDPTCPPort is a port free on the host for both TCP and UDP.
func freeUDPTCPPort(t *testing.T) int {
	t.Helper()
	for range 20 {
		ln, err := net.Listen("tcp", ":0")
		if err != nil {
			t.Fatal(err)
		}
		port := ln.Addr().(*net.TCPAddr).Port
		pc, err := net.ListenPacket("udp", ":"+strconv.Itoa(port))
		_ = ln.Close()
		if err == nil {
			_ = pc.Close()
			return port
		}
	}
	t.Fatal("no port free for both TCP and UDP")
	return 0
}
