package fn

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"
	cmdutil "k8s.io/kubectl/pkg/cmd/util"
	"k8s.io/utils/ptr"

	minik8sv1 "github.com/minik8s/minik8s/pkg/apis/minik8s/v1"
	"github.com/minik8s/minik8s/pkg/serverless/fnmeta"
)

// SourceConfigMapName is the ConfigMap deploy writes a function's files to.
func SourceConfigMapName(fn string) string { return "fn-" + fn + "-source" }

// deployOptions are deploy's flags.
type deployOptions struct {
	path             string
	runtime          string
	handler          string
	env              []string
	minScale         int32
	maxScale         int32
	target           int32
	scaleToZeroAfter time.Duration
	timeout          time.Duration
}

func newDeployCommand(f cmdutil.Factory, streams genericiooptions.IOStreams) *cobra.Command {
	o := &deployOptions{runtime: "python3", handler: fnmeta.DefaultHandler}
	cmd := &cobra.Command{
		Use:   "deploy NAME -f PATH [--runtime python3] [--handler main.handle] [--env K=V ...] [flags]",
		Short: "Create or update a function from a .py file, a folder or a .zip",
		Long: `Create or update a function from a .py file, a folder or a .zip.

The files go into the ConfigMap fn-<name>-source (owned by the function, so deleting the
function deletes it): a file or a folder without subfolders as one key per file, a folder
with subfolders or a zip as the one key source.zip. __pycache__, *.pyc and names that
begin with a dot are left out. A ConfigMap holds at most 1 MiB.

Flags given on an update replace those settings; settings not given stay as they are.`,
		Example: `  kubectl fn deploy greet -f greet.py
  kubectl fn deploy add --runtime python3 --handler main.handle -f ./add/
  kubectl fn deploy digits --runtime python3-ml -f digits.zip --max-scale 4 --scale-to-zero-after 2m`,
		Args: cobra.ExactArgs(1),
		Run: func(cmd *cobra.Command, args []string) {
			cmdutil.CheckErr(o.run(cmd, f, streams, args[0]))
		},
	}
	fl := cmd.Flags()
	fl.StringVarP(&o.path, "filename", "f", "", "The function's code: a .py file, a folder or a .zip")
	fl.StringVar(&o.runtime, "runtime", o.runtime, "The runtime: "+strings.Join(fnmeta.Runtimes, " or "))
	fl.StringVar(&o.handler, "handler", o.handler, "The function called for each request, as module.function")
	fl.StringArrayVarP(&o.env, "env", "e", nil, "An environment variable of every instance, K=V (repeatable; replaces all of them on an update)")
	fl.Int32Var(&o.minScale, "min-scale", 0, "The fewest instances (0: scale to zero when idle)")
	fl.Int32Var(&o.maxScale, "max-scale", 0, fmt.Sprintf("The most instances (default %d)", fnmeta.DefaultMaxScale))
	fl.Int32Var(&o.target, "target", 0, fmt.Sprintf("The requests in flight per instance the autoscaler aims at (default %d)", fnmeta.DefaultTarget))
	fl.DurationVar(&o.scaleToZeroAfter, "scale-to-zero-after", 0, "How long the last instance stays without a request (default "+fnmeta.DefaultScaleToZeroAfter+")")
	fl.DurationVar(&o.timeout, "timeout", 0, "The longest a request may take (default "+fnmeta.DefaultTimeout+")")
	_ = cmd.MarkFlagRequired("filename")
	return cmd
}

func (o *deployOptions) run(cmd *cobra.Command, f cmdutil.Factory, streams genericiooptions.IOStreams, name string) error {
	ns, _, err := f.ToRawKubeConfigLoader().Namespace()
	if err != nil {
		return err
	}
	d := Deployment{Name: name, Namespace: ns}
	fl := cmd.Flags()
	if fl.Changed("runtime") {
		d.Runtime = o.runtime
	}
	if fl.Changed("handler") {
		d.Handler = o.handler
	}
	if fl.Changed("env") {
		if d.Env, err = parseEnv(o.env); err != nil {
			return err
		}
		if d.Env == nil {
			d.Env = []corev1.EnvVar{}
		}
	}
	if fl.Changed("min-scale") {
		d.MinScale = ptr.To(o.minScale)
	}
	if fl.Changed("max-scale") {
		d.MaxScale = ptr.To(o.maxScale)
	}
	if fl.Changed("target") {
		d.Target = ptr.To(o.target)
	}
	if fl.Changed("scale-to-zero-after") {
		d.ScaleToZeroAfter = &metav1.Duration{Duration: o.scaleToZeroAfter}
	}
	if fl.Changed("timeout") {
		d.Timeout = &metav1.Duration{Duration: o.timeout}
	}
	if d.Files, err = Pack(o.path); err != nil {
		return err
	}
	dyn, err := f.DynamicClient()
	if err != nil {
		return err
	}
	cs, err := f.KubernetesClientSet()
	if err != nil {
		return err
	}
	result, err := Deploy(cmd.Context(), dyn, cs, d)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(streams.Out, "function.%s/%s %s\n", fnmeta.Resource.Group, name, result)
	return err
}

