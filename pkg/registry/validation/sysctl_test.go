package validation

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Sysctl names follow Kubernetes' pattern and do not repeat; whether a
// node allows them is not the apiserver's business.
func TestSysctlNames(t *testing.T) {
	for _, tc := range []struct {
		names []string
		want  []field.ErrorType
	}{
		{[]string{"kernel.msgmax", "net/ipv4/ip_local_port_range", "net.ipv4.conf.eth0.forwarding", "kernel.shm_rmid_forced"}, nil},
		{[]string{""}, []field.ErrorType{field.ErrorTypeRequired}},
		{[]string{"foo-"}, []field.ErrorType{field.ErrorTypeInvalid}},
		{[]string{"Kernel.MsgMax"}, []field.ErrorType{field.ErrorTypeInvalid}},
		{[]string{"kernel..msgmax"}, []field.ErrorType{field.ErrorTypeInvalid}},
		{[]string{"kernel.msgmax", "kernel.msgmax"}, []field.ErrorType{field.ErrorTypeDuplicate}},
	} {
		var sysctls []corev1.Sysctl
		for _, n := range tc.names {
			sysctls = append(sysctls, corev1.Sysctl{Name: n, Value: "1"})
		}
		errs := validateSysctls(sysctls, field.NewPath("spec", "securityContext", "sysctls"))
		if len(errs) != len(tc.want) {
			t.Errorf("%q: errors %v, want %v", tc.names, errs, tc.want)
			continue
		}
		for i, e := range errs {
			if e.Type != tc.want[i] {
				t.Errorf("%q: error %v, want type %s", tc.names, e, tc.want[i])
			}
		}
	}
}
