package plugin

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"slices"
	"strings"
	"time"

	"github.com/spf13/pflag"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	etcdv1alpha1 "github.com/etcdpilot/etcdpilot/api/v1alpha1"
	"github.com/etcdpilot/etcdpilot/internal/cluster"
)

// usage is what `kubectl etcdpilot` prints without a command or with -h.
const usage = `kubectl etcdpilot: etcdpilot's EtcdClusters from the command line.

Commands:
  status NAME [-o json]                  members, conditions, the last backup, Auto Pilot,
                                         what the operator is doing now
  certificates NAME [-o json]            every certificate of the cluster and its expiry
  backup NAME --pvc CLAIM [--path P]     take a backup now (an EtcdBackup), to a claim
  backup NAME --s3-bucket B --s3-endpoint URL --s3-secret S [--s3-prefix P] [--s3-region R]
                                         ... or to an S3 bucket; --verify to prove it
                                         restorable, --wait to wait for the outcome
  restore BACKUP --into NEW [--size N] [--wait]
                                         a new EtcdCluster that starts from a backup
  approve-recovery NAME                  approve the recovery a cluster that lost its
                                         quorum waits for
  defragment NAME [--member M]... [--wait]
                                         defragment every member (or those named) now,
                                         one at a time, the leader last
  hibernate NAME [--pvc CLAIM | --s3-bucket B ...] [--wait]
                                         stop every member, keeping its data; with a
                                         destination, a final backup there first
  wake NAME [--wait]                     start a hibernated cluster's members again
  etcdctl NAME -- ARGS...                etcdctl in a healthy member, with its certificates

Flags of every command: -n/--namespace, --kubeconfig, --context.
`

// Env is where a command runs: its output, and how it reaches the cluster.
type Env struct {
	Out, Err io.Writer
	// Client reads and writes objects; Namespace is the one of -n, or the kubeconfig's.
	// Both are set from the flags when nil (Run).
	Client    client.Client
	Namespace string
	// Kubectl runs kubectl with args for etcdctl (exec into a member); $KUBECTL or
	// "kubectl" from PATH when nil.
	Kubectl func(ctx context.Context, args []string, out, errOut io.Writer) error
	// Now is the clock; time.Now when nil.
	Now func() time.Time
	// Poll is how often --wait looks again; 2s when zero.
	Poll time.Duration
}

// Run runs the command of args (without the program's name) and returns its exit code.
func Run(ctx context.Context, args []string, env Env) int {
	if err := run(ctx, args, &env); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			return 0
		}
		fmt.Fprintln(env.Err, "error:", err)
		return 1
	}
	return 0
}

// options are the flags of every command.
type options struct {
	namespace, kubeconfig, context, output string
	// backup
	pvc, path, s3Bucket, s3Endpoint, s3Secret, s3Prefix, s3Region, name string
	verify, wait                                                        bool
	timeout                                                             time.Duration
	// restore
	into string
	size int32
	// defragment
	members []string
}

func run(ctx context.Context, args []string, env *Env) error {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		fmt.Fprint(env.Out, usage)
		return nil
	}
	cmd, ok := commands[args[0]]
	if !ok {
		return fmt.Errorf("unknown command %q; kubectl etcdpilot help lists them", args[0])
	}
	o, pos, err := parseFlags(args[0], args[1:], env.Err)
	if err != nil {
		return err
	}
	if err := env.connect(o); err != nil {
		return err
	}
	return cmd(ctx, env, pos, o)
}

