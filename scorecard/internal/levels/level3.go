package levels

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"

	etcdv1alpha1 "github.com/etcdpilot/etcdpilot/api/v1alpha1"
	"github.com/etcdpilot/etcdpilot/internal/etcd"
	"github.com/etcdpilot/etcdpilot/scorecard/internal/report"
	"github.com/etcdpilot/etcdpilot/test/framework"
)

const (
	// lifecycleKeys is how many keys level 3 writes and checks after every change.
	lifecycleKeys = 50
	// backupKeys is how many more keys level 3 writes right before the backup, under a
	// prefix of their own: the restore must hold writes made just before the backup, not
	// only those the membership changes carried along.
	backupKeys = 5
	// restoreSize is the size of the cluster restored from the backup: its first member
	// restores, the other two join it and copy its data, so the restore is checked through
	// whichever member the client Service picks.
	restoreSize = 3
	// backupTimeout is the backup's spec.timeout (the API's minimum is 1m): a backup stuck on
	// its claim or its pod fails with the operator's reason Timeout, well within the test's
	// budget, rather than with the test's deadline.
	backupTimeout = 3 * time.Minute
)

// backupClaimSize is the claim the backup is written to. A snapshot of the test's few keys
// takes well under a megabyte; provisioners with a larger minimum round it up.
var backupClaimSize = resource.MustParse("256Mi")

// fullLifecycle (level 3): a 3-member cluster keeps its data while it is scaled to 5
// members, back to 3, while a member whose volume and pod are destroyed is replaced, and,
// where there are several nodes, while a member's node is drained (drainNode).
// Then it is backed up to a claim, and a new 3-member cluster started from that backup
// holds every key written before it, and not the key written after it: a restore, not a
// copy. Last, etcd's authentication is turned on and a tenant's certificate writes under
// its prefix only; its keys go with it (tenantRoundTrip). A failure fails the test with its
// own message and skips the steps after it; when the API has no EtcdBackup or no
// EtcdTenant (an operator older than either), the rest runs and the test fails naming
// what is missing.
func fullLifecycle(ctx context.Context, in Input, r *report.Report) {
	c, keys, ok := scaleAndReplace(ctx, in, r)
	ok = ok && drainNode(ctx, in, r, c, keys)

	served := map[string]bool{}
	for _, kind := range []string{"EtcdBackup", "EtcdTenant"} {
		var err error
		if served[kind], err = in.Env.Serves(etcdv1alpha1.GroupVersion.Group, kind); err != nil {
			r.Fail(fmt.Sprintf("finding out whether %s is served: %v", kind, err))
			return
		}
		r.Logf("%s served in %s: %t", kind, etcdv1alpha1.GroupVersion.Group, served[kind])
	}
	for _, m := range FullLifecycleMissing(served["EtcdBackup"], served["EtcdTenant"]) {
		r.Fail("missing: " + m)
	}
	switch {
	case !served["EtcdBackup"]:
		r.Suggest("Serve an EtcdBackup kind (snapshots to a volume or object storage) and a way to create a cluster from a backup.")
	case !ok:
		r.Logf("backup and restore not tried: the cluster did not get through scaling, member replacement and the drain")
	default:
		ok = backupAndRestore(ctx, in, r, c, keys)
	}
	switch {
	case !served["EtcdTenant"]:
		r.Suggest("Serve an EtcdTenant kind: an etcd user bounded to a key prefix, with a client certificate of its own.")
	case !ok:
		r.Logf("the tenant not tried: the cluster did not get through the steps before")
	default:
		tenantRoundTrip(ctx, in, r, c, keys)
	}
}

