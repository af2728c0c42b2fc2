package podenv

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// File is one file of a configMap, secret, downwardAPI or projected
// volume.
type File struct {
	Data []byte
	Mode int32
}

// DefaultFileMode is the mode of a volume's files when the volume sets
// none.
const DefaultFileMode = int32(0o644)

// ModeOr is *m, or def when m is nil.
func ModeOr(m *int32, def int32) int32 {
	if m != nil {
		return *m
	}
	return def
}

// ConfigMapPayload is Kubernetes' configMap MakePayload.
func ConfigMapPayload(objs *Objects, name string, items []corev1.KeyToPath, defaultMode *int32, opt bool) (map[string]File, error) {
	cm, err := objs.ConfigMap(name)
	if err != nil {
		if IsNotFound(err) && opt {
			return map[string]File{}, nil
		}
		return nil, err
	}
	data := make(map[string][]byte, len(cm.Data)+len(cm.BinaryData))
	for k, v := range cm.Data {
		data[k] = []byte(v)
	}
	for k, v := range cm.BinaryData {
		data[k] = v
	}
	return KeyPayload(data, items, defaultMode, opt, "configmap references non-existent config key")
}

// SecretPayload is Kubernetes' secret MakePayload.
func SecretPayload(objs *Objects, name string, items []corev1.KeyToPath, defaultMode *int32, opt bool) (map[string]File, error) {
	s, err := objs.Secret(name)
	if err != nil {
		if IsNotFound(err) && opt {
			return map[string]File{}, nil
		}
		return nil, err
	}
	return KeyPayload(s.Data, items, defaultMode, opt, "references non-existent secret key")
}

// KeyPayload projects a ConfigMap's or Secret's keys as files: all of them,
// or the listed items at their paths (a missing key is an error unless the
// source is optional).
func KeyPayload(data map[string][]byte, items []corev1.KeyToPath, defaultMode *int32, opt bool, missing string) (map[string]File, error) {
	mode := ModeOr(defaultMode, DefaultFileMode)
	out := map[string]File{}
	if len(items) == 0 {
		for k, v := range data {
			out[k] = File{Data: v, Mode: mode}
		}
		return out, nil
	}
	for _, it := range items {
		v, ok := data[it.Key]
		if !ok {
			if opt {
				continue
			}
			return nil, fmt.Errorf("%s: %s", missing, it.Key)
		}
		out[it.Path] = File{Data: v, Mode: ModeOr(it.Mode, mode)}
	}
	return out, nil
}

// DownwardPayload renders downwardAPI items: metadata fields and
// container resources. allocatable defaults resource limits a container
// does not set.
func DownwardPayload(pod *corev1.Pod, items []corev1.DownwardAPIVolumeFile, defaultMode *int32, allocatable corev1.ResourceList) (map[string]File, error) {
	mode := ModeOr(defaultMode, DefaultFileMode)
	out := map[string]File{}
	for _, it := range items {
		var val string
		var err error
		switch {
		case it.FieldRef != nil:
			val, err = MetadataField(it.FieldRef.FieldPath, pod)
		case it.ResourceFieldRef != nil:
			if it.ResourceFieldRef.ContainerName == "" {
				return nil, fmt.Errorf("downward API item %q: resourceFieldRef needs a containerName", it.Path)
			}
			val, err = ResourceValue(it.ResourceFieldRef, pod, nil, allocatable)
		default:
			return nil, fmt.Errorf("downward API item %q has no source", it.Path)
		}
		if err != nil {
			return nil, err
		}
		out[it.Path] = File{Data: []byte(val), Mode: ModeOr(it.Mode, mode)}
	}
	return out, nil
}

// ValidatePayloadPath rejects paths that would leave the volume.
func ValidatePayloadPath(p string) error {
	switch {
	case p == "":
		return errors.New("invalid path: must not be empty")
	case filepath.IsAbs(p):
		return fmt.Errorf("invalid path %q: must be relative", p)
	case strings.HasPrefix(p, ".."):
		return fmt.Errorf("invalid path %q: must not start with '..'", p)
	}
	for _, part := range strings.Split(p, "/") {
		if part == ".." {
			return fmt.Errorf("invalid path %q: must not contain '..'", p)
		}
	}
	return nil
}
