package runtime

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/containerd/containerd"
	"github.com/containerd/containerd/containers"
	"github.com/containerd/containerd/contrib/seccomp"
	"github.com/containerd/containerd/oci"
	"github.com/containerd/containerd/pkg/cap"
	specs "github.com/opencontainers/runtime-spec/specs-go"
)

// labelUser records the identity a container's process runs with,
// "uid:gid:g1,g2,..." (ContainerStatus.User).
const labelUser = labelPrefix + "user"

// maxLabelSize is containerd's limit on a label's key and value together.
const maxLabelSize = 4096

// ErrRunAsRoot is returned by CreateContainer for a container with
// RunAsNonRoot whose process would run as uid 0.
var ErrRunAsRoot = errors.New("container has runAsNonRoot and will run as root")

// ImageUser is the user in a present image's configuration.
func (r *Containerd) ImageUser(ctx context.Context, ref string) (string, error) {
	ctx = r.nsCtx(ctx)
	img, err := r.getImage(ctx, ref)
	if err != nil {
		return "", err
	}
	spec, err := img.Spec(ctx)
	if err != nil {
		return "", fmt.Errorf("image %s: config: %w", img.Name(), err)
	}
	return spec.Config.User, nil
}

// securityOpts are the spec options of cfg's security settings, after the
// image's configuration: the user and groups, capabilities, no_new_privs,
// seccomp, sysctls and the read-only root. The last one checks
// RunAsNonRoot against the user the spec ends up with and stores that
// identity in *user.
func securityOpts(cfg ContainerConfig, user *ProcessUser) ([]oci.SpecOpts, error) {
	var opts []oci.SpecOpts
	if cfg.User != "" {
		opts = append(opts, oci.WithUser(cfg.User))
		if !cfg.StrictGroups {
			// The groups the image's /etc/group lists the user in, as the
			// CRI plugin adds them (by name, or by the name of the uid).
			name, _, _ := strings.Cut(cfg.User, ":")
			opts = append(opts, oci.WithAdditionalGIDs(name))
		}
	}
	// Without cfg.User, WithImageConfig gave the image user's groups.
	opts = append(opts, withGroups(cfg.StrictGroups, cfg.SupplementalGroups))
	if cfg.Privileged {
		opts = append(opts, oci.WithPrivileged, oci.WithAllDevicesAllowed, oci.WithHostDevices,
			oci.WithWriteableSysfs, oci.WithWriteableCgroupfs)
	} else {
		caps, err := capabilityOpts(cfg.CapAdd, cfg.CapDrop)
		if err != nil {
			return nil, err
		}
		opts = append(opts, caps...)
		// After the capabilities: the default profile allows what they do.
		sc, err := seccompOpt(cfg.Seccomp)
		if err != nil {
			return nil, err
		}
		opts = append(opts, sc)
	}
	opts = append(opts, withNoNewPrivs(cfg.NoNewPrivs))
	if len(cfg.Sysctls) > 0 {
		opts = append(opts, withSysctls(cfg.Sysctls))
	}
	if cfg.ReadOnlyRootfs {
		opts = append(opts, oci.WithRootFSReadonly())
	}
	return append(opts, withIdentity(cfg.RunAsNonRoot, user)), nil
}

// withGroups makes the process's groups its primary group, the groups
// already found for its user in the image (unless strict) and extra,
// sorted, as the CRI plugin merges them.
func withGroups(strict bool, extra []int64) oci.SpecOpts {
	return func(_ context.Context, _ oci.Client, _ *containers.Container, s *oci.Spec) error {
		if s.Process == nil {
			s.Process = &specs.Process{}
		}
		u := &s.Process.User
		set := map[uint32]bool{u.GID: true}
		if !strict {
			for _, g := range u.AdditionalGids {
				set[g] = true
			}
		}
		for _, g := range extra {
			if g < 0 || g > math.MaxInt32 {
				return fmt.Errorf("supplemental group %d is out of range", g)
			}
			set[uint32(g)] = true
		}
		u.AdditionalGids = slices.Sorted(maps.Keys(set))
		return nil
	}
}

// capabilityOpts change containerd's default capabilities as the CRI
// plugin does: "ALL" added gives every capability the kubelet has, "ALL"
// dropped removes every one, then the named ones are added, then the
// named ones dropped.
func capabilityOpts(add, drop []string) ([]oci.SpecOpts, error) {
	var opts []oci.SpecOpts
	parse := func(names []string) (all bool, caps []string, err error) {
		for _, n := range names {
			c, err := CapabilityName(n)
			if err != nil {
				return false, nil, err
			}
			if c == "ALL" {
				all = true
				continue
			}
			caps = append(caps, c)
		}
		return all, caps, nil
	}
	addAll, addCaps, err := parse(add)
	if err != nil {
		return nil, err
	}
	dropAll, dropCaps, err := parse(drop)
	if err != nil {
		return nil, err
	}
	if addAll {
		opts = append(opts, oci.WithAllCurrentCapabilities)
	}
	if dropAll {
		opts = append(opts, oci.WithCapabilities(nil))
	}
	if len(addCaps) > 0 {
		opts = append(opts, oci.WithAddedCapabilities(addCaps))
	}
	if len(dropCaps) > 0 {
		opts = append(opts, oci.WithDroppedCapabilities(dropCaps))
	}
	return opts, nil
}

