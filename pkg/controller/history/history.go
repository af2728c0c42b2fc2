// Package history owns ControllerRevisions, the immutable snapshots of a
// workload's pod template that DaemonSets and StatefulSets roll out and
// `kubectl rollout history|undo` reads and restores: naming them by the
// hash of their data, creating them past a hash collision, finding the
// one equal to a template, ordering them and numbering the next.
//
// A revision's Data is a strategic merge patch that replaces the
// parent's spec.template (Patch), the form kubectl's rollbackers apply.
package history

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"sort"
	"strconv"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/rand"
	appsclient "k8s.io/client-go/kubernetes/typed/apps/v1"
)

// Patch is the revision data of a pod template: a strategic merge patch
// that replaces the parent's spec.template with it.
func Patch(template *corev1.PodTemplateSpec) (runtime.RawExtension, error) {
	raw, err := json.Marshal(template)
	if err != nil {
		return runtime.RawExtension{}, err
	}
	var tmpl map[string]interface{}
	if err := json.Unmarshal(raw, &tmpl); err != nil {
		return runtime.RawExtension{}, err
	}
	tmpl["$patch"] = "replace"
	data, err := json.Marshal(map[string]interface{}{"spec": map[string]interface{}{"template": tmpl}})
	return runtime.RawExtension{Raw: data}, err
}

// Template decodes the pod template from a revision made by Patch.
func Template(cr *appsv1.ControllerRevision) (*corev1.PodTemplateSpec, error) {
	var p struct {
		Spec struct {
			Template corev1.PodTemplateSpec `json:"template"`
		} `json:"spec"`
	}
	if err := json.Unmarshal(cr.Data.Raw, &p); err != nil {
		return nil, fmt.Errorf("controllerrevision %s: %w", cr.Name, err)
	}
	return &p.Spec.Template, nil
}

// Hash names a revision's data; collisionCount, when set, changes it so a
// taken name can be stepped past.
func Hash(data runtime.RawExtension, collisionCount *int32) string {
	h := fnv.New32()
	_, _ = h.Write(data.Raw)
	if collisionCount != nil {
		_, _ = h.Write([]byte(strconv.FormatInt(int64(*collisionCount), 10)))
	}
	return rand.SafeEncodeString(strconv.FormatUint(uint64(h.Sum32()), 10))
}

// New is a revision of parent (of kind gvk) holding data, labelled with
// the template's labels so the parent's selector finds it.
func New(parent metav1.Object, gvk schema.GroupVersionKind, labels map[string]string, data runtime.RawExtension, revision int64, collisionCount *int32) *appsv1.ControllerRevision {
	l := make(map[string]string, len(labels)+1)
	for k, v := range labels {
		l[k] = v
	}
	hash := Hash(data, collisionCount)
	l[appsv1.ControllerRevisionHashLabelKey] = hash
	return &appsv1.ControllerRevision{
		ObjectMeta: metav1.ObjectMeta{
			Name: parent.GetName() + "-" + hash, Namespace: parent.GetNamespace(), Labels: l,
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(parent, gvk)},
		},
		Data: data, Revision: revision,
	}
}

// Equal says whether two revisions hold the same data.
func Equal(a, b *appsv1.ControllerRevision) bool {
	return bytes.Equal(a.Data.Raw, b.Data.Raw)
}

// FindEqual are the revisions whose data equals needle's.
func FindEqual(revisions []*appsv1.ControllerRevision, needle *appsv1.ControllerRevision) []*appsv1.ControllerRevision {
	var out []*appsv1.ControllerRevision
	for _, r := range revisions {
		if Equal(r, needle) {
			out = append(out, r)
		}
	}
	return out
}

// Sort orders revisions oldest first: by number, then creation, then name.
func Sort(revisions []*appsv1.ControllerRevision) {
	sort.SliceStable(revisions, func(i, j int) bool {
		a, b := revisions[i], revisions[j]
		if a.Revision != b.Revision {
			return a.Revision < b.Revision
		}
		if !a.CreationTimestamp.Equal(&b.CreationTimestamp) {
			return a.CreationTimestamp.Before(&b.CreationTimestamp)
		}
		return a.Name < b.Name
	})
}

// Next is the number after the highest of revisions (1 when none).
func Next(revisions []*appsv1.ControllerRevision) int64 {
	var max int64
	for _, r := range revisions {
		if r.Revision > max {
			max = r.Revision
		}
	}
	return max + 1
}

// Owned are the revisions whose controller is the object with uid.
func Owned(revisions []*appsv1.ControllerRevision, uid string) []*appsv1.ControllerRevision {
	var out []*appsv1.ControllerRevision
	for _, r := range revisions {
		if ref := metav1.GetControllerOf(r); ref != nil && string(ref.UID) == uid {
			out = append(out, r)
		}
	}
	return out
}

// Create writes revision. When its name is taken by other data (a hash
// collision), it bumps *collisionCount (which the caller persists in the
// parent's status) and tries the next name; when taken by the same data
// of the same parent, it returns that one.
func Create(ctx context.Context, client appsclient.ControllerRevisionsGetter, parent metav1.Object, gvk schema.GroupVersionKind,
	revision *appsv1.ControllerRevision, collisionCount *int32) (*appsv1.ControllerRevision, error) {
	if collisionCount == nil {
		return nil, fmt.Errorf("history: nil collisionCount")
	}
	for {
		r := New(parent, gvk, revision.Labels, revision.Data, revision.Revision, collisionCount)
		// Annotations (the parent's kubernetes.io/change-cause, which
		// `kubectl rollout history` shows) are the caller's to set.
		r.Annotations = revision.Annotations
		created, err := client.ControllerRevisions(parent.GetNamespace()).Create(ctx, r, metav1.CreateOptions{})
		if err == nil {
			return created, nil
		}
		if !apierrors.IsAlreadyExists(err) {
			return nil, err
		}
		existing, getErr := client.ControllerRevisions(parent.GetNamespace()).Get(ctx, r.Name, metav1.GetOptions{})
		if getErr != nil {
			return nil, getErr
		}
		if ref := metav1.GetControllerOf(existing); ref != nil && ref.UID == parent.GetUID() && Equal(existing, r) {
			return existing, nil
		}
		*collisionCount++
	}
}
