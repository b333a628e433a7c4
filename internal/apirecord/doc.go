// Package apirecord writes and compares api/csikit.txt, the record of every exported name and
// signature of the SDK's public packages: each package of module github.com/csikit/csikit that
// is not a command and not under an internal directory. The examples, cmd/csictl, bench and e2e
// are modules of their own and not part of it. Users read the record to see what is promised;
// TestExportedAPIIsRecorded (api_test.go at the module root) fails when the API and the record
// differ, so that a change to the API changes the record in the same commit, where a reviewer
// sees it.
//
// # Workflow
//
// When TestExportedAPIIsRecorded fails, it prints the lines added (+) and removed (-). If the
// change is intended, rewrite the record from the module's root directory with
//
//	go run ./internal/apirecord/cmd/apirecord
//
// and commit api/csikit.txt with the change. The command prints the same +/- lines.
//
//   - Only + lines: a compatible addition. Add a line under "Added" in CHANGELOG.md's
//     [Unreleased] section if users should hear of it.
//   - Any - line: a name was removed, or its type, signature or value changed. That breaks
//     callers and needs an entry under "Changed" or "Removed" in [Unreleased]. A removal is
//     announced first: give the name a "Deprecated: " paragraph in its doc comment (the record
//     gains a "//deprecated" line for it), release that in a minor version, and remove the name in
//     a later one.
//
// A reviewer reads the diff of api/csikit.txt as the change's API: each + line is meant, named
// well and documented; each - line is either a name whose "//deprecated" line was in the last
// release's record or an incompatible change the changelog explains. Two kinds of line need a
// second look: "type I interface { A, B }", whose change means an interface gained or lost a
// method (a gained one breaks every implementation outside the module), and
// "type S struct, comparable", whose loss breaks == and map keys of S.
//
// # Format
//
// The record follows Go's own api/ files: one line per feature, "pkg P, " then the feature, with
// P the package's path in the module (the module path for its root package); sorted; "#" lines
// are comments. Types in other packages are written with the package's path, for example
// "driver.Volume" or "google.golang.org/grpc.ServerOption"; parameter names are left out and type
// parameters are written by index ($0), since renaming either is not an API change.
//
//	pkg driver/plugin, func New(Config) (*Plugin, error)
//	pkg driver/plugin, method (*Plugin) Run(context.Context) error
//	pkg driver/plugin, type Config struct
//	pkg driver/plugin, type Config struct, Name string
//	pkg driver/plugin, const DefaultProbeTimeout time.Duration
//	pkg driver/plugin, const DefaultProbeTimeout = 5000000000
//	pkg driver, type Prober interface { Probe }
//	pkg driver, type Prober interface, Probe(context.Context) (bool, error)
//
// Beyond Go's format, it records that a struct is comparable, the exported fields promoted
// through an unexported embedded struct, the type terms of a constraint interface, and unnamed
// struct and interface types in full. The record is made for linux/amd64, where drivers run; no
// public package has a platform-specific file, so it reads the same on other platforms.
//
// # How
//
// Generate runs "go list -export" in the module's directory, which compiles each package (or
// finds it in the build cache) and names its export data, and reads that with go/importer into
// go/types: what the compiler saw, with no loader added to the module's go.mod
// (golang.org/x/tools/go/packages would run the same go list). Doc comments, for the
// "//deprecated" lines, come from parsing the packages' files.
//
// A text record with a line-set comparison rather than golang.org/x/exp/apidiff: apidiff
// compares two *types.Package, so the old side would have to be export data checked into the
// repository (a binary file no reviewer can read, in a format that changes with the Go release)
// or a second build of the base commit (git history and twice the compilation in every test
// run, which a shallow CI clone or an offline machine cannot give). It would also put
// golang.org/x/exp, which promises no compatibility, in the SDK's go.mod for one test. A text
// record is what Go keeps for its own API: a pull request shows it line by line, and since each
// line carries a whole signature, a removed line is exactly a removed or changed feature. The
// changes apidiff finds that a plain list of signatures would miss (an interface gaining a method,
// a struct becoming incomparable) have lines of their own here, as described above.
package apirecord
