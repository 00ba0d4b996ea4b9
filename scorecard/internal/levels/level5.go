package levels

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"strings"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"

	etcdv1alpha1 "github.com/etcdpilot/etcdpilot/api/v1alpha1"
	"github.com/etcdpilot/etcdpilot/internal/etcd"
	"github.com/etcdpilot/etcdpilot/scorecard/internal/report"
	"github.com/etcdpilot/etcdpilot/test/framework"
)

const (
	// autoPilotSize is the size of level 5's clusters: with followers and a leader, the
	// order of the defragmentations shows.
	autoPilotSize = 3
	// garbageValues values of garbageValueSize (24 MiB) are written and then overwritten,
	// three times minReclaimable: free pages enough in every member's file whatever else
	// the file holds.
	garbageValues    = 48
	garbageValueSize = 512 << 10
	// keepKeys is how many keys are written before the NOSPACE cluster is filled, and must
	// be intact once it accepts writes again.
	keepKeys = 20
	// churnValueSize is the size of the values one key is rewritten with until the quota
	// is reached: the history, not the data, fills it, so that compacting it makes room.
	churnValueSize = 256 << 10
	// churnWrites bounds the rewrites: 50 MiB, three times the quota.
	churnWrites = 200
)

var (
	// minReclaimable is the defragmentation threshold of the defragmentation cluster (the
	// API's default is 100Mi): a test-sized amount of garbage is enough.
	minReclaimable = resource.MustParse("8Mi")
	// noSpaceQuota is the NOSPACE cluster's etcd.quotaBackendBytes, the API's minimum.
	noSpaceQuota = resource.MustParse("16Mi")
)

// maintenanceWait bounds each wait for the operator's maintenance: every member
// defragmented, or writes working again after NOSPACE. The operator notices on its next
// steady pass (every 30s), then defragments one member per pass; on the local cluster both
// took under a minute (test/e2e/maintenance_test.go). eventsWait bounds the wait for the
// events that go with them, and autoPilotPoll is how often level 5 looks again.
var (
	maintenanceWait = 3 * time.Minute
	eventsWait      = 30 * time.Second
	autoPilotPoll   = 2 * time.Second
)

// autoPilot (level 5): the operator keeps etcd's databases in shape and heals the cluster
// without a human. A 3-member cluster whose members' files are fragmented is defragmented,
// member by member, the leader last, every file shrinking; a 3-member cluster whose writes
// fill its quota (NOSPACE) accepts writes again with no action by the test and every key
// intact, then a backup of it with spec.verify is proven restorable. These two clusters run
// one after the other, the first within half of the time. Beside them, each in its own
// cluster (selfheal.go): a cluster that loses two of three members is recovered from the
// third, and a member whose data is made to diverge is replaced. Side by side, the test
// takes as long as its longest line (3 min 18 s in all on the local cluster), not the sum.
// Then the test fails listing what it cannot check (AutoPilotMissing: nothing today).
func autoPilot(ctx context.Context, in Input, r *report.Report) {
	var healing sync.WaitGroup
	healing.Go(func() { quorumLoss(ctx, in, r) })
	healing.Go(func() { corruptMember(ctx, in, r) })
	first, cancel := framework.HalfOf(ctx)
	defragmentation(first, in, r)
	cancel()
	if c, ok := noSpaceRecovery(ctx, in, r); ok {
		verifiedBackup(ctx, in, r, c)
	} else {
		r.Logf("verified backup not tried: the NOSPACE part did not pass")
	}
	healing.Wait()
	for _, m := range AutoPilotMissing() {
		r.Fail("missing: " + m)
	}
}

