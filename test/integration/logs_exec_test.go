package integration

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	neturl "net/url"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/net/websocket"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/portforward"
	"k8s.io/client-go/tools/remotecommand"
	"k8s.io/client-go/transport/spdy"
	"k8s.io/client-go/util/exec"
	"k8s.io/streaming/pkg/httpstream"
	"k8s.io/utils/ptr"

	"github.com/minik8s/minik8s/pkg/kubelet"
	"github.com/minik8s/minik8s/pkg/kubelet/simulated"
	"github.com/minik8s/minik8s/pkg/pki"
	"github.com/minik8s/minik8s/test/testutil"
)

// startServingNode joins a simulated node whose kubelet serves logs, exec
// and attach on 127.0.0.1 (any port), trusting the cluster CA, and returns
// the kubelet's port once the node has published it.
func startServingNode(t *testing.T, c *cluster, name string) int32 {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	p, err := simulated.New(simulated.Config{NodeName: name, NodeIP: "127.0.0.1", PodCIDR: "10.244.100.0/24"})
	if err != nil {
		t.Fatal(err)
	}
	k, err := kubelet.New(kubelet.Config{
		Client: kubernetes.NewForConfigOrDie(c.config), NodeName: name, Provider: p,
		HeartbeatInterval: time.Second, Logger: slog.New(slog.DiscardHandler),
		ServerAddress: "127.0.0.1:0", ClientCA: c.cp.Bundle.CAPool,
	})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- k.Start(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("kubelet: %v", err)
		}
	})
	var port int32
	waitFor(t, "node "+name+" Ready with its kubelet port", func(ctx context.Context) (bool, error) {
		n, err := c.client.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		port = n.Status.DaemonEndpoints.KubeletEndpoint.Port
		return nodeReady(n) && port != 0, nil
	})
	return port
}