// tenantRoundTrip turns etcd's authentication on for c, which holds keys, and makes a
// tenant of it: with the certificate of the tenant's Secret, a write under its prefix is
// accepted and a write or a read outside refused; the operator's own client still reads
// every key; deleting the tenant (deletionPolicy Delete) deletes the key it wrote.
func tenantRoundTrip(ctx context.Context, in Input, r *report.Report, c *etcdv1alpha1.EtcdCluster, keys map[string]string) {
	t := framework.NewTenant(c.Name+"-tenant", c, "/scorecard/tenant/")
	const mine, outside = "/scorecard/tenant/written", "/scorecard/outside"
	var tenant etcd.Client
	defer func() {
		if tenant != nil {
			_ = tenant.Close()
		}
	}()
	runSteps(r,
		step{"turn etcd's authentication on", func() error { return in.Env.SetAuth(ctx, c, true) }},
		step{"wait until etcd's authentication is on and the cluster is settled", func() error {
			return in.Env.WaitFor(ctx, c, "authentication on", framework.All(framework.AuthEnabled(), framework.Settled(3)))
		}},
		step{"create EtcdTenant " + t.Name + " with prefix " + t.Spec.Prefix, func() error { return in.Env.CreateTenant(ctx, t) }},
		step{"wait until the tenant is Ready", func() error { return in.Env.WaitForTenant(ctx, t) }},
		step{"write under the prefix with the tenant's certificate", func() error {
			var err error
			if tenant, err = in.Env.ConnectAs(ctx, c, t); err != nil {
				return err
			}
			return tenant.Put(ctx, mine, "tenant")
		}},
		step{"the tenant's certificate is refused outside its prefix", func() error { return refusedOutside(ctx, tenant, outside, keys) }},
		step{fmt.Sprintf("read back the %d keys with the operator's certificate", len(keys)), func() error { return checkKeys(ctx, in, c, keys) }},
		step{"delete the tenant: its key goes", func() error {
			if err := in.Env.DeleteTenant(ctx, t); err != nil {
				return err
			}
			return checkAbsent(ctx, in, c, map[string]string{mine: "tenant"})
		}},
	)
}

// scaleAndReplace runs the scaling and member replacement part of level 3. It returns the
// cluster, the keys written to it, and whether every step passed.
func scaleAndReplace(ctx context.Context, in Input, r *report.Report) (*etcdv1alpha1.EtcdCluster, map[string]string, bool) {
	c, ok := newCluster(in, r, "sc-l3-", func(c *etcdv1alpha1.EtcdCluster) { c.Spec.Size = 3 })
	if !ok {
		return nil, nil, false
	}
	var keys map[string]string
	verify := step{fmt.Sprintf("read back the %d keys", lifecycleKeys), func() error { return checkKeys(ctx, in, c, keys) }}
	var victim etcdv1alpha1.MemberStatus
	ok = runSteps(r,
		createStep(ctx, in, c),
		settleStep(ctx, in, c, 3),
		step{fmt.Sprintf("write %d keys", lifecycleKeys), func() error {
			var err error
			keys, err = writeKeys(ctx, in, c, "/lifecycle", lifecycleKeys)
			return err
		}},
		step{"scale to 5 members", func() error { return in.Env.Resize(ctx, c, 5) }},
		settleStep(ctx, in, c, 5),
		verify,
		step{"scale to 3 members", func() error { return in.Env.Resize(ctx, c, 3) }},
		settleStep(ctx, in, c, 3),
		verify,
		step{"destroy a member: delete its volume claim and its pod", func() error {
			var ok bool
			if victim, ok = framework.Victim(c); !ok {
				return errors.New("no member other than the leader in status.members")
			}
			r.Logf("destroying member %s (etcd ID %s)", victim.Name, victim.ID)
			return in.Env.DestroyMember(ctx, c, victim.Name)
		}},
		step{"wait until the member is replaced and the cluster has 3 ready members", func() error {
			return in.Env.WaitFor(ctx, c, "a new member in place of "+victim.Name,
				framework.All(framework.MemberGone(victim.ID), framework.Settled(3)))
		}},
		verify,
	)
	return c, keys, ok
}

