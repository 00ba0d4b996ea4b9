package artifact

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"io/fs"
	"net"
	"net/http"
	"strings"
	"syscall"

	"github.com/minio/minio-go/v7"

	etcdv1alpha1 "github.com/etcdpilot/etcdpilot/api/v1alpha1"
)

// Reason returns the EtcdBackup condition reason that explains a Store's error to the
// user, or "" when err is none of the kinds below and the caller must pick its own:
//
//   - DestinationNotFound: the bucket, the object, the directory or the file does not exist.
//   - DestinationFull: the volume is out of space or quota.
//   - DestinationRejected: the store answered and refused: credentials (AccessDenied,
//     InvalidAccessKeyId, SignatureDoesNotMatch, expired token), permissions, or TLS (an
//     untrusted or mismatched certificate, or https to a plain http server).
//   - DestinationUnreachable: the store did not answer: connection refused or reset, DNS
//     failure, timeout, or a 5xx error of a store that is down or overloaded.
func Reason(err error) string {
	switch {
	case err == nil:
		return ""
	case errors.Is(err, ErrNotFound), errors.Is(err, fs.ErrNotExist):
		return etcdv1alpha1.ReasonDestinationNotFound
	case errors.Is(err, syscall.ENOSPC), errors.Is(err, syscall.EDQUOT):
		return etcdv1alpha1.ReasonDestinationFull
	case isTLSError(err), errors.Is(err, fs.ErrPermission), errors.Is(err, syscall.EROFS):
		return etcdv1alpha1.ReasonDestinationRejected
	}
	if resp, ok := s3Error(err); ok {
		return s3Reason(resp)
	}
	if isNetworkError(err) {
		return etcdv1alpha1.ReasonDestinationUnreachable
	}
	return ""
}

// s3Reason classifies an error response of an S3 store.
func s3Reason(resp minio.ErrorResponse) string {
	switch resp.Code {
	case minio.NoSuchBucket, minio.NoSuchKey:
		return etcdv1alpha1.ReasonDestinationNotFound
	case "QuotaExceeded", "XMinioStorageFull", "StorageFull":
		return etcdv1alpha1.ReasonDestinationFull
	}
	if resp.StatusCode >= http.StatusInternalServerError {
		return etcdv1alpha1.ReasonDestinationUnreachable
	}
	// Every other answer is a refusal: AccessDenied, InvalidAccessKeyId,
	// SignatureDoesNotMatch, ExpiredToken, InvalidBucketName, a wrong region...
	return etcdv1alpha1.ReasonDestinationRejected
}

// s3Code returns the S3 error code of err, or "" when err is not an S3 error response.
func s3Code(err error) string {
	resp, _ := s3Error(err)
	return resp.Code
}

// s3Error returns the S3 error response err wraps, if any.
func s3Error(err error) (minio.ErrorResponse, bool) {
	var resp minio.ErrorResponse
	if errors.As(err, &resp) && (resp.Code != "" || resp.StatusCode != 0) {
		return resp, true
	}
	return resp, false
}

// isTLSError reports whether err is a TLS failure: a certificate not trusted, not valid
// for the host or expired, or https spoken to a plain http server.
func isTLSError(err error) bool {
	var (
		unknownAuthority x509.UnknownAuthorityError
		hostname         x509.HostnameError
		invalid          x509.CertificateInvalidError
		verification     *tls.CertificateVerificationError
		record           tls.RecordHeaderError
	)
	return errors.As(err, &unknownAuthority) || errors.As(err, &hostname) || errors.As(err, &invalid) ||
		errors.As(err, &verification) || errors.As(err, &record) ||
		strings.Contains(err.Error(), "server gave HTTP response to HTTPS client")
}

// isNetworkError reports whether err is a failure to reach or keep talking to a server.
func isNetworkError(err error) bool {
	var (
		dnsErr *net.DNSError
		opErr  *net.OpError
		netErr net.Error
	)
	return errors.As(err, &dnsErr) || errors.As(err, &opErr) ||
		(errors.As(err, &netErr) && netErr.Timeout()) ||
		errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ECONNRESET) ||
		errors.Is(err, syscall.EHOSTUNREACH) || errors.Is(err, syscall.ENETUNREACH)
}