// CapabilityName is a capability's name as the OCI spec has it ("chown",
// "CHOWN" and "CAP_CHOWN" are CAP_CHOWN), or "ALL".
func CapabilityName(name string) (string, error) {
	n := strings.ToUpper(strings.TrimSpace(name))
	if n == "ALL" {
		return n, nil
	}
	if !strings.HasPrefix(n, "CAP_") {
		n = "CAP_" + n
	}
	if !slices.Contains(cap.Known(), n) {
		return "", fmt.Errorf("unknown capability %q", name)
	}
	return n, nil
}

// seccompOpt applies a seccomp profile: containerd's default one for
// RuntimeDefault, a file's for Localhost, none for Unconfined.
func seccompOpt(p SeccompProfile) (oci.SpecOpts, error) {
	switch p.Type {
	case "", SeccompUnconfined:
		return oci.WithSeccompUnconfined, nil
	case SeccompRuntimeDefault:
		return seccomp.WithDefaultProfile(), nil
	case SeccompLocalhost:
		if p.LocalhostPath == "" {
			return nil, errors.New("seccomp profile Localhost names no file")
		}
		return seccomp.WithProfile(p.LocalhostPath), nil
	}
	return nil, fmt.Errorf("unknown seccomp profile type %q", p.Type)
}

// withNoNewPrivs sets or clears no_new_privs (containerd's default spec
// sets it; Kubernetes only with allowPrivilegeEscalation: false).
func withNoNewPrivs(on bool) oci.SpecOpts {
	return func(_ context.Context, _ oci.Client, _ *containers.Container, s *oci.Spec) error {
		if s.Process == nil {
			s.Process = &specs.Process{}
		}
		s.Process.NoNewPrivileges = on
		return nil
	}
}

func withSysctls(sysctls map[string]string) oci.SpecOpts {
	return func(_ context.Context, _ oci.Client, _ *containers.Container, s *oci.Spec) error {
		if s.Linux == nil {
			s.Linux = &specs.Linux{}
		}
		if s.Linux.Sysctl == nil {
			s.Linux.Sysctl = map[string]string{}
		}
		maps.Copy(s.Linux.Sysctl, sysctls)
		return nil
	}
}

// withIdentity refuses uid 0 under runAsNonRoot and records the process's
// identity in *user.
func withIdentity(nonRoot bool, user *ProcessUser) oci.SpecOpts {
	return func(_ context.Context, _ oci.Client, _ *containers.Container, s *oci.Spec) error {
		if s.Process == nil {
			s.Process = &specs.Process{}
		}
		u := s.Process.User
		if nonRoot && u.UID == 0 {
			return ErrRunAsRoot
		}
		*user = ProcessUser{UID: int64(u.UID), GID: int64(u.GID)}
		for _, g := range u.AdditionalGids {
			user.SupplementalGroups = append(user.SupplementalGroups, int64(g))
		}
		return nil
	}
}

// withUserLabel stores *user, which the spec's options filled, on the
// container. It must follow WithNewSpec and WithContainerLabels.
func withUserLabel(user *ProcessUser) containerd.NewContainerOpts {
	return func(_ context.Context, _ *containerd.Client, c *containers.Container) error {
		v := user.label()
		if len(labelUser)+len(v) > maxLabelSize {
			return nil // too many groups to record: no status user
		}
		if c.Labels == nil {
			c.Labels = map[string]string{}
		}
		c.Labels[labelUser] = v
		return nil
	}
}

func (u *ProcessUser) label() string {
	groups := make([]string, len(u.SupplementalGroups))
	for i, g := range u.SupplementalGroups {
		groups[i] = strconv.FormatInt(g, 10)
	}
	return fmt.Sprintf("%d:%d:%s", u.UID, u.GID, strings.Join(groups, ","))
}

// userFromLabel reads labelUser; nil when it is absent or malformed.
func userFromLabel(s string) *ProcessUser {
	parts := strings.Split(s, ":")
	if len(parts) != 3 {
		return nil
	}
	uid, err1 := strconv.ParseInt(parts[0], 10, 64)
	gid, err2 := strconv.ParseInt(parts[1], 10, 64)
	if err1 != nil || err2 != nil {
		return nil
	}
	u := &ProcessUser{UID: uid, GID: gid}
	if parts[2] != "" {
		for _, g := range strings.Split(parts[2], ",") {
			n, err := strconv.ParseInt(g, 10, 64)
			if err != nil {
				return nil
			}
			u.SupplementalGroups = append(u.SupplementalGroups, n)
		}
	}
	return u
}
