package artifact_test

import (
	"crypto/x509"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/url"
	"os"
	"syscall"
	"testing"

	"github.com/minio/minio-go/v7"
	. "github.com/onsi/gomega"

	etcdv1alpha1 "github.com/etcdpilot/etcdpilot/api/v1alpha1"
	"github.com/etcdpilot/etcdpilot/internal/artifact"
)

func TestReason(t *testing.T) {
	s3 := func(code string, status int) error {
		// As minio-go returns it, wrapped by the store.
		return fmt.Errorf("uploading s3://b/k: %w", minio.ErrorResponse{Code: code, StatusCode: status})
	}
	requestErr := func(err error) error {
		return fmt.Errorf("checking bucket b: %w", &url.Error{Op: "Head", URL: "http://127.0.0.1:1/b", Err: err})
	}
	pathErr := func(errno syscall.Errno) error {
		return fmt.Errorf("writing k in /backup: %w", &fs.PathError{Op: "write", Path: "/backup/k.partial", Err: errno})
	}
	for _, tc := range []struct {
		name string
		err  error
		want string
	}{
		{"nil", nil, ""},
		{"unknown", errors.New("gzip: invalid header"), ""},

		{"missing artifact", fmt.Errorf("x: %w", artifact.ErrNotFound), etcdv1alpha1.ReasonDestinationNotFound},
		{"missing file", pathErr(syscall.ENOENT), etcdv1alpha1.ReasonDestinationNotFound},
		{"NoSuchBucket", s3(minio.NoSuchBucket, 404), etcdv1alpha1.ReasonDestinationNotFound},
		{"NoSuchKey", s3(minio.NoSuchKey, 404), etcdv1alpha1.ReasonDestinationNotFound},

		{"ENOSPC", pathErr(syscall.ENOSPC), etcdv1alpha1.ReasonDestinationFull},
		{"EDQUOT", pathErr(syscall.EDQUOT), etcdv1alpha1.ReasonDestinationFull},
		{"S3 quota", s3("QuotaExceeded", 403), etcdv1alpha1.ReasonDestinationFull},

		{"AccessDenied", s3(minio.AccessDenied, 403), etcdv1alpha1.ReasonDestinationRejected},
		{"SignatureDoesNotMatch", s3("SignatureDoesNotMatch", 403), etcdv1alpha1.ReasonDestinationRejected},
		{"InvalidAccessKeyId", s3(minio.InvalidAccessKeyID, 403), etcdv1alpha1.ReasonDestinationRejected},
		{"ExpiredToken", s3("ExpiredToken", 400), etcdv1alpha1.ReasonDestinationRejected},
		{"untrusted certificate", requestErr(x509.UnknownAuthorityError{}), etcdv1alpha1.ReasonDestinationRejected},
		{"certificate for another host", requestErr(x509.HostnameError{Certificate: &x509.Certificate{}, Host: "s3"}), etcdv1alpha1.ReasonDestinationRejected},
		{"https to an http server", requestErr(errors.New("http: server gave HTTP response to HTTPS client")), etcdv1alpha1.ReasonDestinationRejected},
		{"EACCES", pathErr(syscall.EACCES), etcdv1alpha1.ReasonDestinationRejected},
		{"read-only volume", pathErr(syscall.EROFS), etcdv1alpha1.ReasonDestinationRejected},

		{"connection refused", requestErr(&net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}), etcdv1alpha1.ReasonDestinationUnreachable},
		{"DNS failure", requestErr(&net.DNSError{Err: "no such host", Name: "s3.invalid", IsNotFound: true}), etcdv1alpha1.ReasonDestinationUnreachable},
		{"timeout", requestErr(timeoutError{}), etcdv1alpha1.ReasonDestinationUnreachable},
		{"connection reset", requestErr(syscall.ECONNRESET), etcdv1alpha1.ReasonDestinationUnreachable},
		{"503 SlowDown", s3("SlowDown", 503), etcdv1alpha1.ReasonDestinationUnreachable},
		{"500 InternalError", s3(minio.InternalError, 500), etcdv1alpha1.ReasonDestinationUnreachable},
	} {
		t.Run(tc.name, func(t *testing.T) {
			NewWithT(t).Expect(artifact.Reason(tc.err)).To(Equal(tc.want), "%v", tc.err)
		})
	}
}

type timeoutError struct{}

func (timeoutError) Error() string   { return "i/o timeout" }
func (timeoutError) Timeout() bool   { return true }
func (timeoutError) Temporary() bool { return true }
