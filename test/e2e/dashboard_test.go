package e2e

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/minik8s/minik8s/pkg/serverless/fnmeta"
)

// dashboardWorkflow chooses on its input: "ada" is greeted by the greet
// function, anyone else skips it, so a run takes one branch of two.
const dashboardWorkflow = `apiVersion: minik8s.io/v1
kind: Workflow
metadata: {name: hello}
spec:
  definition:
    StartAt: Check
    States:
      Check:
        Type: Choice
        Choices:
        - {Variable: "$.name", StringEquals: ada, Next: Greet}
        Default: Skip
      Greet: {Type: Task, Resource: "function:greet", ResultPath: $.result, Next: Done}
      Done: {Type: Pass, End: true}
      Skip: {Type: Succeed}
`

const dashboardDeployment = `apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  replicas: 2
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers: [{name: c, image: busybox, command: ["sleep", "3600"]}]
`

// TestDashboard is issue 16's story: a user opens the dashboard through
// `kubectl proxy` and watches the cluster: the node and its capacity, a
// Deployment's pods with their status, a function's chart after it has
// served requests, and a workflow run drawn as its state machine with
// the path it took. Headless Chromium drives the page; screenshots go to
// _output/dashboard/.
func TestDashboard(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to run a cluster (containerd, network namespaces)")
	}
	browser := ""
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			browser = p
			break
		}
	}
	if browser == "" {
		t.Skip("needs Chromium for the browser test (apt-get install chromium)")
	}
	shots := filepath.Join("..", "..", "_output", "dashboard")
	if err := os.MkdirAll(shots, 0o755); err != nil {
		t.Fatal(err)
	}

	c := newClusterWithFunctions(t, 1)
	k := c.kubectl
	node := c.tag + "-n1"
	c.apply(dashboardDeployment)
	k.OK(t, "apply", "-f", example("greet.yaml"))
	c.apply(dashboardWorkflow)
	proxy := startKubectlProxy(t, c.cp.KubeconfigPath)

	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(browser), chromedp.NoSandbox,
		chromedp.WindowSize(1400, 1000), chromedp.Flag("disable-dev-shm-usage", true))
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	defer cancelAlloc()
	ctx, cancel := chromedp.NewContext(actx)
	defer cancel()
	ctx, cancelTimeout := context.WithTimeout(ctx, 5*time.Minute)
	defer cancelTimeout()

	// waitJS polls a JavaScript expression in the page until it is true.
	waitJS := func(t *testing.T, what, expr string, timeout time.Duration) {
		t.Helper()
		deadline := time.Now().Add(timeout)
		for {
			ok, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`!!(`+expr+`)`))
			if err == nil && ok {
				return
			}
			if time.Now().After(deadline) {
				body, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`document.querySelector("section.tab.active").innerText.slice(0, 3000)`))
				t.Fatalf("the dashboard did not show %s in %s (last error %v); the tab reads:\n%s", what, timeout, err, body)
			}
			select {
			case <-ctx.Done():
				t.Fatal(ctx.Err())
			case <-time.After(200 * time.Millisecond):
			}
		}
	}
	screenshot := func(t *testing.T, name string) {
		t.Helper()
		png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
		if err != nil {
			t.Errorf("screenshot %s: %v", name, err)
			return
		}
		if err := os.WriteFile(filepath.Join(shots, name+".png"), png, 0o644); err != nil {
			t.Error(err)
		}
	}
	show := func(t *testing.T, hash string) {
		t.Helper()
		if _, err := chromedp.Run(ctx, chromedp.Evaluate[string](`location.hash = `+fmt.Sprintf("%q", hash))); err != nil {
			t.Fatal(err)
		}
	}

	if err := chromedp.Do(ctx, chromedp.Navigate(proxy+"/dashboard/"), chromedp.WaitVisible(chromedp.CSS(`#tabs`))); err != nil {
		t.Fatalf("open %s/dashboard/: %v", proxy, err)
	}

	t.Run("nodes with capacity", func(t *testing.T) {
		show(t, "#nodes")
		waitJS(t, "node "+node+" with its capacity", fmt.Sprintf(`(() => {
			const td = document.querySelector('#nodes tr[data-node=%q] td.capacity');
			return td && td.dataset.cpu && td.dataset.memory && /CPU/.test(td.textContent);
		})()`, node), time.Minute)
		waitJS(t, "the node Ready", fmt.Sprintf(`document.querySelector('#nodes tr[data-node=%q] .s-ok')`, node), time.Minute)
		screenshot(t, "nodes")
	})

	t.Run("a Deployment's pods with status", func(t *testing.T) {
		show(t, "#workloads")
		// Drawn live: the pods appear, then turn Running, as the watch reports them.
		waitJS(t, "Deployment web with 2 Running pods",
			`document.querySelectorAll('#workloads .card[data-workload="Deployment/default/web"] .pod[data-status="Running"]').length === 2`, 2*time.Minute)
		waitJS(t, "the pods in the table with restarts",
			`[...document.querySelectorAll('#workloads tr[data-pod^="default/web-"]')].filter(r => r.dataset.status === "Running" && r.querySelector('.restarts').textContent === "0").length === 2`, 10*time.Second)
		screenshot(t, "workloads")
	})

	t.Run("a function's chart", func(t *testing.T) {
		c.waitFunction("greet", metav1.ConditionTrue, "", 3*time.Minute)
		hc := &http.Client{Timeout: 90 * time.Second}
		for i := range 5 {
			r, err := call(hc, c.gateway+fnmeta.Path("default", "greet"), fmt.Sprintf(`{"name":"n%d"}`, i))
			if err != nil || r.code != http.StatusOK {
				t.Fatalf("invoke greet: %+v %v", r, err)
			}
		}
		show(t, "#functions")
		waitJS(t, "greet with an instance", `(() => {
			const card = document.querySelector('#functions .card[data-function="default/greet"]');
			return card && /^[1-9]/.test(card.querySelector('.instances').textContent.split('/')[1]);
		})()`, time.Minute)
		// The canvas has pixels drawn: axes, legend and the instance line.
		waitJS(t, "greet's chart drawn", `(() => {
			const cv = document.querySelector('#functions canvas[data-function="default/greet"]');
			if (!cv || !cv.width || !cv.height) return false;
			const d = cv.getContext('2d').getImageData(0, 0, cv.width, cv.height).data;
			let n = 0;
			for (let i = 3; i < d.length; i += 4) if (d[i]) n++;
			return n > 1000 && +cv.closest('.card').dataset.points >= 1;
		})()`, time.Minute)
		// Prometheus may or may not run in this cluster; the page says which.
		waitJS(t, "whether Prometheus answers", `document.querySelector('#prom-note').dataset.prometheus`, 30*time.Second)
		prom, _ := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(`#prom-note`)))
		t.Logf("the chart's note: %s", prom)
		screenshot(t, "functions")
	})

	t.Run("a workflow run's graph", func(t *testing.T) {
		c.waitFor(time.Minute, "workflow hello Ready", func(ctx context.Context) (bool, error) {
			out, _, err := k.Run(t, "get", "workflow", "hello", "-o", "jsonpath={.status.conditions[0].status}")
			return err == nil && out == "True", nil
		})
		out := k.OK(t, "wf", "run", "hello", "-d", `{"name":"ada"}`)
		name := runCreated(out)
		if name == "" {
			t.Fatalf("kubectl wf run printed no run name: %q", out)
		}
		show(t, "#workflows")
		waitJS(t, "run "+name+" in the list", fmt.Sprintf(`document.querySelector('#workflows tr[data-run="default/%s"]')`, name), 30*time.Second)
		// Following it: a click on its row.
		if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS(fmt.Sprintf(`#workflows tr[data-run="default/%s"]`, name)))); err != nil {
			t.Fatal(err)
		}
		waitJS(t, "the run's graph with the states taken", `(() => {
			const g = document.querySelector('#run-graph');
			return g && g.querySelector('canvas') && g.dataset.phase === 'Succeeded' && g.dataset.taken === 'Check,Greet,Done';
		})()`, 2*time.Minute)
		waitJS(t, "each state's input and output", `(() => {
			const li = document.querySelector('.run-history li[data-state="Greet"]');
			return li && /"ada"/.test(li.querySelector('pre.input').textContent) && /hello ada/.test(li.querySelector('pre.output').textContent);
		})()`, 10*time.Second)
		screenshot(t, "workflow-run")
	})
}

// startKubectlProxy runs the real `kubectl proxy` on a free loopback port,
// the way a user opens the dashboard, and returns its URL.
func startKubectlProxy(t *testing.T, kubeconfig string) string {
	t.Helper()
	bin := filepath.Join("..", "..", "bin", "kubectl")
	if _, err := os.Stat(bin); err != nil {
		bin = filepath.Join(t.TempDir(), "kubectl")
		if out, err := exec.Command("go", "build", "-o", bin, "../../cmd/kubectl").CombinedOutput(); err != nil {
			t.Fatalf("build kubectl: %v\n%s", err, out)
		}
	}
	cmd := exec.Command(bin, "--kubeconfig", kubeconfig, "proxy", "--address", "127.0.0.1", "--port", "0")
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatalf("kubectl proxy: %v", err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	addr := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		re := regexp.MustCompile(`Starting to serve on (\S+)`)
		for sc.Scan() {
			if m := re.FindStringSubmatch(sc.Text()); m != nil {
				addr <- m[1]
			}
		}
	}()
	select {
	case a := <-addr:
		return "http://" + strings.TrimSpace(a)
	case <-time.After(30 * time.Second):
		t.Fatal("kubectl proxy did not say where it serves in 30s")
		return ""
	}
}
