package deployment

import (
	"fmt"
	"strconv"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
)

var t0 = time.Date(2025, 1, 1, 12, 0, 0, 0, time.UTC)

func ios(s string) *intstr.IntOrString {
	v := intstr.Parse(s)
	return &v
}

// rollingDeployment is a RollingUpdate Deployment of size n.
func rollingDeployment(n int32, surge, unavailable string) *appsv1.Deployment {
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web", UID: "uid-web", Generation: 1},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To(n),
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "nginx:1"}}},
			},
			Strategy: appsv1.DeploymentStrategy{Type: appsv1.RollingUpdateDeploymentStrategyType,
				RollingUpdate: &appsv1.RollingUpdateDeployment{MaxSurge: ios(surge), MaxUnavailable: ios(unavailable)}},
			RevisionHistoryLimit:    ptr.To[int32](10),
			ProgressDeadlineSeconds: ptr.To[int32](600),
		},
	}
}

// rsOf is a ReplicaSet of spec size n with available pods, created age
// before t0.
func rsOf(name string, n, available int32, age time.Duration) *appsv1.ReplicaSet {
	return &appsv1.ReplicaSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: types.UID("uid-" + name), CreationTimestamp: metav1.NewTime(t0.Add(-age))},
		Spec:       appsv1.ReplicaSetSpec{Replicas: ptr.To(n)},
		Status:     appsv1.ReplicaSetStatus{Replicas: n, ReadyReplicas: available, AvailableReplicas: available},
	}
}

func annotated(rs *appsv1.ReplicaSet, kv ...string) *appsv1.ReplicaSet {
	if rs.Annotations == nil {
		rs.Annotations = map[string]string{}
	}
	for i := 0; i+1 < len(kv); i += 2 {
		rs.Annotations[kv[i]] = kv[i+1]
	}
	return rs
}

func TestResolveFenceposts(t *testing.T) {
	cases := []struct {
		surge, unavailable string
		desired            int32
		wantSurge, wantU   int32
	}{
		{"25%", "25%", 10, 3, 2}, // surge rounds up, unavailable down
		{"25%", "25%", 4, 1, 1},
		{"25%", "25%", 1, 1, 0},
		{"0", "1", 3, 0, 1},
		{"1", "0", 3, 1, 0},
		{"0", "0", 3, 0, 1},     // both zero: one may be unavailable
		{"10%", "10%", 5, 1, 0}, // 0.5 up, 0.5 down
		{"0%", "10%", 5, 0, 1},  // both round to zero
		{"50%", "100%", 3, 2, 3},
		{"2", "30%", 0, 2, 0},
	}
	for _, tc := range cases {
		t.Run(fmt.Sprintf("%s/%s of %d", tc.surge, tc.unavailable, tc.desired), func(t *testing.T) {
			s, u := resolveFenceposts(ios(tc.surge), ios(tc.unavailable), tc.desired)
			if s != tc.wantSurge || u != tc.wantU {
				t.Fatalf("got surge %d unavailable %d, want %d %d", s, u, tc.wantSurge, tc.wantU)
			}
		})
	}
	if s, u := resolveFenceposts(nil, nil, 4); s != 0 || u != 1 {
		t.Fatalf("nil values: got %d %d, want 0 1", s, u)
	}
}

func TestMaxUnavailableAndSurge(t *testing.T) {
	d := rollingDeployment(2, "0", "200%")
	if got := maxUnavailable(d); got != 2 {
		t.Errorf("maxUnavailable = %d, want it capped at replicas (2)", got)
	}
	d = rollingDeployment(0, "1", "1")
	if got := maxUnavailable(d); got != 0 {
		t.Errorf("maxUnavailable of an empty deployment = %d", got)
	}
	d = rollingDeployment(5, "2", "1")
	d.Spec.Strategy = appsv1.DeploymentStrategy{Type: appsv1.RecreateDeploymentStrategyType}
	if maxSurge(d) != 0 || maxUnavailable(d) != 0 {
		t.Error("Recreate has surge or unavailability")
	}
}

