package integration

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/minik8s/minik8s/pkg/dns"
)

// TestDNSWithCoreDNS runs the real CoreDNS binary against the apiserver
// and resolves Services through it: proof that our Services,
// EndpointSlices, list/watch and field selectors serve CoreDNS's
// kubernetes plugin. CI installs coredns with hack/install-deps.sh.
func TestDNSWithCoreDNS(t *testing.T) {
	binary, err := dns.FindBinary()
	if err != nil {
		t.Skipf("no coredns binary (hack/install-deps.sh installs it, CI has it): %v", err)
	}
	c := startCluster(t)
	ctx := ctxT(t)

	// A ClusterIP Service with named ports, and a headless one whose
	// endpoints come from a hand-made EndpointSlice.
	web, err := c.client.CoreV1().Services("default").Create(ctx, &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{
			{Name: "http", Protocol: corev1.ProtocolTCP, Port: 80, TargetPort: intstr.FromInt32(8080)},
			{Name: "dns", Protocol: corev1.ProtocolUDP, Port: 53},
		}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.client.CoreV1().Services("default").Create(ctx, &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "db"},
		Spec: corev1.ServiceSpec{ClusterIP: corev1.ClusterIPNone,
			Ports: []corev1.ServicePort{{Name: "pg", Protocol: corev1.ProtocolTCP, Port: 5432}}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	slice := &discoveryv1.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{Name: "db-1", Labels: map[string]string{
			discoveryv1.LabelServiceName: "db", discoveryv1.LabelManagedBy: "dns-test"}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Endpoints: []discoveryv1.Endpoint{
			{Addresses: []string{"10.244.1.5"}, Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true)}},
			{Addresses: []string{"10.244.2.6"}, Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true)}, Hostname: ptr.To("db-0")},
		},
		Ports: []discoveryv1.EndpointPort{{Name: ptr.To("pg"), Protocol: ptr.To(corev1.ProtocolTCP), Port: ptr.To[int32](5432)}},
	}
	if slice, err = c.client.DiscoveryV1().EndpointSlices("default").Create(ctx, slice, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	// Created before CoreDNS starts, so that no early NXDOMAIN is cached.
	if _, err := c.client.CoreV1().Services("default").Create(ctx, &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "ext"},
		Spec:       corev1.ServiceSpec{Type: corev1.ServiceTypeExternalName, ExternalName: "db.example.org"},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	addr := freeDNSAddr(t)
	hosts := filepath.Join(t.TempDir(), "hosts")
	if err := os.WriteFile(hosts, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	cfg := dns.Config{
		Binary: binary, Dir: t.TempDir(), Listen: addr, ReadyAddress: freeLoopbackTCP(t), HealthAddress: "-", Upstream: "-",
		HostsFile: hosts,
	}
	if err := dns.IssueCredentials(&cfg, c.cp.URL, c.cp.Bundle); err != nil {
		t.Fatal(err)
	}
	srv, err := dns.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	runCtx, stop := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Start(runCtx) }()
	t.Cleanup(func() {
		stop()
		if err := <-done; err != nil {
			t.Errorf("coredns: %v", err)
		}
		if t.Failed() || testing.Verbose() {
			if out, err := os.ReadFile(srv.LogPath()); err == nil {
				t.Logf("coredns log:\n%s", out)
			}
		}
	})
	if err := srv.WaitReady(ctx); err != nil {
		t.Fatal(err)
	}
	r := &net.Resolver{PreferGo: true, Dial: func(ctx context.Context, network, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, network, addr)
	}}

	t.Run("A of a ClusterIP service", func(t *testing.T) {
		dnsEventually(t, func() error {
			return wantHosts(ctx, r, "web.default.svc.cluster.local.", web.Spec.ClusterIP)
		})
	})
	t.Run("headless service returns its endpoints", func(t *testing.T) {
		dnsEventually(t, func() error { return wantHosts(ctx, r, "db.default.svc.cluster.local.", "10.244.1.5", "10.244.2.6") })
		dnsEventually(t, func() error { return wantHosts(ctx, r, "db-0.db.default.svc.cluster.local.", "10.244.2.6") })
	})
	t.Run("SRV of a named port", func(t *testing.T) {
		dnsEventually(t, func() error {
			_, srvs, err := r.LookupSRV(ctx, "http", "tcp", "web.default.svc.cluster.local.")
			if err != nil {
				return err
			}
			if len(srvs) != 1 || srvs[0].Port != 80 || srvs[0].Target != "web.default.svc.cluster.local." {
				return errors.New("SRV _http._tcp.web = " + srvString(srvs))
			}
			_, srvs, err = r.LookupSRV(ctx, "dns", "udp", "web.default.svc.cluster.local.")
			if err != nil || len(srvs) != 1 || srvs[0].Port != 53 {
				return errors.Join(err, errors.New("SRV _dns._udp.web = "+srvString(srvs)))
			}
			return nil
		})
	})
	t.Run("ExternalName is a CNAME", func(t *testing.T) {
		dnsEventually(t, func() error {
			cname, err := r.LookupCNAME(ctx, "ext.default.svc.cluster.local.")
			if err == nil && cname != "db.example.org." {
				err = fmt.Errorf("CNAME of ext = %q, want db.example.org.", cname)
			}
			return err
		})
	})
	t.Run("NXDOMAIN for a missing name", func(t *testing.T) {
		for _, name := range []string{"missing.default.svc.cluster.local.", "web.nosuchns.svc.cluster.local."} {
			_, err := r.LookupHost(ctx, name)
			var dnsErr *net.DNSError
			if !errors.As(err, &dnsErr) || !dnsErr.IsNotFound {
				t.Errorf("lookup %s: %v, want not found", name, err)
			}
		}
	})
	t.Run("names of the hosts file come and go", func(t *testing.T) {
		// As the gateway writes them: its clusterIP for each record's host.
		if err := os.WriteFile(hosts, []byte("10.96.0.77 minik8s.com\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		dnsEventually(t, func() error { return wantHosts(ctx, r, "minik8s.com.", "10.96.0.77") })
		if err := os.WriteFile(hosts, nil, 0o644); err != nil {
			t.Fatal(err)
		}
		dnsEventually(t, func() error {
			if got, err := r.LookupHost(ctx, "minik8s.com."); err == nil {
				return fmt.Errorf("minik8s.com still resolves to %v", got)
			}
			return nil
		})
	})
	t.Run("changes arrive by watch", func(t *testing.T) {
		// Names not asked before, so that CoreDNS's cache (30s) does not
		// answer for its view of the cluster.
		late, err := c.client.CoreV1().Services("default").Create(ctx, &corev1.Service{
			ObjectMeta: metav1.ObjectMeta{Name: "late"},
			Spec:       corev1.ServiceSpec{Ports: []corev1.ServicePort{{Name: "http", Port: 80}}},
		}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		slice.Endpoints = append(slice.Endpoints, discoveryv1.Endpoint{
			Addresses: []string{"10.244.3.7"}, Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true)}, Hostname: ptr.To("db-1")})
		if _, err := c.client.DiscoveryV1().EndpointSlices("default").Update(ctx, slice, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		dnsEventually(t, func() error { return wantHosts(ctx, r, "late.default.svc.cluster.local.", late.Spec.ClusterIP) })
		dnsEventually(t, func() error { return wantHosts(ctx, r, "db-1.db.default.svc.cluster.local.", "10.244.3.7") })
	})
}

func wantHosts(ctx context.Context, r *net.Resolver, name string, want ...string) error {
	got, err := r.LookupHost(ctx, name)
	if err != nil {
		return err
	}
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		return fmt.Errorf("%s = %v, want %v", name, got, want)
	}
	return nil
}

func srvString(srvs []*net.SRV) string {
	var s []string
	for _, r := range srvs {
		s = append(s, net.JoinHostPort(r.Target, strconv.Itoa(int(r.Port))))
	}
	return fmt.Sprint(s)
}

func dnsEventually(t *testing.T, f func() error) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		err := f()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal(err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// freeDNSAddr is a 127.0.0.1 port free for both TCP and UDP.
func freeDNSAddr(t *testing.T) string {
	t.Helper()
	for range 20 {
		addr := freeLoopbackTCP(t)
		if pc, err := net.ListenPacket("udp", addr); err == nil {
			_ = pc.Close()
			return addr
		}
	}
	t.Fatal("no port free for both TCP and UDP")
	return ""
}

func freeLoopbackTCP(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}
