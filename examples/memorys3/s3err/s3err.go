// Package s3err is the S3 error vocabulary shared by the memorys3 authentication layer and its
// server: a typed error carrying the S3 error code and HTTP status, and the XML body S3 clients
// parse it from (aws-sdk-go-v2 and minio-go read <Code> to decide what went wrong).
//
// Messages are written for the client. They never contain a secret key, a signature computed
// by the server or a string to sign: a client that gets them wrong learns nothing that would
// help forge the next attempt.
package s3err

import (
	"encoding/xml"
	"errors"
	"fmt"
	"net/http"
)

// Error is an S3 error: the code clients switch on, the HTTP status it travels with, and a
// message for humans. The zero value is not useful; use the predefined codes with New.
type Error struct {
	// Code is the S3 error code, e.g. "SignatureDoesNotMatch".
	Code string
	// Status is the HTTP status code sent with it.
	Status int
	// Message explains the failure; it must never contain secret material.
	Message string
}

// Error implements error.
func (e *Error) Error() string { return e.Code + ": " + e.Message }

// Is matches another *Error with the same code, so errors.Is(err, s3err.ErrAccessDenied)
// works whatever the message.
func (e *Error) Is(target error) bool {
	var t *Error
	return errors.As(target, &t) && t.Code == e.Code
}

// With returns a copy of e with a specific message.
func (e *Error) With(format string, args ...any) *Error {
	return &Error{Code: e.Code, Status: e.Status, Message: fmt.Sprintf(format, args...)}
}

// The codes this server answers with, as S3 documents them (ErrorResponses in the S3 API
// reference). The messages are defaults; With replaces them.
var (
	ErrAccessDenied               = &Error{"AccessDenied", http.StatusForbidden, "Access Denied"}
	ErrSignatureDoesNotMatch      = &Error{"SignatureDoesNotMatch", http.StatusForbidden, "The request signature we calculated does not match the signature you provided. Check your key and signing method."}
	ErrInvalidAccessKeyID         = &Error{"InvalidAccessKeyId", http.StatusForbidden, "The AWS access key Id you provided does not exist in our records."}
	ErrRequestTimeTooSkewed       = &Error{"RequestTimeTooSkewed", http.StatusForbidden, "The difference between the request time and the server's time is too large."}
	ErrExpiredPresign             = &Error{"AccessDenied", http.StatusForbidden, "Request has expired"}
	ErrContentSHA256Mismatch      = &Error{"XAmzContentSHA256Mismatch", http.StatusBadRequest, "The provided 'x-amz-content-sha256' header does not match what was computed."}
	ErrBadDigest                  = &Error{"BadDigest", http.StatusBadRequest, "The checksum you specified did not match the calculated checksum."}
	ErrInvalidDigest              = &Error{"InvalidDigest", http.StatusBadRequest, "The checksum you specified is not valid."}
	ErrAuthorizationHeaderInvalid = &Error{"AuthorizationHeaderMalformed", http.StatusBadRequest, "The authorization header is malformed."}
	ErrAuthorizationQueryInvalid  = &Error{"AuthorizationQueryParametersError", http.StatusBadRequest, "The query parameters that carry the signature are malformed."}
	ErrInvalidRequest             = &Error{"InvalidRequest", http.StatusBadRequest, "Invalid request."}
	ErrInvalidArgument            = &Error{"InvalidArgument", http.StatusBadRequest, "Invalid argument."}
	ErrInvalidToken               = &Error{"InvalidToken", http.StatusBadRequest, "The provided token is malformed or otherwise invalid."}
	ErrMissingSecurityHeader      = &Error{"MissingSecurityHeader", http.StatusBadRequest, "Your request is missing a required header."}
	ErrMissingContentLength       = &Error{"MissingContentLength", http.StatusLengthRequired, "You must provide the Content-Length HTTP header."}
	ErrIncompleteBody             = &Error{"IncompleteBody", http.StatusBadRequest, "You did not provide the number of bytes specified by the Content-Length HTTP header."}
	ErrEntityTooLarge             = &Error{"EntityTooLarge", http.StatusBadRequest, "Your proposed upload exceeds the maximum allowed size."}
	ErrNotImplemented             = &Error{"NotImplemented", http.StatusNotImplemented, "A header you provided implies functionality that is not implemented."}
	ErrMethodNotAllowed           = &Error{"MethodNotAllowed", http.StatusMethodNotAllowed, "The specified method is not allowed against this resource."}
	ErrMalformedXML               = &Error{"MalformedXML", http.StatusBadRequest, "The XML you provided was not well-formed or did not validate against our published schema."}
	ErrInvalidPartOrder           = &Error{"InvalidPartOrder", http.StatusBadRequest, "The list of parts was not in ascending order. The parts list must be specified in order by part number."}
	ErrInternal                   = &Error{"InternalError", http.StatusInternalServerError, "We encountered an internal error. Please try again."}
	ErrKeyTooLong                 = &Error{"KeyTooLongError", http.StatusBadRequest, "Your key is too long."}
	ErrSlowDown                   = &Error{"SlowDown", http.StatusServiceUnavailable, "Please reduce your request rate."}
	ErrRequestTimeout             = &Error{"RequestTimeout", http.StatusBadRequest, "Your socket connection to the server was not read from or written to within the timeout period."}
	// ErrQuotaExceeded is Ceph RGW's answer to a write past a quota (S3 has no quotas); S3
	// clients do not retry a 403.
	ErrQuotaExceeded = &Error{"QuotaExceeded", http.StatusForbidden, "The bucket holds as many objects as it may."}
)

// body is the XML document S3 sends with an error.
type body struct {
	XMLName   xml.Name `xml:"Error"`
	Code      string   `xml:"Code"`
	Message   string   `xml:"Message"`
	Resource  string   `xml:"Resource,omitempty"`
	RequestID string   `xml:"RequestId,omitempty"`
}

// Write sends err as an S3 error response. An error that is not an *Error becomes
// InternalError without its text: internal detail belongs in the server's log, not on the
// wire. HEAD responses carry no body, as S3's do.
func Write(w http.ResponseWriter, r *http.Request, err error, requestID string) {
	var e *Error
	if !errors.As(err, &e) {
		e = ErrInternal
	}
	h := w.Header()
	h.Set("Content-Type", "application/xml")
	if requestID != "" {
		h.Set("x-amz-request-id", requestID)
	}
	w.WriteHeader(e.Status)
	if r.Method == http.MethodHead {
		return
	}
	out, mErr := xml.Marshal(body{Code: e.Code, Message: e.Message, Resource: r.URL.Path, RequestID: requestID})
	if mErr != nil { // cannot happen for these plain strings; the status is already out
		return
	}
	_, _ = w.Write([]byte(xml.Header))
	_, _ = w.Write(out)
}
