package podsecurity

import (
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// podWith is a pod with containers named as given (none: one "c").
func podWith(mutate func(*corev1.Pod), names ...string) *corev1.Pod {
	if len(names) == 0 {
		names = []string{"c"}
	}
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p"}}
	for _, n := range names {
		p.Spec.Containers = append(p.Spec.Containers, corev1.Container{Name: n, Image: "busybox"})
	}
	if mutate != nil {
		mutate(p)
	}
	return p
}

// sc gives container i a security context and returns it.
func sc(p *corev1.Pod, i int) *corev1.SecurityContext {
	if p.Spec.Containers[i].SecurityContext == nil {
		p.Spec.Containers[i].SecurityContext = &corev1.SecurityContext{}
	}
	return p.Spec.Containers[i].SecurityContext
}

func podSC(p *corev1.Pod) *corev1.PodSecurityContext {
	if p.Spec.SecurityContext == nil {
		p.Spec.SecurityContext = &corev1.PodSecurityContext{}
	}
	return p.Spec.SecurityContext
}

// restrictedPod passes every check: what the restricted level asks for.
func restrictedPod(names ...string) *corev1.Pod {
	return podWith(func(p *corev1.Pod) {
		podSC(p).RunAsNonRoot = ptr.To(true)
		podSC(p).RunAsUser = ptr.To[int64](1000)
		podSC(p).SeccompProfile = &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault}
		for i := range p.Spec.Containers {
			sc(p, i).AllowPrivilegeEscalation = ptr.To(false)
			sc(p, i).Capabilities = &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}}
		}
	}, names...)
}

type checkCase struct {
	name   string
	pod    *corev1.Pod
	reason string // "" when the check passes
	detail string
}

func runChecks(t *testing.T, id string, cases []checkCase) {
	t.Helper()
	i := slices.IndexFunc(allChecks, func(c check) bool { return c.id == id })
	if i < 0 {
		t.Fatalf("no check %q", id)
	}
	c := allChecks[i]
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			reason, detail, ok := c.run(&tc.pod.ObjectMeta, &tc.pod.Spec)
			if tc.reason == "" {
				if !ok {
					t.Fatalf("%s refused: %s (%s)", id, reason, detail)
				}
				return
			}
			if ok {
				t.Fatalf("%s allowed, want %s (%s)", id, tc.reason, tc.detail)
			}
			if reason != tc.reason || detail != tc.detail {
				t.Errorf("%s:\n got %s (%s)\nwant %s (%s)", id, reason, detail, tc.reason, tc.detail)
			}
		})
	}
}

func TestPrivileged(t *testing.T) {
	runChecks(t, "privileged", []checkCase{
		{"unset", podWith(nil), "", ""},
		{"false", podWith(func(p *corev1.Pod) { sc(p, 0).Privileged = ptr.To(false) }), "", ""},
		{"one", podWith(func(p *corev1.Pod) { sc(p, 0).Privileged = ptr.To(true) }),
			"privileged", `container "c" must not set securityContext.privileged=true`},
		{"init and main", podWith(func(p *corev1.Pod) {
			sc(p, 1).Privileged = ptr.To(true)
			p.Spec.InitContainers = []corev1.Container{{Name: "init", SecurityContext: &corev1.SecurityContext{Privileged: ptr.To(true)}}}
		}, "a", "b"), "privileged", `containers "init", "b" must not set securityContext.privileged=true`},
	})
}

func TestHostNamespaces(t *testing.T) {
	runChecks(t, "hostNamespaces", []checkCase{
		{"none", podWith(nil), "", ""},
		{"network", podWith(func(p *corev1.Pod) { p.Spec.HostNetwork = true }), "host namespaces", "hostNetwork=true"},
		{"all", podWith(func(p *corev1.Pod) { p.Spec.HostNetwork, p.Spec.HostPID, p.Spec.HostIPC = true, true, true }),
			"host namespaces", "hostNetwork=true, hostPID=true, hostIPC=true"},
	})
}

