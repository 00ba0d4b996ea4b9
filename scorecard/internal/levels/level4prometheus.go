package levels

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	etcdv1alpha1 "github.com/etcdpilot/etcdpilot/api/v1alpha1"
	"github.com/etcdpilot/etcdpilot/scorecard/internal/report"
	"github.com/etcdpilot/etcdpilot/test/framework"
)

// Level 4's checks through Prometheus's HTTP API: what a real Prometheus scrapes of the
// cluster and of the operator, which of the cluster's rules it evaluates, and whether a
// shipped alert goes off for a real fault and clears after it.

// prometheusOperator waits until Prometheus scrapes the operator's metrics Service (svc, as
// the bundle ships it, found wherever the operator runs) with a target up, and holds the
// operator's etcdpilot_cluster_condition{condition="Available"} 1 of c under c's own
// namespace, as the operator's alerts read it.
func prometheusOperator(ctx context.Context, in Input, r *report.Report, c *etcdv1alpha1.EtcdCluster, svc *corev1.Service, prom *framework.Prometheus) error {
	s, err := in.Env.OperatorService(ctx, svc)
	if err != nil {
		return err
	}
	var found string
	err = retryFor(ctx, prometheusWait, insightsPoll, func(ctx context.Context) error {
		targets, err := prom.Targets(ctx)
		if err != nil {
			return err
		}
		if found, err = framework.CheckOperatorTargets(targets, s.Namespace, s.Name); err != nil {
			return err
		}
		return querySeries(ctx, prom, framework.AvailableQuery(c), framework.CheckAvailableSeries)
	})
	if err == nil {
		r.Logf("%s; %s is 1", found, framework.AvailableQuery(c))
	}
	return err
}

// prometheusMembers waits until Prometheus scrapes every member pod of c through c's
// PodMonitor, each target up and labelled with the cluster (CheckMemberTargets), and holds
// etcd_server_has_leader 1 for each member under the labels the rules select it by.
func prometheusMembers(ctx context.Context, in Input, r *report.Report, c *etcdv1alpha1.EtcdCluster, prom *framework.Prometheus) error {
	var found string
	err := retryFor(ctx, prometheusWait, insightsPoll, func(ctx context.Context) error {
		pods, err := in.Env.MemberPods(ctx, c)
		if err != nil {
			return err
		}
		names := make([]string, len(pods))
		for i := range pods {
			names[i] = pods[i].Name
		}
		targets, err := prom.Targets(ctx)
		if err != nil {
			return err
		}
		if found, err = framework.CheckMemberTargets(targets, c, names); err != nil {
			return err
		}
		return querySeries(ctx, prom, framework.LeaderQuery(c), func(s []framework.Sample) error { return framework.CheckLeaderSeries(s, names) })
	})
	if err == nil {
		r.Logf("%s; %s is 1 for each", found, framework.LeaderQuery(c))
	}
	return err
}

// querySeries runs the query q and says what check finds wrong with its answer.
func querySeries(ctx context.Context, prom *framework.Prometheus, q string, check func([]framework.Sample) error) error {
	samples, err := prom.Query(ctx, q)
	if err != nil {
		return err
	}
	if err := check(samples); err != nil {
		return fmt.Errorf("%s: %w", q, err)
	}
	return nil
}

// clusterRules waits until Prometheus evaluates the rule group of c's PrometheusRule: every
// alert of the shipped group etcd, scoped to c, each without error (CheckClusterRules). The
// PrometheusRule is read again at every look: the operator replaces it when it differs from
// what it wants, and a new one has a new UID and file.
func clusterRules(ctx context.Context, in Input, r *report.Report, c *etcdv1alpha1.EtcdCluster, prom *framework.Prometheus) error {
	want, err := framework.ClusterRuleNames(c)
	if err != nil {
		return err
	}
	var found string
	err = retryFor(ctx, prometheusWait, insightsPoll, func(ctx context.Context) error {
		uid, err := in.Env.PrometheusRuleUID(ctx, c)
		if err != nil {
			return err
		}
		groups, err := prom.Rules(ctx)
		if err != nil {
			return err
		}
		found, err = framework.CheckClusterRules(groups, c, uid, want)
		return err
	})
	if err == nil {
		r.Logf("%s", found)
	}
	return err
}

