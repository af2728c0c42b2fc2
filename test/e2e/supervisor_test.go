package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	minik8sv1 "github.com/minik8s/minik8s/pkg/apis/minik8s/v1"
	"github.com/minik8s/minik8s/pkg/controlplane"
	"github.com/minik8s/minik8s/pkg/dns"
	"github.com/minik8s/minik8s/pkg/gateway"
)

// addonsEnv names the file of an addonsConfig: with it set, the test
// binary runs TestHelperAddons as the process that runs the add-ons.
const addonsEnv = "MINIK8S_E2E_ADDONS_CONFIG"

// addonsConfig is what the add-ons process runs: the gateway and CoreDNS
// on loopback, as `minik8s up` runs them beside the control plane.
type addonsConfig struct {
	Kubeconfig  string
	GatewayDir  string
	GatewayPort int
	DNS         dns.Config // the JSON-encodable part
}

// TestHelperAddons is not a test: it is the process that
// TestAddonsEndWithTheirProcess starts and SIGKILLs. It runs the gateway
// (nginx) and CoreDNS until it is killed.
func TestHelperAddons(t *testing.T) {
	path := os.Getenv(addonsEnv)
	if path == "" {
		t.Skip("the add-ons process of TestAddonsEndWithTheirProcess")
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var cfg addonsConfig
	if err := json.Unmarshal(b, &cfg); err != nil {
		t.Fatal(err)
	}
	rc, err := clientcmd.BuildConfigFromFlags("", cfg.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, nil))
	gw, err := gateway.New(gateway.Config{Client: kubernetes.NewForConfigOrDie(rc), Dynamic: dynamic.NewForConfigOrDie(rc),
		Dir: cfg.GatewayDir, Port: cfg.GatewayPort, Address: netip.MustParseAddr("127.0.0.1"), AllowNets: []string{"127.0.0.0/8"}, Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	cfg.DNS.HostsFile, cfg.DNS.Logger = gw.HostsFile(), log
	srv, err := dns.New(cfg.DNS)
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = gw.Start(context.Background()) }()
	_ = srv.Start(context.Background()) // until SIGKILLed
}

// TestAddonsEndWithTheirProcess: kill -9 of the process that runs the
// gateway's nginx and CoreDNS (minik8s up) leaves none of their processes
// behind, nginx's workers included; when some are left all the same (the
// supervisor's watchdogs were killed too), the next run ends them before
// it starts its own, binds the gateway's port and serves the routes of
// now. A DNSRecord is Routed only while its routes are really served:
// not while something else holds the gateway's port.
func TestAddonsEndWithTheirProcess(t *testing.T) {
	if _, err := gateway.FindNginx(); err != nil {
		t.Skipf("needs nginx (make deps installs it): %v", err)
	}
	if _, err := dns.FindBinary(); err != nil {
		t.Skipf("needs coredns (make deps installs it): %v", err)
	}
	// Services get loopback clusterIPs, so that nginx reaches a Service
	// without a node's proxy: the test's server at the clusterIP is the
	// Service's endpoint.
	c := controlPlaneOnly(t, func(cfg *controlplane.Config) { cfg.ServiceCIDR = "127.77.0.0/16" })
	backend, err := net.Listen("tcp", "127.77.0.20:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		_ = http.Serve(backend, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprintf(w, "app %s\n", r.URL.Path) }))
	}()
	defer backend.Close()
	appPort := backend.Addr().(*net.TCPAddr).Port
	c.apply(fmt.Sprintf(`apiVersion: v1
kind: Service
metadata: {name: app}
spec:
  clusterIP: 127.77.0.20
  ports: [{port: %d}]
---
apiVersion: minik8s.io/v1
kind: DNSRecord
metadata: {name: web}
spec:
  host: web.test
  paths: [{path: /one, service: app, port: %[1]d}]
`, appPort))

	dir := t.TempDir()
	cfg := addonsConfig{Kubeconfig: c.cp.KubeconfigPath, GatewayDir: filepath.Join(dir, "gateway"), GatewayPort: freeUDPTCPPort(t),
		DNS: dns.Config{Dir: filepath.Join(dir, "dns"), Listen: net.JoinHostPort("127.0.0.1", strconv.Itoa(freeUDPTCPPort(t))),
			ReadyAddress: net.JoinHostPort("127.0.0.1", strconv.Itoa(freeUDPTCPPort(t))), HealthAddress: "-", Upstream: "-",
			AllowNets: []string{"127.0.0.0/8"}}}
	if err := dns.IssueCredentials(&cfg.DNS, c.cp.URL, c.cp.Bundle); err != nil {
		t.Fatal(err)
	}
	cfgPath := filepath.Join(dir, "addons.json")
	b, err := json.Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(cfgPath, b, 0o600); err != nil {
		t.Fatal(err)
	}
	gatewayAddr := net.JoinHostPort("127.0.0.1", strconv.Itoa(cfg.GatewayPort))
	dyn := dynamic.NewForConfigOrDie(c.config)
	routed := func(what string, generation int64, want string) {
		t.Helper()
		c.waitFor(time.Minute, what, func(ctx context.Context) (bool, error) {
			u, err := dyn.Resource(gateway.DNSRecords).Namespace("default").Get(ctx, "web", metav1.GetOptions{})
			if err != nil {
				return false, nil
			}
			var rec minik8sv1.DNSRecord
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &rec); err != nil {
				return false, err
			}
			cond := meta.FindStatusCondition(rec.Status.Conditions, gateway.ConditionReady)
			return cond != nil && cond.ObservedGeneration >= generation && cond.Reason == want, nil
		})
	}
	serves := func(path, want string) {
		t.Helper()
		c.waitFor(time.Minute, "web.test"+path+" through the gateway", func(context.Context) (bool, error) {
			body, err := httpFetch("", gatewayAddr, "web.test", path)
			return err == nil && body == want, nil
		})
	}

	// A DNSRecord is not Routed while another server holds the gateway's
	// port; it is once nginx binds.
	squatter, err := net.Listen("tcp", gatewayAddr)
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		_ = http.Serve(squatter, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { fmt.Fprintln(w, "squatter") }))
	}()
	run := startAddons(t, cfgPath)
	routed("the record NotServing", 1, "NotServing")
	_ = squatter.Close() // nginx binds at its next restart
	routed("the record Routed", 1, "Routed")
	serves("/one", "app /\n") // no trailing slash, no redirect
	serves("/one/x", "app /x\n")

	// kill -9 leaves nothing running.
	procs := run.running(t)
	run.kill9(t)
	waitGone(t, procs)
	if body, err := httpFetch("", gatewayAddr, "web.test", "/one"); err == nil {
		t.Errorf("the gateway's port still answers %q", body)
	}

	// A restart ends leftovers, binds and serves the routes of now.
	run = startAddons(t, cfgPath)
	run.running(t)
	serves("/one", "app /\n") // nginx reloaded with the record's routes
	// Leftovers, as there were before the watchdogs: with them killed
	// first, nginx's workers outlive their SIGKILLed master.
	for _, p := range run.descendants(t, "minik8s-supervisor-watchdog") {
		_ = syscall.Kill(p.pid, syscall.SIGKILL)
	}
	workers := run.descendants(t, "nginx: worker")
	run.kill9(t)
	time.Sleep(time.Second)
	if alive(workers) == nil {
		t.Fatal("no leftover nginx worker to test with")
	}
	serves("/one", "app /\n") // the orphan serves the old routes

	c.apply(fmt.Sprintf(`apiVersion: minik8s.io/v1
kind: DNSRecord
metadata: {name: web}
spec:
  host: web.test
  paths: [{path: /two, service: app, port: %d}]
`, appPort))
	run = startAddons(t, cfgPath)
	routed("the changed record Routed", 2, "Routed")
	serves("/two/y", "app /y\n")
	if err := alive(workers); err != nil {
		t.Errorf("the restart left the earlier run's workers: %v", err)
	}
	if body, err := httpFetch("", gatewayAddr, "web.test", "/one"); err == nil {
		t.Errorf("the old route still answers %q", body)
	}
	c.waitFor(time.Minute, "CoreDNS serving the record's name", func(context.Context) (bool, error) {
		ip, err := lookupA(cfg.DNS.Listen, "web.test")
		return err == nil && strings.HasPrefix(ip, "127.77."), nil
	})

	procs = run.running(t)
	run.kill9(t)
	waitGone(t, procs)
}