func TestHostPorts(t *testing.T) {
	runChecks(t, "hostPorts", []checkCase{
		{"container ports only", podWith(func(p *corev1.Pod) { p.Spec.Containers[0].Ports = []corev1.ContainerPort{{ContainerPort: 80}} }), "", ""},
		{"one", podWith(func(p *corev1.Pod) {
			p.Spec.Containers[0].Ports = []corev1.ContainerPort{{ContainerPort: 80, HostPort: 8080}}
		}), "hostPort", `container "c" uses hostPort 8080`},
		{"several, ports sorted as text", podWith(func(p *corev1.Pod) {
			p.Spec.Containers[0].Ports = []corev1.ContainerPort{{ContainerPort: 80, HostPort: 9090}, {ContainerPort: 81, HostPort: 10000}}
			p.Spec.Containers[1].Ports = []corev1.ContainerPort{{ContainerPort: 80, HostPort: 9090}}
		}, "a", "b"), "hostPort", `containers "a", "b" use hostPorts 10000, 9090`},
	})
}

func TestHostPathVolumes(t *testing.T) {
	hostPath := corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/"}}
	runChecks(t, "hostPathVolumes", []checkCase{
		{"emptyDir", podWith(func(p *corev1.Pod) {
			p.Spec.Volumes = []corev1.Volume{{Name: "v", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}}
		}), "", ""},
		{"one", podWith(func(p *corev1.Pod) { p.Spec.Volumes = []corev1.Volume{{Name: "root", VolumeSource: hostPath}} }),
			"hostPath volumes", `volume "root"`},
		{"two", podWith(func(p *corev1.Pod) {
			p.Spec.Volumes = []corev1.Volume{{Name: "a", VolumeSource: hostPath}, {Name: "b", VolumeSource: hostPath}}
		}), "hostPath volumes", `volumes "a", "b"`},
	})
}

func TestHostProbesAndLifecycle(t *testing.T) {
	httpProbe := func(host string) *corev1.Probe {
		return &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Host: host}}}
	}
	runChecks(t, "hostProbesAndHostLifecycle", []checkCase{
		{"no host", podWith(func(p *corev1.Pod) { p.Spec.Containers[0].LivenessProbe = httpProbe("") }), "", ""},
		{"probe", podWith(func(p *corev1.Pod) { p.Spec.Containers[0].ReadinessProbe = httpProbe("example.com") }),
			"probe or lifecycle host", `container "c" uses probe or lifecycle host "example.com"`},
		{"probes and lifecycle", podWith(func(p *corev1.Pod) {
			p.Spec.Containers[1].StartupProbe = &corev1.Probe{ProbeHandler: corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Host: "b.example"}}}
			p.Spec.Containers[0].Lifecycle = &corev1.Lifecycle{PreStop: &corev1.LifecycleHandler{HTTPGet: &corev1.HTTPGetAction{Host: "a.example"}}}
		}, "z", "a"), "probe or lifecycle host", `containers "a", "z" use probe or lifecycle hosts "a.example", "b.example"`},
	})
}

func TestCapabilitiesBaseline(t *testing.T) {
	runChecks(t, "capabilities_baseline", []checkCase{
		{"default set", podWith(func(p *corev1.Pod) {
			sc(p, 0).Capabilities = &corev1.Capabilities{Add: []corev1.Capability{"CHOWN", "NET_BIND_SERVICE", "KILL"}}
		}), "", ""},
		{"drop anything", podWith(func(p *corev1.Pod) { sc(p, 0).Capabilities = &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}} }), "", ""},
		{"beyond", podWith(func(p *corev1.Pod) {
			sc(p, 0).Capabilities = &corev1.Capabilities{Add: []corev1.Capability{"SYS_ADMIN", "NET_RAW", "CHOWN"}}
			sc(p, 1).Capabilities = &corev1.Capabilities{Add: []corev1.Capability{"NET_RAW"}}
		}, "a", "b"), "non-default capabilities", `containers "a", "b" must not include "NET_RAW", "SYS_ADMIN" in securityContext.capabilities.add`},
	})
}