// parseEnv reads K=V pairs.
func parseEnv(pairs []string) ([]corev1.EnvVar, error) {
	var env []corev1.EnvVar
	for _, p := range pairs {
		k, v, ok := strings.Cut(p, "=")
		if !ok || k == "" {
			return nil, fmt.Errorf("--env %q: want NAME=VALUE", p)
		}
		env = append(env, corev1.EnvVar{Name: k, Value: v})
	}
	return env, nil
}

// Deployment is what deploy writes: a function's files and the settings
// given. Nil (or empty) settings are the server's defaults on a create
// and left as they are on an update.
type Deployment struct {
	Name, Namespace string
	// Files are the ConfigMap's binaryData (Pack).
	Files            map[string][]byte
	Runtime, Handler string
	// Env, when not nil, replaces the function's env.
	Env                        []corev1.EnvVar
	MinScale, MaxScale, Target *int32
	ScaleToZeroAfter, Timeout  *metav1.Duration
}

// Deploy writes d's files to the function's source ConfigMap, then
// creates or updates the Function to run them, and makes the Function the
// ConfigMap's owner. It returns "created", "configured" or "unchanged".
func Deploy(ctx context.Context, dyn dynamic.Interface, cs kubernetes.Interface, d Deployment) (string, error) {
	fns := dyn.Resource(fnmeta.Resource).Namespace(d.Namespace)
	var owner *minik8sv1.Function
	u, err := fns.Get(ctx, d.Name, metav1.GetOptions{})
	switch {
	case err == nil:
		if owner, err = fromUnstructured(u); err != nil {
			return "", err
		}
	case !apierrors.IsNotFound(err):
		return "", fmt.Errorf("get function %s/%s: %w", d.Namespace, d.Name, err)
	}
	cmChanged, err := writeSource(ctx, cs, d, owner)
	if err != nil {
		return "", err
	}
	if owner == nil {
		fn := &minik8sv1.Function{
			TypeMeta:   metav1.TypeMeta{APIVersion: minik8sv1.SchemeGroupVersion.String(), Kind: "Function"},
			ObjectMeta: metav1.ObjectMeta{Name: d.Name, Namespace: d.Namespace},
			Spec:       minik8sv1.FunctionSpec{Runtime: "python3"},
		}
		d.applyTo(fn)
		obj, err := toUnstructured(fn)
		if err != nil {
			return "", err
		}
		created, err := fns.Create(ctx, obj, metav1.CreateOptions{FieldManager: "kubectl-fn"})
		if err != nil {
			if apierrors.IsNotFound(err) {
				return "", fmt.Errorf("create function %s/%s: the cluster does not serve %s (%w)", d.Namespace, d.Name, fnmeta.Resource.GroupResource(), err)
			}
			return "", fmt.Errorf("create function %s/%s: %w", d.Namespace, d.Name, err)
		}
		if err := ownSource(ctx, cs, d, created.GetUID()); err != nil {
			return "", err
		}
		return "created", nil
	}
	fnChanged := false
	err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
		u, err := fns.Get(ctx, d.Name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		fn, err := fromUnstructured(u)
		if err != nil {
			return err
		}
		d.applyTo(fn)
		obj, err := toUnstructured(fn)
		if err != nil {
			return err
		}
		updated, err := fns.Update(ctx, obj, metav1.UpdateOptions{FieldManager: "kubectl-fn"})
		if err != nil {
			return err
		}
		fnChanged = updated.GetResourceVersion() != u.GetResourceVersion()
		return nil
	})
	if err != nil {
		return "", fmt.Errorf("update function %s/%s: %w", d.Namespace, d.Name, err)
	}
	if cmChanged || fnChanged {
		return "configured", nil
	}
	return "unchanged", nil
}

// applyTo sets d's source and settings on fn.
func (d Deployment) applyTo(fn *minik8sv1.Function) {
	s := &fn.Spec
	s.Source = minik8sv1.FunctionSource{ConfigMap: &minik8sv1.FunctionSourceConfigMap{Name: SourceConfigMapName(d.Name)}}
	if d.Runtime != "" {
		s.Runtime = d.Runtime
	}
	if d.Handler != "" {
		s.Handler = d.Handler
	}
	if d.Env != nil {
		s.Env = d.Env
	}
	for _, set := range []struct{ from, to **int32 }{{&d.MinScale, &s.Scale.MinScale}, {&d.MaxScale, &s.Scale.MaxScale}, {&d.Target, &s.Scale.Target}} {
		if *set.from != nil {
			*set.to = *set.from
		}
	}
	if d.ScaleToZeroAfter != nil {
		s.Scale.ScaleToZeroAfter = d.ScaleToZeroAfter
	}
	if d.Timeout != nil {
		s.Timeout = d.Timeout
	}
}

