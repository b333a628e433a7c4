package volumegroup

// Every request type carries Raw, the wire request with its secrets (vg_csi_secret) in clear, so
// each type prints and JSON-encodes itself from Raw with every secret value replaced; the
// methods are generated into requests_format.go by internal/reqfmt, as for package driver, and
// TestFormattersAreGenerated fails until a new request type has them.

//go:generate env CSIKIT_WRITE_FORMATTERS=1 go test -run ^TestFormattersAreGenerated$ .
