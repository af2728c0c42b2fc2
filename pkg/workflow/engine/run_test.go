package engine

import (
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"

	minik8sv1 "github.com/minik8s/minik8s/pkg/apis/minik8s/v1"
	"github.com/minik8s/minik8s/pkg/workflow/asl"
)

func TestChildName(t *testing.T) {
	long := strings.Repeat("a.b-c", 50) + ".x" // 252 characters, dotted
	for _, name := range []string{"r", "run-1", "my.run.v2", long, strings.Repeat("z", 253), strings.Repeat("a", 39) + "-b"} {
		t.Run(name[:min(len(name), 20)], func(t *testing.T) {
			run := &minik8sv1.WorkflowRun{ObjectMeta: metav1.ObjectMeta{Name: name, UID: "uid-1"}}
			x := &asl.Execution{Transitions: 3, Attempt: 1}
			seen := map[string]bool{}
			for i := range 12 {
				n := childName(run, x, i)
				if errs := validation.IsDNS1123Subdomain(n); len(errs) > 0 {
					t.Errorf("child %d: %q is not a valid name: %v", i, n, errs)
				}
				if n != childName(run, x, i) {
					t.Errorf("child %d: the name changed between calls", i)
				}
				if seen[n] {
					t.Errorf("child %d: %q given twice", i, n)
				}
				seen[n] = true
				// A child's child is named from it as well.
				child := &minik8sv1.WorkflowRun{ObjectMeta: metav1.ObjectMeta{Name: n, UID: "uid-2"}}
				if errs := validation.IsDNS1123Subdomain(childName(child, x, i)); len(errs) > 0 {
					t.Errorf("grandchild of %q: %v", n, errs)
				}
			}
			// Another attempt, another state entry or another run: other names.
			base := childName(run, x, 0)
			for what, other := range map[string]string{
				"attempt":    childName(run, &asl.Execution{Transitions: 3, Attempt: 2}, 0),
				"transition": childName(run, &asl.Execution{Transitions: 4, Attempt: 1}, 0),
				"run": childName(&minik8sv1.WorkflowRun{ObjectMeta: metav1.ObjectMeta{Name: name, UID: "uid-other"}},
					x, 0),
			} {
				if other == base {
					t.Errorf("another %s gives the same child name %q", what, base)
				}
			}
		})
	}
}

func TestAttemptStart(t *testing.T) {
	t0 := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
	x := &asl.Execution{State: "T", Attempt: 1, History: []asl.Event{{Name: "A", Entered: t0.Add(-time.Hour)}, {Name: "T", Entered: t0}}}
	if got := attemptStart(x); !got.Equal(t0) {
		t.Errorf("first attempt started %v, want %v (entered)", got, t0)
	}
	x.Attempt = 3
	x.History[1].Retries = []asl.Retry{{At: t0.Add(time.Second), Delay: time.Second}, {At: t0.Add(5 * time.Second), Delay: 2 * time.Second}}
	if got, want := attemptStart(x), t0.Add(7*time.Second); !got.Equal(want) {
		t.Errorf("third attempt started %v, want %v (its backoff's end)", got, want)
	}
	if got := attemptStart(&asl.Execution{}); !got.IsZero() {
		t.Errorf("no history: %v", got)
	}
}

func TestStartedAt(t *testing.T) {
	t0 := time.Date(2025, 3, 1, 12, 0, 0, 900000000, time.UTC)
	st := minik8sv1.WorkflowRunStatus{StartTime: &metav1.Time{Time: t0.Truncate(time.Second)}, Transitions: 2,
		History: []minik8sv1.WorkflowRunState{{Entered: metav1.NewMicroTime(t0)}, {Entered: metav1.NewMicroTime(t0.Add(time.Second))}}}
	run := &minik8sv1.WorkflowRun{Status: st}
	if got := startedAt(run); !got.Equal(t0) {
		t.Errorf("started %v, want the first entry's %v", got, t0)
	}
	// Once the first entries fell off the history, startTime is all there is.
	run.Status.Transitions = 700
	if got := startedAt(run); !got.Equal(t0.Truncate(time.Second)) {
		t.Errorf("started %v, want startTime %v", got, t0.Truncate(time.Second))
	}
}
