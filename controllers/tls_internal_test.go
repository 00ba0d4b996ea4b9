package controllers

import (
	"testing"
	"time"

	"github.com/etcdpilot/etcdpilot/internal/pki"
)

// In mode Secrets one Secret may hold both the member and the client certificate: it is
// reported once (status.tls.certificates is a map keyed by the Secret).
func TestCertificateStatusesNameEachSecretOnce(t *testing.T) {
	now := time.Date(2026, 11, 25, 0, 0, 0, 0, time.UTC)
	caPair, err := pki.NewCA("user CA", 24*time.Hour, now)
	if err != nil {
		t.Fatal(err)
	}
	ca, err := pki.LoadCA(caPair)
	if err != nil {
		t.Fatal(err)
	}
	member, err := ca.IssueServer("m", []string{"*.p.ns.svc"}, nil, time.Hour, now)
	if err != nil {
		t.Fatal(err)
	}
	got, err := certificateStatuses(caPair.CertPEM, secretCert{"both", member.CertPEM}, secretCert{"both", member.CertPEM})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0].Secret != "both" || !got[0].NotAfter.Time.Equal(now.Add(time.Hour)) {
		t.Errorf("certificates %+v, want one of Secret both ending at %s", got, now.Add(time.Hour))
	}
	if _, err := certificateStatuses(caPair.CertPEM, secretCert{"broken", []byte("junk")}); err == nil {
		t.Error("an unreadable certificate: no error")
	}
}