// controlPlaneOnly is a cluster without nodes: a control plane in the
// test process, on loopback.
func controlPlaneOnly(t *testing.T, tune func(*controlplane.Config)) *cluster {
	t.Helper()
	logs, err := os.Create(filepath.Join(t.TempDir(), "cluster.log"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = logs.Close() })
	c := &cluster{t: t, logs: logs, nodes: map[string]*testNode{}}
	c.startControlPlane(tune)
	return c
}

// addonsRun is one add-ons process.
type addonsRun struct {
	cmd *exec.Cmd
	log string
	// seen are its descendants found so far, to end when the test ends.
	seen []psEntry
}

// startAddons starts TestHelperAddons in a new process; every process
// it leaves is SIGKILLed when the test ends.
func startAddons(t *testing.T, cfgPath string) *addonsRun {
	t.Helper()
	log, err := os.CreateTemp(filepath.Dir(cfgPath), "addons-*.log")
	if err != nil {
		t.Fatal(err)
	}
	defer log.Close()
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperAddons$", "-test.count=1")
	cmd.Env = append(os.Environ(), addonsEnv+"="+cfgPath)
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	r := &addonsRun{cmd: cmd, log: log.Name()}
	t.Cleanup(func() {
		if t.Failed() {
			tail, _ := exec.Command("tail", "-n", "40", r.log).Output()
			t.Logf("last lines of %s:\n%s", r.log, tail)
		}
		r.descendants(t)
		if cmd.ProcessState == nil {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		}
		for _, p := range r.seen {
			if alive([]psEntry{p}) != nil {
				_ = syscall.Kill(p.pid, syscall.SIGKILL)
			}
		}
	})
	return r
}