// backupAndRestore backs c, which holds keys, up to a new claim and checks the backup's
// status; then it creates a new cluster from the backup, reads every key written before
// the backup through it, and checks that the key written after the backup is not there.
// It says whether every step passed.
func backupAndRestore(ctx context.Context, in Input, r *report.Report, c *etcdv1alpha1.EtcdCluster, keys map[string]string) bool {
	claim := framework.BackupClaim(c.Name+"-backups", c.Namespace, backupClaimSize)
	b := framework.NewBackup(c.Name+"-backup", c, claim.Name, backupTimeout)
	before := maps.Clone(keys)
	var after map[string]string
	ok := runSteps(r,
		step{fmt.Sprintf("write %d more keys", backupKeys), func() error {
			more, err := writeKeys(ctx, in, c, "/before-backup", backupKeys)
			maps.Copy(before, more)
			return err
		}},
		step{"create PersistentVolumeClaim " + claim.Name, func() error { return in.Env.CreateClaim(ctx, claim) }},
		step{"create EtcdBackup " + b.Name, func() error { return in.Env.CreateBackup(ctx, b) }},
		step{"wait until the backup has succeeded", func() error { return in.Env.WaitForBackup(ctx, b) }},
		step{"check the backup's artifact and snapshot", func() error {
			if err := framework.CheckBackup(b, c, claim.Name); err != nil {
				return err
			}
			a, s := b.Status.Artifact, b.Status.Snapshot
			r.Logf("artifact %s: %d bytes (%d uncompressed), sha256 %s; snapshot of member %s at revision %d, etcd %s",
				a.Location, a.Size, a.SnapshotSize, a.SHA256, s.Member, s.Revision, s.EtcdVersion)
			return nil
		}},
		step{"write a key after the backup", func() error {
			var err error
			after, err = writeKeys(ctx, in, c, "/after-backup", 1)
			return err
		}},
	)
	if !ok {
		return false
	}
	restored, ok := newCluster(in, r, "sc-l3-", func(rc *etcdv1alpha1.EtcdCluster) {
		rc.Name = c.Name + "-restored"
		rc.Spec.Size, rc.Spec.Version = restoreSize, c.Spec.Version
		rc.Spec.Bootstrap = &etcdv1alpha1.BootstrapSpec{Restore: &etcdv1alpha1.RestoreSpec{BackupName: b.Name}}
	})
	if !ok {
		return false
	}
	return runSteps(r,
		createStep(ctx, in, restored),
		settleStep(ctx, in, restored, restoreSize),
		step{fmt.Sprintf("read back from %s the %d keys written before the backup", restored.Name, len(before)), func() error {
			return checkKeys(ctx, in, restored, before)
		}},
		step{fmt.Sprintf("check that %s lacks the key written after the backup", restored.Name), func() error {
			return checkAbsent(ctx, in, restored, after)
		}},
	)
}

// refusedOutside checks that etcd refuses tenant a write of outside and a read of one of
// keys, none of them under its prefix.
func refusedOutside(ctx context.Context, tenant etcd.Client, outside string, keys map[string]string) error {
	if err := tenant.Put(ctx, outside, "tenant"); !etcd.IsPermissionDenied(err) {
		return fmt.Errorf("writing %s: want permission denied, got %s", outside, errorText(err))
	}
	for key := range keys {
		if _, _, err := tenant.Get(ctx, key); !etcd.IsPermissionDenied(err) {
			return fmt.Errorf("reading %s: want permission denied, got %s", key, errorText(err))
		}
		break
	}
	return nil
}

// errorText is err's message, or "no error".
func errorText(err error) string {
	if err == nil {
		return "no error"
	}
	return err.Error()
}

// writeKeys writes n keys to c under its key prefix and suffix.
func writeKeys(ctx context.Context, in Input, c *etcdv1alpha1.EtcdCluster, suffix string, n int) (map[string]string, error) {
	cli, err := in.Env.Connect(ctx, c)
	if err != nil {
		return nil, err
	}
	defer func() { _ = cli.Close() }() // every write was acknowledged or failed by then
	return framework.WriteKeys(ctx, cli, keyPrefix(c)+suffix, n)
}
