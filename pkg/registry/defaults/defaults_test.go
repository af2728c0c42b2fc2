package defaults

import "testing"

func TestImageTag(t *testing.T) {
	for image, want := range map[string]string{
		"nginx":                          "latest",
		"nginx:latest":                   "latest",
		"nginx:1.27":                     "1.27",
		"localhost:5000/app":             "latest",
		"localhost:5000/app:v1":          "v1",
		"nginx@sha256:abc":               "",
		"nginx:1.27@sha256:abc":          "1.27",
		"registry.k8s.io/pause:3.10":     "3.10",
		"":                               "",
		"docker.io/library/busybox:1.36": "1.36",
	} {
		if got := imageTag(image); got != want {
			t.Errorf("imageTag(%q) = %q, want %q", image, got, want)
		}
	}
}
