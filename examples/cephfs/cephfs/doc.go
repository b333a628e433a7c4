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
// # File quota: the maxFiles parameter
//
// ParamMaxFiles ("maxFiles", a decimal count, 0 for no limit) bounds how many files and
// directories a volume holds. It is a StorageClass parameter and a mutable parameter (a
// Kubernetes VolumeAttributesClass, which takes precedence, as the CSI spec says), so the driver
// implements driver.VolumeModifier and the plugin advertises MODIFY_VOLUME:
// ControllerModifyVolume changes it on a live volume, even while it is mounted. Only maxFiles is
// mutable; any other key, or a value that is not a plain decimal in range, is INVALID_ARGUMENT
// before Ceph is asked, so a refused request changes nothing.
//
// CephFS keeps it as the subvolume's ceph.quota.max_files, which counts the subvolume's own
// directory too: maxFiles=N is stored as N+1 (0 stays 0), and N files fit. ceph-fuse refuses a
// create past it with EDQUOT. Like the byte quota it is enforced a little late: the MDS tells
// clients the count within a few seconds, so a burst of creates can pass the limit by the files
// it made meanwhile. The mgr's volumes module (Pacific) has no command for it, so the controller
// sets it through a libcephfs mount of the subvolume (go-ceph's cephfs package on the call's
// librados connection, bounded by Config.Timeout), reading first and writing only a different
// value. Writing needs the MDS cap flag 'p' (mds "allow rwp"); without it the call is
// PERMISSION_DENIED and says so, while repeating the value a volume has needs read access only.
// A clone gets the maxFiles of its own request, not its source's (which the volumes module would
// copy); a volume created without maxFiles has no file limit.
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
// and ValidateVolumeCapabilities, ListSnapshots, GetSnapshot and ControllerModifyVolume when the
// CO sends none; Kubernetes' external-resizer sends none with ControllerModifyVolume) act as the
// identity of the last call that carried one; before any, they answer UNAVAILABLE (Probe checks
// that a monitor accepts connections).
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
// would serve on); it reaps the daemon, which a driver running as PID 1 of a container adopts. A
// staging mount whose daemon is gone (ENOTCONN: the node plugin's container restarted) is
// unmounted by NodeUnstageVolume, and replaced by NodeStageVolume. NodeGetVolumeStats reads the
// mount's statfs, which ceph-fuse bounds by the quota. ceph-fuse writes nothing to its standard
// streams (log_to_stderr and err_to_stderr off): its daemon closes them, and a log line written
// to stderr then went into a pipe of libfuse's and lost a FUSE request, whose caller waited
// forever.
package cephfs
