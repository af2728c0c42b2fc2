package apiserver

import (
	"slices"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/minik8s/minik8s/pkg/registry"
)

func TestSetGCFinalizers(t *testing.T) {
	const (
		orphan     = metav1.FinalizerOrphanDependents
		foreground = metav1.FinalizerDeleteDependents
		other      = "example.com/keep"
	)
	for _, tc := range []struct {
		name        string
		have        []string
		policy      metav1.DeletionPropagation
		want        []string
		wantChanged bool
	}{
		{name: "no policy keeps what is there", have: []string{other, orphan}, want: []string{other, orphan}},
		{name: "background", have: []string{other}, policy: metav1.DeletePropagationBackground, want: []string{other}},
		{name: "background drops the collector's finalizers", have: []string{foreground, other, orphan},
			policy: metav1.DeletePropagationBackground, want: []string{other}, wantChanged: true},
		{name: "orphan", have: []string{other}, policy: metav1.DeletePropagationOrphan, want: []string{other, orphan}, wantChanged: true},
		{name: "orphan again", have: []string{orphan}, policy: metav1.DeletePropagationOrphan, want: []string{orphan}},
		{name: "foreground replaces orphan", have: []string{orphan, other}, policy: metav1.DeletePropagationForeground,
			want: []string{other, foreground}, wantChanged: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := &metav1.ObjectMeta{Finalizers: slices.Clone(tc.have)}
			changed := setGCFinalizers(m, tc.policy)
			if changed != tc.wantChanged || !slices.Equal(m.Finalizers, tc.want) {
				t.Errorf("setGCFinalizers(%v, %q) = %v (changed %v), want %v (changed %v)", tc.have, tc.policy, m.Finalizers, changed, tc.want, tc.wantChanged)
			}
		})
	}
}

func TestPropagationForOrphanByDefault(t *testing.T) {
	orphaning, other := &registry.Resource{OrphanByDefault: true}, &registry.Resource{}
	for _, tc := range []struct {
		name  string
		res   *registry.Resource
		have  []string
		asked metav1.DeletionPropagation
		want  metav1.DeletionPropagation
	}{
		{name: "no policy orphans", res: orphaning, want: metav1.DeletePropagationOrphan},
		{name: "an explicit policy wins", res: orphaning, asked: metav1.DeletePropagationBackground, want: metav1.DeletePropagationBackground},
		{name: "a foreground deletion under way stays", res: orphaning, have: []string{metav1.FinalizerDeleteDependents}},
		{name: "other resources leave it to the collector", res: other},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := propagationFor(tc.res, &metav1.ObjectMeta{Finalizers: tc.have}, tc.asked); got != tc.want {
				t.Errorf("propagationFor = %q, want %q", got, tc.want)
			}
		})
	}
}
