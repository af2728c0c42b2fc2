package integration

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"

	"github.com/minik8s/minik8s/pkg/controlplane"
	"github.com/minik8s/minik8s/pkg/storage/etcd"
)

// The environment of the etcd process TestEtcdOutage runs: this test
// binary again, running only TestHelperEtcdProcess.
const (
	etcdHelperDir = "MINIK8S_TEST_ETCD_DIR"
	etcdHelperURL = "MINIK8S_TEST_ETCD_URL"
)

// TestHelperEtcdProcess is not a test of its own: it is the external etcd
// of TestEtcdOutage, in a process of its own so that it can be stopped
// (SIGSTOP) and killed. It prints its endpoint and serves until killed.
func TestHelperEtcdProcess(t *testing.T) {
	dir := os.Getenv(etcdHelperDir)
	if dir == "" {
		t.Skip("the etcd process of TestEtcdOutage")
	}
	e, err := etcd.StartEmbedded(context.Background(), etcd.EmbedConfig{Dir: dir, ClientURL: os.Getenv(etcdHelperURL)})
	if err != nil {
		fmt.Printf("ERROR %v\n", err)
		os.Exit(1)
	}
	fmt.Printf("ENDPOINT %s\n", e.Endpoint)
	err = <-e.Err()
	fmt.Printf("ERROR %v\n", err)
	os.Exit(1)
}

// etcdProcess is a running TestHelperEtcdProcess.
type etcdProcess struct {
	t        *testing.T
	cmd      *exec.Cmd
	endpoint string
	exited   chan struct{}
}

// startEtcdProcess runs etcd on dir, at clientURL (empty: a free port),
// and waits until it serves.
func startEtcdProcess(t *testing.T, dir, clientURL string) *etcdProcess {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperEtcdProcess$", "-test.timeout=0")
	cmd.Env = append(os.Environ(), etcdHelperDir+"="+dir, etcdHelperURL+"="+clientURL)
	cmd.Stderr = os.Stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &etcdProcess{t: t, cmd: cmd, exited: make(chan struct{})}
	lines := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if line := sc.Text(); strings.HasPrefix(line, "ENDPOINT ") || strings.HasPrefix(line, "ERROR ") {
				select {
				case lines <- line:
				default:
				}
			}
		}
		_ = cmd.Wait()
		close(p.exited)
	}()
	t.Cleanup(p.kill)
	select {
	case line := <-lines:
		endpoint, ok := strings.CutPrefix(line, "ENDPOINT ")
		if !ok {
			t.Fatalf("etcd process: %s", line)
		}
		p.endpoint = endpoint
	case <-p.exited:
		t.Fatal("etcd process exited before serving")
	case <-time.After(60 * time.Second):
		t.Fatal("etcd process not serving after 60s")
	}
	return p
}

// freeze stops the process (SIGSTOP): its connections stay open and
// nothing answers on them. It returns once the process is stopped.
func (p *etcdProcess) freeze() {
	p.t.Helper()
	if err := p.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		p.t.Fatalf("stop etcd: %v", err)
	}
	stat := fmt.Sprintf("/proc/%d/stat", p.cmd.Process.Pid)
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(time.Millisecond) {
		// The state follows the command name in parentheses: "T" is stopped.
		data, err := os.ReadFile(stat)
		if i := strings.LastIndexByte(string(data), ')'); err == nil && i >= 0 && strings.HasPrefix(string(data[i+1:]), " T") {
			return
		}
		if time.Now().After(deadline) {
			p.t.Fatalf("etcd not stopped 10s after SIGSTOP: %s %v", data, err)
		}
	}
}

func (p *etcdProcess) thaw() {
	p.t.Helper()
	if err := p.cmd.Process.Signal(syscall.SIGCONT); err != nil {
		p.t.Fatalf("continue etcd: %v", err)
	}
}

// kill ends the process at once, as a crash would, and waits for it.
func (p *etcdProcess) kill() {
	_ = p.cmd.Process.Kill()
	<-p.exited
}