func TestProcMount(t *testing.T) {
	unmasked := func(p *corev1.Pod) { sc(p, 0).ProcMount = ptr.To(corev1.UnmaskedProcMount) }
	userns := func(p *corev1.Pod) { unmasked(p); p.Spec.HostUsers = ptr.To(false) }
	runChecks(t, "procMount", []checkCase{
		{"default", podWith(func(p *corev1.Pod) { sc(p, 0).ProcMount = ptr.To(corev1.DefaultProcMount) }), "", ""},
		{"unmasked", podWith(unmasked), "procMount", `container "c" must not set securityContext.procMount to "Unmasked"`},
		{"unmasked in a user namespace", podWith(userns), "", ""},
	})
	runChecks(t, "procMount_restricted", []checkCase{
		{"unset", podWith(nil), "", ""},
		{"unmasked in a user namespace", podWith(userns), "procMount", `container "c" must not set securityContext.procMount to "Unmasked"`},
	})
}

func TestSeccompBaseline(t *testing.T) {
	profile := func(t corev1.SeccompProfileType) *corev1.SeccompProfile { return &corev1.SeccompProfile{Type: t} }
	runChecks(t, "seccompProfile_baseline", []checkCase{
		{"unset", podWith(nil), "", ""},
		{"runtime default and localhost", podWith(func(p *corev1.Pod) {
			podSC(p).SeccompProfile = profile(corev1.SeccompProfileTypeRuntimeDefault)
			sc(p, 0).SeccompProfile = &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeLocalhost, LocalhostProfile: ptr.To("x.json")}
		}), "", ""},
		{"pod unconfined", podWith(func(p *corev1.Pod) { podSC(p).SeccompProfile = profile(corev1.SeccompProfileTypeUnconfined) }),
			"seccompProfile", `pod must not set securityContext.seccompProfile.type to "Unconfined"`},
		{"pod and containers", podWith(func(p *corev1.Pod) {
			podSC(p).SeccompProfile = profile(corev1.SeccompProfileTypeUnconfined)
			sc(p, 0).SeccompProfile = profile(corev1.SeccompProfileTypeUnconfined)
			sc(p, 1).SeccompProfile = profile(corev1.SeccompProfileTypeUnconfined)
		}, "a", "b"), "seccompProfile", `pod and containers "a", "b" must not set securityContext.seccompProfile.type to "Unconfined"`},
	})
}

func TestSELinuxOptions(t *testing.T) {
	runChecks(t, "seLinuxOptions", []checkCase{
		{"allowed types and level", podWith(func(p *corev1.Pod) {
			podSC(p).SELinuxOptions = &corev1.SELinuxOptions{Type: "container_t", Level: "s0:c1"}
			sc(p, 0).SELinuxOptions = &corev1.SELinuxOptions{Type: "container_engine_t"}
		}), "", ""},
		{"type", podWith(func(p *corev1.Pod) { sc(p, 0).SELinuxOptions = &corev1.SELinuxOptions{Type: "spc_t"} }),
			"seLinuxOptions", `container "c" set forbidden securityContext.seLinuxOptions: type "spc_t"`},
		{"pod and containers, type, user and role", podWith(func(p *corev1.Pod) {
			podSC(p).SELinuxOptions = &corev1.SELinuxOptions{Type: "unconfined_t", User: "root"}
			sc(p, 0).SELinuxOptions = &corev1.SELinuxOptions{Type: "spc_t", Role: "sysadm_r"}
		}), "seLinuxOptions", `pod and container "c" set forbidden securityContext.seLinuxOptions: types "spc_t", "unconfined_t"; user may not be set; role may not be set`},
	})
}

