// Package corrupt makes a member's data silently diverge, for the tests that prove the
// operator finds and replaces such a member (the e2e suite and the level-5 scorecard test):
// a value is rewritten in place in the member's database file while the member runs, so
// that the member serves and hashes data the others do not have. The operator never uses
// it; it ships only in the scorecard tests' image.
package corrupt

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// DBPath is a member's database file, as the member pods of etcdpilot keep it on their
// claim (mounted at MountPath).
const (
	MountPath = "/var/lib/etcd"
	DBPath    = MountPath + "/data/member/snap/db"
)

// ReplaceInFile rewrites, in place, every occurrence of find in the file at path with
// replace (of the same length), and returns how many it rewrote. In place matters: etcd
// reads its database through a shared mapping of the file, which sees the new bytes at
// once; a new file would not be seen until etcd restarts.
func ReplaceInFile(path string, find, replace []byte) (int, error) {
	if len(find) == 0 || len(find) != len(replace) {
		return 0, errors.New("find and replace must be non-empty and of the same length")
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return 0, err
	}
	defer func() { _ = f.Close() }()
	n := 0
	for off := 0; ; {
		i := bytes.Index(data[off:], find)
		if i < 0 {
			break
		}
		if _, err := f.WriteAt(replace, int64(off+i)); err != nil {
			return n, fmt.Errorf("rewriting %s at %d: %w", path, off+i, err)
		}
		n++
		off += i + len(find)
	}
	return n, f.Sync()
}

// Pod is a pod that runs command (with the arguments to replace find with replace in
// DBPath) on the claim of member, on member's node and as member's user, so that it may
// write the member's files. It runs once and its termination message says what it did.
func Pod(name string, member *corev1.Pod, claim, image string, command []string, find, replace string) *corev1.Pod {
	var ctr *corev1.SecurityContext
	if len(member.Spec.Containers) > 0 && member.Spec.Containers[0].SecurityContext != nil {
		ctr = member.Spec.Containers[0].SecurityContext.DeepCopy()
	}
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: member.Namespace,
			Labels: map[string]string{"app.kubernetes.io/part-of": "etcdpilot-tests"}},
		Spec: corev1.PodSpec{
			NodeName:                     member.Spec.NodeName,
			RestartPolicy:                corev1.RestartPolicyNever,
			AutomountServiceAccountToken: ptr.To(false),
			SecurityContext:              member.Spec.SecurityContext.DeepCopy(),
			Containers: []corev1.Container{{
				Name: "corrupt", Image: image, Command: command,
				Args:                     []string{DBPath, find, replace},
				SecurityContext:          ctr,
				TerminationMessagePolicy: corev1.TerminationMessageFallbackToLogsOnError,
				VolumeMounts:             []corev1.VolumeMount{{Name: "data", MountPath: MountPath}},
			}},
			Volumes: []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{
				PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: claim}}}},
		},
	}
}

// Main is the command the pod runs: args are the file, find and replace. It prints what it
// did to the termination log and returns the exit code: 0 when something was rewritten.
func Main(args []string, terminationLog string) int {
	msg, code := run(args)
	_ = os.WriteFile(terminationLog, []byte(msg), 0o600)
	fmt.Fprintln(os.Stderr, msg)
	return code
}

// passes bounds the rewrites of run, passGap apart. etcd's database (bbolt) copies a page
// to a new place in the file whenever a transaction changes it: if that happens between a
// pass's read of the file and its rewrite, the rewrite lands in the old page, no longer in
// use, and the member goes on serving the copy. A later pass finds the value there and
// rewrites it too; the passes end with one that finds nothing. passGap is longer than
// etcd's batch commit interval (100 ms), so that a copy made is in the file by then.
const (
	passes  = 5
	passGap = 250 * time.Millisecond
)

func run(args []string) (string, int) {
	if len(args) != 3 {
		return "usage: corrupt-member-data <file> <find> <replace>", 2
	}
	total, ran, last := 0, 0, 0
	for ran < passes && (ran == 0 || last > 0) {
		if ran > 0 {
			time.Sleep(passGap)
		}
		n, err := ReplaceInFile(args[0], []byte(args[1]), []byte(args[2]))
		total, ran, last = total+n, ran+1, n
		if err != nil {
			return fmt.Sprintf("rewrote %d occurrences in %s, then: %v", total, args[0], err), 1
		}
	}
	switch {
	case total == 0:
		return fmt.Sprintf("%q not found in %s", args[1], args[0]), 1
	case last > 0:
		return fmt.Sprintf("rewrote %d occurrences of %q in %s in %d passes, the last still finding %d", total, args[1], args[0], ran, last), 0
	}
	return fmt.Sprintf("rewrote %d occurrences of %q in %s in %d passes, the last finding none", total, args[1], args[0], ran), 0
}
