package podsecurity

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The checks of the Pod Security Standards
// (https://kubernetes.io/docs/concepts/security/pod-security-standards/),
// with the IDs, reasons and details of Kubernetes' pod-security-admission
// at its latest policy version, so that refusals read as Kubernetes'.

// Violation is what one check forbids in a pod.
type Violation struct {
	// Check is the check's ID ("privileged", "runAsNonRoot", ...).
	Check string
	// Reason is short ("host namespaces"); Detail says what in the pod
	// (`container "c" must not set securityContext.privileged=true`).
	Reason, Detail string
}

func (v Violation) String() string {
	if v.Detail == "" {
		return v.Reason
	}
	return v.Reason + " (" + v.Detail + ")"
}

// Violations is what a level forbids in a pod, in Kubernetes' order.
type Violations []Violation

// String joins the violations with their details, as the refusal
// message: `privileged (container "c" must ...), host namespaces (hostNetwork=true)`.
func (vs Violations) String() string {
	parts := make([]string, len(vs))
	for i, v := range vs {
		parts[i] = v.String()
	}
	return strings.Join(parts, ", ")
}

// Reasons joins the reasons alone, as the warnings about existing pods.
func (vs Violations) Reasons() string {
	parts := make([]string, len(vs))
	for i, v := range vs {
		parts[i] = v.Reason
	}
	return strings.Join(parts, ", ")
}

// checkFunc returns what it forbids in a pod: reason and detail, or ok.
type checkFunc func(meta *metav1.ObjectMeta, spec *corev1.PodSpec) (reason, detail string, ok bool)

type check struct {
	id    string
	level Level
	run   checkFunc
	// replaces are the baseline checks this restricted check stands for
	// at the restricted level.
	replaces []string
}

var allChecks = []check{
	{id: "privileged", level: LevelBaseline, run: checkPrivileged},
	{id: "hostNamespaces", level: LevelBaseline, run: checkHostNamespaces},
	{id: "hostPorts", level: LevelBaseline, run: checkHostPorts},
	{id: "hostPathVolumes", level: LevelBaseline, run: checkHostPathVolumes},
	{id: "hostProbesAndHostLifecycle", level: LevelBaseline, run: checkHostProbesAndLifecycle},
	{id: "capabilities_baseline", level: LevelBaseline, run: checkCapabilitiesBaseline},
	{id: "procMount", level: LevelBaseline, run: checkProcMountBaseline},
	{id: "seccompProfile_baseline", level: LevelBaseline, run: checkSeccompBaseline},
	{id: "seLinuxOptions", level: LevelBaseline, run: checkSELinuxOptions},
	{id: "sysctls", level: LevelBaseline, run: checkSysctls},
	{id: "appArmorProfile", level: LevelBaseline, run: checkAppArmor},
	{id: "windowsHostProcess", level: LevelBaseline, run: checkWindowsHostProcess},

	{id: "allowPrivilegeEscalation", level: LevelRestricted, run: checkAllowPrivilegeEscalation},
	{id: "capabilities_restricted", level: LevelRestricted, run: checkCapabilitiesRestricted, replaces: []string{"capabilities_baseline"}},
	{id: "procMount_restricted", level: LevelRestricted, run: checkProcMountRestricted, replaces: []string{"procMount"}},
	{id: "runAsNonRoot", level: LevelRestricted, run: checkRunAsNonRoot},
	{id: "runAsUser", level: LevelRestricted, run: checkRunAsUser},
	{id: "seccompProfile_restricted", level: LevelRestricted, run: checkSeccompRestricted, replaces: []string{"seccompProfile_baseline"}},
	{id: "restrictedVolumes", level: LevelRestricted, run: checkRestrictedVolumes, replaces: []string{"hostPathVolumes"}},
}

// levelChecks are the checks each level runs, in the order Kubernetes
// reports them: baseline checks by ID, then restricted checks by ID.
var levelChecks = buildLevelChecks()

func buildLevelChecks() map[Level][]check {
	var baseline, restricted []check
	replaced := map[string]bool{}
	for _, c := range allChecks {
		if c.level == LevelBaseline {
			baseline = append(baseline, c)
		} else {
			restricted = append(restricted, c)
			for _, id := range c.replaces {
				replaced[id] = true
			}
		}
	}
	byID := func(a, b check) int { return strings.Compare(a.id, b.id) }
	slices.SortFunc(baseline, byID)
	slices.SortFunc(restricted, byID)
	var forRestricted []check
	for _, c := range baseline {
		if !replaced[c.id] {
			forRestricted = append(forRestricted, c)
		}
	}
	return map[Level][]check{
		LevelBaseline:   baseline,
		LevelRestricted: append(forRestricted, restricted...),
	}
}

