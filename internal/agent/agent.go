package agent

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"

	etcdv1alpha1 "github.com/etcdpilot/etcdpilot/api/v1alpha1"
	"github.com/etcdpilot/etcdpilot/internal/artifact"
)

// DefaultResultFile is where a command writes its Result unless told otherwise: the
// container's termination message.
const DefaultResultFile = "/dev/termination-log"

// The environment variables holding the S3 credentials, as the AWS tools name them. The
// backup Job sets them from the credentials Secret.
const (
	EnvAccessKeyID     = "AWS_ACCESS_KEY_ID"
	EnvSecretAccessKey = "AWS_SECRET_ACCESS_KEY"
	EnvSessionToken    = "AWS_SESSION_TOKEN"
)

// command is one of the agent's commands: it parses its own flags and returns its result
// (or an error, turned into a failed result with fallbackReason unless it carries its own).
type command struct {
	run            func(ctx context.Context, args []string, env *environment) (Result, error)
	fallbackReason string
	summary        string
}

var commands = map[string]command{
	"backup": {run: backup, fallbackReason: etcdv1alpha1.ReasonBackupPodFailed,
		summary: "stream a snapshot of one etcd member to a store"},
	"restore": {run: restore, fallbackReason: etcdv1alpha1.ReasonRestoreFailed,
		summary: "build a member's data directory from a stored snapshot"},
	"delete": {run: deleteArtifact, fallbackReason: etcdv1alpha1.ReasonBackupPodFailed,
		summary: "delete a stored snapshot"},
	"check": {run: check, fallbackReason: etcdv1alpha1.ReasonVerificationFailed,
		summary: "check a member restored from a backup against what the backup recorded"},
}

// environment is what a command gets from the process besides its arguments.
type environment struct {
	stderr     io.Writer
	getenv     func(string) string
	resultFile string // set by the command's flags
}

// Main runs the agent command args names (args are what follows "agent" on the command
// line) and returns the process's exit code: 0 on success, 1 on failure, 2 without a
// known command. SIGTERM and SIGINT cancel the command, which then cleans up and reports.
func Main(args []string) int {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	return run(ctx, args, &environment{stderr: os.Stderr, getenv: os.Getenv})
}

// run is Main with its context and environment given.
func run(ctx context.Context, args []string, env *environment) int {
	if len(args) == 0 || commands[args[0]].run == nil {
		fmt.Fprintln(env.stderr, usage())
		return 2
	}
	name, cmd := args[0], commands[args[0]]
	env.resultFile = DefaultResultFile
	res, err := cmd.run(ctx, args[1:], env)
	if errors.Is(err, flag.ErrHelp) {
		return 2 // -h: the flags were printed, nothing ran
	}
	if err != nil {
		res = failureResult(err, cmd.fallbackReason)
	}
	res.MaxRSSBytes = maxRSSBytes()
	if res.Failed() {
		fmt.Fprintf(env.stderr, "agent %s failed (%s): %s\n", name, res.Reason, err)
	} else {
		fmt.Fprintf(env.stderr, "agent %s succeeded: %s\n", name, summary(res))
	}
	if werr := writeResult(env.resultFile, res); werr != nil {
		fmt.Fprintf(env.stderr, "agent %s: %v\n", name, werr)
		return 1
	}
	if res.Failed() {
		return 1
	}
	return 0
}

func usage() string {
	var b strings.Builder
	b.WriteString("usage: manager agent <command> [flags]; commands:")
	for _, name := range []string{"backup", "restore", "delete", "check"} {
		fmt.Fprintf(&b, "\n  %-8s %s", name, commands[name].summary)
	}
	b.WriteString("\nRun a command with -h for its flags.")
	return b.String()
}

// newFlagSet returns the flag set of a command, with the flags every command has.
func newFlagSet(name string, env *environment) *flag.FlagSet {
	fs := flag.NewFlagSet("agent "+name, flag.ContinueOnError)
	fs.SetOutput(env.stderr)
	fs.StringVar(&env.resultFile, "result-file", DefaultResultFile,
		"File the JSON result is written to (the container's termination message by default).")
	return fs
}

// parseFlags parses args, refusing positional arguments.
func parseFlags(fs *flag.FlagSet, args []string) error {
	if err := fs.Parse(args); err != nil {
		return fmt.Errorf("invalid arguments: %w", err)
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("invalid arguments: unexpected %q", fs.Args())
	}
	return nil
}

