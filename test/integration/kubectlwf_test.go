package integration

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/util/retry"

	minik8sv1 "github.com/minik8s/minik8s/pkg/apis/minik8s/v1"
	"github.com/minik8s/minik8s/pkg/kubectl/wf"
	"github.com/minik8s/minik8s/pkg/workflow/wfmeta"
)

// kubectlWf runs the kubectl-wf plugin's command in-process against the
// test's cluster, with the standard flags a user would give it.
type kubectlWf struct {
	kubeconfig, cacheDir string
}

func (k kubectlWf) run(ctx context.Context, stdin string, args ...string) (stdout, stderr string, err error) {
	var out, errOut syncBuffer
	cmd := wf.NewPluginCommand(genericiooptions.IOStreams{In: strings.NewReader(stdin), Out: &out, ErrOut: &errOut})
	cmd.SetArgs(append([]string{"--kubeconfig", k.kubeconfig, "--cache-dir", k.cacheDir, "-n", "default"}, args...))
	err = cmd.ExecuteContext(ctx)
	return out.String(), errOut.String(), err
}

func (k kubectlWf) ok(t *testing.T, args ...string) string {
	t.Helper()
	out, errOut, err := k.run(ctxT(t), "", args...)
	if err != nil {
		t.Fatalf("kubectl wf %s: %v\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), err, out, errOut)
	}
	return out
}

func (k kubectlWf) fails(t *testing.T, args ...string) error {
	t.Helper()
	out, errOut, err := k.run(ctxT(t), "", args...)
	if err == nil {
		t.Fatalf("kubectl wf %s succeeded, want an error\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), out, errOut)
	}
	return err
}

// TestKubectlWf drives `kubectl wf` against the in-process apiserver. No
// workflow engine runs here (apiServerOnly): the test plays its part and
// writes the runs' status through /status itself, as the engine would, so
// what is checked is the CLI: what it creates, how it waits, watches and
// prints.
func TestKubectlWf(t *testing.T) {
	c := startClusterWith(t, apiServerOnly)
	ctx := ctxT(t)
	k := kubectlWf{kubeconfig: c.cp.KubeconfigPath, cacheDir: t.TempDir()}
	dyn := dynamic.NewForConfigOrDie(c.config)
	runs := dyn.Resource(wfmeta.WorkflowRunResource).Namespace("default")

	workflow := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "minik8s.io/v1", "kind": "Workflow",
		"metadata": map[string]any{"name": "hello"},
		"spec": map[string]any{"definition": map[string]any{
			"StartAt": "A", "States": map[string]any{"A": map[string]any{"Type": "Pass", "End": true}},
		}},
	}}
	if _, err := dyn.Resource(wfmeta.WorkflowResource).Namespace("default").Create(ctx, workflow, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	decode := func(u *unstructured.Unstructured) (*minik8sv1.WorkflowRun, error) {
		data, err := u.MarshalJSON()
		if err != nil {
			return nil, err
		}
		var r minik8sv1.WorkflowRun
		return &r, json.Unmarshal(data, &r)
	}
	getRun := func(t *testing.T, name string) *minik8sv1.WorkflowRun {
		t.Helper()
		u, err := runs.Get(ctxT(t), name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		r, err := decode(u)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	// setStatus plays the engine: once the run exists, it writes the run's
	// status through /status. It may run on a goroutine of its own.
	setStatus := func(name string, edit func(*minik8sv1.WorkflowRunStatus)) error {
		for {
			_, err := runs.Get(ctx, name, metav1.GetOptions{})
			if err == nil {
				break
			}
			if !apierrors.IsNotFound(err) {
				return err
			}
			select {
			case <-ctx.Done():
				return fmt.Errorf("workflowrun %s never appeared: %w", name, ctx.Err())
			case <-time.After(20 * time.Millisecond):
			}
		}
		return retry.RetryOnConflict(retry.DefaultRetry, func() error {
			u, err := runs.Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return err
			}
			r, err := decode(u)
			if err != nil {
				return err
			}
			edit(&r.Status)
			data, err := json.Marshal(r)
			if err != nil {
				return err
			}
			if err := u.UnmarshalJSON(data); err != nil {
				return err
			}
			_, err = runs.UpdateStatus(ctx, u, metav1.UpdateOptions{})
			return err
		})
	}
	now := time.Now().UTC().Truncate(time.Millisecond)
	at := func(d time.Duration) metav1.MicroTime { return metav1.NewMicroTime(now.Add(d)) }
	atP := func(d time.Duration) *metav1.MicroTime { m := at(d); return &m }
	timeP := func(d time.Duration) *metav1.Time { m := metav1.NewTime(now.Add(d)); return &m }
	stamp := func(d time.Duration) string { return now.Add(d).Format("2006-01-02T15:04:05.000Z07:00") }
	stateA := minik8sv1.WorkflowRunState{Name: "A", Type: "Pass", Input: minik8sv1.NewJSON([]byte(`{"x":1}`)),
		Output: minik8sv1.NewJSON([]byte(`{"x":1}`)), Entered: at(0), Exited: atP(5 * time.Millisecond)}

	t.Run("run", func(t *testing.T) {
		out := k.ok(t, "run", "hello", "-d", `{"greet": "ada"}`)
		m := regexp.MustCompile(`^workflowrun\.minik8s\.io/(hello-\w+) created\n$`).FindStringSubmatch(out)
		if m == nil {
			t.Fatalf("run: %q", out)
		}
		r := getRun(t, m[1])
		if r.Spec.Workflow != "hello" || string(r.Spec.Input.Bytes()) != `{"greet":"ada"}` || r.Labels[wfmeta.WorkflowLabel] != "hello" {
			t.Fatalf("run %s: %+v %+v", r.Name, r.Labels, r.Spec)
		}
		if out := k.ok(t, "run", "hello", "--name", "hello-default"); out != "workflowrun.minik8s.io/hello-default created\n" {
			t.Fatalf("run --name: %q", out)
		}
		if r := getRun(t, "hello-default"); string(r.Spec.Input.Bytes()) != `{}` {
			t.Fatalf("default input: %s", r.Spec.Input.Bytes())
		}
		file := writeTestFile(t, t.TempDir(), "in.json", "{\n  \"n\": [1, 2]\n}\n")
		if out := k.ok(t, "run", "hello", "--name", "hello-file", "-d", "@"+file, "-o", "name"); out != "workflowrun.minik8s.io/hello-file\n" {
			t.Fatalf("run -o name: %q", out)
		}
		if r := getRun(t, "hello-file"); string(r.Spec.Input.Bytes()) != `{"n":[1,2]}` {
			t.Fatalf("input from a file: %s", r.Spec.Input.Bytes())
		}
		if _, errOut, err := k.run(ctx, `"from stdin"`, "run", "hello", "--name", "hello-stdin", "-d", "@-"); err != nil {
			t.Fatalf("run -d @-: %v\n%s", err, errOut)
		}
		if r := getRun(t, "hello-stdin"); string(r.Spec.Input.Bytes()) != `"from stdin"` {
			t.Fatalf("input from stdin: %s", r.Spec.Input.Bytes())
		}
		if err := k.fails(t, "run", "hello", "-d", "{nope"); !strings.Contains(err.Error(), "-d: the input is not valid JSON") {
			t.Fatalf("run with bad JSON: %v", err)
		}
		if err := k.fails(t, "run", "missing"); !strings.Contains(err.Error(), `workflows.minik8s.io "missing" not found`) {
			t.Fatalf("run of a missing workflow: %v", err)
		}
	})

	t.Run("wait", func(t *testing.T) {
		done := make(chan error, 1)
		go func() {
			done <- setStatus("hello-ok", func(st *minik8sv1.WorkflowRunStatus) {
				st.Phase, st.StartTime, st.CompletionTime = minik8sv1.WorkflowRunSucceeded, timeP(0), timeP(5*time.Millisecond)
				st.Output = minik8sv1.NewJSON([]byte(`{"greeting":"hi ada","n":[1,2]}`))
				st.History = []minik8sv1.WorkflowRunState{stateA}
			})
		}()
		out := k.ok(t, "run", "hello", "--name", "hello-ok", "-d", `{"x":1}`, "--wait", "--timeout", "30s")
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		if want := "{\n  \"greeting\": \"hi ada\",\n  \"n\": [\n    1,\n    2\n  ]\n}\n"; out != want {
			t.Fatalf("run --wait: %q, want %q", out, want)
		}

		go func() {
			done <- setStatus("hello-bad", func(st *minik8sv1.WorkflowRunStatus) {
				st.Phase, st.StartTime, st.CompletionTime = minik8sv1.WorkflowRunFailed, timeP(0), timeP(time.Second)
				st.Error, st.Cause = "States.TaskFailed", "the function said no"
			})
		}()
		stdout, _, err := k.run(ctx, "", "run", "hello", "--name", "hello-bad", "--wait")
		if serr := <-done; serr != nil {
			t.Fatal(serr)
		}
		var re *wf.RunError
		if err == nil || err.Error() != "workflowrun hello-bad Failed: States.TaskFailed: the function said no" || !errors.As(err, &re) || stdout != "" {
			t.Fatalf("run --wait of a failing run: %v, stdout %q", err, stdout)
		}

		go func() {
			done <- setStatus("hello-yaml", func(st *minik8sv1.WorkflowRunStatus) {
				st.Phase = minik8sv1.WorkflowRunTimedOut
				st.Error = "States.Timeout"
			})
		}()
		stdout, _, err = k.run(ctx, "", "run", "hello", "--name", "hello-yaml", "--wait", "-o", "yaml")
		if serr := <-done; serr != nil {
			t.Fatal(serr)
		}
		if err == nil || !strings.Contains(err.Error(), "TimedOut: States.Timeout") || !strings.Contains(stdout, "phase: TimedOut\n") || !strings.Contains(stdout, "name: hello-yaml\n") {
			t.Fatalf("run --wait -o yaml: %v\n%s", err, stdout)
		}

		// Nobody finishes this one.
		err = k.fails(t, "run", "hello", "--name", "hello-slow", "--wait", "--timeout", "300ms")
		if !strings.Contains(err.Error(), "timed out after 300ms waiting for workflowrun hello-slow to finish") {
			t.Fatalf("run --wait --timeout: %v", err)
		}
	})

	t.Run("get", func(t *testing.T) {
		out := k.ok(t, "get")
		if h := tableHeader(out); !slices.Equal(h, []string{"NAME", "WORKFLOW", "STATUS", "STATE", "DURATION", "AGE"}) {
			t.Fatalf("header %v in\n%s", h, out)
		}
		if !strings.Contains(out, "hello-ok ") || !strings.Contains(out, "hello-bad ") {
			t.Fatalf("list:\n%s", out)
		}
		if err := setStatus("hello-default", func(st *minik8sv1.WorkflowRunStatus) { st.Phase = minik8sv1.WorkflowRunRunning }); err != nil {
			t.Fatal(err)
		}
		// A run of another workflow (an inline one) is not listed with --workflow.
		inline := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "minik8s.io/v1", "kind": "WorkflowRun", "metadata": map[string]any{"name": "inline-1"},
			"spec": map[string]any{"definition": workflow.Object["spec"].(map[string]any)["definition"]},
		}}
		if _, err := runs.Create(ctx, inline, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		if out := k.ok(t, "get", "-o", "name"); !strings.Contains(out, "workflowrun.minik8s.io/inline-1\n") {
			t.Fatalf("get -o name:\n%s", out)
		}
		out = k.ok(t, "get", "--workflow", "hello", "-o", "name")
		if strings.Contains(out, "inline-1") || !strings.Contains(out, "workflowrun.minik8s.io/hello-ok\n") {
			t.Fatalf("get --workflow hello:\n%s", out)
		}

		out = k.ok(t, "get", "hello-ok")
		for _, want := range []string{"Workflow:    hello\n", "Phase:       Succeeded\n", "Duration:    5ms\n", "Started:     " + stamp(0) + "\n", "Input:       {\"x\":1}\n",
			`Output:      {"greeting":"hi ada","n":[1,2]}` + "\n"} {
			if !strings.Contains(out, want) {
				t.Errorf("no %q in\n%s", want, out)
			}
		}
		lines := outputLines(out)
		i := slices.IndexFunc(lines, func(l string) bool { return strings.HasPrefix(l, "STATE ") })
		if i < 0 || !slices.Equal(strings.Fields(lines[i]), []string{"STATE", "TYPE", "STARTED", "DURATION", "ATTEMPTS", "RESULT"}) ||
			len(lines) != i+2 || !slices.Equal(strings.Fields(lines[i+1]), []string{"A", "Pass", now.Format("15:04:05.000"), "5ms", "-", "ok"}) {
			t.Fatalf("get hello-ok:\n%s", out)
		}
		if out := k.ok(t, "get", "hello-bad"); !strings.Contains(out, "Error:       States.TaskFailed\n") || !strings.Contains(out, "Cause:       the function said no\n") {
			t.Fatalf("get hello-bad:\n%s", out)
		}
		out = k.ok(t, "get", "hello-ok", "-o", "json")
		var got minik8sv1.WorkflowRun
		if err := json.Unmarshal([]byte(out), &got); err != nil || got.Status.Phase != minik8sv1.WorkflowRunSucceeded || len(got.Status.History) != 1 {
			t.Fatalf("get -o json: %v\n%s", err, out)
		}
		if err := k.fails(t, "get", "nope"); !strings.Contains(err.Error(), `"nope" not found`) {
			t.Fatalf("get of a missing run: %v", err)
		}
	})

	t.Run("logs", func(t *testing.T) {
		want := strings.Join([]string{
			stamp(0) + ` A (Pass) entered input={"x":1}`,
			stamp(5*time.Millisecond) + ` A succeeded output={"x":1}`,
			stamp(5*time.Millisecond) + ` workflowrun hello-ok Succeeded output={"greeting":"hi ada","n":[1,2]}`,
		}, "\n") + "\n"
		if got := k.ok(t, "logs", "hello-ok"); got != want {
			t.Fatalf("logs:\n%s\nwant\n%s", got, want)
		}
		if got := k.ok(t, "logs", "hello-ok", "-f"); got != want {
			t.Fatalf("logs -f of a finished run:\n%s\nwant\n%s", got, want)
		}

		// Following a running run: a state entered later, a retry and the
		// end are printed as they come, each once; logs -f ends with the run.
		if err := setStatus("hello-file", func(st *minik8sv1.WorkflowRunStatus) {
			st.Phase, st.StartTime, st.CurrentState = minik8sv1.WorkflowRunRunning, timeP(0), "A"
			st.History = []minik8sv1.WorkflowRunState{stateA}
		}); err != nil {
			t.Fatal(err)
		}
		var out syncBuffer
		done := make(chan error, 2)
		var cliOut string
		go func() {
			var err error
			cliOut, _, err = k.run(ctx, "", "logs", "hello-file", "-f")
			done <- err
		}()
		go func() {
			// The same, through the library, to read what it prints as it goes.
			done <- wf.Logs(ctx, dyn, wf.LogOptions{Namespace: "default", Name: "hello-file", Follow: true}, &out)
		}()
		waitFor(t, "the first lines", func(context.Context) (bool, error) {
			return strings.Count(out.String(), "\n") == 2, nil
		})
		b := minik8sv1.WorkflowRunState{Name: "B", Type: "Task", Input: minik8sv1.NewJSON([]byte(`{"x":1}`)), Entered: at(5 * time.Millisecond), Attempts: 1}
		if err := setStatus("hello-file", func(st *minik8sv1.WorkflowRunStatus) { st.CurrentState = "B"; st.History = append(st.History, b) }); err != nil {
			t.Fatal(err)
		}
		waitFor(t, "the state entered later", func(context.Context) (bool, error) {
			return strings.Contains(out.String(), "B (Task) entered"), nil
		})
		if err := setStatus("hello-file", func(st *minik8sv1.WorkflowRunStatus) {
			st.History[1].Attempts = 2
			st.History[1].Retries = []minik8sv1.WorkflowRunRetry{{At: at(time.Second), Error: "Busy", Delay: metav1.Duration{Duration: 2 * time.Second}}}
		}); err != nil {
			t.Fatal(err)
		}
		waitFor(t, "the retry", func(context.Context) (bool, error) { return strings.Contains(out.String(), "retrying"), nil })
		select {
		case err := <-done:
			t.Fatalf("logs -f ended before the run: %v", err)
		default:
		}
		if err := setStatus("hello-file", func(st *minik8sv1.WorkflowRunStatus) {
			st.Phase, st.CompletionTime = minik8sv1.WorkflowRunFailed, timeP(4*time.Second)
			st.Error, st.Cause = "Busy", "still busy"
			st.History[1].Exited, st.History[1].Error, st.History[1].Cause = atP(4*time.Second), "Busy", "still busy"
		}); err != nil {
			t.Fatal(err)
		}
		for range 2 {
			select {
			case err := <-done:
				if err != nil {
					t.Fatalf("logs -f: %v", err)
				}
			case <-time.After(20 * time.Second):
				t.Fatal("logs -f did not end with the run")
			}
		}
		want = strings.Join([]string{
			stamp(0) + ` A (Pass) entered input={"x":1}`,
			stamp(5*time.Millisecond) + ` A succeeded output={"x":1}`,
			stamp(5*time.Millisecond) + ` B (Task) entered input={"x":1}`,
			stamp(time.Second) + ` B attempt 1 failed Busy; retrying in 2s`,
			stamp(4*time.Second) + ` B failed Busy: still busy`,
			stamp(4*time.Second) + ` workflowrun hello-file Failed Busy: still busy`,
		}, "\n") + "\n"
		for _, got := range []string{out.String(), cliOut} {
			if got != want {
				t.Fatalf("logs -f:\n%s\nwant\n%s", got, want)
			}
		}
		if got := k.ok(t, "logs", "hello-file"); got != want {
			t.Fatalf("logs after the end:\n%s\nwant\n%s", got, want)
		}
		if err := k.fails(t, "logs", "nope"); !strings.Contains(err.Error(), `"nope" not found`) {
			t.Fatalf("logs of a missing run: %v", err)
		}
	})

	t.Run("list", func(t *testing.T) {
		if out := k.ok(t, "list", "-o", "name"); out != "workflow.minik8s.io/hello\n" {
			t.Fatalf("list -o name: %q", out)
		}
		out := k.ok(t, "ls")
		if lines := outputLines(out); len(lines) != 2 || tableHeader(out)[0] != "NAME" || !strings.HasPrefix(lines[1], "hello ") {
			t.Fatalf("ls:\n%s", out)
		}
	})

	t.Run("plugin", func(t *testing.T) {
		// KUBECONFIG instead of --kubeconfig, and the namespace from it.
		t.Setenv("KUBECONFIG", c.cp.KubeconfigPath)
		var out, errOut strings.Builder
		cmd := wf.NewPluginCommand(genericiooptions.IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut})
		cmd.SetArgs([]string{"get", "--workflow", "hello", "-o", "name", "--cache-dir", t.TempDir()})
		if err := cmd.Execute(); err != nil || !strings.Contains(out.String(), "workflowrun.minik8s.io/hello-ok\n") {
			t.Fatalf("kubectl-wf get: %q, %v\n%s", out.String(), err, errOut.String())
		}
	})
}
