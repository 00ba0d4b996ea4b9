package backup_test

import (
	"bytes"
	"testing"

	. "github.com/onsi/gomega"

	etcdv1alpha1 "github.com/etcdpilot/etcdpilot/api/v1alpha1"
	"github.com/etcdpilot/etcdpilot/internal/backup"
)

func TestCompressionOf(t *testing.T) {
	g := NewWithT(t)
	g.Expect(backup.CompressionOf(etcdv1alpha1.EtcdBackupSpec{})).To(Equal(etcdv1alpha1.BackupCompressionZstd), "the API's default")
	for _, c := range backup.Compressions {
		g.Expect(backup.CompressionOf(etcdv1alpha1.EtcdBackupSpec{Compression: c})).To(Equal(c))
	}
}

func TestReportedCompression(t *testing.T) {
	g := NewWithT(t)
	g.Expect(backup.ReportedCompression("")).To(Equal(etcdv1alpha1.BackupCompressionGzip), "an agent that says nothing wrote gzip")
	g.Expect(backup.ReportedCompression("zstd")).To(Equal(etcdv1alpha1.BackupCompressionZstd))
	g.Expect(backup.ReportedCompression("none")).To(Equal(etcdv1alpha1.BackupCompressionNone))
}

func TestKnownAndSuffix(t *testing.T) {
	g := NewWithT(t)
	seen := map[string]bool{}
	for _, c := range backup.Compressions {
		g.Expect(backup.Known(c)).To(BeTrue())
		s := backup.Suffix(c)
		g.Expect(s).To(HavePrefix(".db"))
		g.Expect(seen[s]).To(BeFalse(), "two compressions share the suffix %s", s)
		seen[s] = true
	}
	g.Expect(backup.Known("lz4")).To(BeFalse())
	g.Expect(backup.Known("")).To(BeFalse())
	g.Expect(backup.Suffix("lz4")).To(BeEmpty())
}

func TestSniff(t *testing.T) {
	// The start of a bbolt database: a page header (id 0, meta flag 0x04), then the meta
	// page's magic.
	bbolt := append(make([]byte, 8), 0x04, 0, 0, 0, 0, 0, 0, 0, 0xed, 0xda, 0x0c, 0xed, 2, 0, 0, 0)
	for _, tc := range []struct {
		name string
		head []byte
		want etcdv1alpha1.BackupCompression
	}{
		{"gzip", []byte{0x1f, 0x8b, 0x08, 0x00}, etcdv1alpha1.BackupCompressionGzip},
		{"zstd", []byte{0x28, 0xb5, 0x2f, 0xfd, 0x04}, etcdv1alpha1.BackupCompressionZstd},
		{"zstd, just the magic", []byte{0x28, 0xb5, 0x2f, 0xfd}, etcdv1alpha1.BackupCompressionZstd},
		{"bbolt database", bbolt[:backup.SniffLen], etcdv1alpha1.BackupCompressionNone},
		{"bbolt database, more than needed", append(bbolt, bytes.Repeat([]byte{1}, 100)...), etcdv1alpha1.BackupCompressionNone},
		{"bbolt magic elsewhere", append([]byte{0}, bbolt[:backup.SniffLen-1]...), ""},
		{"shorter than a bbolt header", bbolt[:backup.SniffLen-1], ""},
		{"text", []byte("this is not a snapshot at all"), ""},
		{"half a gzip magic", []byte{0x1f}, ""},
		{"empty", nil, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			NewWithT(t).Expect(backup.Sniff(tc.head)).To(Equal(tc.want))
		})
	}
}
