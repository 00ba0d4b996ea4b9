package backup

import (
	"bytes"
	"slices"

	etcdv1alpha1 "github.com/etcdpilot/etcdpilot/api/v1alpha1"
)

// DefaultCompression is the compression of a backup whose spec does not say: the API's
// default, for objects that reached the operator without the API server's defaulting.
const DefaultCompression = etcdv1alpha1.BackupCompressionZstd

// LegacyCompression is what every artifact was before the compression could be chosen, and
// so what a backup agent that does not report its compression wrote.
const LegacyCompression = etcdv1alpha1.BackupCompressionGzip

// Compressions lists every compression an artifact may have, in the API's order.
var Compressions = []etcdv1alpha1.BackupCompression{
	etcdv1alpha1.BackupCompressionZstd, etcdv1alpha1.BackupCompressionGzip, etcdv1alpha1.BackupCompressionNone,
}

// CompressionOf is the compression spec asks for, DefaultCompression when it is empty.
func CompressionOf(spec etcdv1alpha1.EtcdBackupSpec) etcdv1alpha1.BackupCompression {
	if spec.Compression == "" {
		return DefaultCompression
	}
	return spec.Compression
}

// ReportedCompression is the compression of an artifact as the agent reported it:
// LegacyCompression when it did not (an agent older than the choice, whose Job outlived
// an operator upgrade).
func ReportedCompression(reported string) etcdv1alpha1.BackupCompression {
	if reported == "" {
		return LegacyCompression
	}
	return etcdv1alpha1.BackupCompression(reported)
}

// Known reports whether c is one of Compressions.
func Known(c etcdv1alpha1.BackupCompression) bool {
	return slices.Contains(Compressions, c)
}

// Suffix ends the name of an artifact with compression c: the snapshot is a bbolt database
// (.db), then the compressor's usual extension. It is "" for an unknown compression.
func Suffix(c etcdv1alpha1.BackupCompression) string {
	switch c {
	case etcdv1alpha1.BackupCompressionZstd:
		return ".db.zst"
	case etcdv1alpha1.BackupCompressionGzip:
		return ".db.gz"
	case etcdv1alpha1.BackupCompressionNone:
		return ".db"
	}
	return ""
}

// The first bytes of each format. gzip (RFC 1952) and zstd (RFC 8878) start with their
// magic numbers; a bbolt database starts with a meta page, whose 16-byte page header is
// followed by bbolt's magic number 0xED0CDAED, written little-endian on the platforms etcd
// runs on.
var (
	gzipMagic  = []byte{0x1f, 0x8b}
	zstdMagic  = []byte{0x28, 0xb5, 0x2f, 0xfd}
	bboltMagic = []byte{0xed, 0xda, 0x0c, 0xed}
)

const bboltMagicOffset = 16

// SniffLen is how many leading bytes of an artifact Sniff needs.
const SniffLen = bboltMagicOffset + 4

// Sniff returns the compression the first bytes of an artifact reveal: gzip or zstd by
// their magic numbers, none for an uncompressed etcd snapshot (a bbolt database), and ""
// for anything else. head holds the first SniffLen bytes, or the whole artifact when it is
// shorter.
func Sniff(head []byte) etcdv1alpha1.BackupCompression {
	switch {
	case bytes.HasPrefix(head, gzipMagic):
		return etcdv1alpha1.BackupCompressionGzip
	case bytes.HasPrefix(head, zstdMagic):
		return etcdv1alpha1.BackupCompressionZstd
	case len(head) >= SniffLen && bytes.Equal(head[bboltMagicOffset:SniffLen], bboltMagic):
		return etcdv1alpha1.BackupCompressionNone
	}
	return ""
}
