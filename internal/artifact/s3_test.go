package artifact_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"io"
	"runtime"
	"testing"
	"time"

	. "github.com/onsi/gomega"

	etcdv1alpha1 "github.com/etcdpilot/etcdpilot/api/v1alpha1"
	"github.com/etcdpilot/etcdpilot/internal/artifact"
	"github.com/etcdpilot/etcdpilot/internal/artifact/s3test"
)

// The S3 tests run against a real S3 server, versitygw, on 127.0.0.1; they skip when
// VERSITYGW is unset.

func TestS3RoundTrip(t *testing.T) {
	g := NewWithT(t)
	ctx := t.Context()
	gw := s3test.Start(t, s3test.Options{})
	gw.MakeBucket(t, "backups")
	store := newS3(t, gw.Config("backups"))

	// More than one part, and not a multiple of the part size.
	content := pseudoRandom(artifact.PartSize + 12345)
	g.Expect(store.Put(ctx, "ns/cluster/backup.db.gz", bytes.NewReader(content))).To(Succeed())
	g.Expect(gw.Objects(t, "backups")).To(ConsistOf("ns/cluster/backup.db.gz"))

	size, err := store.Stat(ctx, "ns/cluster/backup.db.gz")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(size).To(Equal(int64(len(content))))
	g.Expect(sha256.Sum256(readAll(t, store, "ns/cluster/backup.db.gz"))).To(Equal(sha256.Sum256(content)))

	// A small artifact, replacing the first.
	g.Expect(store.Put(ctx, "ns/cluster/backup.db.gz", bytes.NewReader([]byte("small")))).To(Succeed())
	g.Expect(readAll(t, store, "ns/cluster/backup.db.gz")).To(Equal([]byte("small")))

	g.Expect(store.Delete(ctx, "ns/cluster/backup.db.gz")).To(Succeed())
	g.Expect(gw.Objects(t, "backups")).To(BeEmpty())
	g.Expect(store.Delete(ctx, "ns/cluster/backup.db.gz")).To(Succeed(), "deleting twice is fine")

	_, err = store.Open(ctx, "ns/cluster/backup.db.gz")
	g.Expect(err).To(MatchError(artifact.ErrNotFound))
	g.Expect(artifact.Reason(err)).To(Equal(etcdv1alpha1.ReasonDestinationNotFound))
	_, err = store.Stat(ctx, "ns/cluster/backup.db.gz")
	g.Expect(err).To(MatchError(artifact.ErrNotFound))
}

// A Put whose reader fails, or whose context ends, after a part was uploaded leaves no
// object and no unfinished upload.
func TestS3PutFailureLeavesNothing(t *testing.T) {
	g := NewWithT(t)
	gw := s3test.Start(t, s3test.Options{})
	gw.MakeBucket(t, "backups")
	store := newS3(t, gw.Config("backups"))

	errBroken := errors.New("snapshot stream broke")
	err := store.Put(t.Context(), "broken.db.gz", failingReader(artifact.PartSize+1<<20, errBroken))
	g.Expect(err).To(MatchError(errBroken))
	g.Expect(gw.Objects(t, "backups")).To(BeEmpty())

	ctx, cancel := context.WithCancel(t.Context())
	r := &cancelAfter{r: io.LimitReader(zeros{}, 3*artifact.PartSize), n: artifact.PartSize + 1<<20, cancel: cancel}
	err = store.Put(ctx, "cancelled.db.gz", r)
	g.Expect(err).To(MatchError(context.Canceled))
	g.Expect(gw.Objects(t, "backups")).To(BeEmpty(), "the upload is aborted although its context ended")
}

// Put's memory does not grow with the artifact: minio-go's default for a stream of unknown
// size would allocate a buffer of about 560 MiB.
func TestS3PutMemoryIsFlat(t *testing.T) {
	g := NewWithT(t)
	gw := s3test.Start(t, s3test.Options{})
	gw.MakeBucket(t, "backups")
	store := newS3(t, gw.Config("backups"))

	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	g.Expect(store.Put(t.Context(), "big.db.gz", io.LimitReader(zeros{}, 4*artifact.PartSize))).To(Succeed())
	runtime.ReadMemStats(&after)
	allocated := after.TotalAlloc - before.TotalAlloc
	t.Logf("uploading %d MiB allocated %d MiB", 4*artifact.PartSize>>20, allocated>>20)
	g.Expect(allocated).To(BeNumerically("<", 3*artifact.PartSize), "one part buffer, not one per part nor a huge one")
}