// storeFlags are the flags that say where artifacts live, and which one.
type storeFlags struct {
	kind       string
	key        string
	fileRoot   string
	s3Endpoint string
	s3Bucket   string
	s3Region   string
	s3CAFile   string
	s3Path     bool
}

func (s *storeFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&s.kind, "store", "", `Where the artifact lives: "s3" or "file".`)
	fs.StringVar(&s.key, "key", "", "The artifact's key: the S3 object key, or the path under --file-root.")
	fs.StringVar(&s.fileRoot, "file-root", "/backup", "Directory of the file store (the claim's mount point).")
	fs.StringVar(&s.s3Endpoint, "s3-endpoint", "", "S3 endpoint URL, with its http:// or https:// scheme.")
	fs.StringVar(&s.s3Bucket, "s3-bucket", "", "S3 bucket.")
	fs.StringVar(&s.s3Region, "s3-region", artifact.DefaultRegion, "S3 region.")
	fs.StringVar(&s.s3CAFile, "s3-ca-file", "", "PEM CA bundle trusted for the S3 endpoint instead of the system roots.")
	fs.BoolVar(&s.s3Path, "s3-path-style", false, "Address the bucket in the URL path rather than as a subdomain.")
}

// open returns the store the flags name, and the artifact's location for messages. S3
// credentials come from the environment.
func (s *storeFlags) open(env *environment) (artifact.Store, string, error) {
	if s.key == "" {
		return nil, "", errors.New("invalid arguments: --key is required")
	}
	switch s.kind {
	case "file":
		return artifact.NewFS(s.fileRoot), strings.TrimSuffix(s.fileRoot, "/") + "/" + s.key, nil
	case "s3":
		cfg := artifact.S3Config{
			Endpoint:        s.s3Endpoint,
			Bucket:          s.s3Bucket,
			Region:          s.s3Region,
			AccessKeyID:     env.getenv(EnvAccessKeyID),
			SecretAccessKey: env.getenv(EnvSecretAccessKey),
			SessionToken:    env.getenv(EnvSessionToken),
			ForcePathStyle:  s.s3Path,
		}
		if cfg.AccessKeyID == "" || cfg.SecretAccessKey == "" {
			return nil, "", failf(etcdv1alpha1.ReasonCredentialsNotFound,
				"no S3 credentials: %s and %s must be set (from the credentials Secret's keys accessKeyID and secretAccessKey)",
				EnvAccessKeyID, EnvSecretAccessKey)
		}
		if s.s3CAFile != "" {
			ca, err := os.ReadFile(s.s3CAFile)
			if err != nil {
				return nil, "", fail(etcdv1alpha1.ReasonCredentialsNotFound, fmt.Errorf("reading the S3 CA bundle: %w", err))
			}
			cfg.CABundle = ca
		}
		store, err := artifact.NewS3(cfg)
		if err != nil {
			return nil, "", fmt.Errorf("invalid arguments: %w", err)
		}
		return store, "s3://" + s.s3Bucket + "/" + s.key, nil
	default:
		return nil, "", fmt.Errorf(`invalid arguments: --store must be "s3" or "file", not %q`, s.kind)
	}
}

// storeFailure gives a store's error its reason; fallback is the reason of an error
// artifact.Reason cannot classify.
func storeFailure(err error, fallback string) error {
	reason := artifact.Reason(err)
	if reason == "" {
		reason = fallback
	}
	return fail(reason, err)
}

// deleteArtifact is the delete command: it deletes the artifact, and succeeds when it is
// already gone.
func deleteArtifact(ctx context.Context, args []string, env *environment) (Result, error) {
	fs := newFlagSet("delete", env)
	var sf storeFlags
	sf.register(fs)
	if err := parseFlags(fs, args); err != nil {
		return Result{}, err
	}
	store, location, err := sf.open(env)
	if err != nil {
		return Result{}, err
	}
	if err := store.Delete(ctx, sf.key); err != nil {
		return Result{}, storeFailure(fmt.Errorf("deleting %s: %w", location, err), etcdv1alpha1.ReasonBackupPodFailed)
	}
	return Result{}, nil
}
