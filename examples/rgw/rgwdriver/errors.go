package rgwdriver

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"syscall"

	"github.com/aws/smithy-go"
	smithyhttp "github.com/aws/smithy-go/transport/http"
	"github.com/ceph/go-ceph/rgw/admin"

	"github.com/csikit/csikit/driver"
)

// RGW answers through two clients (aws-sdk-go-v2 for S3, go-ceph for the admin ops API), and
// each fails in its own types. Every error from either passes through rgwError, which decides the
// one thing the COSI sidecar acts on: is this final, or should it retry? A fault of the path to
// RGW or of RGW itself (nothing listening, a reset, a timeout, a 5xx, an answer cut short) is
// driver.ErrUnavailable, never a code the sidecar treats as final; RGW refusing the driver's own
// credentials is an operator's problem, FAILED_PRECONDITION. What the caller did wrong is decided
// by the caller, from the specific codes below, never here.

// statusError is what adminHTTP answers for a 5xx from the admin ops API. go-ceph would otherwise
// try to read RGW's error JSON and, when the body is anything else (a proxy's page), put the
// whole body into its error text.
type statusError struct{ code int }

func (e statusError) Error() string { return fmt.Sprintf("RGW answered HTTP %d", e.code) }

// adminHTTP is the admin ops API's HTTP client: a 5xx never reaches go-ceph as an answer.
type adminHTTP struct{ c *http.Client }

func (a adminHTTP) Do(req *http.Request) (*http.Response, error) {
	resp, err := a.c.Do(req)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode >= 500 {
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
		resp.Body.Close()
		return nil, statusError{resp.StatusCode}
	}
	return resp, nil
}

// adminCodes are the admin ops API's error codes that rgwError may name; go-ceph's error type is
// unexported, so its code is found with errors.Is.
var adminCodes = []error{admin.ErrNoSuchUser, admin.ErrNoSuchBucket, admin.ErrUserExists, admin.ErrAccessDenied,
	admin.ErrSignatureDoesNotMatch, admin.ErrInvalidAccessKey, admin.ErrInternalError, admin.ErrBucketNotEmpty,
	admin.ErrObjectRemovalFailed, admin.ErrInvalidArgument, admin.ErrKeyExists, admin.ErrNoSuchKey}

// credentialCodes are the S3 and admin codes of RGW refusing the driver's own keys.
var credentialCodes = map[string]bool{"AccessDenied": true, "InvalidAccessKeyId": true, "SignatureDoesNotMatch": true,
	"InvalidAccessKey": true, "RequestTimeTooSkewed": true}

// rgwError wraps err, from the RGW call what (e.g. "creating bucket \"b\""), with the sentinel the
// COSI sidecar should act on. ctx is the call's: a deadline of the call itself stays a deadline,
// one of a single request inside it (a dial or header timeout) is a transient fault. The text of
// go-ceph's decoding errors, which quotes the whole answer (user records carry secret keys),
// never passes through.
func rgwError(ctx context.Context, what string, err error) error {
	if err == nil {
		return nil
	}
	if ctx.Err() != nil && (errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)) {
		return fmt.Errorf("%s: %w", what, ctx.Err())
	}
	code := errorCode(err)
	var unknownCA x509.UnknownAuthorityError
	var badCert x509.CertificateInvalidError
	var badHost x509.HostnameError
	var tlsRecord tls.RecordHeaderError
	switch {
	case errors.As(err, &unknownCA), errors.As(err, &badCert), errors.As(err, &badHost), errors.As(err, &tlsRecord):
		// Not a fault that passes: the endpoint's scheme or certificate does not match what the
		// driver was told.
		return fmt.Errorf("%s: the TLS connection to RGW failed (%s): check the endpoint's scheme and --rgw-ca-file: %w",
			what, safeText(err), driver.ErrFailedPrecondition)
	case transient(err):
		return fmt.Errorf("%s: RGW is unreachable or failing (%s): %w", what, safeText(err), driver.ErrUnavailable)
	case credentialCodes[code]:
		return fmt.Errorf("%s: RGW refused the driver's credentials (%s): check --admin-access-key-file and --admin-secret-key-file: %w",
			what, code, driver.ErrFailedPrecondition)
	case strings.HasPrefix(err.Error(), "failed to unmarshal"):
		// A 2xx answer go-ceph could not decode: cut short, or not RGW's; quoting it could leak keys.
		return fmt.Errorf("%s: RGW's answer could not be decoded: %w", what, driver.ErrUnavailable)
	}
	return fmt.Errorf("%s: %s", what, safeText(err))
}

// transient says whether err is a fault of the path to RGW or of RGW itself.
func transient(err error) bool {
	var se statusError
	var re *smithyhttp.ResponseError
	var ne net.Error
	switch {
	case errors.As(err, &se):
		return true
	case errors.As(err, &re) && re.HTTPStatusCode() >= 500:
		return true
	case errors.As(err, &ne), errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF),
		errors.Is(err, syscall.ECONNREFUSED), errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.EPIPE),
		errors.Is(err, context.DeadlineExceeded):
		return true
	}
	switch errorCode(err) {
	case "SlowDown", "ServiceUnavailable", "InternalError", "RequestTimeout":
		return true
	}
	// aws-sdk-go-v2 reports a request it could not send as a RequestSendError.
	var rse interface{ ConnectionError() bool }
	return errors.As(err, &rse) && rse.ConnectionError()
}

// errorCode is the S3 or admin ops API error code of err, "" for none.
func errorCode(err error) string {
	var ae smithy.APIError
	if errors.As(err, &ae) {
		return ae.ErrorCode()
	}
	for _, c := range adminCodes {
		if errors.Is(err, c) {
			return c.Error()
		}
	}
	return ""
}

// safeText is err's text for a message, without the answer bodies go-ceph quotes.
func safeText(err error) string {
	if c := errorCode(err); c != "" {
		var ae smithy.APIError
		if errors.As(err, &ae) {
			return c + ": " + ae.ErrorMessage()
		}
		return c
	}
	if s := err.Error(); !strings.Contains(s, "failed to unmarshal") {
		return s
	}
	return "an undecodable answer"
}
