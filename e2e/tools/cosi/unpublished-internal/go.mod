// Stands in for sigs.k8s.io/container-object-storage-interface/internal, which upstream's root
// module requires at v0.0.0-00010101000000-000000000000 (a placeholder its own replace directive
// resolves) but never published. Nothing here is imported: the runner in ../runner replaces it.
// The replace directive in ../go.mod points at this directory so that commands that walk the
// whole module graph (go list -m all, go mod graph, go mod verify) do not fail on it.
module sigs.k8s.io/container-object-storage-interface/internal

go 1.24