// defragmentation: 24 MiB written, overwritten and compacted leave every member's file
// mostly free pages; the operator must defragment every member (its lastDefragmentation
// at least minReclaimable smaller), record a MemberDefragmented event for each, and take
// the leader last.
func defragmentation(ctx context.Context, in Input, r *report.Report) {
	c, ok := newCluster(in, r, "sc-l5-", func(c *etcdv1alpha1.EtcdCluster) {
		c.Name += "-defrag"
		c.Spec.Size = autoPilotSize
		c.Spec.Maintenance.Defragmentation = etcdv1alpha1.DefragmentationSpec{
			Mode: etcdv1alpha1.DefragmentationAuto, MinReclaimable: ptr.To(minReclaimable.DeepCopy())}
	})
	if !ok {
		return
	}
	garbage := fmt.Sprintf("%d values of %d KiB", garbageValues, garbageValueSize>>10)
	shrink := fmt.Sprintf("its file at least %s smaller", minReclaimable.String())
	runSteps(r,
		createKeeping(ctx, in, c, "spec.maintenance.defragmentation.minReclaimable", func(c *etcdv1alpha1.EtcdCluster) bool {
			return c.Spec.Maintenance.Defragmentation.MinReclaimable != nil
		}),
		settleStep(ctx, in, c, autoPilotSize),
		step{fmt.Sprintf("write %s, then overwrite each with a few bytes", garbage), func() error { return fragment(ctx, in, r, c) }},
		step{"compact the history", func() error { return compact(ctx, in, r, c) }},
		step{"wait until every member is defragmented, " + shrink + ", while a key is written every few seconds", func() error {
			wctx, cancel := context.WithTimeout(ctx, maintenanceWait)
			defer cancel()
			// etcd counts the pages a compaction freed as free only once later writes commit
			// on a member with no older read open: on an idle cluster a member (on the local
			// cluster, the leader) kept them "in use" for minutes. A trickle of writes, as any
			// cluster in use has, lets every member see its free pages.
			stop := trickle(wctx, in, c)
			defer stop()
			return in.Env.WaitFor(wctx, c, "every member defragmented, "+shrink, framework.Defragmented(minReclaimable.Value()))
		}},
		step{"check the " + framework.EventMemberDefragmented + " events: one per member, the leader last", func() error {
			return defragmentationEvents(ctx, in, r, c)
		}},
	)
}

// noSpaceRecovery: a cluster with the smallest quota is written into the NOSPACE alarm;
// the operator must get it out (writes work again) with every key intact, the cluster
// Ready without alarms, and say so in its events. It returns the cluster and whether every
// step passed.
func noSpaceRecovery(ctx context.Context, in Input, r *report.Report) (*etcdv1alpha1.EtcdCluster, bool) {
	c, ok := newCluster(in, r, "sc-l5-", func(c *etcdv1alpha1.EtcdCluster) {
		c.Name += "-nospace"
		c.Spec.Size = autoPilotSize
		c.Spec.Etcd.QuotaBackendBytes = ptr.To(noSpaceQuota.DeepCopy())
		c.Spec.Maintenance.NoSpaceRecovery = etcdv1alpha1.NoSpaceRecoveryAuto
		// Autoscaling would raise the quota before the data reaches it.
		c.Spec.Storage.Autoscaling = &etcdv1alpha1.StorageAutoscalingSpec{Mode: etcdv1alpha1.StorageAutoscalingDisabled}
	})
	if !ok {
		return nil, false
	}
	var keep map[string]string
	var churn churned
	var after string
	ok = runSteps(r,
		createKeeping(ctx, in, c, "spec.maintenance.noSpaceRecovery", func(c *etcdv1alpha1.EtcdCluster) bool {
			return c.Spec.Maintenance.NoSpaceRecovery == etcdv1alpha1.NoSpaceRecoveryAuto
		}),
		settleStep(ctx, in, c, autoPilotSize),
		step{fmt.Sprintf("write %d keys", keepKeys), func() error {
			var err error
			keep, err = writeKeys(ctx, in, c, "/keep", keepKeys)
			return err
		}},
		step{fmt.Sprintf("fill the %s quota: rewrite one key with %d KiB values until etcd refuses a write with NOSPACE", noSpaceQuota.String(), churnValueSize>>10), func() error {
			var err error
			churn, err = fillQuota(ctx, in, r, c)
			return err
		}},
		step{"wait until writes work again, with no action by the test", func() error {
			var err error
			after, err = writeAgain(ctx, in, r, c)
			return err
		}},
		step{fmt.Sprintf("read back the %d keys and the rewritten key", keepKeys), func() error {
			return checkAfterNoSpace(ctx, in, c, keep, after, churn)
		}},
		step{fmt.Sprintf("wait for %d ready members, Available and Ready, without alarms", autoPilotSize), func() error {
			return in.Env.WaitFor(ctx, c, "ready members without alarms", framework.All(framework.Settled(autoPilotSize), framework.NoAlarms()))
		}},
		step{"look for the events " + framework.EventNoSpaceDisarmed + " and " + framework.EventNoSpaceRecovered, func() error {
			return noSpaceEvents(ctx, in, r, c)
		}},
	)
	return c, ok
}

