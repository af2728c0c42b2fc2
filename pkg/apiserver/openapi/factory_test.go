package openapi_test

import (
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	cmdutil "k8s.io/kubectl/pkg/cmd/util"
)

const podWithUnknownField = `
apiVersion: v1
kind: Pod
metadata: {name: p}
spec:
  containers:
  - name: c
    image: nginx
    bogusField: 1
`

// TestKubectlFactoryValidator drives the validator `kubectl apply` builds
// for its --validate flag. Because PATCH advertises fieldValidation in
// OpenAPI v3, kubectl leaves unknown fields to the server: the client side
// check returns no error for them.
func TestKubectlFactoryValidator(t *testing.T) {
	e := newEnv(t, testResources())
	flags := genericclioptions.NewConfigFlags(false)
	host := e.server.URL
	cacheDir := t.TempDir()
	flags.APIServer = &host
	flags.CacheDir = &cacheDir
	f := cmdutil.NewFactory(flags)

	tests := []struct {
		directive string
		doc       string
		wantErr   string
	}{
		{metav1.FieldValidationStrict, podWithUnknownField, ""},
		{metav1.FieldValidationWarn, podWithUnknownField, ""},
		{metav1.FieldValidationIgnore, podWithUnknownField, ""},
		{metav1.FieldValidationStrict, "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: d}\nspec: {replicas: 1}\n", ""},
	}
	for _, tt := range tests {
		t.Run(tt.directive+" "+strings.Fields(tt.doc)[3], func(t *testing.T) {
			v, err := f.Validator(tt.directive)
			if err != nil {
				t.Fatal(err)
			}
			err = v.ValidateBytes([]byte(tt.doc))
			if tt.wantErr == "" && err != nil {
				t.Fatalf("ValidateBytes: %v", err)
			}
			if tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)) {
				t.Fatalf("ValidateBytes error %v, want %q", err, tt.wantErr)
			}
		})
	}

	// kubectl explain and apply read v3 through the factory's client.
	root, err := f.OpenAPIV3Client()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := root.Paths(); err != nil {
		t.Fatal(err)
	}
	res, err := f.OpenAPISchema()
	if err != nil {
		t.Fatal(err)
	}
	if res.LookupResource(core("Pod")) == nil {
		t.Error("factory OpenAPISchema lacks Pod")
	}
}
