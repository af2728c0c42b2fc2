package runtime

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"testing"

	"github.com/containerd/containerd/containers"
	"github.com/containerd/containerd/namespaces"
	"github.com/containerd/containerd/oci"
	specs "github.com/opencontainers/runtime-spec/specs-go"
)

// specFor generates the OCI spec of cfg's security settings over
// containerd's defaults, on a root file system with these users and
// groups: app (1000, group 1000) is in extra (50000), root in wheel (10).
func specFor(t *testing.T, cfg ContainerConfig) (*oci.Spec, ProcessUser, error) {
	t.Helper()
	root := t.TempDir()
	if err := os.MkdirAll(filepath.Join(root, "etc"), 0o755); err != nil {
		t.Fatal(err)
	}
	for name, data := range map[string]string{
		"passwd": "root:x:0:0:root:/root:/bin/sh\napp:x:1000:1000::/home/app:/bin/sh\n",
		"group":  "root:x:0:\nwheel:x:10:root\napp:x:1000:\nextra:x:50000:app\n",
	} {
		if err := os.WriteFile(filepath.Join(root, "etc", name), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	var user ProcessUser
	opts, err := securityOpts(cfg, &user)
	if err != nil {
		return nil, user, err
	}
	ctx := namespaces.WithNamespace(context.Background(), "test")
	s, err := oci.GenerateSpec(ctx, nil, &containers.Container{ID: "c"}, append([]oci.SpecOpts{oci.WithRootFSPath(root)}, opts...)...)
	return s, user, err
}

func mustSpec(t *testing.T, cfg ContainerConfig) (*oci.Spec, ProcessUser) {
	t.Helper()
	s, u, err := specFor(t, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return s, u
}

func TestSecurityUserAndGroups(t *testing.T) {
	for _, tc := range []struct {
		name     string
		cfg      ContainerConfig
		uid, gid uint32
		groups   []uint32
	}{
		{"image user (root), no groups asked", ContainerConfig{}, 0, 0, []uint32{0}},
		{"runAsUser and runAsGroup, fsGroup, merged with the image's groups",
			ContainerConfig{User: "1000:3000", SupplementalGroups: []int64{2000}}, 1000, 3000, []uint32{2000, 3000, 50000}},
		{"Strict leaves the image's groups out",
			ContainerConfig{User: "1000:3000", SupplementalGroups: []int64{2000}, StrictGroups: true}, 1000, 3000, []uint32{2000, 3000}},
		{"runAsUser alone takes the gid from /etc/passwd",
			ContainerConfig{User: "1000", SupplementalGroups: []int64{4000, 2000}}, 1000, 1000, []uint32{1000, 2000, 4000, 50000}},
		{"a uid unknown to the image: gid 0", ContainerConfig{User: "2000"}, 2000, 0, []uint32{0}},
		{"root's groups in the image", ContainerConfig{User: "0"}, 0, 0, []uint32{0, 10}},
		{"by name", ContainerConfig{User: "app"}, 1000, 1000, []uint32{1000, 50000}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, u := mustSpec(t, tc.cfg)
			got := s.Process.User
			if got.UID != tc.uid || got.GID != tc.gid || !slices.Equal(got.AdditionalGids, tc.groups) {
				t.Errorf("uid %d gid %d groups %v, want %d %d %v", got.UID, got.GID, got.AdditionalGids, tc.uid, tc.gid, tc.groups)
			}
			want := ProcessUser{UID: int64(tc.uid), GID: int64(tc.gid)}
			for _, g := range tc.groups {
				want.SupplementalGroups = append(want.SupplementalGroups, int64(g))
			}
			if !reflect.DeepEqual(u, want) {
				t.Errorf("recorded user %+v, want %+v", u, want)
			}
			if back := userFromLabel(u.label()); !reflect.DeepEqual(*back, u) {
				t.Errorf("label %q reads back as %+v", u.label(), back)
			}
		})
	}
	if u := userFromLabel(""); u != nil {
		t.Errorf("no label read as %+v", u)
	}
}

func TestSecurityRunAsNonRoot(t *testing.T) {
	if _, _, err := specFor(t, ContainerConfig{RunAsNonRoot: true}); !errors.Is(err, ErrRunAsRoot) {
		t.Errorf("root image user: %v, want ErrRunAsRoot", err)
	}
	if _, _, err := specFor(t, ContainerConfig{RunAsNonRoot: true, User: "root"}); !errors.Is(err, ErrRunAsRoot) {
		t.Errorf("a name that is root: %v, want ErrRunAsRoot", err)
	}
	if _, _, err := specFor(t, ContainerConfig{RunAsNonRoot: true, User: "app"}); err != nil {
		t.Errorf("app: %v", err)
	}
}

func TestSecurityCapabilities(t *testing.T) {
	defaults := mustCaps(t, ContainerConfig{})
	if !slices.Contains(defaults, "CAP_CHOWN") || slices.Contains(defaults, "CAP_NET_ADMIN") {
		t.Fatalf("containerd's defaults: %v", defaults)
	}
	for _, tc := range []struct {
		name      string
		add, drop []string
		want      func([]string) bool
	}{
		{"drop ALL", nil, []string{"ALL"}, func(c []string) bool { return len(c) == 0 }},
		{"drop ALL, add one", []string{"NET_BIND_SERVICE"}, []string{"ALL"}, func(c []string) bool {
			return slices.Equal(c, []string{"CAP_NET_BIND_SERVICE"})
		}},
		{"drop one, any spelling", nil, []string{"chown", "CAP_KILL"}, func(c []string) bool {
			return len(c) == len(defaults)-2 && !slices.Contains(c, "CAP_CHOWN") && !slices.Contains(c, "CAP_KILL")
		}},
		{"add one", []string{"NET_ADMIN"}, nil, func(c []string) bool {
			return len(c) == len(defaults)+1 && slices.Contains(c, "CAP_NET_ADMIN")
		}},
		{"add ALL, drop one", []string{"ALL"}, []string{"SYS_ADMIN"}, func(c []string) bool {
			return len(c) > len(defaults) && !slices.Contains(c, "CAP_SYS_ADMIN") && (os.Geteuid() != 0 || slices.Contains(c, "CAP_SYS_MODULE"))
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			caps := mustCaps(t, ContainerConfig{CapAdd: tc.add, CapDrop: tc.drop})
			if !tc.want(caps) {
				t.Errorf("capabilities %v", caps)
			}
		})
	}
	if _, _, err := specFor(t, ContainerConfig{CapAdd: []string{"FLY"}}); err == nil {
		t.Error("an unknown capability was accepted")
	}
	// Privileged has them all, whatever is dropped.
	if os.Geteuid() == 0 {
		if caps := mustCaps(t, ContainerConfig{Privileged: true, CapDrop: []string{"ALL"}}); !slices.Contains(caps, "CAP_SYS_ADMIN") {
			t.Errorf("privileged: %v", caps)
		}
	}
}

// mustCaps are the bounding, effective and permitted set (which must agree).
func mustCaps(t *testing.T, cfg ContainerConfig) []string {
	t.Helper()
	s, _ := mustSpec(t, cfg)
	c := s.Process.Capabilities
	if !slices.Equal(c.Bounding, c.Effective) || !slices.Equal(c.Bounding, c.Permitted) {
		t.Fatalf("sets differ: %+v", c)
	}
	return c.Bounding
}

func TestSecurityNoNewPrivsSeccompSysctls(t *testing.T) {
	s, _ := mustSpec(t, ContainerConfig{})
	if s.Process.NoNewPrivileges || s.Linux.Seccomp != nil || s.Root.Readonly {
		t.Errorf("defaults: no_new_privs %v seccomp %v read-only %v; want none (Kubernetes' defaults)", s.Process.NoNewPrivileges, s.Linux.Seccomp, s.Root.Readonly)
	}
	s, _ = mustSpec(t, ContainerConfig{NoNewPrivs: true, ReadOnlyRootfs: true, Seccomp: SeccompProfile{Type: SeccompRuntimeDefault},
		Sysctls: map[string]string{"net.ipv4.ip_local_port_range": "1024 65000"}})
	if !s.Process.NoNewPrivileges || !s.Root.Readonly {
		t.Errorf("no_new_privs %v read-only %v", s.Process.NoNewPrivileges, s.Root.Readonly)
	}
	if sc := s.Linux.Seccomp; sc == nil || sc.DefaultAction != specs.ActErrno || len(sc.Syscalls) == 0 {
		t.Errorf("RuntimeDefault: %+v", sc)
	}
	if got := s.Linux.Sysctl["net.ipv4.ip_local_port_range"]; got != "1024 65000" {
		t.Errorf("sysctls %v", s.Linux.Sysctl)
	}
	s, _ = mustSpec(t, ContainerConfig{Seccomp: SeccompProfile{Type: SeccompUnconfined}})
	if s.Linux.Seccomp != nil {
		t.Error("Unconfined has a profile")
	}
	s, _ = mustSpec(t, ContainerConfig{Privileged: true, Seccomp: SeccompProfile{Type: SeccompRuntimeDefault}})
	if s.Linux.Seccomp != nil {
		t.Error("a privileged container has a seccomp profile")
	}

	profile := filepath.Join(t.TempDir(), "audit.json")
	if err := os.WriteFile(profile, []byte(`{"defaultAction":"SCMP_ACT_LOG"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	s, _ = mustSpec(t, ContainerConfig{Seccomp: SeccompProfile{Type: SeccompLocalhost, LocalhostPath: profile}})
	if s.Linux.Seccomp == nil || s.Linux.Seccomp.DefaultAction != specs.ActLog {
		t.Errorf("Localhost: %+v", s.Linux.Seccomp)
	}
	if _, _, err := specFor(t, ContainerConfig{Seccomp: SeccompProfile{Type: SeccompLocalhost, LocalhostPath: profile + ".missing"}}); err == nil {
		t.Error("a missing Localhost profile was accepted")
	}
	if _, _, err := specFor(t, ContainerConfig{Seccomp: SeccompProfile{Type: "Other"}}); err == nil {
		t.Error("an unknown profile type was accepted")
	}
}