func TestS3Errors(t *testing.T) {
	gw := s3test.Start(t, s3test.Options{})
	gw.MakeBucket(t, "backups")
	content := []byte("snapshot")

	t.Run("WrongSecret", func(t *testing.T) {
		g := NewWithT(t)
		cfg := gw.Config("backups")
		cfg.SecretAccessKey = "wrong"
		err := newS3(t, cfg).Put(t.Context(), "a.db.gz", bytes.NewReader(content))
		g.Expect(err).To(HaveOccurred())
		g.Expect(artifact.Reason(err)).To(Equal(etcdv1alpha1.ReasonDestinationRejected), "%v", err)
		g.Expect(gw.Objects(t, "backups")).To(BeEmpty())
	})

	t.Run("UnknownAccessKey", func(t *testing.T) {
		g := NewWithT(t)
		cfg := gw.Config("backups")
		cfg.AccessKeyID = "nobody"
		err := newS3(t, cfg).Put(t.Context(), "a.db.gz", bytes.NewReader(content))
		g.Expect(artifact.Reason(err)).To(Equal(etcdv1alpha1.ReasonDestinationRejected), "%v", err)
	})

	t.Run("MissingBucket", func(t *testing.T) {
		g := NewWithT(t)
		store := newS3(t, gw.Config("no-such-bucket"))
		err := store.Put(t.Context(), "a.db.gz", bytes.NewReader(content))
		g.Expect(err).To(MatchError(ContainSubstring("bucket no-such-bucket does not exist")))
		g.Expect(artifact.Reason(err)).To(Equal(etcdv1alpha1.ReasonDestinationNotFound))
		_, err = store.Open(t.Context(), "a.db.gz")
		g.Expect(artifact.Reason(err)).To(Equal(etcdv1alpha1.ReasonDestinationNotFound), "%v", err)
	})

	t.Run("TLSWithoutItsCA", func(t *testing.T) {
		g := NewWithT(t)
		tlsGW := s3test.Start(t, s3test.Options{TLS: true})
		tlsGW.MakeBucket(t, "backups")
		g.Expect(newS3(t, tlsGW.Config("backups")).Put(t.Context(), "a.db.gz", bytes.NewReader(content))).
			To(Succeed(), "trusting the CA bundle")

		cfg := tlsGW.Config("backups")
		cfg.CABundle = nil
		err := newS3(t, cfg).Put(t.Context(), "b.db.gz", bytes.NewReader(content))
		g.Expect(artifact.Reason(err)).To(Equal(etcdv1alpha1.ReasonDestinationRejected), "%v", err)
	})

	// Last: it stops the server.
	t.Run("ServerDown", func(t *testing.T) {
		g := NewWithT(t)
		store := newS3(t, gw.Config("backups"))
		gw.Stop(t)
		start := time.Now()
		err := store.Put(t.Context(), "a.db.gz", bytes.NewReader(content))
		t.Logf("failed after %v: %v", time.Since(start), err)
		g.Expect(artifact.Reason(err)).To(Equal(etcdv1alpha1.ReasonDestinationUnreachable), "%v", err)
	})
}

func TestNewS3RejectsBadConfig(t *testing.T) {
	for _, cfg := range []artifact.S3Config{
		{Endpoint: "s3.amazonaws.com", Bucket: "b"},
		{Endpoint: "ftp://s3.amazonaws.com", Bucket: "b"},
		{Endpoint: "https://s3.amazonaws.com/path", Bucket: "b"},
		{Endpoint: "https://s3.amazonaws.com"},
		{Endpoint: "https://s3.amazonaws.com", Bucket: "b", CABundle: []byte("not PEM")},
		{Endpoint: "http://minio:9000", Bucket: "b", CABundle: []byte("not PEM")},
	} {
		_, err := artifact.NewS3(cfg)
		NewWithT(t).Expect(err).To(HaveOccurred(), "%+v", cfg)
	}
}

func newS3(t *testing.T, cfg artifact.S3Config) *artifact.S3 {
	t.Helper()
	store, err := artifact.NewS3(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return store
}

// pseudoRandom returns n bytes that do not compress, from a fixed seed.
func pseudoRandom(n int) []byte {
	b := make([]byte, n)
	x := uint64(0x9e3779b97f4a7c15)
	for i := range b {
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
		b[i] = byte(x)
	}
	return b
}