func TestNewRSNewReplicas(t *testing.T) {
	cases := []struct {
		name              string
		replicas          int32
		surge             string
		oldSize, newSize  int32
		want              int32
		recreate          bool
		description       string
		availableOldCount int32
	}{
		{name: "fresh deployment", replicas: 3, surge: "25%", want: 3},
		{name: "surge room", replicas: 10, surge: "3", oldSize: 10, newSize: 0, want: 3},
		{name: "partial room", replicas: 10, surge: "3", oldSize: 9, newSize: 2, want: 4},
		{name: "no room", replicas: 10, surge: "3", oldSize: 10, newSize: 3, want: 3},
		{name: "never above replicas", replicas: 4, surge: "10", oldSize: 1, newSize: 3, want: 4},
		{name: "recreate takes all", replicas: 5, surge: "1", oldSize: 5, want: 5, recreate: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			d := rollingDeployment(tc.replicas, tc.surge, "0")
			if tc.recreate {
				d.Spec.Strategy = appsv1.DeploymentStrategy{Type: appsv1.RecreateDeploymentStrategyType}
			}
			old, newRS := rsOf("old", tc.oldSize, tc.oldSize, time.Hour), rsOf("new", tc.newSize, 0, time.Minute)
			if got := newRSNewReplicas(d, []*appsv1.ReplicaSet{old, newRS}, newRS); got != tc.want {
				t.Fatalf("got %d, want %d", got, tc.want)
			}
		})
	}
}

// TestRollingSteps walks a rollout of 3 replicas with maxSurge 1 and
// maxUnavailable 0 through the planners: at no step may the available
// pods drop below 3.
func TestRollingSteps(t *testing.T) {
	d := rollingDeployment(3, "1", "0")
	old := rsOf("old", 3, 3, time.Hour)
	newRS := rsOf("new", 0, 0, time.Minute)
	for step := 0; step < 20 && (replicas(newRS) != 3 || replicas(old) != 0); step++ {
		all := []*appsv1.ReplicaSet{old, newRS}
		if want := newRSNewReplicas(d, all, newRS); want != replicas(newRS) {
			newRS.Spec.Replicas = ptr.To(want)
		} else if budget := oldScaleDownBudget(d, all, newRS); budget > 0 {
			for _, s := range planOldScaleDown(d, all, []*appsv1.ReplicaSet{old}) {
				s.rs.Spec.Replicas = ptr.To(s.replicas)
			}
		}
		if total := replicas(old) + replicas(newRS); total > 4 {
			t.Fatalf("step %d: %d pods, above replicas + maxSurge", step, total)
		}
		// Pods converge: what is there becomes available, what was
		// removed goes.
		old.Status.AvailableReplicas, newRS.Status.AvailableReplicas = replicas(old), replicas(newRS)
		if avail := old.Status.AvailableReplicas + newRS.Status.AvailableReplicas; avail < 3 {
			t.Fatalf("step %d: %d available, below replicas - maxUnavailable", step, avail)
		}
	}
	if replicas(newRS) != 3 || replicas(old) != 0 {
		t.Fatalf("rollout did not finish: new %d old %d", replicas(newRS), replicas(old))
	}
}