// An external etcd that stops answering (frozen by SIGSTOP, then killed and
// restarted on the same data and port) neither hangs requests nor the
// clients: get, list and create answer 503 with a Retry-After within
// seconds, /readyz names etcd, and once etcd is back a create succeeds, an
// informer that was watching all along sees the new object, and the
// controller manager turns a new Deployment into a ReplicaSet.
func TestEtcdOutage(t *testing.T) {
	dir := t.TempDir()
	proc := startEtcdProcess(t, dir, "")
	c := startClusterWith(t, func(cfg *controlplane.Config) { cfg.EtcdServers = []string{proc.endpoint} })
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	rc := newRawClient(t, c)
	hc := *rc.http
	hc.Timeout = 15 * time.Second // a request that hangs fails the test
	rc.http = &hc

	factory := informers.NewSharedInformerFactoryWithOptions(c.client, 0, informers.WithNamespace("default"))
	lister := factory.Core().V1().ConfigMaps().Lister().ConfigMaps("default")
	factory.Start(ctx.Done())
	defer func() {
		cancel() // ends the informers Shutdown waits for
		factory.Shutdown()
	}()
	for typ, ok := range factory.WaitForCacheSync(ctx.Done()) {
		if !ok {
			t.Fatalf("informer for %v did not sync", typ)
		}
	}
	const cmPath = "/api/v1/namespaces/default/configmaps"
	jsonCT := map[string]string{"Content-Type": "application/json"}
	cmBody := func(name string) []byte {
		return mustJSON(t, &corev1.ConfigMap{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"}, ObjectMeta: metav1.ObjectMeta{Name: name}})
	}
	informed := func(name string, since time.Time) time.Duration {
		t.Helper()
		for deadline := time.Now().Add(60 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
			if _, err := lister.Get(name); err == nil {
				return time.Since(since)
			}
		}
		t.Fatalf("the informer has not seen %s 60s after etcd came back", name)
		return 0
	}
	if r := rc.do(ctx, "POST", cmPath, cmBody("before"), jsonCT); r.code != http.StatusCreated {
		t.Fatalf("create before the outage: %d %s", r.code, r.body)
	}
	informed("before", time.Now())

	// outage checks what the API answers while etcd does not.
	outage := func(how, name string) {
		t.Helper()
		for _, req := range []struct {
			method, path string
			body         []byte
		}{
			{"GET", cmPath + "/before", nil}, // the first waits for the health checks to notice
			{"GET", cmPath, nil},
			{"POST", cmPath, cmBody(name)},
		} {
			start := time.Now()
			r := rc.do(ctx, req.method, req.path, req.body, jsonCT)
			if r.code != http.StatusServiceUnavailable || r.header.Get("Retry-After") == "" {
				t.Fatalf("%s %s with etcd %s: %d (Retry-After %q) %s, want 503 with a Retry-After", req.method, req.path, how, r.code, r.header.Get("Retry-After"), r.body)
			}
			if st := r.status(t); st.Reason != metav1.StatusReasonServiceUnavailable {
				t.Fatalf("%s %s with etcd %s: %+v", req.method, req.path, how, st)
			}
			t.Logf("%s %s with etcd %s: 503 after %s", req.method, req.path, how, time.Since(start).Round(time.Millisecond))
		}
		r := rc.do(ctx, "GET", "/readyz?verbose", nil, nil)
		if r.code != http.StatusInternalServerError || !strings.Contains(string(r.body), "[-]etcd failed") || !strings.Contains(string(r.body), "readyz check failed") {
			t.Fatalf("/readyz?verbose with etcd %s: %d %s", how, r.code, r.body)
		}
		if r := rc.do(ctx, "GET", "/livez", nil, nil); r.code != http.StatusOK {
			t.Fatalf("/livez with etcd %s: %d %s", how, r.code, r.body)
		}
	}
	// recovery waits for a create to succeed and the informer to see it.
	recovery := func(how, name string, back time.Time) {
		t.Helper()
		for {
			r := rc.do(ctx, "POST", cmPath, cmBody(name), jsonCT)
			if r.code == http.StatusCreated || r.code == http.StatusConflict {
				break
			}
			if r.code != http.StatusServiceUnavailable && r.code != http.StatusGatewayTimeout {
				t.Fatalf("create after etcd %s: %d %s", how, r.code, r.body)
			}
			if time.Since(back) > 60*time.Second {
				t.Fatalf("no create succeeded 60s after etcd %s: %d %s", how, r.code, r.body)
			}
			time.Sleep(20 * time.Millisecond)
		}
		created := time.Since(back)
		seen := informed(name, back)
		r := rc.do(ctx, "GET", "/readyz", nil, nil)
		if r.code != http.StatusOK {
			t.Fatalf("/readyz after etcd %s: %d %s", how, r.code, r.body)
		}
		t.Logf("etcd %s: a create succeeded after %s, the informer saw it after %s", how, created.Round(time.Millisecond), seen.Round(time.Millisecond))
		if _, err := c.client.AppsV1().Deployments("default").Create(ctx, testDeployment(name, 1), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(20 * time.Millisecond) {
			rss, err := c.client.AppsV1().ReplicaSets("default").List(ctx, metav1.ListOptions{LabelSelector: "app=" + name})
			if err == nil && len(rss.Items) > 0 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("no ReplicaSet for Deployment %s 60s after etcd %s: %v", name, how, err)
			}
		}
		t.Logf("etcd %s: the controller manager made a Deployment's ReplicaSet %s after", how, time.Since(back).Round(time.Millisecond))
	}
	refused := func(name string) {
		t.Helper()
		if _, err := c.client.CoreV1().ConfigMaps("default").Get(ctx, name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Fatalf("%s, refused with 503 while etcd was away, exists: %v", name, err)
		}
	}

	proc.freeze()
	outage("stopped", "while-stopped")
	proc.thaw()
	recovery("resumed", "after-resume", time.Now())
	refused("while-stopped")

	proc.kill()
	outage("killed", "while-killed")
	started := time.Now()
	proc = startEtcdProcess(t, dir, proc.endpoint)
	t.Logf("etcd restarted on its data and port in %s", time.Since(started).Round(time.Millisecond))
	recovery("restarted", "after-restart", time.Now())
	refused("while-killed")
	if _, err := lister.Get("before"); err != nil {
		t.Fatalf("the informer lost an object over the outages: %v", err)
	}
}
