package fn

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"

	"github.com/spf13/cobra"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	cmdutil "k8s.io/kubectl/pkg/cmd/util"

	"github.com/minik8s/minik8s/pkg/serverless/fnmeta"
)

// invokeOptions are invoke's flags.
type invokeOptions struct {
	data    string
	path    string
	method  string
	headers []string
}

func newInvokeCommand(f cmdutil.Factory, streams genericiooptions.IOStreams) *cobra.Command {
	o := &invokeOptions{}
	cmd := &cobra.Command{
		Use:   "invoke NAME [-d DATA | -d @FILE | -d -] [--path /more] [-X METHOD] [flags]",
		Short: "Call a function through the apiserver and print its answer",
		Long: `Call a function and print its answer.

The request goes through the apiserver's Service proxy to the function router
(kube-system/minik8s-functions), so invoke works wherever kubectl does. It is a POST of
DATA as JSON (an empty body without -d); -X GET and other methods are passed on. An answer
that is not 2xx is printed to stderr and invoke exits 1.`,
		Example: `  kubectl fn invoke greet -d '{"name": "ada"}'
  kubectl fn invoke digits -d @image.json
  echo '{"a": 1, "b": 2}' | kubectl fn invoke add -d -
  kubectl fn invoke greet -X GET --path '/hello?lang=en'`,
		Args: cobra.ExactArgs(1),
		Run: func(cmd *cobra.Command, args []string) {
			cmdutil.CheckErr(o.run(cmd.Context(), f, streams, args[0]))
		},
	}
	fl := cmd.Flags()
	fl.StringVarP(&o.data, "data", "d", "", "The request body: DATA, @FILE, or - for stdin")
	fl.StringVar(&o.path, "path", "", "A path (and query) after the function's own, e.g. /items?limit=2")
	fl.StringVarP(&o.method, "request", "X", http.MethodPost, "The HTTP method")
	fl.StringArrayVarP(&o.headers, "header", "H", nil, "A request header, 'Name: value' (repeatable)")
	return cmd
}

func (o *invokeOptions) run(ctx context.Context, f cmdutil.Factory, streams genericiooptions.IOStreams, name string) error {
	ns, _, err := f.ToRawKubeConfigLoader().Namespace()
	if err != nil {
		return err
	}
	body, err := o.body(streams.In)
	if err != nil {
		return err
	}
	header := http.Header{}
	if body != nil {
		header.Set("Content-Type", "application/json")
	}
	for _, h := range o.headers {
		k, v, ok := strings.Cut(h, ":")
		if !ok || strings.TrimSpace(k) == "" {
			return fmt.Errorf("--header %q: want 'Name: value'", h)
		}
		header.Set(strings.TrimSpace(k), strings.TrimSpace(v))
	}
	cs, err := f.KubernetesClientSet()
	if err != nil {
		return err
	}
	ok, err := Invoke(ctx, cs, Call{
		Namespace: ns, Name: name, Method: strings.ToUpper(o.method), Path: o.path, Header: header, Body: body,
	}, streams.Out, streams.ErrOut)
	if err != nil {
		return err
	}
	if !ok {
		return cmdutil.ErrExit
	}
	return nil
}

// body reads -d: the data itself, @file, or - for stdin; nil without -d.
func (o *invokeOptions) body(stdin io.Reader) ([]byte, error) {
	switch {
	case o.data == "":
		return nil, nil
	case o.data == "-":
		return io.ReadAll(stdin)
	case strings.HasPrefix(o.data, "@"):
		data, err := os.ReadFile(o.data[1:])
		if err != nil {
			return nil, fmt.Errorf("-d %s: %w", o.data, err)
		}
		return data, nil
	}
	return []byte(o.data), nil
}

// Call is one request to a function.
type Call struct {
	Namespace, Name string
	Method          string
	// Path, with its query, follows the function's own path.
	Path   string
	Header http.Header
	Body   []byte
}