// verifiedBackup: a backup of c to a new claim with spec.verify must succeed, then be
// proven restorable: restored into a throwaway member, it holds what it recorded
// (Verified=True, status.verification at or past the backup's revision).
func verifiedBackup(ctx context.Context, in Input, r *report.Report, c *etcdv1alpha1.EtcdCluster) {
	claim := framework.BackupClaim(c.Name+"-backups", c.Namespace, backupClaimSize)
	b := framework.NewBackup(c.Name+"-verified", c, claim.Name, backupTimeout)
	b.Spec.Verify = true
	runSteps(r,
		step{"create PersistentVolumeClaim " + claim.Name, func() error { return in.Env.CreateClaim(ctx, claim) }},
		step{"create EtcdBackup " + b.Name + " with spec.verify", func() error {
			if err := in.Env.CreateBackup(ctx, b); err != nil {
				return err
			}
			if !b.Spec.Verify {
				return errors.New("the API server dropped spec.verify: the EtcdBackup CRD installed predates it")
			}
			return nil
		}},
		step{"wait until the backup has succeeded", func() error { return in.Env.WaitForBackup(ctx, b) }},
		step{"wait until the backup is verified: restored into a throwaway member, it holds what it recorded", func() error {
			wctx, cancel := context.WithTimeout(ctx, maintenanceWait)
			defer cancel()
			if err := in.Env.WaitForVerification(wctx, b); err != nil {
				return err
			}
			v := b.Status.Verification
			if v == nil || b.Status.Snapshot == nil || v.RestoredRevision < b.Status.Snapshot.Revision {
				return fmt.Errorf("status.verification (%+v) does not show a member at or past the backup's revision (status.snapshot %+v)", v, b.Status.Snapshot)
			}
			r.Logf("verified: restored at revision %d (the backup recorded %d)", v.RestoredRevision, b.Status.Snapshot.Revision)
			return nil
		}},
	)
}

// createKeeping creates c and checks that the API server kept field, which kept says:
// an EtcdCluster CRD older than the feature drops it without an error.
func createKeeping(ctx context.Context, in Input, c *etcdv1alpha1.EtcdCluster, field string, kept func(*etcdv1alpha1.EtcdCluster) bool) step {
	return step{"create EtcdCluster " + c.Name, func() error {
		if err := in.Env.Create(ctx, c); err != nil {
			return err
		}
		if !kept(c) {
			return fmt.Errorf("the API server dropped %s: the EtcdCluster CRD installed predates it", field)
		}
		return nil
	}}
}

