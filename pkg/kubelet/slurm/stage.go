package slurm

import (
	"archive/tar"
	"bytes"
	"errors"
	"fmt"
	"path"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/minik8s/minik8s/pkg/kubelet/podenv"
)

// StageDir is the directory, in a job's work directory, that holds what
// the provider stages for it: the containers' environment files and the
// pod's volumes. Its mode is 0700, so other users of a shared file
// system see neither the Secrets nor the environment.
const StageDir = ".minik8s"

// StagedFile is one file (or, with Dir, directory) staged into a job's
// work directory before it is submitted; Path is relative to it.
type StagedFile struct {
	Path string
	Data []byte
	Mode int64
	Dir  bool
}

// volumeDir is where volume name is staged, relative to the work dir.
func volumeDir(name string) string { return path.Join(StageDir, "volumes", name) }

// envFile is where container i's environment is staged.
func envFile(i int) string { return path.Join(StageDir, "env", fmt.Sprintf("c%d", i)) }

// stageVolumes turns the pod's volumes into files under StageDir. The
// Slurm node has no container to mount them in, so each container links
// its mount paths, taken relative to the work directory, to them
// (mountLinks). A volume the Slurm node cannot have is an error.
func stageVolumes(pod *corev1.Pod, objs *podenv.Objects) (files []StagedFile, sources map[string]string, err error) {
	files = []StagedFile{
		{Path: StageDir, Mode: 0o700, Dir: true},
		{Path: path.Join(StageDir, "env"), Mode: 0o700, Dir: true},
		{Path: path.Join(StageDir, "volumes"), Mode: 0o700, Dir: true},
	}
	sources = map[string]string{} // volume name -> what its mounts link to
	for i := range pod.Spec.Volumes {
		v := &pod.Spec.Volumes[i]
		dir := volumeDir(v.Name)
		var payload map[string]podenv.File
		switch src := v.VolumeSource; {
		case src.EmptyDir != nil:
			files = append(files, StagedFile{Path: dir, Mode: 0o777, Dir: true})
			sources[v.Name] = dir
			continue
		case src.HostPath != nil:
			// The path on the Slurm node, as on any node.
			sources[v.Name] = src.HostPath.Path
			continue
		case src.ConfigMap != nil:
			payload, err = podenv.ConfigMapPayload(objs, src.ConfigMap.Name, src.ConfigMap.Items, src.ConfigMap.DefaultMode, podenv.Optional(src.ConfigMap.Optional))
		case src.Secret != nil:
			payload, err = podenv.SecretPayload(objs, src.Secret.SecretName, src.Secret.Items, src.Secret.DefaultMode, podenv.Optional(src.Secret.Optional))
		case src.DownwardAPI != nil:
			payload, err = podenv.DownwardPayload(pod, src.DownwardAPI.Items, src.DownwardAPI.DefaultMode, nil)
		case src.Projected != nil:
			payload, err = projectedPayload(pod, src.Projected, objs)
		default:
			return nil, nil, fmt.Errorf("volume %q: not supported on a Slurm node (emptyDir, hostPath, configMap, secret, downwardAPI and projected volumes are)", v.Name)
		}
		if err != nil {
			return nil, nil, fmt.Errorf("volume %q: %w", v.Name, err)
		}
		files = append(files, StagedFile{Path: dir, Mode: 0o755, Dir: true})
		for _, rel := range sortedKeys(payload) {
			if err := podenv.ValidatePayloadPath(rel); err != nil {
				return nil, nil, fmt.Errorf("volume %q: %w", v.Name, err)
			}
			clean := path.Clean(rel)
			f := payload[rel]
			// Subdirectories first, as tar wants them.
			for d := path.Dir(clean); d != "."; d = path.Dir(d) {
				files = append(files, StagedFile{Path: path.Join(dir, d), Mode: 0o755, Dir: true})
			}
			files = append(files, StagedFile{Path: path.Join(dir, clean), Data: f.Data, Mode: int64(f.Mode)})
		}
		sources[v.Name] = dir
	}
	return files, sources, nil
}

