package wf

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	dynamicfake "k8s.io/client-go/dynamic/fake"

	minik8sv1 "github.com/minik8s/minik8s/pkg/apis/minik8s/v1"
	"github.com/minik8s/minik8s/pkg/workflow/wfmeta"
)

func TestParseInput(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "in.json")
	if err := os.WriteFile(file, []byte("{\n  \"a\": [1, 2]\n}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	bad := filepath.Join(dir, "bad.json")
	if err := os.WriteFile(bad, []byte("{a: 1}"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, data, stdin string
		want, wantErr     string
	}{
		{name: "default", want: "{}"},
		{name: "inline", data: `{"a": 1, "b": "x"}`, want: `{"a":1,"b":"x"}`},
		{name: "any value", data: ` [1, "two", null] `, want: `[1,"two",null]`},
		{name: "a string", data: `"hi"`, want: `"hi"`},
		{name: "file", data: "@" + file, want: `{"a":[1,2]}`},
		{name: "stdin", data: "@-", stdin: `{"x": true}` + "\n", want: `{"x":true}`},
		{name: "stdin dash", data: "-", stdin: `7`, want: `7`},
		{name: "not json", data: `{a: 1}`, wantErr: "-d: the input is not valid JSON: invalid character 'a'"},
		{name: "two values", data: `{} {}`, wantErr: "the input is not valid JSON"},
		{name: "bare word", data: `hello`, wantErr: "-d: the input is not valid JSON"},
		{name: "bad file", data: "@" + bad, wantErr: "-d @" + bad + ": the input is not valid JSON"},
		{name: "missing file", data: "@" + filepath.Join(dir, "nope.json"), wantErr: "no such file or directory"},
		{name: "empty stdin", data: "@-", wantErr: "-d @- (stdin): the input is empty"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseInput(tc.data, strings.NewReader(tc.stdin))
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("ParseInput(%q) = %q, %v; want an error with %q", tc.data, got, err, tc.wantErr)
				}
				return
			}
			if err != nil || string(got) != tc.want {
				t.Fatalf("ParseInput(%q) = %q, %v; want %q", tc.data, got, err, tc.want)
			}
		})
	}
}

var t0 = time.Date(2024, 6, 1, 10, 0, 0, 0, time.UTC)

func at(d time.Duration) metav1.MicroTime { return metav1.NewMicroTime(t0.Add(d)) }

func atP(d time.Duration) *metav1.MicroTime { m := at(d); return &m }

func timeP(d time.Duration) *metav1.Time { m := metav1.NewTime(t0.Add(d)); return &m }

func js(s string) *minik8sv1.JSON { return minik8sv1.NewJSON([]byte(s)) }

// failedRun went through a Pass state, a Task retried twice that then
// succeeded, and a Task that failed the run.
func failedRun() *minik8sv1.WorkflowRun {
	return &minik8sv1.WorkflowRun{
		ObjectMeta: metav1.ObjectMeta{Name: "order-x7k2p", Namespace: "default"},
		Spec:       minik8sv1.WorkflowRunSpec{Workflow: "order", Input: js(`{"qty":2}`)},
		Status: minik8sv1.WorkflowRunStatus{
			Phase: minik8sv1.WorkflowRunFailed, StartTime: timeP(0), CompletionTime: timeP(2 * time.Second),
			Error: "States.TaskFailed", Cause: "out of stock",
			History: []minik8sv1.WorkflowRunState{
				{Name: "Prepare", Type: "Pass", Input: js(`{"qty":2}`), Output: js(`{"qty":2,"ok":true}`),
					Entered: at(0), Exited: atP(3 * time.Millisecond), Next: "Reserve"},
				{Name: "Reserve", Type: "Task", Input: js(`{"qty":2,"ok":true}`), Output: js(`{"id":7}`), Attempts: 3,
					Retries: []minik8sv1.WorkflowRunRetry{
						{At: at(100 * time.Millisecond), Error: "States.Timeout", Delay: metav1.Duration{Duration: 200 * time.Millisecond}},
						{At: at(400 * time.Millisecond), Error: "Busy", Cause: "try later", Delay: metav1.Duration{Duration: 400 * time.Millisecond}},
					},
					Entered: at(3 * time.Millisecond), Exited: atP(1204 * time.Millisecond), Next: "Ship"},
				{Name: "Ship", Type: "Task", Input: js(`{"id":7}`), Attempts: 1, Error: "States.TaskFailed", Cause: "out of stock",
					Entered: at(1204 * time.Millisecond), Exited: atP(2 * time.Second)},
			},
		},
	}
}