// commands are the plugin's commands by name, each given its positional arguments.
var commands = map[string]func(ctx context.Context, e *Env, pos []string, o options) error{
	"status": func(ctx context.Context, e *Env, pos []string, o options) error {
		return withName(pos, func(name string) error { return e.status(ctx, name, o) })
	},
	"certificates": func(ctx context.Context, e *Env, pos []string, o options) error {
		return withName(pos, func(name string) error { return e.certificates(ctx, name, o) })
	},
	"backup": func(ctx context.Context, e *Env, pos []string, o options) error {
		return withName(pos, func(name string) error { return e.backup(ctx, name, o) })
	},
	"restore": func(ctx context.Context, e *Env, pos []string, o options) error {
		return withName(pos, func(name string) error { return e.restore(ctx, name, o) })
	},
	"approve-recovery": func(ctx context.Context, e *Env, pos []string, _ options) error {
		return withName(pos, func(name string) error { return e.approveRecovery(ctx, name) })
	},
	"defragment": func(ctx context.Context, e *Env, pos []string, o options) error {
		return withName(pos, func(name string) error { return e.defragment(ctx, name, o) })
	},
	"hibernate": func(ctx context.Context, e *Env, pos []string, o options) error {
		return withName(pos, func(name string) error { return e.hibernate(ctx, name, true, o) })
	},
	"wake": func(ctx context.Context, e *Env, pos []string, o options) error {
		return withName(pos, func(name string) error { return e.hibernate(ctx, name, false, o) })
	},
	"etcdctl": func(ctx context.Context, e *Env, pos []string, _ options) error {
		if len(pos) < 1 {
			return errors.New("etcdctl: name the EtcdCluster: kubectl etcdpilot etcdctl NAME -- ARGS")
		}
		return e.etcdctl(ctx, pos[0], pos[1:])
	},
}

// parseFlags reads the flags of command cmd from args, anywhere among its positional
// arguments (those after "--" are left as they are, for etcdctl).
func parseFlags(cmd string, args []string, errOut io.Writer) (options, []string, error) {
	var o options
	fs := pflag.NewFlagSet("kubectl etcdpilot "+cmd, pflag.ContinueOnError)
	fs.SetOutput(errOut)
	fs.StringVarP(&o.namespace, "namespace", "n", "", "the namespace (default: the kubeconfig's)")
	fs.StringVar(&o.kubeconfig, "kubeconfig", "", "the kubeconfig file")
	fs.StringVar(&o.context, "context", "", "the kubeconfig context")
	fs.StringVarP(&o.output, "output", "o", "", "json for JSON")
	fs.StringVar(&o.pvc, "pvc", "", "backup, hibernate: the claim to store the backup on")
	fs.StringVar(&o.path, "path", "", "backup, hibernate: the directory on the claim")
	fs.StringVar(&o.s3Bucket, "s3-bucket", "", "backup, hibernate: the S3 bucket")
	fs.StringVar(&o.s3Endpoint, "s3-endpoint", "", "backup, hibernate: the S3 endpoint URL")
	fs.StringVar(&o.s3Secret, "s3-secret", "", "backup, hibernate: the Secret with accessKeyID and secretAccessKey")
	fs.StringVar(&o.s3Prefix, "s3-prefix", "", "backup, hibernate: the key prefix")
	fs.StringVar(&o.s3Region, "s3-region", "", "backup, hibernate: the S3 region")
	fs.StringVar(&o.name, "name", "", "backup: the EtcdBackup's name (default: <cluster>-<time>)")
	fs.BoolVar(&o.verify, "verify", false, "backup: restore it into a throwaway member to prove it")
	fs.BoolVar(&o.wait, "wait", false, "backup, restore, defragment, hibernate, wake: wait for the outcome")
	fs.DurationVar(&o.timeout, "timeout", 30*time.Minute, "backup, restore, defragment, hibernate, wake: how long --wait waits")
	fs.StringSliceVar(&o.members, "member", nil, "defragment: a member to defragment (repeat, or separate with commas); default every member")
	fs.StringVar(&o.into, "into", "", "restore: the new EtcdCluster's name")
	fs.Int32Var(&o.size, "size", 3, "restore: the new cluster's size")
	if err := fs.Parse(args); err != nil {
		return o, nil, err
	}
	if o.output != "" && o.output != "json" {
		return o, nil, fmt.Errorf("-o %s: only json is supported", o.output)
	}
	return o, fs.Args(), nil
}

// withName calls f with the one positional argument, the object's name.
func withName(pos []string, f func(string) error) error {
	if len(pos) != 1 {
		return fmt.Errorf("name one object (got %d arguments)", len(pos))
	}
	return f(pos[0])
}

// connect sets the client and the namespace from the flags, unless the Env has them.
func (e *Env) connect(o options) error {
	if e.Now == nil {
		e.Now = time.Now
	}
	if e.Client != nil {
		if o.namespace != "" {
			e.Namespace = o.namespace
		}
		return nil
	}
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = o.kubeconfig
	cc := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{CurrentContext: o.context})
	cfg, err := cc.ClientConfig()
	if err != nil {
		return fmt.Errorf("loading the kubeconfig: %w", err)
	}
	ns, _, err := cc.Namespace()
	if err != nil {
		return err
	}
	if o.namespace != "" {
		ns = o.namespace
	}
	s := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		return err
	}
	if err := etcdv1alpha1.AddToScheme(s); err != nil {
		return err
	}
	c, err := client.New(cfg, client.Options{Scheme: s})
	if err != nil {
		return err
	}
	e.Client, e.Namespace = c, ns
	return nil
}

