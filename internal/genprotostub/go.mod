// Stands in, in this repository's workspaces only (the replace directives in go.work,
// bench/go.work and e2e/go.work), for google.golang.org/genproto
// v0.0.0-20190819201941-24fa4b261c55, which github.com/IBM/csi-volume-group v0.9.3 requires. That
// version still holds the googleapis/rpc and googleapis/api packages that have since moved to
// modules of their own. Module mode never looks at it, but workspace mode loads the whole module
// graph and then finds each of those packages in two modules ("ambiguous import",
// golang/go#60126). No package of any module here imports a package of it (checked with
// GOWORK=off go list -deps -test all in each module), so an empty module is all it needs to be.
// Delete this directory and the replace directives once csi-volume-group requires a genproto
// without those packages.
module google.golang.org/genproto

go 1.26.0
