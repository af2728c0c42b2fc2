package kubelet

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/remotecommand"
	"k8s.io/client-go/util/exec"
	"k8s.io/utils/ptr"

	"github.com/minik8s/minik8s/pkg/pki"
)

// streamProvider runs no pods; its exec reports what the session carried.
type streamProvider struct{ noPods }

// RunInContainer: "size" waits for a terminal size and prints it; "cat"
// copies stdin to stdout; "line" copies one line (v4 cannot close stdin);
// "fail N" exits N; anything else cannot run.
func (streamProvider) RunInContainer(ctx context.Context, _, _, _ string, cmd []string, a AttachIO) (int, error) {
	switch cmd[0] {
	case "size":
		select {
		case s := <-a.Resize():
			fmt.Fprintf(a.Stdout(), "%dx%d tty=%v\n", s.Width, s.Height, a.TTY())
		case <-ctx.Done():
		}
		return 0, nil
	case "cat":
		_, _ = io.Copy(a.Stdout(), a.Stdin())
		return 0, nil
	case "line":
		line, _ := bufio.NewReader(a.Stdin()).ReadString('\n')
		_, _ = io.WriteString(a.Stdout(), line)
		return 0, nil
	case "fail":
		var n int
		_, _ = fmt.Sscan(cmd[1], &n)
		return n, nil
	}
	return 0, errors.New("no such command")
}

type noPods struct{}

func (noPods) CreatePod(context.Context, *corev1.Pod) error { return nil }
func (noPods) UpdatePod(context.Context, *corev1.Pod) error { return nil }
func (noPods) DeletePod(context.Context, *corev1.Pod) error { return nil }
func (noPods) GetPod(context.Context, string, string) (*corev1.Pod, error) {
	return nil, nil
}
func (noPods) GetPodStatus(context.Context, string, string) (*corev1.PodStatus, error) {
	return nil, nil
}
func (noPods) GetPods(context.Context) ([]*corev1.Pod, error) { return nil, nil }
func (noPods) NotifyPods(context.Context, func(*corev1.Pod))  {}

type sizes []remotecommand.TerminalSize

func (s *sizes) Next() *remotecommand.TerminalSize {
	if len(*s) == 0 {
		select {} // no more sizes: block as a terminal would
	}
	next := (*s)[0]
	*s = (*s)[1:]
	return &next
}

