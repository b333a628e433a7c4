// Package requestid gives every gRPC call an ID that ties together its log
// lines, its panic report and the error the client sees.
//
// The interceptors take the ID from the incoming metadata when the caller sent
// one ("x-request-id", or "csi.requestid" as gocsi-based tools send it) and it
// is sane: 1 to 64 bytes of printable ASCII. Otherwise they mint one. Minted
// IDs look like "k3xq7m2pva-42": a random per-process prefix, so that IDs from
// different plugin instances never collide, and a per-process counter, so that
// minting costs one allocation and no system call.
//
// Handlers and inner interceptors read the ID with [FromContext]. An outer
// interceptor that needs the ID before this one runs (recovery is outermost,
// yet its panic report must name the ID) calls [Ensure], and the interceptors
// here then keep the ID it attached.
package requestid