func (e *Env) cluster(ctx context.Context, name string) (*etcdv1alpha1.EtcdCluster, error) {
	c := &etcdv1alpha1.EtcdCluster{}
	if err := e.Client.Get(ctx, client.ObjectKey{Namespace: e.Namespace, Name: name}, c); err != nil {
		return nil, fmt.Errorf("EtcdCluster %s/%s: %w", e.Namespace, name, err)
	}
	return c, nil
}

func (e *Env) status(ctx context.Context, name string, o options) error {
	c, err := e.cluster(ctx, name)
	if err != nil {
		return err
	}
	var pods corev1.PodList
	if err := e.Client.List(ctx, &pods, client.InNamespace(c.Namespace), client.MatchingLabels(cluster.For(c).SelectorLabels())); err != nil {
		return fmt.Errorf("listing the member pods: %w", err)
	}
	var backups etcdv1alpha1.EtcdBackupList
	if err := e.Client.List(ctx, &backups, client.InNamespace(c.Namespace)); err != nil {
		return fmt.Errorf("listing the EtcdBackups: %w", err)
	}
	s := StatusOf(c, pods.Items, backups.Items, e.Now())
	if o.output == "json" {
		return writeJSON(e.Out, s)
	}
	return RenderStatus(e.Out, s)
}

func (e *Env) certificates(ctx context.Context, name string, o options) error {
	c, err := e.cluster(ctx, name)
	if err != nil {
		return err
	}
	var caPEM []byte
	if c.Status.ClientSecret != "" {
		secret := &corev1.Secret{}
		if err := e.Client.Get(ctx, client.ObjectKey{Namespace: c.Namespace, Name: c.Status.ClientSecret}, secret); err != nil {
			return fmt.Errorf("reading the client Secret %s: %w", c.Status.ClientSecret, err)
		}
		caPEM = secret.Data["ca.crt"]
	}
	certs, err := CertificatesOf(c, caPEM, e.Now())
	if err != nil {
		return err
	}
	if o.output == "json" {
		return writeJSON(e.Out, certs)
	}
	return RenderCertificates(e.Out, certs)
}

func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// etcdctl runs etcdctl with args in a healthy member's pod, the leader's if it is healthy:
// etcdctl there is configured with the member's certificates and endpoint.
func (e *Env) etcdctl(ctx context.Context, name string, args []string) error {
	c, err := e.cluster(ctx, name)
	if err != nil {
		return err
	}
	member := ""
	for _, m := range c.Status.Members {
		if m.Healthy && (member == "" || m.Leader) {
			member = m.Name
		}
	}
	if member == "" {
		return fmt.Errorf("EtcdCluster %s has no healthy member to run etcdctl in", name)
	}
	run := e.Kubectl
	if run == nil {
		run = kubectl
	}
	return run(ctx, append([]string{"-n", c.Namespace, "exec", member, "-c", "etcd", "--", "etcdctl"}, args...), e.Out, e.Err)
}

// kubectl runs $KUBECTL, or kubectl from PATH.
func kubectl(ctx context.Context, args []string, out, errOut io.Writer) error {
	bin := os.Getenv("KUBECTL")
	if bin == "" {
		bin = "kubectl"
	}
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Stdout, cmd.Stderr = out, errOut
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("%s %s: %w", bin, strings.Join(args, " "), err)
	}
	return nil
}