func TestSysctls(t *testing.T) {
	runChecks(t, "sysctls", []checkCase{
		{"safe", podWith(func(p *corev1.Pod) {
			podSC(p).Sysctls = []corev1.Sysctl{{Name: "net.ipv4.tcp_syncookies", Value: "1"}, {Name: "net.ipv4.tcp_notsent_lowat", Value: "1"}}
		}), "", ""},
		{"unsafe", podWith(func(p *corev1.Pod) {
			podSC(p).Sysctls = []corev1.Sysctl{{Name: "kernel.msgmax", Value: "1"}, {Name: "net.ipv4.tcp_syncookies", Value: "1"}, {Name: "vm.swappiness", Value: "1"}}
		}), "forbidden sysctls", "kernel.msgmax, vm.swappiness"},
	})
}

func TestAppArmor(t *testing.T) {
	runChecks(t, "appArmorProfile", []checkCase{
		{"runtime default and localhost", podWith(func(p *corev1.Pod) {
			podSC(p).AppArmorProfile = &corev1.AppArmorProfile{Type: corev1.AppArmorProfileTypeRuntimeDefault}
			sc(p, 0).AppArmorProfile = &corev1.AppArmorProfile{Type: corev1.AppArmorProfileTypeLocalhost, LocalhostProfile: ptr.To("p")}
			p.Annotations = map[string]string{"container.apparmor.security.beta.kubernetes.io/c": "localhost/p"}
		}), "", ""},
		{"container unconfined", podWith(func(p *corev1.Pod) {
			sc(p, 0).AppArmorProfile = &corev1.AppArmorProfile{Type: corev1.AppArmorProfileTypeUnconfined}
		}), "forbidden AppArmor profile", `container "c" must not set AppArmor profile type to "Unconfined"`},
		{"pod and annotations", podWith(func(p *corev1.Pod) {
			podSC(p).AppArmorProfile = &corev1.AppArmorProfile{Type: corev1.AppArmorProfileTypeUnconfined}
			p.Annotations = map[string]string{"container.apparmor.security.beta.kubernetes.io/c": "unconfined"}
		}), "forbidden AppArmor profiles", `pod and annotation must not set AppArmor profile type to "Unconfined", "container.apparmor.security.beta.kubernetes.io/c="unconfined""`},
	})
}

func TestWindowsHostProcess(t *testing.T) {
	runChecks(t, "windowsHostProcess", []checkCase{
		{"false", podWith(func(p *corev1.Pod) {
			sc(p, 0).WindowsOptions = &corev1.WindowsSecurityContextOptions{HostProcess: ptr.To(false)}
		}), "", ""},
		{"pod and container", podWith(func(p *corev1.Pod) {
			podSC(p).WindowsOptions = &corev1.WindowsSecurityContextOptions{HostProcess: ptr.To(true)}
			sc(p, 0).WindowsOptions = &corev1.WindowsSecurityContextOptions{HostProcess: ptr.To(true)}
		}), "hostProcess", `pod and container "c" must not set securityContext.windowsOptions.hostProcess=true`},
	})
}

func TestAllowPrivilegeEscalation(t *testing.T) {
	runChecks(t, "allowPrivilegeEscalation", []checkCase{
		{"false", podWith(func(p *corev1.Pod) { sc(p, 0).AllowPrivilegeEscalation = ptr.To(false) }), "", ""},
		{"windows", podWith(func(p *corev1.Pod) { p.Spec.OS = &corev1.PodOS{Name: corev1.Windows} }), "", ""},
		{"unset and true", podWith(func(p *corev1.Pod) { sc(p, 1).AllowPrivilegeEscalation = ptr.To(true) }, "a", "b"),
			"allowPrivilegeEscalation != false", `containers "a", "b" must set securityContext.allowPrivilegeEscalation=false`},
	})
}

