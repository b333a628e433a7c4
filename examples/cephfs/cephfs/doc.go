// Package cephfs is the backend of the cephfs example driver: a CSI controller and node on CephFS
// subvolumes, talking to Ceph with go-ceph (librados and the mgr volumes module, the commands of
// `ceph fs subvolume`) and mounting with ceph-fuse.
//
// # Volumes and names
//
// A volume is a subvolume in one group (Config.Group) of one filesystem (Config.FSName); its
// quota is its size, which ControllerExpandVolume raises. Its ID is its subvolume name, derived
// from the CSI name alone by CephName (injective, no table), so a retried CreateVolume finds the
// subvolume its first attempt made. What the CO must find again on a retry (the CSI name and the
// request's fingerprint) is kept in the subvolume's own metadata, written last: a subvolume
// without it has not been answered for yet, listings leave it out, and the retried CreateVolume
// finishes it. A snapshot is a subvolume snapshot, with the same kind of record; its ID is
// "SUBVOLUME@SNAPSHOT".
//
// # Asynchronous clones
//
// Restoring a snapshot and cloning a volume use the mgr's asynchronous clone, which copies in
// the background. The model for any asynchronous backend operation under CSI:
//
//   - the operation's target is named by the request's name, so starting it twice is impossible
//     (the second start finds the first: EEXIST is success);
//   - CreateVolume waits a little (Config.CloneWait, never past the caller's deadline) and, while
//     the clone still runs, answers driver.ErrPending: ABORTED, "an operation is pending for this
//     volume", which the CO retries with the same request;
//   - the retry that finds the clone complete finishes the volume (quota, record) and answers it;
//     one that finds it failed removes it, so that the next retry starts again;
//   - a clone of a volume copies from a snapshot of its own ("csikit-clone-NAME", never listed),
//     removed once the clone is complete, or with either volume.
//
// # Identities
//
// The driver holds no key. Each call acts as the cephx user in its CSI secrets ("userID",
// "userKey"): the provisioner, snapshotter and expand secrets on the controller, the node-stage
// secret on the node. librados gets the key as a config option in memory; ceph-fuse gets it
// through a keyring file of mode 0600 in a private directory removed as soon as the mount is
// made, never on a command line. The calls CSI gives no secrets (ListVolumes, GetCapacity, Probe,
// and ValidateVolumeCapabilities, ListSnapshots and GetSnapshot when the CO sends none) act as
// the identity of the last call that carried one; before any, they answer UNAVAILABLE (Probe
// checks that a monitor accepts connections).
//
// # Faults
//
// Every Ceph operation is bounded by Config.Timeout; a cluster that does not answer, refuses
// connections or has no active mgr makes the call UNAVAILABLE (driver.ErrUnavailable), which the
// CO retries, and Probe reports not ready until the mgr answers again, with no restart: librados
// reconnects by itself.
//
// # Node
//
// NodeStageVolume mounts the subvolume's path with ceph-fuse at the staging path;
// NodePublishVolume bind-mounts it (driver/nodemount); NodeUnstageVolume unmounts and waits for
// the ceph-fuse process to exit, and refuses while a bind of the staging path remains (ceph-fuse
// would serve on). NodeGetVolumeStats reads the mount's statfs, which ceph-fuse bounds by the
// quota.
package cephfs
