package controllerref

import (
	"errors"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

func TestResolve(t *testing.T) {
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "owner", UID: "u1"}}
	get := func(name string) (*corev1.ConfigMap, error) {
		if name != cm.Name {
			return nil, apierrors.NewNotFound(schema.GroupResource{Resource: "configmaps"}, name)
		}
		return cm, nil
	}
	tests := []struct {
		name string
		ref  *metav1.OwnerReference
		want *corev1.ConfigMap
	}{
		{name: "no reference"},
		{name: "the owner", ref: &metav1.OwnerReference{Kind: "ConfigMap", Name: "owner", UID: "u1"}, want: cm},
		{name: "another kind", ref: &metav1.OwnerReference{Kind: "Secret", Name: "owner", UID: "u1"}},
		{name: "not in the cache", ref: &metav1.OwnerReference{Kind: "ConfigMap", Name: "other", UID: "u1"}},
		{name: "same name, other object", ref: &metav1.OwnerReference{Kind: "ConfigMap", Name: "owner", UID: "u0"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := Resolve(tc.ref, "ConfigMap", get); got != tc.want {
				t.Errorf("Resolve = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestAdoptionCheck(t *testing.T) {
	owner := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "owner", UID: "u1"}}
	now := metav1.Now()
	tests := []struct {
		name    string
		fresh   *corev1.ConfigMap
		err     error
		wantErr string
	}{
		{name: "still the owner", fresh: owner},
		{name: "read fails", err: errors.New("boom"), wantErr: "recheck configmap ns/owner before adoption: boom"},
		{name: "replaced", fresh: &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{UID: "u2"}}, wantErr: "configmap ns/owner is gone"},
		{name: "being deleted", fresh: &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{UID: "u1", DeletionTimestamp: &now}}, wantErr: "configmap ns/owner is being deleted"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			reads := 0
			check := AdoptionCheck("configmap", owner, func() (metav1.Object, error) {
				reads++
				return tc.fresh, tc.err
			})
			for range 2 {
				err := check()
				if tc.wantErr == "" && err != nil || tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)) {
					t.Errorf("check = %v, want %q", err, tc.wantErr)
				}
			}
			if reads != 1 {
				t.Errorf("%d reads, want 1", reads)
			}
		})
	}
}