func (e *Env) approveRecovery(ctx context.Context, name string) error {
	c, err := e.cluster(ctx, name)
	if err != nil {
		return err
	}
	r := c.Status.Recovery
	if r == nil || r.ID == "" || r.Phase != etcdv1alpha1.RecoveryAwaitingApproval {
		phase := "none"
		if r != nil {
			phase = string(r.Phase)
		}
		return fmt.Errorf("EtcdCluster %s has no recovery awaiting approval (status.recovery.phase: %s)", name, phase)
	}
	patch := client.MergeFrom(c.DeepCopy())
	if c.Annotations == nil {
		c.Annotations = map[string]string{}
	}
	c.Annotations[etcdv1alpha1.AnnotationApproveRecovery] = r.ID
	if err := e.Client.Patch(ctx, c, patch); err != nil {
		return fmt.Errorf("annotating EtcdCluster %s: %w", name, err)
	}
	fmt.Fprintf(e.Out, "approved recovery %s of EtcdCluster %s: %s\n", r.ID, name, r.Message)
	return nil
}

// defragment asks the operator to defragment the cluster's members (or those named) now:
// the annotation etcd.etcdpilot.io/defragment-at with the current time. With --wait it
// waits until each of them was defragmented at that time or later.
func (e *Env) defragment(ctx context.Context, name string, o options) error {
	c, err := e.cluster(ctx, name)
	if err != nil {
		return err
	}
	targets, err := defragmentTargets(c, o.members)
	if err != nil {
		return err
	}
	at := metav1.NewTime(e.Now().UTC().Truncate(time.Second))
	patch := client.MergeFrom(c.DeepCopy())
	if c.Annotations == nil {
		c.Annotations = map[string]string{}
	}
	c.Annotations[etcdv1alpha1.AnnotationDefragmentAt] = at.Format(time.RFC3339)
	delete(c.Annotations, etcdv1alpha1.AnnotationDefragmentMembers)
	if len(o.members) > 0 {
		c.Annotations[etcdv1alpha1.AnnotationDefragmentMembers] = strings.Join(o.members, ",")
	}
	if err := e.Client.Patch(ctx, c, patch); err != nil {
		return fmt.Errorf("annotating EtcdCluster %s: %w", name, err)
	}
	fmt.Fprintf(e.Out, "requested the defragmentation of %s of EtcdCluster %s at %s\n", strings.Join(targets, ", "), name, at.Format(time.RFC3339))
	if !o.wait {
		return nil
	}
	return e.waitFor(ctx, o.timeout, c, func() (bool, error) {
		done := defragmentedSince(c, targets, at.Time)
		if len(done) < len(targets) {
			return false, nil
		}
		for _, m := range done {
			fmt.Fprintf(e.Out, "defragmented %s: %s -> %s\n", m.Name, size(m.LastDefragmentation.SizeBefore), size(m.LastDefragmentation.SizeAfter))
		}
		return true, nil
	})
}

// defragmentTargets are the members of c a defragment request of the members named covers
// (every member when none is named), sorted; an error names one that is not a member.
func defragmentTargets(c *etcdv1alpha1.EtcdCluster, named []string) ([]string, error) {
	targets := []string{}
	for _, m := range c.Status.Members {
		if len(named) == 0 || slices.Contains(named, m.Name) {
			targets = append(targets, m.Name)
		}
	}
	slices.Sort(targets)
	for _, m := range named {
		if !slices.Contains(targets, m) {
			return nil, fmt.Errorf("EtcdCluster %s has no member %s (status.members)", c.Name, m)
		}
	}
	return targets, nil
}

// defragmentedSince are the members of targets whose last defragmentation is at or after at.
func defragmentedSince(c *etcdv1alpha1.EtcdCluster, targets []string, at time.Time) []etcdv1alpha1.MemberStatus {
	var out []etcdv1alpha1.MemberStatus
	for _, m := range c.Status.Members {
		if slices.Contains(targets, m.Name) && m.LastDefragmentation != nil && !m.LastDefragmentation.Time.Time.Before(at) {
			out = append(out, m)
		}
	}
	return out
}

// backupFor is the EtcdBackup `kubectl etcdpilot backup` creates for cluster name, from
// the flags: to a claim or to S3, verified when asked.
func backupFor(namespace, cluster string, o options, now time.Time) (*etcdv1alpha1.EtcdBackup, error) {
	b := &etcdv1alpha1.EtcdBackup{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: o.name},
		Spec: etcdv1alpha1.EtcdBackupSpec{ClusterName: cluster, Verify: o.verify}}
	if b.Name == "" {
		b.Name = cluster + "-" + now.UTC().Format("20060102-150405")
	}
	dest, err := destinationFor("backup", o)
	if err != nil {
		return nil, err
	}
	if dest == nil {
		return nil, errors.New("backup: say where to: --pvc CLAIM, or --s3-bucket with --s3-endpoint and --s3-secret")
	}
	b.Spec.Destination = *dest
	return b, nil
}