// projectedPayload merges a projected volume's configMap, secret and
// downwardAPI sources. A service account token is left out: the Slurm
// nodes are not on the cluster's network, so it would open nothing, and
// refusing it would refuse every pod that admission gives one.
func projectedPayload(pod *corev1.Pod, src *corev1.ProjectedVolumeSource, objs *podenv.Objects) (map[string]podenv.File, error) {
	mode := podenv.ModeOr(src.DefaultMode, podenv.DefaultFileMode)
	out := map[string]podenv.File{}
	for _, s := range src.Sources {
		var m map[string]podenv.File
		var err error
		switch {
		case s.ConfigMap != nil:
			m, err = podenv.ConfigMapPayload(objs, s.ConfigMap.Name, s.ConfigMap.Items, &mode, podenv.Optional(s.ConfigMap.Optional))
		case s.Secret != nil:
			m, err = podenv.SecretPayload(objs, s.Secret.Name, s.Secret.Items, &mode, podenv.Optional(s.Secret.Optional))
		case s.DownwardAPI != nil:
			m, err = podenv.DownwardPayload(pod, s.DownwardAPI.Items, &mode, nil)
		case s.ServiceAccountToken != nil:
			continue
		default:
			return nil, errors.New("projected sources on a Slurm node: configMap, secret, downwardAPI and serviceAccountToken (left out) only")
		}
		if err != nil {
			return nil, err
		}
		for k, v := range m {
			out[k] = v
		}
	}
	return out, nil
}

// relativePath checks a path that must stay inside its directory.
func relativePath(p string) (string, error) {
	clean := path.Clean(strings.TrimPrefix(p, "/"))
	if clean == "." || clean == ".." || strings.HasPrefix(clean, "../") {
		return "", fmt.Errorf("path %q leaves its directory", p)
	}
	return clean, nil
}

// mountLinks are the commands a container's function starts with: each
// volumeMount's path, under the work directory, becomes a symbolic link
// to the staged volume (or its subPath), so a container that mounts
// /src finds the volume at ./src.
func mountLinks(c corev1.Container, kind string, workDir string, sources map[string]string) (string, error) {
	var b strings.Builder
	for _, m := range c.VolumeMounts {
		src, ok := sources[m.Name]
		if !ok {
			return "", fmt.Errorf("%s %s: volumeMount %q: no volume of that name", kind, c.Name, m.Name)
		}
		if m.SubPathExpr != "" {
			return "", fmt.Errorf("%s %s: volumeMount %q: subPathExpr is not supported on a Slurm node", kind, c.Name, m.Name)
		}
		link, err := relativePath(m.MountPath)
		if err != nil {
			return "", fmt.Errorf("%s %s: volumeMount %q: mountPath: %w", kind, c.Name, m.Name, err)
		}
		if link == StageDir || strings.HasPrefix(link, StageDir+"/") {
			return "", fmt.Errorf("%s %s: volumeMount %q: mountPath %s is the provider's", kind, c.Name, m.Name, m.MountPath)
		}
		target := src
		if !path.IsAbs(target) {
			target = path.Join(workDir, target)
		}
		if m.SubPath != "" {
			sub, err := relativePath(m.SubPath)
			if err != nil {
				return "", fmt.Errorf("%s %s: volumeMount %q: subPath: %w", kind, c.Name, m.Name, err)
			}
			target = path.Join(target, sub)
		}
		abs := path.Join(workDir, link)
		fmt.Fprintf(&b, "\tmkdir -p %s && ln -sfn %s %s || return\n", shellQuote(path.Dir(abs)), shellQuote(target), shellQuote(abs))
	}
	return b.String(), nil
}

// envFileData is a container's environment as a file bash sources: an
// array of NAME=value words the function execs its command with, through
// env(1), since Kubernetes allows names (a.conf, -x) no shell exports.
func envFileData(env []string) []byte {
	var b bytes.Buffer
	b.WriteString("minik8s_env=(\n")
	for _, kv := range env {
		fmt.Fprintf(&b, "\t%s\n", shellQuote(kv))
	}
	b.WriteString(")\n")
	return b.Bytes()
}

// Tar is files as a tar stream, for `tar -x` in the work directory.
func Tar(files []StagedFile) ([]byte, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, f := range files {
		h := &tar.Header{Name: f.Path, Mode: f.Mode, Size: int64(len(f.Data)), Typeflag: tar.TypeReg, Format: tar.FormatPAX}
		if f.Dir {
			h.Name, h.Typeflag, h.Size = f.Path+"/", tar.TypeDir, 0
		}
		if err := tw.WriteHeader(h); err != nil {
			return nil, err
		}
		if _, err := tw.Write(f.Data); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