// backupFailingAlert proves that a shipped alert, unchanged, goes off for a real fault of
// c and clears once the fault is gone. The fault is a backup of c to a claim that does not
// exist, which the operator fails at once (DestinationNotFound); EtcdBackupFailing has no
// for, so it fires within a scrape and an evaluation. A backup of c to a new claim then
// succeeds, and the alert must clear. Before the fault, the rule must be loaded and healthy
// and the alert inactive for c, so that what the test sees is the fault's doing.
func backupFailingAlert(ctx context.Context, in Input, r *report.Report, c *etcdv1alpha1.EtcdCluster, prom *framework.Prometheus) error {
	doomed := framework.NewBackup(c.Name+"-doomed", c, c.Name+"-no-such-claim", backupTimeout)
	claim := framework.BackupClaim(c.Name+"-backups", c.Namespace, backupClaimSize)
	good := framework.NewBackup(c.Name+"-backup", c, claim.Name, backupTimeout)
	var failedAt, succeededAt time.Time
	return firstFailure(r,
		step{"find the rule " + framework.AlertBackupFailing + " loaded and healthy, and inactive for EtcdCluster " + c.Name, func() error {
			return alertReady(ctx, r, c, prom)
		}},
		step{fmt.Sprintf("create EtcdBackup %s to claim %s, which does not exist", doomed.Name, doomed.Spec.Destination.PVC.ClaimName), func() error {
			return in.Env.CreateBackup(ctx, doomed)
		}},
		step{"wait until the backup has failed", func() error {
			if err := failedAsMeant(doomed, in.Env.WaitForBackup(ctx, doomed)); err != nil {
				return err
			}
			failedAt = time.Now()
			r.Logf("%s: %s", doomed.Name, framework.DescribeBackup(doomed))
			return nil
		}},
		step{"wait until " + framework.AlertBackupFailing + " is pending or firing for EtcdCluster " + c.Name, func() error {
			states, err := waitAlert(ctx, c, prom, true)
			if err == nil {
				r.Logf("%s %s for EtcdCluster %s %s after its backup failed", framework.AlertBackupFailing, orNone(states), c.Name, since(failedAt))
			}
			return err
		}},
		step{"create PersistentVolumeClaim " + claim.Name, func() error { return in.Env.CreateClaim(ctx, claim) }},
		step{"create EtcdBackup " + good.Name, func() error { return in.Env.CreateBackup(ctx, good) }},
		step{"wait until the backup has succeeded", func() error {
			if err := in.Env.WaitForBackup(ctx, good); err != nil {
				return err
			}
			succeededAt = time.Now()
			return nil
		}},
		step{"wait until " + framework.AlertBackupFailing + " clears for EtcdCluster " + c.Name, func() error {
			_, err := waitAlert(ctx, c, prom, false)
			if err == nil {
				r.Logf("%s cleared for EtcdCluster %s %s after its backup succeeded", framework.AlertBackupFailing, c.Name, since(succeededAt))
			}
			return err
		}},
	)
}

// alertReady waits until Prometheus evaluates the alerting rule EtcdBackupFailing without
// error, and checks that the alert is not active for c before the test causes its fault.
func alertReady(ctx context.Context, r *report.Report, c *etcdv1alpha1.EtcdCluster, prom *framework.Prometheus) error {
	var found string
	err := retryFor(ctx, prometheusWait, insightsPoll, func(ctx context.Context) error {
		groups, err := prom.Rules(ctx)
		if err != nil {
			return err
		}
		g, rule, ok := framework.FindRule(groups, framework.AlertBackupFailing)
		switch {
		case !ok:
			return fmt.Errorf("no alerting rule %s among the %d rule groups Prometheus evaluates: the operator's PrometheusRule (config/prometheus) is not loaded",
				framework.AlertBackupFailing, len(groups))
		case !rule.Healthy():
			return fmt.Errorf("rule %s of %s is %s: %s", rule.Name, g.File, rule.Health, rule.LastError)
		}
		found = fmt.Sprintf("rule %s of group %s (%s) is evaluated without error", rule.Name, g.Name, g.File)
		return nil
	})
	if err != nil {
		return err
	}
	r.Logf("%s", found)
	alerts, err := prom.Alerts(ctx)
	if err != nil {
		return err
	}
	if states := framework.AlertStates(alerts, framework.AlertBackupFailing, framework.ClusterSeriesLabels(c)); framework.Active(states) {
		return fmt.Errorf("%s is already %s for EtcdCluster %s, before any backup of it failed", framework.AlertBackupFailing, orNone(states), c.Name)
	}
	return nil
}

// waitAlert waits until EtcdBackupFailing is active (pending or firing) for c, or inactive,
// as active says, and returns its states as last seen. When it does not get there,
// the error tells what Prometheus holds of the operator's backup timestamps of c, which the
// rule reads.
func waitAlert(ctx context.Context, c *etcdv1alpha1.EtcdCluster, prom *framework.Prometheus, active bool) ([]string, error) {
	var states []string
	err := retryFor(ctx, alertWait, insightsPoll, func(ctx context.Context) error {
		alerts, err := prom.Alerts(ctx)
		if err != nil {
			return err
		}
		states = framework.AlertStates(alerts, framework.AlertBackupFailing, framework.ClusterSeriesLabels(c))
		if framework.Active(states) != active {
			return fmt.Errorf("%s for EtcdCluster %s is %s", framework.AlertBackupFailing, c.Name, orInactive(states))
		}
		return nil
	})
	if err != nil {
		q := framework.BackupTimestampsQuery(c)
		samples, qerr := prom.Query(ctx, q)
		if qerr != nil {
			return states, fmt.Errorf("%w (%s: %w)", err, q, qerr)
		}
		return states, fmt.Errorf("%w (%s: %s)", err, q, describeSamples(samples))
	}
	return states, nil
}

// failedAsMeant says what is wrong with b, a backup meant to fail, once waiting for it
// returned waitErr: its Succeeded condition must be False.
func failedAsMeant(b *etcdv1alpha1.EtcdBackup, waitErr error) error {
	cond := meta.FindStatusCondition(b.Status.Conditions, etcdv1alpha1.ConditionSucceeded)
	switch {
	case cond != nil && cond.Status == metav1.ConditionFalse:
		return nil
	case cond != nil && cond.Status == metav1.ConditionTrue:
		return fmt.Errorf("EtcdBackup %s succeeded, to a claim that does not exist: %s", b.Name, framework.DescribeBackup(b))
	case waitErr != nil:
		return waitErr
	}
	return fmt.Errorf("EtcdBackup %s has not failed: %s", b.Name, framework.DescribeBackup(b))
}

// describeSamples lists samples as name{labels} value, or "none".
func describeSamples(samples []framework.Sample) string {
	out := make([]string, len(samples))
	for i, s := range samples {
		out[i] = fmt.Sprintf("%s%v %g", s.Name, s.Labels, s.Value)
	}
	return orNone(out)
}

func orInactive(states []string) string {
	if len(states) == 0 {
		return "inactive"
	}
	return orNone(states)
}

// since is the time gone by since t, to the second.
func since(t time.Time) string { return time.Since(t).Round(time.Second).String() }