// fragment writes garbageValues large values to c and overwrites each with a few bytes:
// once the history is compacted, the large ones are free pages in every member's file.
// Overwriting frees them as deleting would; the test's etcd client has no delete.
func fragment(ctx context.Context, in Input, r *report.Report, c *etcdv1alpha1.EtcdCluster) error {
	cli, err := in.Env.Connect(ctx, c)
	if err != nil {
		return err
	}
	defer func() { _ = cli.Close() }() // every write was acknowledged or failed by then
	prefix := keyPrefix(c) + "/garbage"
	large := strings.Repeat("x", garbageValueSize)
	for _, value := range []string{large, "overwritten"} {
		for i := range garbageValues {
			if err := cli.Put(ctx, fmt.Sprintf("%s/%02d", prefix, i), value); err != nil {
				return err
			}
		}
	}
	r.Logf("wrote %s under %s/ and overwrote each", framework.MiB(garbageValues*garbageValueSize), prefix)
	return nil
}

// compact compacts c's history up to the revision the member behind the client Service
// reports, and logs what that member's file holds afterwards.
func compact(ctx context.Context, in Input, r *report.Report, c *etcdv1alpha1.EtcdCluster) error {
	endpoint, err := framework.ClientEndpoint(c)
	if err != nil {
		return err
	}
	cli, err := in.Env.Connect(ctx, c)
	if err != nil {
		return err
	}
	defer func() { _ = cli.Close() }() // the compaction is applied or failed by then
	before, err := cli.Status(ctx, endpoint)
	if err != nil {
		return err
	}
	if err := cli.Compact(ctx, before.Revision); err != nil && !etcd.IsCompacted(err) {
		return err
	}
	// etcd counts the pages a compaction freed as free (dbSizeInUse drops) only once a
	// later write commits on the member: on an idle cluster they would stay in use.
	if err := cli.Put(ctx, keyPrefix(c)+"/after-compaction", "x"); err != nil {
		return fmt.Errorf("writing after the compaction: %w", err)
	}
	after, err := cli.Status(ctx, endpoint)
	if err != nil {
		return err
	}
	r.Logf("compacted at revision %d; the member behind %s now has a %s file with %s in use",
		before.Revision, endpoint, framework.MiB(after.DBSize), framework.MiB(after.DBSizeInUse))
	return nil
}

// trickle writes one small key to c every autoPilotPoll until ctx ends or stop is called,
// ignoring failures (the wait that runs beside it says what matters). It works on a copy
// of c: the wait beside it reads c into the same object.
func trickle(ctx context.Context, in Input, c *etcdv1alpha1.EtcdCluster) (stop func()) {
	c = c.DeepCopy()
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		cli, err := in.Env.Connect(ctx, c)
		if err != nil {
			return
		}
		defer func() { _ = cli.Close() }()
		for i := 0; ; i++ {
			_ = cli.Put(ctx, keyPrefix(c)+"/trickle", fmt.Sprintf("%d", i))
			select {
			case <-ctx.Done():
				return
			case <-time.After(autoPilotPoll):
			}
		}
	}()
	return func() { cancel(); <-done }
}

// defragmentationEvents waits for a MemberDefragmented event about every member of c, the
// leader's last, and logs the order.
func defragmentationEvents(ctx context.Context, in Input, r *report.Report, c *etcdv1alpha1.EtcdCluster) error {
	var order []string
	err := retryFor(ctx, eventsWait, autoPilotPoll, func(ctx context.Context) error {
		events, err := in.Env.EventsFor(ctx, c)
		if err != nil {
			return err
		}
		order, err = framework.CheckDefragmentationOrder(c, events)
		return err
	})
	if err != nil {
		return err
	}
	r.Logf("members defragmented in the order %s: the leader last", strings.Join(order, ", "))
	return nil
}

// churned is what fillQuota wrote to its key: the last value etcd acknowledged, and the one
// it refused with NOSPACE. etcd applies the write that crosses the quota and answers it
// with NOSPACE all the same, so the key may hold either.
type churned struct {
	key, acknowledged, refused string
}