func TestCapabilitiesRestricted(t *testing.T) {
	runChecks(t, "capabilities_restricted", []checkCase{
		{"drop all, add net bind", podWith(func(p *corev1.Pod) {
			sc(p, 0).Capabilities = &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}, Add: []corev1.Capability{"NET_BIND_SERVICE"}}
		}), "", ""},
		{"windows", podWith(func(p *corev1.Pod) { p.Spec.OS = &corev1.PodOS{Name: corev1.Windows} }), "", ""},
		{"no drop", podWith(nil), "unrestricted capabilities", `container "c" must set securityContext.capabilities.drop=["ALL"]`},
		{"drop and add", podWith(func(p *corev1.Pod) {
			sc(p, 0).Capabilities = &corev1.Capabilities{Drop: []corev1.Capability{"NET_RAW"}, Add: []corev1.Capability{"SYS_TIME", "CHOWN"}}
			sc(p, 1).Capabilities = &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}}
		}, "a", "b"), "unrestricted capabilities",
			`container "a" must set securityContext.capabilities.drop=["ALL"]; container "a" must not include "CHOWN", "SYS_TIME" in securityContext.capabilities.add`},
	})
}

func TestRunAsNonRoot(t *testing.T) {
	runChecks(t, "runAsNonRoot", []checkCase{
		{"pod", podWith(func(p *corev1.Pod) { podSC(p).RunAsNonRoot = ptr.To(true) }), "", ""},
		{"every container", podWith(func(p *corev1.Pod) {
			sc(p, 0).RunAsNonRoot = ptr.To(true)
			sc(p, 1).RunAsNonRoot = ptr.To(true)
		}, "a", "b"), "", ""},
		{"user namespace", podWith(func(p *corev1.Pod) { p.Spec.HostUsers = ptr.To(false) }), "", ""},
		{"unset", podWith(nil, "a", "b"), "runAsNonRoot != true", `pod or containers "a", "b" must set securityContext.runAsNonRoot=true`},
		{"container false under pod true", podWith(func(p *corev1.Pod) {
			podSC(p).RunAsNonRoot = ptr.To(true)
			sc(p, 0).RunAsNonRoot = ptr.To(false)
		}), "runAsNonRoot != true", `container "c" must not set securityContext.runAsNonRoot=false`},
		{"pod false", podWith(func(p *corev1.Pod) {
			podSC(p).RunAsNonRoot = ptr.To(false)
			sc(p, 1).RunAsNonRoot = ptr.To(false)
		}, "a", "b"), "runAsNonRoot != true", `pod and container "b" must not set securityContext.runAsNonRoot=false`},
	})
}

func TestRunAsUser(t *testing.T) {
	runChecks(t, "runAsUser", []checkCase{
		{"unset", podWith(nil), "", ""},
		{"non-zero", podWith(func(p *corev1.Pod) { podSC(p).RunAsUser = ptr.To[int64](1000) }), "", ""},
		{"root in a user namespace", podWith(func(p *corev1.Pod) {
			podSC(p).RunAsUser = ptr.To[int64](0)
			p.Spec.HostUsers = ptr.To(false)
		}), "", ""},
		{"pod and container root", podWith(func(p *corev1.Pod) {
			podSC(p).RunAsUser = ptr.To[int64](0)
			sc(p, 0).RunAsUser = ptr.To[int64](0)
		}), "runAsUser=0", `pod and container "c" must not set runAsUser=0`},
	})
}