// running waits until nginx (master and worker), CoreDNS and their
// watchdogs run, and returns them.
func (r *addonsRun) running(t *testing.T) []psEntry {
	t.Helper()
	var procs []psEntry
	deadline := time.Now().Add(time.Minute)
	for {
		procs = r.descendants(t, "nginx: master", "nginx: worker", "coredns", "minik8s-supervisor-watchdog")
		n := map[string]int{}
		for _, p := range procs {
			for _, w := range []string{"nginx: master", "nginx: worker", "coredns", "watchdog"} {
				if strings.Contains(p.args, w) {
					n[w]++
				}
			}
		}
		if n["nginx: master"] == 1 && n["nginx: worker"] >= 1 && n["coredns"] == 1 && n["watchdog"] == 2 {
			return procs
		}
		if time.Now().After(deadline) {
			t.Fatalf("the add-ons are not all running after a minute: %v", procs)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// kill9 SIGKILLs the add-ons process.
func (r *addonsRun) kill9(t *testing.T) {
	t.Helper()
	if err := r.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = r.cmd.Wait()
}

// psEntry is one process as ps shows it.
type psEntry struct {
	pid, ppid int
	args      string
}

// psLive lists every process but zombies.
func psLive() ([]psEntry, error) {
	out, err := exec.Command("ps", "-e", "-o", "pid=,ppid=,stat=,args=").Output()
	if err != nil {
		return nil, fmt.Errorf("ps: %w", err)
	}
	var ps []psEntry
	for line := range strings.Lines(string(out)) {
		f := strings.Fields(line)
		if len(f) < 4 || strings.HasPrefix(f[2], "Z") {
			continue
		}
		pid, _ := strconv.Atoi(f[0])
		ppid, _ := strconv.Atoi(f[1])
		ps = append(ps, psEntry{pid: pid, ppid: ppid, args: strings.Join(f[3:], " ")})
	}
	return ps, nil
}

// descendants are the live processes the add-ons process started, and
// theirs, whose command line contains one of want (all when none).
func (r *addonsRun) descendants(t *testing.T, want ...string) []psEntry {
	t.Helper()
	ps, err := psLive()
	if err != nil {
		t.Fatal(err)
	}
	ours := map[int]bool{r.cmd.Process.Pid: true}
	for grew := true; grew; {
		grew = false
		for _, p := range ps {
			if ours[p.ppid] && !ours[p.pid] {
				ours[p.pid], grew = true, true
			}
		}
	}
	var out []psEntry
	for _, p := range ps {
		if !ours[p.pid] || p.pid == r.cmd.Process.Pid {
			continue
		}
		r.seen = append(r.seen, p)
		for _, w := range want {
			if strings.Contains(p.args, w) {
				out = append(out, p)
				break
			}
		}
		if len(want) == 0 {
			out = append(out, p)
		}
	}
	return out
}

// alive is an error naming those of procs that still run (same pid,
// same command line, not a zombie), nil when none does.
func alive(procs []psEntry) error {
	ps, err := psLive()
	if err != nil {
		return err
	}
	var left []string
	for _, q := range ps {
		for _, p := range procs {
			if p.pid == q.pid && p.args == q.args {
				left = append(left, fmt.Sprintf("%d %s", p.pid, p.args))
			}
		}
	}
	if len(left) == 0 {
		return nil
	}
	return errors.New(strings.Join(left, "; "))
}

// waitGone fails unless every one of procs has ended within 5s.
func waitGone(t *testing.T, procs []psEntry) {
	t.Helper()
	if len(procs) == 0 {
		t.Fatal("no processes to watch")
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		err := alive(procs)
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("still running 5s after their supervisor's SIGKILL: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