func TestOldScaleDownBudget(t *testing.T) {
	cases := []struct {
		name                 string
		replicas             int32
		unavailable          string
		oldSize, oldAvail    int32
		newSize, newAvail    int32
		want                 int32
		wantCleanup, wantOld []int32 // plans' target sizes
	}{
		// 10 replicas, maxUnavailable 2: 8 must stay available.
		{name: "new pods not ready yet", replicas: 10, unavailable: "2", oldSize: 10, oldAvail: 10, newSize: 3, newAvail: 0,
			want: 2, wantOld: []int32{8}},
		{name: "new pods ready", replicas: 10, unavailable: "2", oldSize: 8, oldAvail: 8, newSize: 5, newAvail: 5,
			want: 5, wantOld: []int32{3}},
		{name: "old has unhealthy pods: those go first", replicas: 10, unavailable: "0", oldSize: 10, oldAvail: 7, newSize: 3, newAvail: 3,
			want: 3, wantCleanup: []int32{7}},
		{name: "no room", replicas: 3, unavailable: "0", oldSize: 3, oldAvail: 3, newSize: 1, newAvail: 0, want: -0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			d := rollingDeployment(tc.replicas, "3", tc.unavailable)
			old, newRS := rsOf("old", tc.oldSize, tc.oldAvail, time.Hour), rsOf("new", tc.newSize, tc.newAvail, time.Minute)
			all := []*appsv1.ReplicaSet{old, newRS}
			budget := oldScaleDownBudget(d, all, newRS)
			if budget != tc.want {
				t.Fatalf("budget = %d, want %d", budget, tc.want)
			}
			cleanup := planUnhealthyCleanup([]*appsv1.ReplicaSet{old}, budget)
			if got := sizes(cleanup); fmt.Sprint(got) != fmt.Sprint(tc.wantCleanup) {
				t.Fatalf("cleanup plan %v, want %v", got, tc.wantCleanup)
			}
			if len(cleanup) == 0 && budget > 0 {
				if got := sizes(planOldScaleDown(d, all, []*appsv1.ReplicaSet{old})); fmt.Sprint(got) != fmt.Sprint(tc.wantOld) {
					t.Fatalf("scale-down plan %v, want %v", got, tc.wantOld)
				}
			}
		})
	}
}

func sizes(plan []rsScale) []int32 {
	var out []int32
	for _, s := range plan {
		out = append(out, s.replicas)
	}
	return out
}

func TestOldReplicaSetsScaleDownOldestFirst(t *testing.T) {
	d := rollingDeployment(6, "0", "50%") // 3 may be unavailable
	oldest := rsOf("oldest", 2, 2, 3*time.Hour)
	middle := rsOf("middle", 2, 2, 2*time.Hour)
	newer := rsOf("newer", 2, 2, time.Hour)
	newRS := rsOf("new", 0, 0, time.Minute)
	plan := planOldScaleDown(d, []*appsv1.ReplicaSet{newer, oldest, middle, newRS}, []*appsv1.ReplicaSet{newer, middle, oldest})
	var got []string
	for _, s := range plan {
		got = append(got, s.rs.Name+"="+strconv.Itoa(int(s.replicas)))
	}
	if want := "[oldest=0 middle=1]"; fmt.Sprint(got) != want {
		t.Fatalf("plan %v, want %s", got, want)
	}

	// Unhealthy pods are cleaned up oldest first too, within the budget.
	a, b := rsOf("a", 3, 1, 2*time.Hour), rsOf("b", 3, 0, time.Hour)
	if got := sizes(planUnhealthyCleanup([]*appsv1.ReplicaSet{b, a}, 3)); fmt.Sprint(got) != "[1 2]" {
		t.Fatalf("cleanup plan %v, want [1 2] (a loses its 2 unhealthy, b 1)", got)
	}
}

