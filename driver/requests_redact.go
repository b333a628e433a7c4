package driver

// Every request type carries Raw, the CSI request with its secrets in clear, so printing or
// encoding a request whole would leak them. Each type therefore prints and JSON-encodes itself
// from Raw with every secret value replaced; the methods are generated into requests_format.go by
// internal/reqfmt from the struct declarations, and TestFormattersAreGenerated fails until a new
// request type has them.

//go:generate env CSIKIT_WRITE_FORMATTERS=1 go test -run ^TestFormattersAreGenerated$ .