// ProxyPath is where the apiserver's Service proxy reaches function fn of
// namespace ns through the function router.
func ProxyPath(ns, fn string) string {
	return fmt.Sprintf("/api/v1/namespaces/%s/services/%s:80/proxy%s", fnmeta.RouterNamespace, fnmeta.RouterService, fnmeta.Path(ns, fn))
}

// Invoke sends c through the apiserver's Service proxy and copies the
// answer's body to out as it arrives (with a final newline), or to errOut
// when it is not 2xx; ok says which.
func Invoke(ctx context.Context, cs kubernetes.Interface, c Call, out, errOut io.Writer) (ok bool, err error) {
	rc, isREST := cs.CoreV1().RESTClient().(*rest.RESTClient)
	if !isREST || rc.Client == nil {
		return false, fmt.Errorf("invoke %s/%s: no HTTP client to the apiserver", c.Namespace, c.Name)
	}
	extra, query, _ := strings.Cut(c.Path, "?")
	if extra != "" && !strings.HasPrefix(extra, "/") {
		extra = "/" + extra
	}
	u := rc.Verb(c.Method).AbsPath(ProxyPath(c.Namespace, c.Name) + extra).URL()
	if query != "" {
		if _, err := url.ParseQuery(query); err != nil {
			return false, fmt.Errorf("--path %q: %w", c.Path, err)
		}
		u.RawQuery = query
	}
	var body io.Reader
	if c.Body != nil {
		body = bytes.NewReader(c.Body)
	}
	req, err := http.NewRequestWithContext(ctx, c.Method, u.String(), body)
	if err != nil {
		return false, fmt.Errorf("invoke %s/%s: %w", c.Namespace, c.Name, err)
	}
	for k, v := range c.Header {
		req.Header[k] = v
	}
	resp, err := rc.Client.Do(req)
	if err != nil {
		return false, fmt.Errorf("invoke %s/%s: %w", c.Namespace, c.Name, err)
	}
	defer resp.Body.Close()
	ok = resp.StatusCode >= 200 && resp.StatusCode < 300
	dst := out
	if !ok {
		data, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
		if err != nil {
			return false, fmt.Errorf("invoke %s/%s: read the answer: %w", c.Namespace, c.Name, err)
		}
		if err := apiserverError(data); err != nil {
			// The apiserver's own answer: the router is not there.
			return false, fmt.Errorf("invoke %s/%s: the function router %s/%s does not answer (is the functions add-on running?): %w",
				c.Namespace, c.Name, fnmeta.RouterNamespace, fnmeta.RouterService, err)
		}
		resp.Body = io.NopCloser(bytes.NewReader(data))
		dst = errOut
	}
	w := &lastByteWriter{w: dst}
	if _, err := io.Copy(w, resp.Body); err != nil {
		return false, fmt.Errorf("invoke %s/%s: read the answer: %w", c.Namespace, c.Name, err)
	}
	if w.n > 0 && w.last != '\n' {
		if _, err := io.WriteString(dst, "\n"); err != nil {
			return false, err
		}
	}
	if !ok && w.n == 0 {
		_, _ = fmt.Fprintf(errOut, "%s\n", resp.Status)
	}
	return ok, nil
}

// apiserverError is the error of a metav1.Status body, or nil for any
// other body.
func apiserverError(data []byte) error {
	var st metav1.Status
	if json.Unmarshal(data, &st) != nil || st.Kind != "Status" || st.APIVersion != "v1" {
		return nil
	}
	return &apierrors.StatusError{ErrStatus: st}
}

// lastByteWriter remembers the last byte written through it.
type lastByteWriter struct {
	w    io.Writer
	n    int64
	last byte
}

func (l *lastByteWriter) Write(p []byte) (int, error) {
	n, err := l.w.Write(p)
	if n > 0 {
		l.n += int64(n)
		l.last = p[n-1]
	}
	return n, err
}