func TestSeccompRestricted(t *testing.T) {
	profile := func(t corev1.SeccompProfileType) *corev1.SeccompProfile { return &corev1.SeccompProfile{Type: t} }
	runChecks(t, "seccompProfile_restricted", []checkCase{
		{"pod", podWith(func(p *corev1.Pod) { podSC(p).SeccompProfile = profile(corev1.SeccompProfileTypeRuntimeDefault) }), "", ""},
		{"every container", podWith(func(p *corev1.Pod) {
			sc(p, 0).SeccompProfile = profile(corev1.SeccompProfileTypeRuntimeDefault)
		}), "", ""},
		{"windows", podWith(func(p *corev1.Pod) { p.Spec.OS = &corev1.PodOS{Name: corev1.Windows} }), "", ""},
		{"unset", podWith(nil), "seccompProfile", `pod or container "c" must set securityContext.seccompProfile.type to "RuntimeDefault" or "Localhost"`},
		{"one container unset", podWith(func(p *corev1.Pod) {
			sc(p, 0).SeccompProfile = profile(corev1.SeccompProfileTypeLocalhost)
		}, "a", "b"), "seccompProfile", `pod or container "b" must set securityContext.seccompProfile.type to "RuntimeDefault" or "Localhost"`},
		{"unconfined", podWith(func(p *corev1.Pod) {
			podSC(p).SeccompProfile = profile(corev1.SeccompProfileTypeUnconfined)
		}), "seccompProfile", `pod must not set securityContext.seccompProfile.type to "Unconfined"`},
	})
}

func TestRestrictedVolumes(t *testing.T) {
	vol := func(name string, src corev1.VolumeSource) corev1.Volume {
		return corev1.Volume{Name: name, VolumeSource: src}
	}
	runChecks(t, "restrictedVolumes", []checkCase{
		{"allowed", podWith(func(p *corev1.Pod) {
			p.Spec.Volumes = []corev1.Volume{
				vol("a", corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}),
				vol("b", corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{}}),
				vol("c", corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{}}),
				vol("d", corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "x"}}),
				vol("e", corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{}}),
				vol("f", corev1.VolumeSource{DownwardAPI: &corev1.DownwardAPIVolumeSource{}}),
				vol("g", corev1.VolumeSource{CSI: &corev1.CSIVolumeSource{Driver: "d"}}),
				vol("h", corev1.VolumeSource{Ephemeral: &corev1.EphemeralVolumeSource{}}),
				vol("i", corev1.VolumeSource{Image: &corev1.ImageVolumeSource{Reference: "busybox"}}),
			}
		}), "", ""},
		{"hostPath", podWith(func(p *corev1.Pod) {
			p.Spec.Volumes = []corev1.Volume{vol("root", corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/"}})}
		}), "restricted volume types", `volume "root" uses restricted volume type "hostPath"`},
		{"several", podWith(func(p *corev1.Pod) {
			p.Spec.Volumes = []corev1.Volume{
				vol("n", corev1.VolumeSource{NFS: &corev1.NFSVolumeSource{Server: "s", Path: "/"}}),
				vol("ok", corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}),
				vol("g", corev1.VolumeSource{Glusterfs: &corev1.GlusterfsVolumeSource{EndpointsName: "e", Path: "p"}}),
				vol("unknown", corev1.VolumeSource{}),
			}
		}), "restricted volume types", `volumes "n", "g", "unknown" use restricted volume types "glusterfs", "nfs", "unknown"`},
	})
}

func TestLevelChecks(t *testing.T) {
	wantBaseline := []string{"appArmorProfile", "capabilities_baseline", "hostNamespaces", "hostPathVolumes", "hostPorts",
		"hostProbesAndHostLifecycle", "privileged", "procMount", "seLinuxOptions", "seccompProfile_baseline", "sysctls", "windowsHostProcess"}
	if got := CheckIDs(LevelBaseline); !slices.Equal(got, wantBaseline) {
		t.Errorf("baseline checks %q, want %q", got, wantBaseline)
	}
	wantRestricted := []string{"appArmorProfile", "hostNamespaces", "hostPorts", "hostProbesAndHostLifecycle", "privileged",
		"seLinuxOptions", "sysctls", "windowsHostProcess",
		"allowPrivilegeEscalation", "capabilities_restricted", "procMount_restricted", "restrictedVolumes", "runAsNonRoot", "runAsUser", "seccompProfile_restricted"}
	if got := CheckIDs(LevelRestricted); !slices.Equal(got, wantRestricted) {
		t.Errorf("restricted checks %q, want %q", got, wantRestricted)
	}
	if got := CheckIDs(LevelPrivileged); len(got) != 0 {
		t.Errorf("privileged checks %q", got)
	}
}