func TestPlanProportionalScale(t *testing.T) {
	type rs struct {
		name    string
		size    int32
		sizedTo int32 // max-replicas annotation; 0: none
		age     time.Duration
	}
	cases := []struct {
		name          string
		replicas      int32
		surge         string
		statusRepl    int32
		rss           []rs
		want          map[string]int32
		wantDirection string
	}{
		{
			// 10 -> 15 with 3 surge, mid-rollout at 13 (sized for 13):
			// 18/13 of each, rounded: 8 -> 11, 5 -> 7.
			name: "scale up mid-rollout", replicas: 15, surge: "3",
			rss:  []rs{{"old", 8, 13, time.Hour}, {"new", 5, 13, time.Minute}},
			want: map[string]int32{"old": 11, "new": 7}, wantDirection: scaleUp,
		},
		{
			name: "scale down mid-rollout", replicas: 5, surge: "3",
			rss:  []rs{{"old", 8, 13, time.Hour}, {"new", 5, 13, time.Minute}},
			want: map[string]int32{"old": 5, "new": 3}, wantDirection: scaleDown,
		},
		{
			// Equal sizes: when growing the leftover goes to the newer.
			name: "leftover to the newest when growing", replicas: 7, surge: "0",
			rss:  []rs{{"old", 3, 6, time.Hour}, {"new", 3, 6, time.Minute}},
			want: map[string]int32{"old": 3, "new": 4}, wantDirection: scaleUp,
		},
		{
			name: "leftover from the oldest when shrinking", replicas: 5, surge: "0",
			rss:  []rs{{"old", 3, 6, time.Hour}, {"new", 3, 6, time.Minute}},
			want: map[string]int32{"old": 2, "new": 3}, wantDirection: scaleDown,
		},
		{
			name: "to zero", replicas: 0, surge: "1",
			rss:  []rs{{"old", 2, 4, time.Hour}, {"new", 2, 4, time.Minute}},
			want: map[string]int32{"old": 0, "new": 0}, wantDirection: scaleDown,
		},
		{
			name: "no annotation: status.replicas is the base", replicas: 20, surge: "0", statusRepl: 10,
			rss:  []rs{{"old", 6, 0, time.Hour}, {"new", 4, 0, time.Minute}},
			want: map[string]int32{"old": 12, "new": 8}, wantDirection: scaleUp,
		},
		{
			name: "already right: annotations only", replicas: 10, surge: "3",
			rss:  []rs{{"old", 8, 10, time.Hour}, {"new", 5, 10, time.Minute}},
			want: map[string]int32{"old": 8, "new": 5}, wantDirection: "",
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			d := rollingDeployment(tc.replicas, tc.surge, "0")
			d.Status.Replicas = tc.statusRepl
			var rss []*appsv1.ReplicaSet
			for _, r := range tc.rss {
				x := rsOf(r.name, r.size, r.size, r.age)
				if r.sizedTo > 0 {
					annotated(x, AnnotationMaxReplicas, strconv.Itoa(int(r.sizedTo)))
				}
				rss = append(rss, x)
			}
			plan, direction := planProportionalScale(d, append(rss, nil))
			got := map[string]int32{}
			for _, s := range plan {
				got[s.rs.Name] = s.replicas
			}
			if fmt.Sprint(got) != fmt.Sprint(tc.want) || direction != tc.wantDirection {
				t.Fatalf("got %v %q, want %v %q", got, direction, tc.want, tc.wantDirection)
			}
		})
	}
}

func TestFindActiveOrLatest(t *testing.T) {
	newRS := rsOf("new", 0, 0, time.Minute)
	old1, old2 := rsOf("old1", 0, 0, 2*time.Hour), rsOf("old2", 0, 0, time.Hour)
	if got := findActiveOrLatest(newRS, []*appsv1.ReplicaSet{old1, old2}); got != newRS {
		t.Errorf("none active: got %v, want the new one", got)
	}
	if got := findActiveOrLatest(nil, []*appsv1.ReplicaSet{old1, old2}); got != old2 {
		t.Errorf("none active, no new one: got %v, want the newest old", got.Name)
	}
	old1.Spec.Replicas = ptr.To[int32](2)
	if got := findActiveOrLatest(newRS, []*appsv1.ReplicaSet{old1, old2}); got != old1 {
		t.Errorf("one active: got %v", got)
	}
	newRS.Spec.Replicas = ptr.To[int32](1)
	if got := findActiveOrLatest(newRS, []*appsv1.ReplicaSet{old1, old2}); got != nil {
		t.Errorf("two active: got %v, want none", got.Name)
	}
}
