package artifact

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"
)

const (
	// DefaultRegion is the region of a bucket whose S3Config names none.
	DefaultRegion = "us-east-1"

	// PartSize is the size of the parts Put uploads, and the memory it buffers. minio-go
	// sizes parts of a stream of unknown length for the S3 maximum of 5 TiB, about 560 MiB
	// each, and allocates one such buffer per upload; 16 MiB keeps the agent's memory flat
	// and small. It caps an artifact at MaxArtifactSize, far beyond any etcd database (etcd
	// refuses a backend quota above 8 GiB by default, and the artifact is compressed).
	PartSize = 16 << 20

	// MaxArtifactSize is the largest artifact Put uploads: S3 allows 10,000 parts.
	MaxArtifactSize = PartSize * 10000

	// abortTimeout bounds the clean-up of a failed upload, which runs even when the
	// caller's context has ended.
	abortTimeout = 30 * time.Second
)

// S3Config says how to reach an S3 bucket.
type S3Config struct {
	// Endpoint is the store's URL: "https://s3.eu-west-1.amazonaws.com" or
	// "http://minio.storage.svc:9000". Its scheme decides whether TLS is used.
	Endpoint string
	// Bucket is the bucket artifacts are stored in. It must exist.
	Bucket string
	// Region is the bucket's region; DefaultRegion when empty.
	Region string
	// AccessKeyID, SecretAccessKey and SessionToken (optional) sign the requests.
	AccessKeyID, SecretAccessKey, SessionToken string
	// CABundle is a PEM bundle of the CAs trusted to sign the endpoint's certificate,
	// instead of the system's roots. Empty trusts the system's roots.
	CABundle []byte
	// ForcePathStyle addresses the bucket in the URL path (https://host/bucket/key) rather
	// than as a subdomain; most self-hosted stores need it.
	ForcePathStyle bool
}

// S3 is a Store in an S3 bucket; a key is an object key.
type S3 struct {
	client *minio.Client
	bucket string
	host   string
}

var _ Store = (*S3)(nil)

// NewS3 returns a Store of the objects in cfg.Bucket. It makes no request: an unreachable
// store or a wrong secret shows up as errors of the first calls.
func NewS3(cfg S3Config) (*S3, error) {
	u, err := parseEndpoint(cfg.Endpoint)
	if err != nil {
		return nil, err
	}
	if cfg.Bucket == "" {
		return nil, errors.New("no S3 bucket given")
	}
	secure := u.Scheme == "https"
	transport, err := s3Transport(secure, cfg.CABundle)
	if err != nil {
		return nil, fmt.Errorf("S3 endpoint %s: %w", cfg.Endpoint, err)
	}
	region := cfg.Region
	if region == "" {
		region = DefaultRegion
	}
	lookup := minio.BucketLookupAuto
	if cfg.ForcePathStyle {
		lookup = minio.BucketLookupPath
	}
	client, err := minio.New(u.Host, &minio.Options{
		Creds:        credentials.NewStaticV4(cfg.AccessKeyID, cfg.SecretAccessKey, cfg.SessionToken),
		Secure:       secure,
		Transport:    transport,
		Region:       region,
		BucketLookup: lookup,
	})
	if err != nil {
		return nil, fmt.Errorf("S3 client for %s: %w", cfg.Endpoint, err)
	}
	return &S3{client: client, bucket: cfg.Bucket, host: u.Host}, nil
}

// parseEndpoint checks that endpoint is an http or https URL of a host, with no path.
func parseEndpoint(endpoint string) (*url.URL, error) {
	u, err := url.Parse(endpoint)
	if err != nil {
		return nil, fmt.Errorf("S3 endpoint %q: %w", endpoint, err)
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || (u.Path != "" && u.Path != "/") || u.RawQuery != "" {
		return nil, fmt.Errorf("S3 endpoint %q must be http:// or https:// and a host, with no path", endpoint)
	}
	return u, nil
}

// s3Transport returns minio-go's default transport, trusting only caBundle when given.
func s3Transport(secure bool, caBundle []byte) (*http.Transport, error) {
	transport, err := minio.DefaultTransport(secure)
	if err != nil {
		return nil, err
	}
	if len(caBundle) == 0 {
		return transport, nil
	}
	if !secure {
		return nil, errors.New("a CA bundle is given for an endpoint that does not use https")
	}
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(caBundle) {
		return nil, errors.New("the CA bundle holds no PEM certificate")
	}
	transport.TLSClientConfig = &tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS12}
	return transport, nil
}

