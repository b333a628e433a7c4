// Package sanitize makes every error a gRPC handler returns fit to send to a
// CSI or COSI client.
//
// The CSI spec says status details MUST be empty, and a client such as the
// external-provisioner prints the status message into Kubernetes events,
// where anyone who can read events sees it. So for every error the
// interceptors:
//
//   - keep the code of a gRPC status, and drop its details;
//   - turn an error that is not a status into INTERNAL, named after the RPC
//     ("CreateVolume: <error text>"), except that context.Canceled and
//     context.DeadlineExceeded become CANCELLED and DEADLINE_EXCEEDED;
//   - turn a status error with code OK, which would reach the client as
//     success, into INTERNAL;
//   - replace an empty message with "<RPC> failed with <code>";
//   - pass the message through a scrubber together with the request, so that
//     no secret value of the request appears in it;
//   - truncate a message longer than a bound (1024 bytes by default).
//
// The interceptors are usable alone, and idempotent: sanitising a sanitised
// error changes nothing.
package sanitize