func TestEvaluate(t *testing.T) {
	busybox := podWith(nil)
	if vs := Evaluate(LevelPrivileged, &busybox.ObjectMeta, &busybox.Spec); len(vs) != 0 {
		t.Errorf("privileged: %s", vs)
	}
	if vs := Evaluate(LevelBaseline, &busybox.ObjectMeta, &busybox.Spec); len(vs) != 0 {
		t.Errorf("baseline: %s", vs)
	}
	want := `allowPrivilegeEscalation != false (container "c" must set securityContext.allowPrivilegeEscalation=false), ` +
		`unrestricted capabilities (container "c" must set securityContext.capabilities.drop=["ALL"]), ` +
		`runAsNonRoot != true (pod or container "c" must set securityContext.runAsNonRoot=true), ` +
		`seccompProfile (pod or container "c" must set securityContext.seccompProfile.type to "RuntimeDefault" or "Localhost")`
	if got := Evaluate(LevelRestricted, &busybox.ObjectMeta, &busybox.Spec).String(); got != want {
		t.Errorf("restricted:\n got %s\nwant %s", got, want)
	}
	ok := restrictedPod("a", "b")
	if vs := Evaluate(LevelRestricted, &ok.ObjectMeta, &ok.Spec); len(vs) != 0 {
		t.Errorf("restricted pod: %s", vs)
	}

	// Baseline violations come first, the restricted versions of checks
	// replace the baseline ones.
	bad := podWith(func(p *corev1.Pod) {
		p.Spec.HostNetwork = true
		sc(p, 0).Privileged = ptr.To(true)
		sc(p, 0).Capabilities = &corev1.Capabilities{Add: []corev1.Capability{"NET_ADMIN"}}
		p.Spec.Volumes = []corev1.Volume{{Name: "h", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/"}}}}
	})
	wantBaseline := `non-default capabilities (container "c" must not include "NET_ADMIN" in securityContext.capabilities.add), ` +
		`host namespaces (hostNetwork=true), hostPath volumes (volume "h"), privileged (container "c" must not set securityContext.privileged=true)`
	if got := Evaluate(LevelBaseline, &bad.ObjectMeta, &bad.Spec).String(); got != wantBaseline {
		t.Errorf("baseline:\n got %s\nwant %s", got, wantBaseline)
	}
	wantRestricted := `host namespaces (hostNetwork=true), privileged (container "c" must not set securityContext.privileged=true), ` +
		`allowPrivilegeEscalation != false (container "c" must set securityContext.allowPrivilegeEscalation=false), ` +
		`unrestricted capabilities (container "c" must set securityContext.capabilities.drop=["ALL"]; container "c" must not include "NET_ADMIN" in securityContext.capabilities.add), ` +
		`restricted volume types (volume "h" uses restricted volume type "hostPath"), ` +
		`runAsNonRoot != true (pod or container "c" must set securityContext.runAsNonRoot=true), ` +
		`seccompProfile (pod or container "c" must set securityContext.seccompProfile.type to "RuntimeDefault" or "Localhost")`
	vs := Evaluate(LevelRestricted, &bad.ObjectMeta, &bad.Spec)
	if got := vs.String(); got != wantRestricted {
		t.Errorf("restricted:\n got %s\nwant %s", got, wantRestricted)
	}
	if got, want := vs.Reasons(), "host namespaces, privileged, allowPrivilegeEscalation != false, unrestricted capabilities, restricted volume types, runAsNonRoot != true, seccompProfile"; got != want {
		t.Errorf("reasons %q, want %q", got, want)
	}
}
