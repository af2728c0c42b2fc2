package fn

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
	cmdutil "k8s.io/kubectl/pkg/cmd/util"
	"k8s.io/utils/ptr"

	"github.com/minik8s/minik8s/pkg/serverless/fnmeta"
)

// logsOptions are logs' flags.
type logsOptions struct {
	follow bool
	tail   int64
}

func newLogsCommand(f cmdutil.Factory, streams genericiooptions.IOStreams) *cobra.Command {
	o := &logsOptions{tail: -1}
	cmd := &cobra.Command{
		Use:   "logs NAME [-f] [--tail N] [flags]",
		Short: "Print the logs of a function's instances",
		Long: `Print the logs of a function's instances (its pods, labelled minik8s.io/function=NAME).

Each line is prefixed with [pod] when there are several. With -f, logs are followed, and
instances that start later (a function scales with its requests) are followed as they come.`,
		Example: `  kubectl fn logs greet
  kubectl fn logs greet -f --tail 20`,
		Args: cobra.ExactArgs(1),
		Run: func(cmd *cobra.Command, args []string) {
			cmdutil.CheckErr(o.run(cmd.Context(), f, streams, args[0]))
		},
	}
	cmd.Flags().BoolVarP(&o.follow, "follow", "f", false, "Follow the logs, and the instances that start later")
	cmd.Flags().Int64Var(&o.tail, "tail", o.tail, "Lines of recent log of each instance to show (-1: all)")
	return cmd
}

func (o *logsOptions) run(ctx context.Context, f cmdutil.Factory, streams genericiooptions.IOStreams, name string) error {
	ns, _, err := f.ToRawKubeConfigLoader().Namespace()
	if err != nil {
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
	opts := LogOptions{Namespace: ns, Name: name, Follow: o.follow}
	if o.tail >= 0 {
		opts.TailLines = ptr.To(o.tail)
	}
	return Logs(ctx, dyn, cs, opts, streams.Out, streams.ErrOut)
}

// LogOptions say which function's logs Logs prints, and how.
type LogOptions struct {
	Namespace, Name string
	Follow          bool
	TailLines       *int64
}

// Logs prints the logs of the function's pods to out, each line prefixed
// [pod] when there are several. Following, it also follows the pods that
// start later, until ctx ends.
func Logs(ctx context.Context, dyn dynamic.Interface, cs kubernetes.Interface, o LogOptions, out, errOut io.Writer) error {
	if _, err := dyn.Resource(fnmeta.Resource).Namespace(o.Namespace).Get(ctx, o.Name, metav1.GetOptions{}); err != nil {
		return err
	}
	pods := cs.CoreV1().Pods(o.Namespace)
	selector := fnmeta.FunctionLabel + "=" + o.Name
	l := &logPrinter{out: out, errOut: errOut, pods: pods, opts: o, started: map[string]bool{}}
	defer l.wg.Wait()
	for first := true; ; first = false {
		list, err := pods.List(ctx, metav1.ListOptions{LabelSelector: selector})
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("list the pods of function %s/%s: %w", o.Namespace, o.Name, err)
		}
		items := list.Items
		slices.SortFunc(items, func(a, b corev1.Pod) int { return a.CreationTimestamp.Compare(b.CreationTimestamp.Time) })
		if first {
			l.prefix.Store(len(items) > 1)
			if len(items) == 0 {
				if _, err := fmt.Fprintf(errOut, "function %s/%s has no instances now (it scales to zero when idle)\n", o.Namespace, o.Name); err != nil {
					return err
				}
			}
			if !o.Follow {
				for i := range items {
					l.print(ctx, &items[i])
				}
				return nil
			}
		}
		for i := range items {
			l.start(ctx, &items[i])
		}
		// Until the watch ends (the server ends watches now and then):
		// then list again.
		if err := l.follow(ctx, selector, list.ResourceVersion); err != nil {
			return err
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(time.Second):
		}
	}
}

// follow starts following each pod the watch from rv sees running.
func (l *logPrinter) follow(ctx context.Context, selector, rv string) error {
	w, err := l.pods.Watch(ctx, metav1.ListOptions{LabelSelector: selector, ResourceVersion: rv})
	if err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return fmt.Errorf("watch the pods of function %s/%s: %w", l.opts.Namespace, l.opts.Name, err)
	}
	defer w.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case ev, ok := <-w.ResultChan():
			if !ok || ev.Type == watch.Error {
				return nil
			}
			if pod, isPod := ev.Object.(*corev1.Pod); isPod && ev.Type != watch.Deleted {
				l.start(ctx, pod)
			}
		}
	}
}

// logPrinter writes the lines of several pods' logs, whole.
type logPrinter struct {
	out, errOut io.Writer
	pods        corev1client.PodInterface
	opts        LogOptions
	// prefix turns on once there is more than one pod.
	prefix atomic.Bool

	mu      sync.Mutex // serializes writes and guards started
	started map[string]bool
	wg      sync.WaitGroup
}

// start follows pod's log in the background once its container runs.
func (l *logPrinter) start(ctx context.Context, pod *corev1.Pod) {
	if !running(pod) {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.started[pod.Name] {
		return
	}
	l.started[pod.Name] = true
	if len(l.started) > 1 {
		l.prefix.Store(true)
	}
	l.wg.Add(1)
	go func() {
		defer l.wg.Done()
		l.print(ctx, pod)
	}()
}

// running says whether pod's container has started, so it has a log.
func running(pod *corev1.Pod) bool {
	for _, cs := range pod.Status.ContainerStatuses {
		if cs.State.Running != nil || cs.State.Terminated != nil {
			return true
		}
	}
	return false
}

// print copies pod's log, line by line.
func (l *logPrinter) print(ctx context.Context, pod *corev1.Pod) {
	rc, err := l.pods.GetLogs(pod.Name, &corev1.PodLogOptions{Follow: l.opts.Follow, TailLines: l.opts.TailLines}).Stream(ctx)
	if err != nil {
		if ctx.Err() == nil {
			l.write(l.errOut, pod.Name, fmt.Sprintf("error: %v\n", err))
		}
		return
	}
	defer rc.Close()
	r := bufio.NewReader(rc)
	for {
		line, err := r.ReadString('\n')
		if line != "" {
			if line[len(line)-1] != '\n' {
				line += "\n"
			}
			l.write(l.out, pod.Name, line)
		}
		if err != nil {
			if !errors.Is(err, io.EOF) && ctx.Err() == nil {
				l.write(l.errOut, pod.Name, fmt.Sprintf("error: %v\n", err))
			}
			return
		}
	}
}

func (l *logPrinter) write(w io.Writer, pod, line string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.prefix.Load() {
		line = "[" + pod + "] " + line
	}
	_, _ = io.WriteString(w, line)
}
