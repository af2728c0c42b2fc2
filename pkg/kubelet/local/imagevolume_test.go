package local

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// TestDefaultPullPolicy: an image volume's pullPolicy, like a
// container's imagePullPolicy, defaults to Always for :latest or no tag
// and to IfNotPresent otherwise; a set policy stays.
func TestDefaultPullPolicy(t *testing.T) {
	for _, tc := range []struct {
		image  string
		policy corev1.PullPolicy
		want   corev1.PullPolicy
	}{
		{"busybox", "", corev1.PullAlways},
		{"busybox:latest", "", corev1.PullAlways},
		{"registry.example:5000/app", "", corev1.PullAlways},
		{"quay.io/crio/artifact:v2", "", corev1.PullIfNotPresent},
		{"registry.example:5000/app:1.0", "", corev1.PullIfNotPresent},
		{"busybox@sha256:" + sha, "", corev1.PullIfNotPresent},
		{"busybox", corev1.PullNever, corev1.PullNever},
		{"busybox:1.36", corev1.PullAlways, corev1.PullAlways},
		{"Not A Reference", "", corev1.PullAlways},
	} {
		if got := defaultPullPolicy(tc.image, tc.policy); got != tc.want {
			t.Errorf("defaultPullPolicy(%q, %q) = %q, want %q", tc.image, tc.policy, got, tc.want)
		}
	}
}

const sha = "0000000000000000000000000000000000000000000000000000000000000000"