func TestLogLines(t *testing.T) {
	running := failedRun()
	running.Status = minik8sv1.WorkflowRunStatus{Phase: minik8sv1.WorkflowRunRunning, StartTime: timeP(0), CurrentState: "Reserve",
		History: running.Status.History[:2]}
	running.Status.History[1].Exited = nil
	running.Status.History[1].Retries = running.Status.History[1].Retries[:1]

	succeeded := &minik8sv1.WorkflowRun{
		ObjectMeta: metav1.ObjectMeta{Name: "hello-1"},
		Status: minik8sv1.WorkflowRunStatus{Phase: minik8sv1.WorkflowRunSucceeded, CompletionTime: timeP(0), Output: js(`{"a":1}`),
			History: []minik8sv1.WorkflowRunState{{Name: "A", Type: "Pass", Entered: at(0), Exited: atP(time.Second), Output: js(`{"a":1}`)}}},
	}
	aborted := &minik8sv1.WorkflowRun{
		ObjectMeta: metav1.ObjectMeta{Name: "long-1"},
		Status: minik8sv1.WorkflowRunStatus{Phase: minik8sv1.WorkflowRunAborted,
			History: []minik8sv1.WorkflowRunState{{Name: "W", Type: "Wait", Entered: at(0)}}},
	}

	for _, tc := range []struct {
		name string
		run  *minik8sv1.WorkflowRun
		want []string
	}{
		{name: "failed", run: failedRun(), want: []string{
			`2024-06-01T10:00:00.000Z Prepare (Pass) entered input={"qty":2}`,
			`2024-06-01T10:00:00.003Z Prepare succeeded output={"qty":2,"ok":true}`,
			`2024-06-01T10:00:00.003Z Reserve (Task) entered input={"qty":2,"ok":true}`,
			`2024-06-01T10:00:00.100Z Reserve attempt 1 failed States.Timeout; retrying in 200ms`,
			`2024-06-01T10:00:00.400Z Reserve attempt 2 failed Busy; retrying in 400ms`,
			`2024-06-01T10:00:01.204Z Reserve succeeded output={"id":7}`,
			`2024-06-01T10:00:01.204Z Ship (Task) entered input={"id":7}`,
			`2024-06-01T10:00:02.000Z Ship failed States.TaskFailed: out of stock`,
			`2024-06-01T10:00:02.000Z workflowrun order-x7k2p Failed States.TaskFailed: out of stock`,
		}},
		{name: "running", run: running, want: []string{
			`2024-06-01T10:00:00.000Z Prepare (Pass) entered input={"qty":2}`,
			`2024-06-01T10:00:00.003Z Prepare succeeded output={"qty":2,"ok":true}`,
			`2024-06-01T10:00:00.003Z Reserve (Task) entered input={"qty":2,"ok":true}`,
			`2024-06-01T10:00:00.100Z Reserve attempt 1 failed States.Timeout; retrying in 200ms`,
		}},
		// completionTime is kept to the second: the end is the last exit.
		{name: "succeeded", run: succeeded, want: []string{
			`2024-06-01T10:00:00.000Z A (Pass) entered input=null`,
			`2024-06-01T10:00:01.000Z A succeeded output={"a":1}`,
			`2024-06-01T10:00:01.000Z workflowrun hello-1 Succeeded output={"a":1}`,
		}},
		{name: "aborted mid-state, no error", run: aborted, want: []string{
			`2024-06-01T10:00:00.000Z W (Wait) entered input=null`,
			`2024-06-01T10:00:00.000Z workflowrun long-1 Aborted`,
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			lines := LogLines(tc.run)
			var got []string
			keys := map[string]bool{}
			for _, l := range lines {
				got = append(got, l.Text)
				if keys[l.Key] {
					t.Errorf("key %q twice", l.Key)
				}
				keys[l.Key] = true
			}
			if strings.Join(got, "\n") != strings.Join(tc.want, "\n") {
				t.Fatalf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(tc.want, "\n"))
			}
		})
	}

	// The lines of a run that moved on begin with the lines it had, under
	// the same keys: following prints only the new ones.
	before, after := LogLines(running), LogLines(failedRun())
	for i, l := range before[:3] {
		if after[i] != l {
			t.Fatalf("line %d changed: %+v -> %+v", i, l, after[i])
		}
	}
}

func TestDescribe(t *testing.T) {
	var out strings.Builder
	if err := Describe(&out, failedRun(), t0.Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	want := `Name:        order-x7k2p
Namespace:   default
Workflow:    order
Phase:       Failed
Started:     2024-06-01T10:00:00.000Z
Duration:    2s
Input:       {"qty":2}
Error:       States.TaskFailed
Cause:       out of stock

STATE     TYPE   STARTED        DURATION   ATTEMPTS   RESULT
Prepare   Pass   10:00:00.000   3ms        -          ok
Reserve   Task   10:00:00.003   1.201s     3          ok
Ship      Task   10:00:01.204   796ms      1          States.TaskFailed
`
	if out.String() != want {
		t.Fatalf("got\n%s\nwant\n%s", out.String(), want)
	}

	running := failedRun()
	running.Spec = minik8sv1.WorkflowRunSpec{}
	running.Status = minik8sv1.WorkflowRunStatus{Phase: minik8sv1.WorkflowRunRunning, StartTime: timeP(0), CurrentState: "Reserve",
		History: running.Status.History[:2]}
	running.Status.History[1].Exited = nil
	out.Reset()
	if err := Describe(&out, running, t0.Add(90*time.Second)); err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"Workflow:        <inline definition>\n", "Current State:   Reserve\n", "Duration:        1m30s (running)\n",
		"Input:           {}\n", "Reserve   Task   10:00:00.003   -          3          running\n"} {
		if !strings.Contains(out.String(), s) {
			t.Errorf("no %q in\n%s", s, out.String())
		}
	}

	pending := &minik8sv1.WorkflowRun{ObjectMeta: metav1.ObjectMeta{Name: "p"}, Spec: minik8sv1.WorkflowRunSpec{Workflow: "w"}}
	out.Reset()
	if err := Describe(&out, pending, t0); err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"Phase:       Pending\n", "Started:     -\n", "Duration:    -\n", "History:     <none>\n"} {
		if !strings.Contains(out.String(), s) {
			t.Errorf("no %q in\n%s", s, out.String())
		}
	}
}