// Put checks that the bucket exists, then uploads r as a multipart upload of PartSize
// parts, which S3 shows only once it is completed. On failure the upload is aborted, even
// when ctx has ended, so that no parts are left behind to be billed.
func (s *S3) Put(ctx context.Context, key string, r io.Reader) (err error) {
	if err := s.checkBucket(ctx); err != nil {
		return err
	}
	src := &eofReader{r: r}
	info, err := s.client.PutObject(ctx, s.bucket, key, src, -1, minio.PutObjectOptions{
		PartSize:    PartSize,
		NumThreads:  1,
		ContentType: "application/octet-stream",
	})
	if err != nil {
		s.abort(ctx, key)
		return s.wrap("uploading", key, err)
	}
	if !src.eof || info.Size != src.n {
		// minio-go stops after 10,000 parts and completes the upload: the object is
		// truncated, and must not be taken for a backup.
		s.remove(ctx, key)
		return fmt.Errorf("uploading %s: the artifact is larger than %d bytes, the most a streamed S3 upload of %d MiB parts can hold",
			s.location(key), int64(MaxArtifactSize), PartSize>>20)
	}
	return nil
}

// Open returns the object's content. The first request is made here, so a missing object
// or bucket is an error of Open, not of the first Read.
func (s *S3) Open(ctx context.Context, key string) (io.ReadCloser, error) {
	obj, err := s.client.GetObject(ctx, s.bucket, key, minio.GetObjectOptions{})
	if err != nil {
		return nil, s.wrap("downloading", key, err)
	}
	if _, err := obj.Stat(); err != nil {
		_ = obj.Close()
		return nil, s.wrap("downloading", key, err)
	}
	return obj, nil
}

// Stat returns the object's size.
func (s *S3) Stat(ctx context.Context, key string) (int64, error) {
	info, err := s.client.StatObject(ctx, s.bucket, key, minio.StatObjectOptions{})
	if err != nil {
		return 0, s.wrap("reading the size of", key, err)
	}
	return info.Size, nil
}

// Delete removes the object and, as far as the store lets it, any unfinished upload of it
// that a killed backup left. A missing object is not an error; a missing bucket is.
func (s *S3) Delete(ctx context.Context, key string) error {
	if err := s.client.RemoveObject(ctx, s.bucket, key, minio.RemoveObjectOptions{}); err != nil {
		if s3Code(err) == minio.NoSuchKey {
			return nil
		}
		return s.wrap("deleting", key, err)
	}
	// Best effort: some stores do not list multipart uploads, and a deletion must not
	// hang on that; a bucket lifecycle rule is the backstop for abandoned uploads.
	_ = s.client.RemoveIncompleteUpload(ctx, s.bucket, key)
	return nil
}

// checkBucket fails with an error that names the bucket when it does not exist: otherwise
// the first part upload would fail with a less obvious one.
//
// A HEAD request answers without a body, so its status is all there is to go by, and some
// stores answer 404 for other reasons than a missing bucket (versitygw does for an unknown
// access key). A 404 is therefore confirmed by listing one key, whose error names its cause.
func (s *S3) checkBucket(ctx context.Context) error {
	ok, err := s.client.BucketExists(ctx, s.bucket)
	if err != nil {
		return fmt.Errorf("checking bucket %s at %s: %w", s.bucket, s.host, err)
	}
	if ok {
		return nil
	}
	for obj := range s.client.ListObjectsIter(ctx, s.bucket, minio.ListObjectsOptions{MaxKeys: 1}) {
		switch {
		case obj.Err == nil:
			return nil // listed: the bucket exists after all
		case s3Code(obj.Err) == minio.NoSuchBucket:
			return notFoundError{fmt.Errorf("bucket %s does not exist at %s", s.bucket, s.host)}
		default:
			return fmt.Errorf("checking bucket %s at %s: %w", s.bucket, s.host, obj.Err)
		}
	}
	return nil // an empty listing: the bucket exists after all
}

// abort removes the unfinished multipart upload of key. minio-go aborts it itself, but
// with the caller's context, which is already done when the upload failed of a timeout.
func (s *S3) abort(ctx context.Context, key string) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), abortTimeout)
	defer cancel()
	_ = s.client.RemoveIncompleteUpload(ctx, s.bucket, key)
}

// remove deletes the object of key, even when ctx has ended.
func (s *S3) remove(ctx context.Context, key string) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), abortTimeout)
	defer cancel()
	_ = s.client.RemoveObject(ctx, s.bucket, key, minio.RemoveObjectOptions{})
}

// location names an object for messages.
func (s *S3) location(key string) string {
	return "s3://" + s.bucket + "/" + key
}

// wrap describes err of doing what to key, and marks a missing object or bucket as
// ErrNotFound.
func (s *S3) wrap(what, key string, err error) error {
	err = fmt.Errorf("%s %s at %s: %w", what, s.location(key), s.host, err)
	switch s3Code(err) {
	case minio.NoSuchKey, minio.NoSuchBucket:
		return notFoundError{err}
	}
	return err
}

// eofReader counts the bytes read from r and records whether r reached its end.
type eofReader struct {
	r   io.Reader
	n   int64
	eof bool
}

func (e *eofReader) Read(p []byte) (int, error) {
	n, err := e.r.Read(p)
	e.n += int64(n)
	if errors.Is(err, io.EOF) {
		e.eof = true
	}
	return n, err
}