// fillQuota rewrites one key of c with large values until etcd refuses a write with
// NOSPACE. Any other failure, or no refusal within churnWrites, fails.
func fillQuota(ctx context.Context, in Input, r *report.Report, c *etcdv1alpha1.EtcdCluster) (churned, error) {
	w := churned{key: keyPrefix(c) + "/churn"}
	cli, err := in.Env.Connect(ctx, c)
	if err != nil {
		return w, err
	}
	defer func() { _ = cli.Close() }() // every write was acknowledged or refused by then
	filler := strings.Repeat("y", churnValueSize-4)
	for i := range churnWrites {
		value := fmt.Sprintf("%04d%s", i, filler)
		err := cli.Put(ctx, w.key, value)
		switch {
		case err == nil:
			w.acknowledged = value
		case framework.IsNoSpace(err):
			w.refused = value
			r.Logf("etcd acknowledged %d writes of %d KiB to %s, then refused one: %v", i, churnValueSize>>10, w.key, err)
			return w, nil
		default:
			return w, fmt.Errorf("write %d of %d KiB failed, but not with NOSPACE: %w", i+1, churnValueSize>>10, err)
		}
	}
	return w, fmt.Errorf("etcd acknowledged all %d writes of %d KiB (%s) with a quota of %s: no NOSPACE",
		churnWrites, churnValueSize>>10, framework.MiB(churnWrites*churnValueSize), noSpaceQuota.String())
}

// writtenAgain is the value of the key written once c accepts writes again.
const writtenAgain = "writes work again"

// writeAgain tries a write to c every autoPilotPoll until it is acknowledged, for at most
// maintenanceWait, and returns its key.
func writeAgain(ctx context.Context, in Input, r *report.Report, c *etcdv1alpha1.EtcdCluster) (string, error) {
	key := keyPrefix(c) + "/after-nospace"
	cli, err := in.Env.Connect(ctx, c)
	if err != nil {
		return key, err
	}
	defer func() { _ = cli.Close() }() // the write was acknowledged or given up by then
	start, tries := time.Now(), 0
	err = retryFor(ctx, maintenanceWait, autoPilotPoll, func(ctx context.Context) error {
		tries++
		return cli.Put(ctx, key, writtenAgain)
	})
	if err != nil {
		return key, fmt.Errorf("writes still fail after %d tries in %s: %w", tries, time.Since(start).Round(time.Second), err)
	}
	r.Logf("write %d to %s acknowledged, %s after the first try", tries, key, time.Since(start).Round(time.Millisecond))
	return key, nil
}

// checkAfterNoSpace reads back from c the keys of keep, the key after written once writes
// worked again, and the churned key, which must hold the last value acknowledged or the one
// refused with NOSPACE.
func checkAfterNoSpace(ctx context.Context, in Input, c *etcdv1alpha1.EtcdCluster, keep map[string]string, after string, w churned) error {
	want := maps.Clone(keep)
	want[after] = writtenAgain
	cli, err := in.Env.Connect(ctx, c)
	if err != nil {
		return err
	}
	defer func() { _ = cli.Close() }() // nothing to do about a failed close of a read-only client
	if err := framework.CheckKeys(ctx, cli, want); err != nil {
		return err
	}
	got, found, err := cli.Get(ctx, w.key)
	switch {
	case err != nil:
		return err
	case !found:
		return fmt.Errorf("key %s is gone", w.key)
	case got != w.acknowledged && got != w.refused:
		// The values start with their number: enough to tell them apart.
		return fmt.Errorf("key %s holds value %.4s, neither the last acknowledged (%.4s) nor the refused one (%.4s)",
			w.key, got, w.acknowledged, w.refused)
	}
	return nil
}

// noSpaceEvents waits for the NoSpaceDisarmed and NoSpaceRecovered events about c, and
// logs the events about it.
func noSpaceEvents(ctx context.Context, in Input, r *report.Report, c *etcdv1alpha1.EtcdCluster) error {
	return waitEvents(ctx, in, r, c, framework.EventNoSpaceDisarmed, framework.EventNoSpaceRecovered)
}
