package agent

import (
	"errors"
	"fmt"
	"io"
	"runtime"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/zstd"

	etcdv1alpha1 "github.com/etcdpilot/etcdpilot/api/v1alpha1"
	backuppkg "github.com/etcdpilot/etcdpilot/internal/backup"
)

// zstdConcurrency is how many encoders a zstd stream gets. klauspost/compress compresses
// one stream one block at a time, overlapping the encoding of a block with the filling of
// the next and the writing of the last: two encoders keep a stream busy, and more would
// only hold memory. One CPU (GOMAXPROCS follows the container's CPU limit) encodes in
// line.
func zstdConcurrency() int {
	return min(runtime.GOMAXPROCS(0), 2)
}

// zstdDecoderConcurrency bounds the goroutines, and so the buffered blocks, of a zstd
// decoder.
func zstdDecoderConcurrency() int {
	return min(runtime.GOMAXPROCS(0), 4)
}

// nopCloser is a WriteCloser whose Close does nothing: the compressor of "none".
type nopCloser struct{ io.Writer }

func (nopCloser) Close() error { return nil }

// newCompressor returns a writer compressing into dst with c, at the fastest level of
// each format (the snapshot stream, not the CPU, should bound a backup). Close ends the
// compressed stream; it does not close dst. Memory is bounded by the format's window
// (zstd's fastest level: 4 MiB) and a few blocks, whatever the snapshot's size.
func newCompressor(dst io.Writer, c etcdv1alpha1.BackupCompression) (io.WriteCloser, error) {
	switch c {
	case etcdv1alpha1.BackupCompressionZstd:
		return zstd.NewWriter(dst, zstd.WithEncoderLevel(zstd.SpeedFastest), zstd.WithEncoderConcurrency(zstdConcurrency()))
	case etcdv1alpha1.BackupCompressionGzip:
		return gzip.NewWriterLevel(dst, gzip.BestSpeed)
	case etcdv1alpha1.BackupCompressionNone:
		return nopCloser{dst}, nil
	}
	return nil, fmt.Errorf("unknown compression %q", c)
}

// decompress writes src, compressed with c, uncompressed to dst, and fails unless src is
// one whole, valid stream of that format.
func decompress(dst io.Writer, src io.Reader, c etcdv1alpha1.BackupCompression) error {
	switch c {
	case etcdv1alpha1.BackupCompressionZstd:
		zr, err := zstd.NewReader(src, zstd.WithDecoderConcurrency(zstdDecoderConcurrency()))
		if err != nil {
			return err
		}
		defer zr.Close()
		_, err = io.Copy(dst, zr)
		return err
	case etcdv1alpha1.BackupCompressionGzip:
		zr, err := gzip.NewReader(src)
		if err != nil {
			return err
		}
		if _, err := io.Copy(dst, zr); err != nil {
			return err
		}
		return zr.Close()
	case etcdv1alpha1.BackupCompressionNone:
		_, err := io.Copy(dst, src)
		return err
	}
	return fmt.Errorf("unknown compression %q", c)
}

// parseCompression reads the --compression flag: one of the API's compressions, or "" when
// allowEmpty (restore: find out from the artifact).
func parseCompression(flagValue string, allowEmpty bool) (etcdv1alpha1.BackupCompression, error) {
	c := etcdv1alpha1.BackupCompression(flagValue)
	if backuppkg.Known(c) || c == "" && allowEmpty {
		return c, nil
	}
	return "", errors.New(`invalid arguments: --compression must be "zstd", "gzip" or "none", not "` + flagValue + `"`)
}
