package local

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// A pod's new labels and annotations reach its downwardAPI volumes,
// projected ones too, at once, and its containers not yet created: a
// subPathExpr made of an annotation that was missing works once the
// annotation is there (Kubernetes' "failing subpath expansion can be
// modified during the lifecycle of a container").
func TestPodMetadataUpdate(t *testing.T) {
	e := newTestEnv(t)
	pod := testPod("meta", "c")
	pod.Labels = map[string]string{"key1": "value1"}
	pod.Annotations = map[string]string{"notmysubpath": "mypath"}
	pod.Spec.Volumes = []corev1.Volume{
		{Name: "labels", VolumeSource: corev1.VolumeSource{DownwardAPI: &corev1.DownwardAPIVolumeSource{Items: []corev1.DownwardAPIVolumeFile{
			{Path: "labels", FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.labels"}}}}}},
		{Name: "projected", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{Sources: []corev1.VolumeProjection{
			{DownwardAPI: &corev1.DownwardAPIProjection{Items: []corev1.DownwardAPIVolumeFile{
				{Path: "annotations", FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.annotations"}}}}}}}}},
		{Name: "work", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
	}
	c := &pod.Spec.Containers[0]
	c.Env = []corev1.EnvVar{{Name: "POD_NAME", Value: "foo"}, {Name: "ANNOTATION", ValueFrom: &corev1.EnvVarSource{
		FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.annotations['mysubpath']"}}}}
	c.VolumeMounts = []corev1.VolumeMount{
		{Name: "work", MountPath: "/subpath_mount", SubPathExpr: "$(ANNOTATION)/$(POD_NAME)"},
		{Name: "work", MountPath: "/volume_mount"},
	}
	w := e.worker(pod)
	s := e.sync(w)
	if cs := s.ContainerStatuses[0]; state(cs) != "waiting:CreateContainerConfigError" {
		t.Fatalf("with the annotation missing: %s", state(cs))
	}
	labels := filepath.Join(e.p.volumeDir(pod.UID, pluginDownwardAPI, "labels"), "labels")
	annotations := filepath.Join(e.p.volumeDir(pod.UID, pluginProjected, "projected"), "annotations")
	read := func(path string) string {
		t.Helper()
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	if got := read(labels); got != `key1="value1"` {
		t.Errorf("labels %q", got)
	}

	updated := pod.DeepCopy()
	updated.ResourceVersion = "2"
	updated.Labels["key3"] = "value3"
	updated.Annotations["mysubpath"] = "mypath"
	if err := e.p.UpdatePod(context.Background(), updated); err != nil {
		t.Fatal(err)
	}
	s = e.sync(w)
	if cs := s.ContainerStatuses[0]; state(cs) != "running" {
		t.Fatalf("with the annotation: %s (%v)", state(cs), cs.State.Waiting)
	}
	if got := read(labels); got != "key1=\"value1\"\nkey3=\"value3\"" {
		t.Errorf("labels after the update %q", got)
	}
	if got := read(annotations); !strings.Contains(got, `mysubpath="mypath"`) {
		t.Errorf("annotations after the update %q", got)
	}
	var sub string
	for _, cfg := range e.rt.configs {
		for _, m := range cfg.Mounts {
			if m.ContainerPath == "/subpath_mount" {
				sub = m.HostPath
			}
		}
	}
	if want := filepath.Join(e.p.volumeDir(pod.UID, pluginEmptyDir, "work"), "mypath", "foo"); sub != want {
		t.Errorf("subpath mount from %q, want %q", sub, want)
	}
}