// startTestServer runs a kubelet's server (no node registration) with one
// pod, p/c, bound to it; it returns a client config for an admin.
func startTestServer(t *testing.T, provider Provider) *rest.Config {
	t.Helper()
	bundle, err := pki.Ensure(pki.Config{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	k, err := New(Config{Client: fake.NewClientset(), NodeName: "n", Provider: provider,
		ServerAddress: "127.0.0.1:0", ClientCA: bundle.CAPool, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p"},
		Spec:   corev1.PodSpec{NodeName: "n", Containers: []corev1.Container{{Name: "c"}}},
		Status: corev1.PodStatus{ContainerStatuses: []corev1.ContainerStatus{{Name: "c", State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ContainerCreating"}}}}}}
	if err := k.factory.Core().V1().Pods().Informer().GetIndexer().Add(pod); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	if _, err := k.startServer(ctx); err != nil {
		t.Fatal(err)
	}
	return &rest.Config{
		Host:            fmt.Sprintf("https://127.0.0.1:%d", k.serverPort),
		TLSClientConfig: rest.TLSClientConfig{Insecure: true, CertData: bundle.AdminCertPEM, KeyData: bundle.AdminKeyPEM},
	}
}

func execURL(cfg *rest.Config, q url.Values) string {
	return cfg.Host + "/exec/ns/p/c?" + q.Encode()
}

func TestServerExecProtocols(t *testing.T) {
	cfg := startTestServer(t, streamProvider{})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, tc := range []struct {
		name     string
		protocol string // websocket subprotocol; "" for SPDY
		query    url.Values
		opts     remotecommand.StreamOptions
		stdout   string
		code     int
		err      string
	}{
		{name: "tty resize v5", protocol: "v5.channel.k8s.io",
			query: url.Values{"command": {"size"}, "output": {"1"}, "tty": {"1"}},
			opts:  remotecommand.StreamOptions{Tty: true, TerminalSizeQueue: &sizes{{Width: 80, Height: 24}}}, stdout: "80x24 tty=true\n"},
		{name: "stdin v5", protocol: "v5.channel.k8s.io",
			query: url.Values{"command": {"cat"}, "input": {"1"}, "output": {"1"}},
			opts:  remotecommand.StreamOptions{Stdin: strings.NewReader("abc")}, stdout: "abc"},
		{name: "stdin v4", protocol: "v4.channel.k8s.io",
			query: url.Values{"command": {"line"}, "input": {"1"}, "output": {"1"}},
			opts:  remotecommand.StreamOptions{Stdin: strings.NewReader("abc\n")}, stdout: "abc\n"},
		{name: "stdin spdy",
			query: url.Values{"command": {"cat"}, "input": {"1"}, "output": {"1"}},
			opts:  remotecommand.StreamOptions{Stdin: strings.NewReader("def")}, stdout: "def"},
		{name: "exit code v4", protocol: "v4.channel.k8s.io",
			query: url.Values{"command": {"fail", "7"}, "output": {"1"}, "error": {"1"}}, code: 7},
		{name: "exit code spdy", query: url.Values{"command": {"fail", "9"}, "stdout": {"true"}}, code: 9},
		{name: "tty resize spdy",
			query: url.Values{"command": {"size"}, "output": {"1"}, "tty": {"1"}},
			opts:  remotecommand.StreamOptions{Tty: true, TerminalSizeQueue: &sizes{{Width: 100, Height: 30}}}, stdout: "100x30 tty=true\n"},
		{name: "provider error", protocol: "v5.channel.k8s.io",
			query: url.Values{"command": {"nope"}, "output": {"1"}}, err: "error executing command in container: no such command"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var e remotecommand.Executor
			var err error
			if tc.protocol != "" {
				e, err = remotecommand.NewWebSocketExecutorForProtocols(cfg, "GET", execURL(cfg, tc.query), tc.protocol)
			} else {
				u, _ := url.Parse(execURL(cfg, tc.query))
				e, err = remotecommand.NewSPDYExecutor(cfg, "POST", u)
			}
			if err != nil {
				t.Fatal(err)
			}
			var out bytes.Buffer
			tc.opts.Stdout = &out
			err = e.StreamWithContext(ctx, tc.opts)
			var exitErr exec.CodeExitError
			switch {
			case tc.code != 0:
				if !errors.As(err, &exitErr) || exitErr.Code != tc.code {
					t.Errorf("err = %v, want exit code %d", err, tc.code)
				}
			case tc.err != "":
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Errorf("err = %v, want %q", err, tc.err)
				}
			case err != nil:
				t.Errorf("err = %v", err)
			}
			if out.String() != tc.stdout {
				t.Errorf("stdout = %q, want %q", out.String(), tc.stdout)
			}
		})
	}
}

func TestServerRejects(t *testing.T) {
	cfg := startTestServer(t, streamProvider{})
	cert, err := tls.X509KeyPair(cfg.CertData, cfg.KeyData)
	if err != nil {
		t.Fatal(err)
	}
	client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{
		InsecureSkipVerify: true, Certificates: []tls.Certificate{cert}}}} //nolint:gosec // self-signed test server
	for _, tc := range []struct {
		method, path string
		code         int
		body         string
	}{
		{"GET", "/containerLogs/ns/p/c", http.StatusNotImplemented, "does not support container logs"},
		{"GET", "/containerLogs/ns/q/c", http.StatusNotFound, `pod "q" does not exist`},
		{"GET", "/containerLogs/ns/p/d", http.StatusNotFound, `container "d" not found in pod "p"`},
		{"GET", "/exec/ns/p/c?command=x", http.StatusBadRequest, "you must specify at least 1 of stdin, stdout, stderr"},
		{"GET", "/exec/ns/p/c?output=1", http.StatusBadRequest, "a command is required"},
		{"GET", "/exec/ns/p/c?output=1&command=x", http.StatusBadRequest, "Upgrade request required"},
		{"PUT", "/exec/ns/p/c?output=1&command=x", http.StatusMethodNotAllowed, ""},
		{"GET", "/attach/ns/p/c?output=1", http.StatusNotImplemented, "does not support attach"},
		{"GET", "/healthz", http.StatusOK, "ok"},
	} {
		req, _ := http.NewRequest(tc.method, cfg.Host+tc.path, nil)
		resp, err := client.Do(req)
		if err != nil {
			t.Fatalf("%s %s: %v", tc.method, tc.path, err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != tc.code || !strings.Contains(string(body), tc.body) {
			t.Errorf("%s %s = %d %q, want %d %q", tc.method, tc.path, resp.StatusCode, body, tc.code, tc.body)
		}
	}
}

func TestLogOptionsFrom(t *testing.T) {
	for _, tc := range []struct {
		query string
		want  LogOptions
		err   string
	}{
		{query: "", want: LogOptions{}},
		{query: "follow=true&previous=1&timestamps=true&tailLines=0&limitBytes=10&sinceSeconds=5",
			want: LogOptions{Follow: true, Previous: true, Timestamps: true, TailLines: ptr.To[int64](0), LimitBytes: ptr.To[int64](10), SinceSeconds: ptr.To[int64](5)}},
		{query: "sinceTime=2024-01-02T03:04:05Z", want: LogOptions{SinceTime: &metav1.Time{Time: time.Date(2024, 1, 2, 3, 4, 5, 0, time.UTC)}}},
		{query: "tailLines=-1", err: "tailLines: Invalid value: -1"},
		{query: "limitBytes=0", err: "limitBytes: Invalid value: 0"},
		{query: "follow=maybe", err: `invalid follow "maybe"`},
		{query: "sinceSeconds=1&sinceTime=2024-01-02T03:04:05Z", err: "at most one of sinceTime or sinceSeconds"},
	} {
		q, _ := url.ParseQuery(tc.query)
		got, err := logOptionsFrom(q)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%q: err %v, want %q", tc.query, err, tc.err)
			}
			continue
		}
		if err != nil || fmt.Sprint(deref(got)) != fmt.Sprint(deref(tc.want)) {
			t.Errorf("%q = %v, %v; want %v", tc.query, deref(got), err, deref(tc.want))
		}
	}
}

// deref makes LogOptions printable by value.
func deref(o LogOptions) []any {
	v := func(p *int64) any {
		if p == nil {
			return nil
		}
		return *p
	}
	var since any
	if o.SinceTime != nil {
		since = o.SinceTime.UTC()
	}
	return []any{o.Follow, o.Previous, o.Timestamps, v(o.TailLines), v(o.LimitBytes), v(o.SinceSeconds), since}
}

func TestValidateContainerLogStatus(t *testing.T) {
	running := corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}
	terminated := corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 1}}
	for _, tc := range []struct {
		name     string
		status   corev1.ContainerStatus
		previous bool
		err      string
	}{
		{"running", corev1.ContainerStatus{Name: "c", State: running}, false, ""},
		{"terminated", corev1.ContainerStatus{Name: "c", State: terminated}, false, ""},
		{"restarted, previous", corev1.ContainerStatus{Name: "c", State: running, LastTerminationState: terminated}, true, ""},
		{"never restarted, previous", corev1.ContainerStatus{Name: "c", State: running}, true, `previous terminated container "c" in pod "p" not found`},
		{"waiting", corev1.ContainerStatus{Name: "c", State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ContainerCreating"}}}, false,
			`container "c" in pod "p" is waiting to start: ContainerCreating`},
		{"image pull", corev1.ContainerStatus{Name: "c", State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ImagePullBackOff"}}}, false,
			"trying and failing to pull image"},
		{"no state", corev1.ContainerStatus{Name: "c"}, false, "waiting to start - no logs yet"},
		{"unknown", corev1.ContainerStatus{Name: "d", State: running}, false, `container "c" in pod "p" is not available`},
	} {
		err := validateContainerLogStatus("p", &corev1.PodStatus{ContainerStatuses: []corev1.ContainerStatus{tc.status}}, "c", tc.previous)
		if (tc.err == "" && err != nil) || (tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err))) {
			t.Errorf("%s: %v, want %q", tc.name, err, tc.err)
		}
	}
}