// destinationFor is the backup destination the flags of command cmd name: a claim, an S3
// bucket, or none (nil).
func destinationFor(cmd string, o options) (*etcdv1alpha1.BackupDestination, error) {
	switch {
	case o.pvc != "" && o.s3Bucket != "":
		return nil, fmt.Errorf("%s: --pvc or --s3-bucket, not both", cmd)
	case o.pvc != "":
		return &etcdv1alpha1.BackupDestination{PVC: &etcdv1alpha1.PVCDestination{ClaimName: o.pvc, Path: o.path}}, nil
	case o.s3Bucket != "":
		if o.s3Endpoint == "" || o.s3Secret == "" {
			return nil, fmt.Errorf("%s: --s3-bucket needs --s3-endpoint and --s3-secret (a Secret with accessKeyID and secretAccessKey)", cmd)
		}
		return &etcdv1alpha1.BackupDestination{S3: &etcdv1alpha1.S3Destination{Prefix: o.s3Prefix, S3Bucket: etcdv1alpha1.S3Bucket{
			Endpoint: o.s3Endpoint, Bucket: o.s3Bucket, Region: o.s3Region, CredentialsSecretName: o.s3Secret}}}, nil
	}
	return nil, nil
}

// hibernate sets spec.hibernation.enabled to on (hibernate) or off (wake); hibernating with
// a destination in the flags sets spec.hibernation.backupDestination too. With --wait it
// waits for the Hibernated condition (hibernate), or for the cluster to be Ready (wake).
func (e *Env) hibernate(ctx context.Context, name string, on bool, o options) error {
	cmd := map[bool]string{true: "hibernate", false: "wake"}[on]
	dest, err := destinationFor(cmd, o)
	if err != nil {
		return err
	}
	if dest != nil && !on {
		return errors.New("wake: a backup destination is for hibernate")
	}
	c, err := e.cluster(ctx, name)
	if err != nil {
		return err
	}
	patch := client.MergeFrom(c.DeepCopy())
	c.Spec.Hibernation.Enabled = on
	if dest != nil {
		c.Spec.Hibernation.BackupDestination = dest
	}
	if err := e.Client.Patch(ctx, c, patch); err != nil {
		return fmt.Errorf("%s: patching EtcdCluster %s: %w", cmd, name, err)
	}
	fmt.Fprintln(e.Out, hibernationNews(c, on))
	if !o.wait {
		return nil
	}
	return e.waitFor(ctx, o.timeout, c, func() (bool, error) { return e.hibernationDone(c, on) })
}

// hibernationNews says what the patch of `hibernate` (on) or `wake` set in motion.
func hibernationNews(c *etcdv1alpha1.EtcdCluster, on bool) string {
	switch {
	case on && c.Spec.Hibernation.BackupDestination != nil:
		return fmt.Sprintf("EtcdCluster %s hibernates: a final backup (EtcdBackup %s), then its members stop", c.Name, cluster.For(c).FinalBackup(c.Generation))
	case on:
		return fmt.Sprintf("EtcdCluster %s hibernates: its members stop, their claims keep the data", c.Name)
	}
	return fmt.Sprintf("EtcdCluster %s wakes: its members start again with their data", c.Name)
}

// hibernationDone says whether c, as last read, is hibernated (on) or Ready (woken) for its
// current generation; a failed final backup ends the wait with the operator's message.
func (e *Env) hibernationDone(c *etcdv1alpha1.EtcdCluster, on bool) (bool, error) {
	want := etcdv1alpha1.ConditionReady
	if on {
		want = etcdv1alpha1.ConditionHibernated
	}
	got := meta.FindStatusCondition(c.Status.Conditions, want)
	if got != nil && got.Status == metav1.ConditionTrue && c.Status.ObservedGeneration == c.Generation {
		fmt.Fprintf(e.Out, "EtcdCluster %s is %s: %s\n", c.Name, strings.ToLower(want), got.Message)
		return true, nil
	}
	if d := meta.FindStatusCondition(c.Status.Conditions, etcdv1alpha1.ConditionDegraded); on && d != nil && d.Reason == etcdv1alpha1.ReasonHibernationBlocked {
		return true, fmt.Errorf("EtcdCluster %s cannot hibernate: %s", c.Name, d.Message)
	}
	return false, nil
}