// CheckIDs lists the checks a level runs, in report order.
func CheckIDs(level Level) []string {
	var ids []string
	for _, c := range levelChecks[level] {
		ids = append(ids, c.id)
	}
	return ids
}

// Evaluate returns what level forbids in a pod (or a pod template):
// nothing for privileged.
func Evaluate(level Level, meta *metav1.ObjectMeta, spec *corev1.PodSpec) Violations {
	if meta == nil {
		meta = &metav1.ObjectMeta{}
	}
	var out Violations
	for _, c := range levelChecks[level] {
		if reason, detail, ok := c.run(meta, spec); !ok {
			out = append(out, Violation{Check: c.id, Reason: reason, Detail: detail})
		}
	}
	return out
}

// Message helpers.

// quoted is `"a", "b"`.
func quoted(items []string) string {
	if len(items) == 0 {
		return ""
	}
	return `"` + strings.Join(items, `", "`) + `"`
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// containersPhrase is `container "a"` or `containers "a", "b"`.
func containersPhrase(names []string) string {
	return plural(len(names), "container", "containers") + " " + quoted(names)
}

// sortedSet is a set of strings listed in order.
type sortedSet map[string]struct{}

func (s sortedSet) add(v string) { s[v] = struct{}{} }

func (s sortedSet) list() []string {
	out := make([]string, 0, len(s))
	for v := range s {
		out = append(out, v)
	}
	slices.Sort(out)
	return out
}

// eachContainer visits the init containers, the containers and the
// ephemeral containers of spec.
func eachContainer(spec *corev1.PodSpec, f func(c *corev1.Container)) {
	for i := range spec.InitContainers {
		f(&spec.InitContainers[i])
	}
	for i := range spec.Containers {
		f(&spec.Containers[i])
	}
	for i := range spec.EphemeralContainers {
		f((*corev1.Container)(&spec.EphemeralContainers[i].EphemeralContainerCommon))
	}
}

// inUserNamespace: a pod with hostUsers=false runs in its own user
// namespace, where root and /proc are not the host's.
func inUserNamespace(spec *corev1.PodSpec) bool {
	return spec.HostUsers != nil && !*spec.HostUsers
}

func isWindows(spec *corev1.PodSpec) bool {
	return spec.OS != nil && spec.OS.Name == corev1.Windows
}

// Baseline checks.

// checkPrivileged: no container runs privileged.
func checkPrivileged(_ *metav1.ObjectMeta, spec *corev1.PodSpec) (string, string, bool) {
	var bad []string
	eachContainer(spec, func(c *corev1.Container) {
		if sc := c.SecurityContext; sc != nil && sc.Privileged != nil && *sc.Privileged {
			bad = append(bad, c.Name)
		}
	})
	if len(bad) == 0 {
		return "", "", true
	}
	return "privileged", containersPhrase(bad) + " must not set securityContext.privileged=true", false
}

// checkHostNamespaces: no host network, PID or IPC namespace.
func checkHostNamespaces(_ *metav1.ObjectMeta, spec *corev1.PodSpec) (string, string, bool) {
	var set []string
	if spec.HostNetwork {
		set = append(set, "hostNetwork=true")
	}
	if spec.HostPID {
		set = append(set, "hostPID=true")
	}
	if spec.HostIPC {
		set = append(set, "hostIPC=true")
	}
	if len(set) == 0 {
		return "", "", true
	}
	return "host namespaces", strings.Join(set, ", "), false
}

// checkHostPorts: no container port binds a host port.
func checkHostPorts(_ *metav1.ObjectMeta, spec *corev1.PodSpec) (string, string, bool) {
	var bad []string
	ports := sortedSet{}
	eachContainer(spec, func(c *corev1.Container) {
		uses := false
		for _, p := range c.Ports {
			if p.HostPort != 0 {
				uses = true
				ports.add(strconv.Itoa(int(p.HostPort)))
			}
		}
		if uses {
			bad = append(bad, c.Name)
		}
	})
	if len(bad) == 0 {
		return "", "", true
	}
	return "hostPort", fmt.Sprintf("%s %s %s %s", containersPhrase(bad), plural(len(bad), "uses", "use"),
		plural(len(ports), "hostPort", "hostPorts"), strings.Join(ports.list(), ", ")), false
}

// checkHostPathVolumes: no hostPath volume.
func checkHostPathVolumes(_ *metav1.ObjectMeta, spec *corev1.PodSpec) (string, string, bool) {
	var bad []string
	for _, v := range spec.Volumes {
		if v.HostPath != nil {
			bad = append(bad, v.Name)
		}
	}
	if len(bad) == 0 {
		return "", "", true
	}
	return "hostPath volumes", plural(len(bad), "volume", "volumes") + " " + quoted(bad), false
}

// checkHostProbesAndLifecycle: probes and lifecycle handlers reach the
// pod itself, never another host.
func checkHostProbesAndLifecycle(_ *metav1.ObjectMeta, spec *corev1.PodSpec) (string, string, bool) {
	containers, hosts := sortedSet{}, sortedSet{}
	note := func(c *corev1.Container, host string) {
		if host != "" {
			containers.add(c.Name)
			hosts.add(host)
		}
	}
	eachContainer(spec, func(c *corev1.Container) {
		for _, p := range []*corev1.Probe{c.LivenessProbe, c.ReadinessProbe, c.StartupProbe} {
			if p == nil {
				continue
			}
			if p.HTTPGet != nil {
				note(c, p.HTTPGet.Host)
			}
			if p.TCPSocket != nil {
				note(c, p.TCPSocket.Host)
			}
		}
		if c.Lifecycle == nil {
			return
		}
		for _, h := range []*corev1.LifecycleHandler{c.Lifecycle.PostStart, c.Lifecycle.PreStop} {
			if h == nil {
				continue
			}
			if h.HTTPGet != nil {
				note(c, h.HTTPGet.Host)
			}
			if h.TCPSocket != nil {
				note(c, h.TCPSocket.Host)
			}
		}
	})
	if len(containers) == 0 {
		return "", "", true
	}
	return "probe or lifecycle host", fmt.Sprintf("%s %s %s %s", containersPhrase(containers.list()),
		plural(len(containers), "uses", "use"),
		plural(len(hosts), "probe or lifecycle host", "probe or lifecycle hosts"), quoted(hosts.list())), false
}

// defaultCapabilities are those a container may add at baseline: the
// container runtimes' default set.
var defaultCapabilities = map[corev1.Capability]bool{
	"AUDIT_WRITE": true, "CHOWN": true, "DAC_OVERRIDE": true, "FOWNER": true, "FSETID": true, "KILL": true,
	"MKNOD": true, "NET_BIND_SERVICE": true, "SETFCAP": true, "SETGID": true, "SETPCAP": true, "SETUID": true,
	"SYS_CHROOT": true,
}

// checkCapabilitiesBaseline: containers add no capability beyond the default set.
func checkCapabilitiesBaseline(_ *metav1.ObjectMeta, spec *corev1.PodSpec) (string, string, bool) {
	var bad []string
	caps := sortedSet{}
	eachContainer(spec, func(c *corev1.Container) {
		if c.SecurityContext == nil || c.SecurityContext.Capabilities == nil {
			return
		}
		adds := false
		for _, capability := range c.SecurityContext.Capabilities.Add {
			if !defaultCapabilities[capability] {
				adds = true
				caps.add(string(capability))
			}
		}
		if adds {
			bad = append(bad, c.Name)
		}
	})
	if len(bad) == 0 {
		return "", "", true
	}
	return "non-default capabilities", fmt.Sprintf("%s must not include %s in securityContext.capabilities.add",
		containersPhrase(bad), quoted(caps.list())), false
}

// procMountDefault: containers keep the default /proc masks.
func procMountDefault(spec *corev1.PodSpec) (string, string, bool) {
	var bad []string
	types := sortedSet{}
	eachContainer(spec, func(c *corev1.Container) {
		if sc := c.SecurityContext; sc != nil && sc.ProcMount != nil && *sc.ProcMount != corev1.DefaultProcMount {
			bad = append(bad, c.Name)
			types.add(string(*sc.ProcMount))
		}
	})
	if len(bad) == 0 {
		return "", "", true
	}
	return "procMount", fmt.Sprintf("%s must not set securityContext.procMount to %s", containersPhrase(bad), quoted(types.list())), false
}

// checkProcMountBaseline: the default /proc masks, unless the pod has its
// own user namespace.
func checkProcMountBaseline(_ *metav1.ObjectMeta, spec *corev1.PodSpec) (string, string, bool) {
	if inUserNamespace(spec) {
		return "", "", true
	}
	return procMountDefault(spec)
}

// checkProcMountRestricted: the default /proc masks, always.
func checkProcMountRestricted(_ *metav1.ObjectMeta, spec *corev1.PodSpec) (string, string, bool) {
	return procMountDefault(spec)
}

func allowedSeccomp(t corev1.SeccompProfileType) bool {
	return t == corev1.SeccompProfileTypeRuntimeDefault || t == corev1.SeccompProfileTypeLocalhost
}

// seccompSetters lists who sets a seccomp profile type other than
// RuntimeDefault or Localhost ("pod", `containers "a", "b"`) and the
// types they set; unset lists the containers that set none while the
// pod sets no allowed one.
func seccompSetters(spec *corev1.PodSpec) (setters []string, types sortedSet, unset []string) {
	types = sortedSet{}
	podAllowed := false
	if sc := spec.SecurityContext; sc != nil && sc.SeccompProfile != nil {
		if allowedSeccomp(sc.SeccompProfile.Type) {
			podAllowed = true
		} else {
			setters = append(setters, "pod")
			types.add(string(sc.SeccompProfile.Type))
		}
	}
	var bad []string
	eachContainer(spec, func(c *corev1.Container) {
		switch sc := c.SecurityContext; {
		case sc != nil && sc.SeccompProfile != nil:
			if !allowedSeccomp(sc.SeccompProfile.Type) {
				bad = append(bad, c.Name)
				types.add(string(sc.SeccompProfile.Type))
			}
		case !podAllowed:
			unset = append(unset, c.Name)
		}
	})
	if len(bad) > 0 {
		setters = append(setters, containersPhrase(bad))
	}
	return setters, types, unset
}

// checkSeccompBaseline: a seccomp profile, where set, is RuntimeDefault or Localhost.
func checkSeccompBaseline(_ *metav1.ObjectMeta, spec *corev1.PodSpec) (string, string, bool) {
	setters, types, _ := seccompSetters(spec)
	if len(setters) == 0 {
		return "", "", true
	}
	return "seccompProfile", fmt.Sprintf("%s must not set securityContext.seccompProfile.type to %s",
		strings.Join(setters, " and "), quoted(types.list())), false
}

// seLinuxTypes are the SELinux types a pod may ask for ("" is the default).
var seLinuxTypes = map[string]bool{"": true, "container_t": true, "container_init_t": true, "container_kvm_t": true, "container_engine_t": true}

// checkSELinuxOptions: no SELinux user or role, and only the container types.
func checkSELinuxOptions(_ *metav1.ObjectMeta, spec *corev1.PodSpec) (string, string, bool) {
	types := sortedSet{}
	user, role := false, false
	bad := func(o *corev1.SELinuxOptions) bool {
		wrong := false
		if !seLinuxTypes[o.Type] {
			types.add(o.Type)
			wrong = true
		}
		if o.User != "" {
			user, wrong = true, true
		}
		if o.Role != "" {
			role, wrong = true, true
		}
		return wrong
	}
	var setters []string
	if sc := spec.SecurityContext; sc != nil && sc.SELinuxOptions != nil && bad(sc.SELinuxOptions) {
		setters = append(setters, "pod")
	}
	var containers []string
	eachContainer(spec, func(c *corev1.Container) {
		if sc := c.SecurityContext; sc != nil && sc.SELinuxOptions != nil && bad(sc.SELinuxOptions) {
			containers = append(containers, c.Name)
		}
	})
	if len(containers) > 0 {
		setters = append(setters, containersPhrase(containers))
	}
	if len(setters) == 0 {
		return "", "", true
	}
	var what []string
	if len(types) > 0 {
		what = append(what, plural(len(types), "type", "types")+" "+quoted(types.list()))
	}
	if user {
		what = append(what, "user may not be set")
	}
	if role {
		what = append(what, "role may not be set")
	}
	return "seLinuxOptions", fmt.Sprintf("%s set forbidden securityContext.seLinuxOptions: %s",
		strings.Join(setters, " and "), strings.Join(what, "; ")), false
}

// safeSysctls are the namespaced sysctls isolated from other pods.
var safeSysctls = map[string]bool{
	"kernel.shm_rmid_forced":              true,
	"net.ipv4.ip_local_port_range":        true,
	"net.ipv4.tcp_syncookies":             true,
	"net.ipv4.ping_group_range":           true,
	"net.ipv4.ip_unprivileged_port_start": true,
	"net.ipv4.ip_local_reserved_ports":    true,
	"net.ipv4.tcp_keepalive_time":         true,
	"net.ipv4.tcp_fin_timeout":            true,
	"net.ipv4.tcp_keepalive_intvl":        true,
	"net.ipv4.tcp_keepalive_probes":       true,
	"net.ipv4.tcp_rmem":                   true,
	"net.ipv4.tcp_wmem":                   true,
	"net.ipv4.tcp_slow_start_after_idle":  true,
	"net.ipv4.tcp_notsent_lowat":          true,
}

// checkSysctls: only safe sysctls.
func checkSysctls(_ *metav1.ObjectMeta, spec *corev1.PodSpec) (string, string, bool) {
	if spec.SecurityContext == nil {
		return "", "", true
	}
	var bad []string
	for _, s := range spec.SecurityContext.Sysctls {
		if !safeSysctls[s.Name] {
			bad = append(bad, s.Name)
		}
	}
	if len(bad) == 0 {
		return "", "", true
	}
	return "forbidden sysctls", strings.Join(bad, ", "), false
}

func allowedAppArmorType(t corev1.AppArmorProfileType) bool {
	return t == corev1.AppArmorProfileTypeRuntimeDefault || t == corev1.AppArmorProfileTypeLocalhost
}

func allowedAppArmorAnnotation(v string) bool {
	return v == "" || v == corev1.DeprecatedAppArmorBetaProfileRuntimeDefault ||
		strings.HasPrefix(v, corev1.DeprecatedAppArmorBetaProfileNamePrefix)
}

// checkAppArmor: AppArmor profiles, in fields or the beta annotations,
// keep the runtime default or a localhost profile.
func checkAppArmor(meta *metav1.ObjectMeta, spec *corev1.PodSpec) (string, string, bool) {
	var setters []string
	values := sortedSet{}
	if sc := spec.SecurityContext; sc != nil && sc.AppArmorProfile != nil && !allowedAppArmorType(sc.AppArmorProfile.Type) {
		setters = append(setters, "pod")
		values.add(string(sc.AppArmorProfile.Type))
	}
	var containers []string
	eachContainer(spec, func(c *corev1.Container) {
		if sc := c.SecurityContext; sc != nil && sc.AppArmorProfile != nil && !allowedAppArmorType(sc.AppArmorProfile.Type) {
			containers = append(containers, c.Name)
			values.add(string(sc.AppArmorProfile.Type))
		}
	})
	if len(containers) > 0 {
		setters = append(setters, containersPhrase(containers))
	}
	var annotations []string
	for k, v := range meta.Annotations {
		if strings.HasPrefix(k, corev1.DeprecatedAppArmorBetaContainerAnnotationKeyPrefix) && !allowedAppArmorAnnotation(v) {
			annotations = append(annotations, fmt.Sprintf("%s=%q", k, v))
		}
	}
	all := values.list()
	if len(annotations) > 0 {
		slices.Sort(annotations)
		all = append(all, annotations...)
		setters = append(setters, plural(len(annotations), "annotation", "annotations"))
	}
	if len(setters) == 0 {
		return "", "", true
	}
	return plural(len(all), "forbidden AppArmor profile", "forbidden AppArmor profiles"),
		fmt.Sprintf("%s must not set AppArmor profile type to %s", strings.Join(setters, " and "), quoted(all)), false
}

// checkWindowsHostProcess: no Windows HostProcess pod or container.
func checkWindowsHostProcess(_ *metav1.ObjectMeta, spec *corev1.PodSpec) (string, string, bool) {
	hostProcess := func(w *corev1.WindowsSecurityContextOptions) bool {
		return w != nil && w.HostProcess != nil && *w.HostProcess
	}
	var setters []string
	if spec.SecurityContext != nil && hostProcess(spec.SecurityContext.WindowsOptions) {
		setters = append(setters, "pod")
	}
	var containers []string
	eachContainer(spec, func(c *corev1.Container) {
		if c.SecurityContext != nil && hostProcess(c.SecurityContext.WindowsOptions) {
			containers = append(containers, c.Name)
		}
	})
	if len(containers) > 0 {
		setters = append(setters, containersPhrase(containers))
	}
	if len(setters) == 0 {
		return "", "", true
	}
	return "hostProcess", strings.Join(setters, " and ") + " must not set securityContext.windowsOptions.hostProcess=true", false
}

// Restricted checks.

// checkAllowPrivilegeEscalation: every container sets
// allowPrivilegeEscalation=false (Windows pods have no such thing).
func checkAllowPrivilegeEscalation(_ *metav1.ObjectMeta, spec *corev1.PodSpec) (string, string, bool) {
	if isWindows(spec) {
		return "", "", true
	}
	var bad []string
	eachContainer(spec, func(c *corev1.Container) {
		if sc := c.SecurityContext; sc == nil || sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation {
			bad = append(bad, c.Name)
		}
	})
	if len(bad) == 0 {
		return "", "", true
	}
	return "allowPrivilegeEscalation != false", containersPhrase(bad) + " must set securityContext.allowPrivilegeEscalation=false", false
}

// checkCapabilitiesRestricted: every container drops ALL and adds at
// most NET_BIND_SERVICE.
func checkCapabilitiesRestricted(_ *metav1.ObjectMeta, spec *corev1.PodSpec) (string, string, bool) {
	if isWindows(spec) {
		return "", "", true
	}
	var noDrop, adding []string
	caps := sortedSet{}
	eachContainer(spec, func(c *corev1.Container) {
		if c.SecurityContext == nil || c.SecurityContext.Capabilities == nil {
			noDrop = append(noDrop, c.Name)
			return
		}
		capabilities := c.SecurityContext.Capabilities
		if !slices.Contains(capabilities.Drop, "ALL") {
			noDrop = append(noDrop, c.Name)
		}
		adds := false
		for _, capability := range capabilities.Add {
			if capability != "NET_BIND_SERVICE" {
				adds = true
				caps.add(string(capability))
			}
		}
		if adds {
			adding = append(adding, c.Name)
		}
	})
	var details []string
	if len(noDrop) > 0 {
		details = append(details, containersPhrase(noDrop)+` must set securityContext.capabilities.drop=["ALL"]`)
	}
	if len(adding) > 0 {
		details = append(details, fmt.Sprintf("%s must not include %s in securityContext.capabilities.add", containersPhrase(adding), quoted(caps.list())))
	}
	if len(details) == 0 {
		return "", "", true
	}
	return "unrestricted capabilities", strings.Join(details, "; "), false
}

// checkRunAsNonRoot: the pod, or else every container, sets
// runAsNonRoot=true, and none sets false; a pod with its own user
// namespace may run as root.
func checkRunAsNonRoot(_ *metav1.ObjectMeta, spec *corev1.PodSpec) (string, string, bool) {
	if inUserNamespace(spec) {
		return "", "", true
	}
	var setters []string
	podNonRoot := false
	if sc := spec.SecurityContext; sc != nil && sc.RunAsNonRoot != nil {
		if *sc.RunAsNonRoot {
			podNonRoot = true
		} else {
			setters = append(setters, "pod")
		}
	}
	var explicit, implicit []string
	eachContainer(spec, func(c *corev1.Container) {
		switch sc := c.SecurityContext; {
		case sc != nil && sc.RunAsNonRoot != nil:
			if !*sc.RunAsNonRoot {
				explicit = append(explicit, c.Name)
			}
		case !podNonRoot:
			implicit = append(implicit, c.Name)
		}
	})
	if len(explicit) > 0 {
		setters = append(setters, containersPhrase(explicit))
	}
	switch {
	case len(setters) > 0:
		return "runAsNonRoot != true", strings.Join(setters, " and ") + " must not set securityContext.runAsNonRoot=false", false
	case len(implicit) > 0:
		return "runAsNonRoot != true", "pod or " + containersPhrase(implicit) + " must set securityContext.runAsNonRoot=true", false
	}
	return "", "", true
}

// checkRunAsUser: nobody sets runAsUser=0, unless the pod has its own
// user namespace.
func checkRunAsUser(_ *metav1.ObjectMeta, spec *corev1.PodSpec) (string, string, bool) {
	if inUserNamespace(spec) {
		return "", "", true
	}
	var setters []string
	if sc := spec.SecurityContext; sc != nil && sc.RunAsUser != nil && *sc.RunAsUser == 0 {
		setters = append(setters, "pod")
	}
	var containers []string
	eachContainer(spec, func(c *corev1.Container) {
		if sc := c.SecurityContext; sc != nil && sc.RunAsUser != nil && *sc.RunAsUser == 0 {
			containers = append(containers, c.Name)
		}
	})
	if len(containers) > 0 {
		setters = append(setters, containersPhrase(containers))
	}
	if len(setters) == 0 {
		return "", "", true
	}
	return "runAsUser=0", strings.Join(setters, " and ") + " must not set runAsUser=0", false
}

// checkSeccompRestricted: the pod, or else every container, sets seccomp
// profile type RuntimeDefault or Localhost, and nobody sets another
// (Windows pods have no seccomp).
func checkSeccompRestricted(_ *metav1.ObjectMeta, spec *corev1.PodSpec) (string, string, bool) {
	if isWindows(spec) {
		return "", "", true
	}
	setters, types, unset := seccompSetters(spec)
	switch {
	case len(setters) > 0:
		return "seccompProfile", fmt.Sprintf("%s must not set securityContext.seccompProfile.type to %s",
			strings.Join(setters, " and "), quoted(types.list())), false
	case len(unset) > 0:
		return "seccompProfile", "pod or " + containersPhrase(unset) +
			` must set securityContext.seccompProfile.type to "RuntimeDefault" or "Localhost"`, false
	}
	return "", "", true
}

// restrictedVolumeType names the volume type a restricted pod may not
// use, or "" for those it may: configMap, csi, downwardAPI, emptyDir,
// ephemeral, image, persistentVolumeClaim, projected and secret.
func restrictedVolumeType(v *corev1.VolumeSource) string {
	switch {
	case v.ConfigMap != nil, v.CSI != nil, v.DownwardAPI != nil, v.EmptyDir != nil, v.Ephemeral != nil,
		v.Image != nil, v.PersistentVolumeClaim != nil, v.Projected != nil, v.Secret != nil:
		return ""
	case v.HostPath != nil:
		return "hostPath"
	case v.GCEPersistentDisk != nil:
		return "gcePersistentDisk"
	case v.AWSElasticBlockStore != nil:
		return "awsElasticBlockStore"
	case v.GitRepo != nil:
		return "gitRepo"
	case v.NFS != nil:
		return "nfs"
	case v.ISCSI != nil:
		return "iscsi"
	case v.Glusterfs != nil:
		return "glusterfs"
	case v.RBD != nil:
		return "rbd"
	case v.FlexVolume != nil:
		return "flexVolume"
	case v.Cinder != nil:
		return "cinder"
	case v.CephFS != nil:
		return "cephfs"
	case v.Flocker != nil:
		return "flocker"
	case v.FC != nil:
		return "fc"
	case v.AzureFile != nil:
		return "azureFile"
	case v.VsphereVolume != nil:
		return "vsphereVolume"
	case v.Quobyte != nil:
		return "quobyte"
	case v.AzureDisk != nil:
		return "azureDisk"
	case v.PhotonPersistentDisk != nil:
		return "photonPersistentDisk"
	case v.PortworxVolume != nil:
		return "portworxVolume"
	case v.ScaleIO != nil:
		return "scaleIO"
	case v.StorageOS != nil:
		return "storageos"
	}
	return "unknown"
}

// checkRestrictedVolumes: only the volume types that hold no host or
// network storage of their own.
func checkRestrictedVolumes(_ *metav1.ObjectMeta, spec *corev1.PodSpec) (string, string, bool) {
	var bad []string
	types := sortedSet{}
	for i := range spec.Volumes {
		if t := restrictedVolumeType(&spec.Volumes[i].VolumeSource); t != "" {
			bad = append(bad, spec.Volumes[i].Name)
			types.add(t)
		}
	}
	if len(bad) == 0 {
		return "", "", true
	}
	return "restricted volume types", fmt.Sprintf("%s %s %s %s %s", plural(len(bad), "volume", "volumes"), quoted(bad),
		plural(len(bad), "uses", "use"), plural(len(types), "restricted volume type", "restricted volume types"), quoted(types.list())), false
}
