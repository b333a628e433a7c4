// Package wire converts between wire messages and the contract types.
//
// The wire messages are those the plugin serves: CSI, COSI v1alpha1 and COSI v1alpha2. The
// contract types are those of packages driver and driver/bucket. Its functions are pure:
// no server state, no validation, no errors. Package plugin validates a request before it
// converts it, and decides what an answer means after.
//
// The names follow one scheme for all three wire versions:
//
//   - XFromCSI, XFromV1Alpha1, XFromV1Alpha2 read a wire message into the contract type X
//     (CapabilityFromCSI, CreateBucketFromV1Alpha1, ProtocolFromV1Alpha2).
//   - CSIX, V1Alpha1X, V1Alpha2X write the contract type X as a wire message (CSIVolume,
//     V1Alpha1BucketInfo, V1Alpha2Protocol).
//
// Maps are shared, not copied: a request is not used again after the backend returns.
package wire
