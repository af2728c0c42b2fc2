package runtime

import (
	"context"
	"errors"
	"os"
	"reflect"
	"strings"
	"testing"
)

// procStatus reads fields of /proc/<pid>/status.
func procStatus(t *testing.T, pid uint32, fields ...string) map[string]string {
	t.Helper()
	b, err := os.ReadFile("/proc/" + itoa(pid) + "/status")
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, line := range strings.Split(string(b), "\n") {
		k, v, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		for _, f := range fields {
			if k == f {
				out[k] = strings.Join(strings.Fields(v), " ")
			}
		}
	}
	return out
}

func itoa(n uint32) string {
	if n == 0 {
		return "0"
	}
	var b []byte
	for ; n > 0; n /= 10 {
		b = append([]byte{byte('0' + n%10)}, b...)
	}
	return string(b)
}

// TestSecurityContextInContainerd runs containers with security settings
// on containerd and reads what their processes got.
func TestSecurityContextInContainerd(t *testing.T) {
	env := newTestEnv(t)
	ctx := context.Background()
	sb := env.sandbox("security", nil)

	id := env.startContainer(sb, ContainerConfig{
		Name: "locked", Command: []string{"sleep", "60"},
		User: "1000:3000", SupplementalGroups: []int64{2000}, StrictGroups: true,
		CapDrop: []string{"ALL"}, CapAdd: []string{"net_bind_service"}, NoNewPrivs: true,
		Seccomp: SeccompProfile{Type: SeccompRuntimeDefault}, ReadOnlyRootfs: true,
		Sysctls: map[string]string{"net.ipv4.ip_local_port_range": "20000 30000", "kernel.shm_rmid_forced": "1"},
	})
	st := env.status(id)
	got := procStatus(t, st.Pid, "Uid", "Gid", "Groups", "NoNewPrivs", "Seccomp", "CapEff", "CapBnd")
	want := map[string]string{
		"Uid": "1000 1000 1000 1000", "Gid": "3000 3000 3000 3000", "Groups": "2000 3000",
		"NoNewPrivs": "1", "Seccomp": "2",
		// CAP_NET_BIND_SERVICE (10) bounds a non-root process; it has none in effect.
		"CapEff": "0000000000000000", "CapBnd": "0000000000000400",
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("process status %v, want %v", got, want)
	}
	if wantUser := (&ProcessUser{UID: 1000, GID: 3000, SupplementalGroups: []int64{2000, 3000}}); !reflect.DeepEqual(st.User, wantUser) {
		t.Errorf("status user %+v, want %+v", st.User, wantUser)
	}
	if _, out := env.exec(id, "cat", "/proc/sys/net/ipv4/ip_local_port_range", "/proc/sys/kernel/shm_rmid_forced"); strings.Join(strings.Fields(out), " ") != "20000 30000 1" {
		t.Errorf("sysctls read %q", out)
	}
	if code, _ := env.exec(id, "touch", "/x"); code == 0 {
		t.Error("wrote to a read-only root")
	}

	// Defaults as Kubernetes': no no_new_privs, no seccomp, containerd's
	// capabilities, root with the image's groups.
	plain := env.startContainer(sb, ContainerConfig{Name: "plain", Command: []string{"sleep", "60"}})
	got = procStatus(t, env.status(plain).Pid, "Uid", "Groups", "NoNewPrivs", "Seccomp", "CapEff")
	want = map[string]string{"Uid": "0 0 0 0", "Groups": "0", "NoNewPrivs": "0", "Seccomp": "0", "CapEff": "00000000a80425fb"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("defaults %v, want %v", got, want)
	}
	if code, out := env.exec(plain, "chown", "65534", "/tmp"); code != 0 {
		t.Errorf("root could not chown: %s", out)
	}
	noCaps := env.startContainer(sb, ContainerConfig{Name: "nocaps", Command: []string{"sleep", "60"}, CapDrop: []string{"ALL"}})
	if code, _ := env.exec(noCaps, "chown", "65534", "/tmp"); code == 0 {
		t.Error("root without capabilities could chown")
	}

	// busybox runs as root: refused under runAsNonRoot, nothing left behind.
	_, err := env.rt.CreateContainer(ctx, sb, ContainerConfig{Name: "nonroot", Image: "busybox", Command: []string{"true"}, RunAsNonRoot: true})
	if !errors.Is(err, ErrRunAsRoot) {
		t.Errorf("runAsNonRoot with a root image: %v", err)
	}
	if u, err := env.rt.ImageUser(ctx, "busybox"); err != nil || u != "" {
		t.Errorf("busybox's user %q %v", u, err)
	}
	if err := env.rt.RemoveSandbox(ctx, sb.ID); err != nil {
		t.Fatal(err)
	}
}