func (e *Env) backup(ctx context.Context, name string, o options) error {
	if _, err := e.cluster(ctx, name); err != nil {
		return err
	}
	b, err := backupFor(e.Namespace, name, o, e.Now())
	if err != nil {
		return err
	}
	if err := e.Client.Create(ctx, b); err != nil {
		return fmt.Errorf("creating EtcdBackup %s: %w", b.Name, err)
	}
	fmt.Fprintf(e.Out, "created EtcdBackup %s/%s\n", b.Namespace, b.Name)
	if !o.wait {
		return nil
	}
	return e.waitFor(ctx, o.timeout, b, func() (bool, error) {
		done := meta.FindStatusCondition(b.Status.Conditions, etcdv1alpha1.ConditionSucceeded)
		if done == nil || done.Status == metav1.ConditionUnknown {
			return false, nil
		}
		if done.Status == metav1.ConditionFalse {
			return true, fmt.Errorf("EtcdBackup %s failed: %s: %s", b.Name, done.Reason, done.Message)
		}
		if o.verify {
			v := meta.FindStatusCondition(b.Status.Conditions, etcdv1alpha1.ConditionVerified)
			if v == nil || v.Reason == etcdv1alpha1.ReasonVerifying {
				return false, nil
			}
			if v.Status == metav1.ConditionFalse {
				return true, fmt.Errorf("EtcdBackup %s succeeded but its verification failed: %s: %s", b.Name, v.Reason, v.Message)
			}
			fmt.Fprintf(e.Out, "verified: %s\n", v.Reason)
		}
		if a := b.Status.Artifact; a != nil {
			fmt.Fprintf(e.Out, "succeeded: %s (%d bytes, sha256 %s)\n", a.Location, a.Size, a.SHA256)
		}
		return true, nil
	})
}

// restoreFor is the EtcdCluster `kubectl etcdpilot restore` creates: size members that start
// from the EtcdBackup backup.
func restoreFor(namespace, backup, into string, size int32) (*etcdv1alpha1.EtcdCluster, error) {
	if into == "" {
		return nil, errors.New("restore: name the new EtcdCluster with --into")
	}
	return &etcdv1alpha1.EtcdCluster{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: into},
		Spec: etcdv1alpha1.EtcdClusterSpec{Size: size, Bootstrap: &etcdv1alpha1.BootstrapSpec{
			Restore: &etcdv1alpha1.RestoreSpec{BackupName: backup}}}}, nil
}

func (e *Env) restore(ctx context.Context, backup string, o options) error {
	c, err := restoreFor(e.Namespace, backup, o.into, o.size)
	if err != nil {
		return err
	}
	if err := e.Client.Create(ctx, c); err != nil {
		return fmt.Errorf("creating EtcdCluster %s: %w", c.Name, err)
	}
	fmt.Fprintf(e.Out, "created EtcdCluster %s/%s from EtcdBackup %s\n", c.Namespace, c.Name, backup)
	if !o.wait {
		return nil
	}
	return e.waitFor(ctx, o.timeout, c, func() (bool, error) {
		ready := meta.FindStatusCondition(c.Status.Conditions, etcdv1alpha1.ConditionReady)
		if ready == nil || ready.Status != metav1.ConditionTrue || ready.ObservedGeneration != c.Generation {
			return false, nil
		}
		fmt.Fprintf(e.Out, "EtcdCluster %s is Ready\n", c.Name)
		return true, nil
	})
}

// waitFor reads obj again until done says it is done, or timeout passes.
func (e *Env) waitFor(ctx context.Context, timeout time.Duration, obj client.Object, done func() (bool, error)) error {
	poll := e.Poll
	if poll <= 0 {
		poll = 2 * time.Second
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var outcome error
	err := wait.PollUntilContextCancel(ctx, poll, true, func(ctx context.Context) (bool, error) {
		if err := e.Client.Get(ctx, client.ObjectKeyFromObject(obj), obj); err != nil {
			return false, nil // the API server may be busy: look again
		}
		ok, err := done()
		outcome = err
		return ok, nil
	})
	if err != nil {
		return fmt.Errorf("gave up waiting for %s after %s", obj.GetName(), timeout)
	}
	return outcome
}