func TestLogsAndExec(t *testing.T) {
	c := startCluster(t)
	ctx := ctxT(t)
	kubeletPort := startServingNode(t, c, "node-a")
	k := newKubectl(t, c)

	pods := c.client.CoreV1().Pods("default")
	for _, pod := range []*corev1.Pod{
		{ObjectMeta: metav1.ObjectMeta{Name: "p", Annotations: map[string]string{simulated.AnnotationLogs: "hello\nworld"}},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox"}}}},
		{ObjectMeta: metav1.ObjectMeta{Name: "web"},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox", Ports: []corev1.ContainerPort{{ContainerPort: 8080}}}}}},
		{ObjectMeta: metav1.ObjectMeta{Name: "two"},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c1", Image: "busybox"}, {Name: "c2", Image: "busybox"}}}},
	} {
		if _, err := pods.Create(ctx, pod, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	// A pod no node accepts stays unscheduled.
	pending := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "pending"},
		Spec: corev1.PodSpec{NodeSelector: map[string]string{"no": "such-node"}, Containers: []corev1.Container{{Name: "c", Image: "busybox"}}}}
	if _, err := pods.Create(ctx, pending, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"p", "two", "web"} {
		waitFor(t, name+" Running", func(ctx context.Context) (bool, error) {
			p, err := pods.Get(ctx, name, metav1.GetOptions{})
			return err == nil && p.Status.Phase == corev1.PodRunning, nil
		})
	}

	t.Run("logs over a websocket", func(t *testing.T) {
		// As the upstream conformance spec reads them: binary.k8s.io frames.
		tlsCfg, err := rest.TLSConfigFor(c.config)
		if err != nil {
			t.Fatal(err)
		}
		host, err := neturl.Parse(c.config.Host)
		if err != nil {
			t.Fatal(err)
		}
		cfg, err := websocket.NewConfig("wss://"+host.Host+"/api/v1/namespaces/default/pods/p/log?container=c", "http://localhost")
		if err != nil {
			t.Fatal(err)
		}
		cfg.Protocol, cfg.TlsConfig = []string{"binary.k8s.io"}, tlsCfg
		if c.config.BearerToken != "" {
			cfg.Header.Set("Authorization", "Bearer "+c.config.BearerToken)
		}
		ws, err := websocket.DialConfig(cfg)
		if err != nil {
			t.Fatalf("open a websocket to the pod's log: %v", err)
		}
		defer ws.Close()
		var got bytes.Buffer
		for {
			var frame []byte
			if err := websocket.Message.Receive(ws, &frame); err != nil {
				if !errors.Is(err, io.EOF) {
					t.Fatalf("read the log over a websocket: %v", err)
				}
				break
			}
			got.Write(frame)
		}
		if want := "simulated container c started\nhello\nworld\n"; got.String() != want {
			t.Errorf("log over a websocket = %q, want %q", got.String(), want)
		}
	})

	t.Run("kubectl logs", func(t *testing.T) {
		if got, want := k.ok(t, "logs", "p"), "simulated container c started\nhello\nworld\n"; got != want {
			t.Errorf("kubectl logs p = %q, want %q", got, want)
		}
		if got := k.ok(t, "logs", "p", "-c", "c", "--tail=1"); got != "world\n" {
			t.Errorf("kubectl logs --tail=1 = %q, want %q", got, "world\n")
		}
		if got := k.ok(t, "logs", "p", "--limit-bytes=5"); got != "simul" {
			t.Errorf("kubectl logs --limit-bytes=5 = %q", got)
		}
		ts := outputLines(k.ok(t, "logs", "p", "--timestamps"))
		if len(ts) != 3 {
			t.Fatalf("kubectl logs --timestamps: %q", ts)
		}
		stamp, text, _ := strings.Cut(ts[1], " ")
		if _, err := time.Parse(time.RFC3339Nano, stamp); err != nil || text != "hello" {
			t.Errorf("timestamped line %q: %v", ts[1], err)
		}
		if got := k.ok(t, "logs", "two", "-c", "c2"); got != "simulated container c2 started\n" {
			t.Errorf("kubectl logs two -c c2 = %q", got)
		}
		// The kubelet's own errors come back as the apiserver's.
		if msg := k.fails(t, "logs", "p", "--previous"); !strings.Contains(msg, `previous terminated container "c" in pod "p" not found`) {
			t.Errorf("kubectl logs --previous: %q", msg)
		}
		if msg := k.fails(t, "logs", "p", "-c", "nope"); !strings.Contains(msg, "container nope is not valid for pod p") {
			t.Errorf("kubectl logs -c nope: %q", msg)
		}
	})

	t.Run("log errors", func(t *testing.T) {
		for _, tc := range []struct {
			pod     string
			opts    corev1.PodLogOptions
			code    int32
			message string
		}{
			{"two", corev1.PodLogOptions{}, 400, "a container name must be specified for pod two, choose one of: [c1 c2]"},
			{"p", corev1.PodLogOptions{Container: "nope"}, 400, "container nope is not valid for pod p"},
			{"missing", corev1.PodLogOptions{}, 404, `pods "missing" not found`},
			{"p", corev1.PodLogOptions{TailLines: ptr.To[int64](-1)}, 422, "tailLines: Invalid value: -1"},
		} {
			// Stream, as kubectl logs reads them (DoRaw does not decode a Status).
			_, err := pods.GetLogs(tc.pod, &tc.opts).Stream(ctx)
			var status apierrors.APIStatus
			if !errors.As(err, &status) || status.Status().Code != tc.code || !strings.Contains(status.Status().Message, tc.message) {
				t.Errorf("logs %s %+v: %v, want %d %q", tc.pod, tc.opts, err, tc.code, tc.message)
			}
		}
		// Not scheduled: no logs and no error, as Kubernetes; exec is refused.
		if out, err := pods.GetLogs("pending", &corev1.PodLogOptions{}).DoRaw(ctx); err != nil || len(out) != 0 {
			t.Errorf("logs of an unscheduled pod: %q, %v", out, err)
		}
		if msg := k.fails(t, "exec", "pending", "--", "true"); !strings.Contains(msg, "pod pending does not have a host assigned") {
			t.Errorf("exec into an unscheduled pod: %q", msg)
		}
	})

	t.Run("kubectl exec", func(t *testing.T) {
		if got := k.ok(t, "exec", "p", "--", "echo", "hi"); got != "hi\n" {
			t.Errorf("kubectl exec echo hi = %q", got)
		}
		_, stderr, err := k.run(t, "exec", "p", "--", "sh", "-c", "exit 3")
		var exit testutil.ExitError
		if !errors.As(err, &exit) || exit.Code != 3 || !strings.Contains(stderr, "command terminated with exit code 3") {
			t.Errorf("kubectl exec sh -c 'exit 3': err %v, stderr %q; want exit code 3", err, stderr)
		}
		out, _, err := k.runWithInput(t, "line one\nline two\n", "exec", "-i", "p", "--", "cat")
		if err != nil || out != "line one\nline two\n" {
			t.Errorf("kubectl exec -i cat = %q, %v", out, err)
		}
		out, _, err = k.runWithInput(t, "echo from a script\nexit 4\necho never\n", "exec", "-i", "p", "--", "sh")
		if !errors.As(err, &exit) || exit.Code != 4 || out != "from a script\n" {
			t.Errorf("kubectl exec -i sh = %q, %v; want exit code 4", out, err)
		}
		if got := k.ok(t, "exec", "two", "-c", "c2", "--", "hostname"); got != "two\n" {
			t.Errorf("kubectl exec two -c c2 hostname = %q", got)
		}
	})

	execURLWith := func(pod string, opts corev1.PodExecOptions) string {
		return c.client.CoreV1().RESTClient().Post().Resource("pods").Namespace("default").Name(pod).SubResource("exec").
			VersionedParams(&opts, scheme.ParameterCodec).URL().String()
	}
	execURL := func(pod, container string, stdin bool, cmd ...string) string {
		return execURLWith(pod, corev1.PodExecOptions{Container: container, Command: cmd, Stdin: stdin, Stdout: true, Stderr: true})
	}
	type executor func(url string) (remotecommand.Executor, error)
	executors := map[string]executor{
		"websocket": func(url string) (remotecommand.Executor, error) {
			return remotecommand.NewWebSocketExecutor(c.config, "GET", url)
		},
		"spdy": func(url string) (remotecommand.Executor, error) {
			u, err := neturl.Parse(url)
			if err != nil {
				return nil, err
			}
			return remotecommand.NewSPDYExecutor(c.config, "POST", u)
		},
	}
	for name, newExec := range executors {
		t.Run("client-go "+name, func(t *testing.T) {
			run := func(url string, stdin io.Reader) (string, string, error) {
				e, err := newExec(url)
				if err != nil {
					t.Fatal(err)
				}
				var out, errOut bytes.Buffer
				err = e.StreamWithContext(ctx, remotecommand.StreamOptions{Stdin: stdin, Stdout: &out, Stderr: &errOut})
				return out.String(), errOut.String(), err
			}
			if out, _, err := run(execURL("p", "c", false, "echo", name), nil); err != nil || out != name+"\n" {
				t.Errorf("echo: %q, %v", out, err)
			}
			out, errOut, err := run(execURL("p", "", false, "cat", "/missing"), nil)
			var code exec.CodeExitError
			if !errors.As(err, &code) || code.Code != 1 || out != "" || !strings.Contains(errOut, "can't open '/missing'") {
				t.Errorf("cat /missing: stdout %q stderr %q err %v; want exit code 1 and a message on stderr", out, errOut, err)
			}
			if out, _, err := run(execURL("p", "c", true, "cat"), strings.NewReader("via stdin\n")); err != nil || out != "via stdin\n" {
				t.Errorf("cat with stdin: %q, %v", out, err)
			}
			_, errOut, err = run(execURL("p", "c", false, "wget", "-qO-", "localhost"), nil)
			if !errors.As(err, &code) || code.Code != 127 || !strings.Contains(errOut, "wget: not found") {
				t.Errorf("unknown command: %q, %v; want exit code 127", errOut, err)
			}
			// A terminal has one output: errors arrive on stdout.
			e, err := newExec(execURLWith("p", corev1.PodExecOptions{Command: []string{"cat", "/missing"}, Stdout: true, Stderr: true, TTY: true}))
			if err != nil {
				t.Fatal(err)
			}
			var tty bytes.Buffer
			err = e.StreamWithContext(ctx, remotecommand.StreamOptions{Stdout: &tty, Tty: true})
			if !errors.As(err, &code) || code.Code != 1 || !strings.Contains(tty.String(), "can't open '/missing'") {
				t.Errorf("tty: %q, %v; want the error on stdout and exit code 1", tty.String(), err)
			}
		})
	}

	t.Run("attach and follow", func(t *testing.T) {
		// Follow the log through the apiserver while an attach session
		// feeds the container a line: the follower sees it arrive.
		stream, err := pods.GetLogs("p", &corev1.PodLogOptions{Follow: true}).Stream(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer stream.Close()
		lines := make(chan string, 16)
		go func() {
			sc := bufio.NewScanner(stream)
			for sc.Scan() {
				lines <- sc.Text()
			}
			close(lines)
		}()
		expectLine := func(want string) {
			t.Helper()
			select {
			case got, ok := <-lines:
				if !ok || got != want {
					t.Fatalf("followed log: got %q (open %v), want %q", got, ok, want)
				}
			case <-time.After(10 * time.Second):
				t.Fatalf("followed log: no %q after 10s", want)
			}
		}
		for _, l := range []string{"simulated container c started", "hello", "world"} {
			expectLine(l)
		}
		url := c.client.CoreV1().RESTClient().Post().Resource("pods").Namespace("default").Name("p").SubResource("attach").
			VersionedParams(&corev1.PodAttachOptions{Container: "c", Stdin: true, Stdout: true}, scheme.ParameterCodec).URL().String()
		e, err := remotecommand.NewWebSocketExecutor(c.config, "GET", url)
		if err != nil {
			t.Fatal(err)
		}
		var out bytes.Buffer
		if err := e.StreamWithContext(ctx, remotecommand.StreamOptions{Stdin: strings.NewReader("typed in\n"), Stdout: &out}); err != nil {
			t.Fatalf("attach: %v", err)
		}
		if out.String() != "typed in\n" {
			t.Errorf("attach echoed %q", out.String())
		}
		expectLine("typed in")
		if got := k.ok(t, "logs", "p", "--tail=1"); got != "typed in\n" {
			t.Errorf("logs after attach: %q", got)
		}
		// Deleting the pod ends the container and so the follow.
		if err := pods.Delete(ctx, "p", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		select {
		case _, ok := <-lines:
			for ok {
				_, ok = <-lines
			}
		case <-time.After(20 * time.Second):
			t.Fatal("the followed log did not end when the pod was deleted")
		}
	})

	t.Run("port-forward", func(t *testing.T) {
		// As kubectl port-forward dials: SPDY tunnelled in WebSocket first,
		// falling back to plain SPDY when the upgrade is refused.
		u := c.client.CoreV1().RESTClient().Post().Resource("pods").Namespace("default").Name("web").SubResource("portforward").URL()
		transport, upgrader, err := spdy.RoundTripperFor(c.config)
		if err != nil {
			t.Fatal(err)
		}
		tunneling, err := portforward.NewSPDYOverWebsocketDialerForStreaming(u, c.config)
		if err != nil {
			t.Fatal(err)
		}
		dialer := portforward.NewFallbackDialerForStreaming(tunneling, spdy.NewDialerForStreaming(upgrader, &http.Client{Transport: transport}, "POST", u),
			func(err error) bool { return httpstream.IsUpgradeFailure(err) || httpstream.IsHTTPSProxyError(err) })
		stop, ready := make(chan struct{}), make(chan struct{})
		fw, err := portforward.NewOnAddressesForStreaming(dialer, []string{"127.0.0.1"}, []string{"0:8080", "0:9999"}, stop, ready, io.Discard, io.Discard)
		if err != nil {
			t.Fatal(err)
		}
		forwarding := make(chan error, 1)
		go func() { forwarding <- fw.ForwardPorts() }()
		defer func() {
			close(stop)
			<-forwarding
		}()
		select {
		case <-ready:
		case err := <-forwarding:
			t.Fatalf("port-forward: %v", err)
		case <-time.After(20 * time.Second):
			t.Fatal("port-forward not ready after 20s")
		}
		ports, err := fw.GetPorts()
		if err != nil || len(ports) != 2 {
			t.Fatalf("ports: %v %v", ports, err)
		}
		roundTrip := func(local uint16, msg string) (string, error) {
			conn, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", local), 5*time.Second)
			if err != nil {
				return "", err
			}
			defer conn.Close()
			_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
			if _, err := io.WriteString(conn, msg); err != nil {
				return "", err
			}
			_ = conn.(*net.TCPConn).CloseWrite()
			data, err := io.ReadAll(conn)
			return string(data), err
		}
		for _, msg := range []string{"ping\n", "pong\n"} {
			if got, err := roundTrip(ports[0].Local, msg); err != nil || got != msg {
				t.Errorf("through the forwarded port 8080: %q, %v; want the echo %q", got, err, msg)
			}
		}
		// A port no container declares: the connection closes unanswered.
		if got, _ := roundTrip(ports[1].Local, "hello?\n"); got != "" {
			t.Errorf("undeclared port answered %q", got)
		}
	})

	t.Run("kubelet requires the apiserver's certificate", func(t *testing.T) {
		base := fmt.Sprintf("https://127.0.0.1:%d", kubeletPort)
		get := func(cert *tls.Certificate, path string) (int, string, error) {
			cfg := &tls.Config{InsecureSkipVerify: true} //nolint:gosec // the kubelet's certificate is self-signed
			if cert != nil {
				cfg.Certificates = []tls.Certificate{*cert}
			}
			client := &http.Client{Transport: &http.Transport{TLSClientConfig: cfg}, Timeout: 10 * time.Second}
			resp, err := client.Get(base + path)
			if err != nil {
				return 0, "", err
			}
			defer resp.Body.Close()
			body, _ := io.ReadAll(resp.Body)
			return resp.StatusCode, string(body), nil
		}
		logsPath := "/containerLogs/default/two/c1"
		if code, body, err := get(nil, logsPath); err == nil {
			t.Errorf("no client certificate: %d %q, want a TLS failure", code, body)
		}
		foreign, err := pki.Ensure(pki.Config{Dir: filepath.Join(t.TempDir(), "pki")})
		if err != nil {
			t.Fatal(err)
		}
		if code, body, err := get(&foreign.AdminCert, logsPath); err == nil {
			t.Errorf("certificate of another CA: %d %q, want a TLS failure", code, body)
		}
		certPEM, keyPEM, err := c.cp.Bundle.IssueClientCert("system:node:node-b", []string{"system:nodes"}, time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		node, err := tls.X509KeyPair(certPEM, keyPEM)
		if err != nil {
			t.Fatal(err)
		}
		if code, body, err := get(&node, logsPath); err != nil || code != http.StatusForbidden || !strings.Contains(body, "user=system:node:node-b") {
			t.Errorf("another node's certificate: %d %q %v, want 403", code, body, err)
		}
		if code, body, err := get(&node, "/healthz"); err != nil || code != http.StatusOK || body != "ok" {
			t.Errorf("healthz: %d %q %v", code, body, err)
		}
		if code, body, err := get(&c.cp.Bundle.AdminCert, logsPath); err != nil || code != http.StatusOK || body != "simulated container c1 started\n" {
			t.Errorf("admin: %d %q %v", code, body, err)
		}
		if code, body, err := get(&c.cp.Bundle.AdminCert, "/containerLogs/default/two/nope"); err != nil || code != http.StatusNotFound {
			t.Errorf("admin, missing container: %d %q %v, want 404", code, body, err)
		}
		if code, body, err := get(&c.cp.Bundle.AdminCert, "/exec/default/two/c1?command=true&output=1"); err != nil || code != http.StatusBadRequest || !strings.Contains(body, "Upgrade request required") {
			t.Errorf("exec without an upgrade: %d %q %v, want 400", code, body, err)
		}
	})
}