func TestRunResult(t *testing.T) {
	for _, tc := range []struct {
		status minik8sv1.WorkflowRunStatus
		want   string
	}{
		{minik8sv1.WorkflowRunStatus{Phase: "Succeeded"}, ""},
		{minik8sv1.WorkflowRunStatus{Phase: "Failed", Error: "States.TaskFailed", Cause: "boom"}, "workflowrun r Failed: States.TaskFailed: boom"},
		{minik8sv1.WorkflowRunStatus{Phase: "TimedOut", Error: "States.Timeout"}, "workflowrun r TimedOut: States.Timeout"},
		{minik8sv1.WorkflowRunStatus{Phase: "Aborted"}, "workflowrun r Aborted"},
	} {
		err := RunResult(&minik8sv1.WorkflowRun{ObjectMeta: metav1.ObjectMeta{Name: "r"}, Status: tc.status})
		got := ""
		if err != nil {
			got = err.Error()
			var re *RunError
			if !errors.As(err, &re) || re.Phase != tc.status.Phase {
				t.Errorf("%v is not a *RunError of phase %s", err, tc.status.Phase)
			}
		}
		if got != tc.want {
			t.Errorf("phase %s: %q, want %q", tc.status.Phase, got, tc.want)
		}
	}
}

func TestStart(t *testing.T) {
	scheme := runtime.NewScheme()
	wf := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "minik8s.io/v1", "kind": "Workflow",
		"metadata": map[string]any{"name": "order", "namespace": "default"},
	}}
	dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(scheme, map[schema.GroupVersionResource]string{
		wfmeta.WorkflowResource: "WorkflowList", wfmeta.WorkflowRunResource: "WorkflowRunList",
	}, wf)
	ctx := context.Background()
	u, err := Start(ctx, dyn, RunRequest{Namespace: "default", Workflow: "order", Name: "order-1", Input: []byte(`{"qty":2}`)})
	if err != nil {
		t.Fatal(err)
	}
	run, err := runFromUnstructured(u)
	if err != nil {
		t.Fatal(err)
	}
	if run.Name != "order-1" || run.Spec.Workflow != "order" || string(run.Spec.Input.Bytes()) != `{"qty":2}` ||
		run.Labels[wfmeta.WorkflowLabel] != "order" || u.GetKind() != "WorkflowRun" || u.GetAPIVersion() != "minik8s.io/v1" {
		t.Fatalf("created %+v", u.Object)
	}
	u, err = Start(ctx, dyn, RunRequest{Namespace: "default", Workflow: "order", Input: []byte(`{}`)})
	if err != nil {
		t.Fatal(err)
	}
	if u.GetGenerateName() != "order-" {
		t.Fatalf("generateName %q", u.GetGenerateName())
	}
	if _, err := Start(ctx, dyn, RunRequest{Namespace: "default", Workflow: "nope"}); err == nil || !strings.Contains(err.Error(), `"nope" not found`) {
		t.Fatalf("run of a missing workflow: %v", err)
	}
}

func TestPluginFlags(t *testing.T) {
	cmd := NewPluginCommand(genericStreams())
	for _, path := range [][]string{{"run"}, {"get"}, {"logs"}, {"list"}, {"ls"}} {
		sub, _, err := cmd.Find(path)
		if err != nil {
			t.Fatalf("%v: %v", path, err)
		}
		if sub.Long == "" || sub.Example == "" {
			t.Errorf("%v has no long help or example", path)
		}
	}
	for _, flag := range []string{"kubeconfig", "namespace"} {
		if cmd.PersistentFlags().Lookup(flag) == nil {
			t.Errorf("no --%s", flag)
		}
	}
	// cobra's own errors come back, for main to print.
	cmd.SetArgs([]string{"run"})
	if err := cmd.Execute(); err == nil || !strings.Contains(err.Error(), "accepts 1 arg") {
		t.Fatalf("run without a workflow: %v", err)
	}
}

func genericStreams() genericiooptions.IOStreams {
	return genericiooptions.IOStreams{In: strings.NewReader(""), Out: io.Discard, ErrOut: io.Discard}
}