// ownerReference makes the Function uid the owner of its source.
func ownerReference(name string, uid types.UID) metav1.OwnerReference {
	return metav1.OwnerReference{
		APIVersion: minik8sv1.SchemeGroupVersion.String(), Kind: "Function",
		Name: name, UID: uid, Controller: ptr.To(true),
	}
}

// writeSource creates or updates the source ConfigMap with d's files
// (owned by owner, when the function exists) and says whether it changed.
func writeSource(ctx context.Context, cs kubernetes.Interface, d Deployment, owner *minik8sv1.Function) (bool, error) {
	cms := cs.CoreV1().ConfigMaps(d.Namespace)
	name := SourceConfigMapName(d.Name)
	changed := false
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		cm, err := cms.Get(ctx, name, metav1.GetOptions{})
		exists := err == nil
		if apierrors.IsNotFound(err) {
			cm = &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: d.Namespace}}
		} else if err != nil {
			return err
		}
		before := cm.DeepCopy()
		if cm.Labels == nil {
			cm.Labels = map[string]string{}
		}
		cm.Labels[fnmeta.FunctionLabel] = d.Name
		cm.Data, cm.BinaryData = nil, d.Files
		if owner != nil {
			cm.OwnerReferences = withOwner(cm.OwnerReferences, ownerReference(owner.Name, owner.UID))
		} else {
			// Left by a deleted function of the same name: the garbage
			// collector would delete the ConfigMap under the new one.
			cm.OwnerReferences = withoutFunction(cm.OwnerReferences, d.Name)
		}
		if !exists {
			_, err = cms.Create(ctx, cm, metav1.CreateOptions{FieldManager: "kubectl-fn"})
			changed = err == nil
			return err
		}
		if apiequality.Semantic.DeepEqual(before, cm) {
			return nil
		}
		_, err = cms.Update(ctx, cm, metav1.UpdateOptions{FieldManager: "kubectl-fn"})
		changed = err == nil
		return err
	})
	if err != nil {
		if apierrors.IsRequestEntityTooLargeError(err) {
			return false, fmt.Errorf("write the function's files to ConfigMap %s/%s: too large for the apiserver: %w", d.Namespace, name, err)
		}
		return false, fmt.Errorf("write the function's files to ConfigMap %s/%s: %w", d.Namespace, name, err)
	}
	return changed, nil
}

// ownSource makes the new Function uid the owner of its source ConfigMap.
func ownSource(ctx context.Context, cs kubernetes.Interface, d Deployment, uid types.UID) error {
	name := SourceConfigMapName(d.Name)
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		cm, err := cs.CoreV1().ConfigMaps(d.Namespace).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		refs := withOwner(cm.OwnerReferences, ownerReference(d.Name, uid))
		patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"ownerReferences": refs, "resourceVersion": cm.ResourceVersion}})
		if err != nil {
			return err
		}
		_, err = cs.CoreV1().ConfigMaps(d.Namespace).Patch(ctx, name, types.MergePatchType, patch, metav1.PatchOptions{FieldManager: "kubectl-fn"})
		return err
	})
	if err != nil {
		return fmt.Errorf("make function %s/%s the owner of ConfigMap %s: %w", d.Namespace, d.Name, name, err)
	}
	return nil
}

// withOwner is refs with ref in place of any reference to a Function of
// the same name (an earlier function of that name, now gone); a reference
// that is already there stays as it is.
func withOwner(refs []metav1.OwnerReference, ref metav1.OwnerReference) []metav1.OwnerReference {
	for _, r := range refs {
		if isFunction(r, ref.Name) && r.UID == ref.UID {
			return refs
		}
	}
	return append([]metav1.OwnerReference{ref}, withoutFunction(refs, ref.Name)...)
}

// withoutFunction is refs without references to a Function named name.
func withoutFunction(refs []metav1.OwnerReference, name string) []metav1.OwnerReference {
	var out []metav1.OwnerReference
	for _, r := range refs {
		if !isFunction(r, name) {
			out = append(out, r)
		}
	}
	return out
}

func isFunction(r metav1.OwnerReference, name string) bool {
	gv, err := schema.ParseGroupVersion(r.APIVersion)
	return err == nil && gv.Group == minik8sv1.SchemeGroupVersion.Group && r.Kind == "Function" && r.Name == name
}

func toUnstructured(fn *minik8sv1.Function) (*unstructured.Unstructured, error) {
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(fn)
	if err != nil {
		return nil, fmt.Errorf("encode function %s: %w", fn.Name, err)
	}
	u := &unstructured.Unstructured{Object: m}
	u.SetAPIVersion(minik8sv1.SchemeGroupVersion.String())
	u.SetKind("Function")
	return u, nil
}

func fromUnstructured(u *unstructured.Unstructured) (*minik8sv1.Function, error) {
	fn := &minik8sv1.Function{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, fn); err != nil {
		return nil, fmt.Errorf("decode function %s: %w", u.GetName(), err)
	}
	return fn, nil
}
