package agent

import (
	"bytes"
	stdgzip "compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"os"
	"path/filepath"
	"testing"

	kgzip "github.com/klauspost/compress/gzip"
	. "github.com/onsi/gomega"

	etcdv1alpha1 "github.com/etcdpilot/etcdpilot/api/v1alpha1"
	"github.com/etcdpilot/etcdpilot/internal/artifact"
)

// encoded returns stream written through the writer newWriter returns.
func encoded(t *testing.T, stream []byte, newWriter func(io.Writer) (io.WriteCloser, error)) []byte {
	t.Helper()
	var buf bytes.Buffer
	w, err := newWriter(&buf)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Write(stream); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// compressed returns stream compressed with c by the agent's own compressor.
func compressed(t *testing.T, stream []byte, c etcdv1alpha1.BackupCompression) []byte {
	t.Helper()
	return encoded(t, stream, func(w io.Writer) (io.WriteCloser, error) { return newCompressor(w, c) })
}

func TestFetch(t *testing.T) {
	stream := snapshotStream(2000)
	zst := compressed(t, stream, etcdv1alpha1.BackupCompressionZstd)
	gz := compressed(t, stream, etcdv1alpha1.BackupCompressionGzip)
	// The gzip artifacts of agents before the choice: klauspost's gzip at BestSpeed, and
	// the standard library's, which any gzip tool would write alike.
	oldGz := encoded(t, stream, func(w io.Writer) (io.WriteCloser, error) { return kgzip.NewWriterLevel(w, kgzip.BestSpeed) })
	stdGz := encoded(t, stream, func(w io.Writer) (io.WriteCloser, error) { return stdgzip.NewWriterLevel(w, stdgzip.BestSpeed) })
	damagedZst := bytes.Clone(zst)
	damagedZst[len(damagedZst)/2] ^= 0xff

	for _, tc := range []struct {
		name     string
		artifact []byte
		declared etcdv1alpha1.BackupCompression
		want     etcdv1alpha1.BackupCompression
		wantErr  string
	}{
		{name: "zstd, declared", artifact: zst, declared: "zstd", want: "zstd"},
		{name: "zstd, sniffed", artifact: zst, want: "zstd"},
		{name: "gzip, declared", artifact: gz, declared: "gzip", want: "gzip"},
		{name: "gzip as agents before the choice wrote it", artifact: oldGz, declared: "gzip", want: "gzip"},
		{name: "gzip as agents before the choice wrote it, sniffed", artifact: oldGz, want: "gzip"},
		{name: "gzip of another tool, sniffed", artifact: stdGz, want: "gzip"},
		{name: "none, declared", artifact: stream, declared: "none", want: "none"},
		{name: "none, sniffed", artifact: stream, want: "none"},

		{name: "zstd truncated", artifact: zst[:len(zst)-100], declared: "zstd",
			wantErr: "has the expected sha256 but it is not a valid zstd stream: unexpected EOF"},
		{name: "gzip truncated", artifact: gz[:len(gz)/2],
			wantErr: "has the expected sha256 but it is not a valid gzip stream: unexpected EOF"},
		{name: "zstd damaged", artifact: damagedZst, declared: "zstd",
			wantErr: "has the expected sha256 but it is not a valid zstd stream"},
		{name: "declared zstd, is gzip", artifact: gz, declared: "zstd",
			wantErr: "has the expected sha256 but its compression was declared zstd and it is gzip"},
		{name: "declared none, is zstd", artifact: zst, declared: "none",
			wantErr: "its compression was declared none and it is zstd"},
		{name: "declared gzip, is not a snapshot", artifact: []byte("not gzip at all, nor anything"), declared: "gzip",
			wantErr: "has the expected sha256 but it is not gzip as declared, nor any format a backup writes: it starts with 6e6f74"},
		{name: "not a snapshot, sniffed", artifact: []byte("not gzip"),
			wantErr: "has the expected sha256 but it is neither zstd nor gzip nor an etcd snapshot (a bbolt database): it starts with 6e6f7420677a6970"},
		{name: "empty", artifact: nil,
			wantErr: "neither zstd nor gzip nor an etcd snapshot"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			root := t.TempDir()
			g.Expect(os.WriteFile(filepath.Join(root, "a"), tc.artifact, 0o600)).To(Succeed())
			sum := sha256.Sum256(tc.artifact)
			ref := artifactRef{key: "a", location: "the-artifact", sha256: hex.EncodeToString(sum[:]), compression: tc.declared}
			dst := filepath.Join(t.TempDir(), "snapshot.db")
			got, err := fetch(t.Context(), artifact.NewFS(root), ref, dst)
			if tc.wantErr != "" {
				g.Expect(err).To(MatchError(HavePrefix("artifact the-artifact ")))
				g.Expect(err).To(MatchError(ContainSubstring(tc.wantErr)))
				return
			}
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(got.compression).To(Equal(tc.want))
			g.Expect(got.size).To(Equal(int64(len(tc.artifact))))
			g.Expect(got.snapshotSize).To(Equal(int64(len(stream))))
			g.Expect(got.seconds).To(BeNumerically(">", 0))
			g.Expect(os.ReadFile(dst)).To(Equal(stream))
		})
	}

	t.Run("checksum before format", func(t *testing.T) {
		// A truncated artifact with the checksum of the whole one is a checksum mismatch,
		// not a decompression error: the artifact is not the one named.
		g := NewWithT(t)
		root := t.TempDir()
		g.Expect(os.WriteFile(filepath.Join(root, "a"), zst[:len(zst)/2], 0o600)).To(Succeed())
		sum := sha256.Sum256(zst)
		ref := artifactRef{key: "a", location: "the-artifact", sha256: hex.EncodeToString(sum[:]), compression: "zstd"}
		_, err := fetch(t.Context(), artifact.NewFS(root), ref, filepath.Join(t.TempDir(), "snapshot.db"))
		var f *failure
		g.Expect(err).To(BeAssignableToTypeOf(f))
		g.Expect(failureResult(err, "X").Reason).To(Equal(ReasonChecksumMismatch))
	})
}

func TestParseCompression(t *testing.T) {
	g := NewWithT(t)
	for _, v := range []string{"zstd", "gzip", "none"} {
		c, err := parseCompression(v, false)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(string(c)).To(Equal(v))
	}
	c, err := parseCompression("", true)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(c).To(BeEmpty())
	_, err = parseCompression("", false)
	g.Expect(err).To(MatchError(`invalid arguments: --compression must be "zstd", "gzip" or "none", not ""`))
	_, err = parseCompression("lz4", true)
	g.Expect(err).To(MatchError(ContainSubstring(`not "lz4"`)))
}
