// Package hostpath is a complete CSI driver on a local directory, built only on csikit's public
// API. Filesystem volumes are directories; block volumes (and filesystem volumes that ask for an
// fs_type) are sparse image files attached to loop devices, formatted and mounted through
// k8s.io/mount-utils. State lives in an embedded transactional store (bbolt), so every operation
// commits atomically and a restart after a crash finds a consistent state.
//
// # Sizes
//
// What a volume's size means depends on its kind, and the Kubernetes storage e2e suite notices
// the difference:
//
//   - Image volumes (kind "file": raw block, or ext4, ext3 or xfs on the image) are sparse files
//     of the size granted, rounded up to 4 KiB; an xfs volume is at least 300 MiB, the least
//     mkfs.xfs formats (OUT_OF_RANGE when the request's limit is below it). A pod sees that size: the device's for block,
//     the file system's (less mkfs's own overhead) for a mounted one, and NodeGetVolumeStats
//     reports the same. ControllerExpandVolume grows the file and asks for node expansion;
//     NodeExpandVolume grows the file system online. Growing a mounted ext file system needs
//     CAP_SYS_RESOURCE, which some hosts deny even to root: there NodeExpandVolume answers
//     FAILED_PRECONDITION naming the capability, the next NodeStageVolume grows the file system
//     while it is not mounted, and the NodeExpandVolume that follows succeeds, nothing being left
//     to grow.
//   - Directory volumes (kind "dir", the default for filesystem access without an fs type) are
//     directories on the file system that holds Config.StateDir, bind-mounted into pods. The size
//     granted is recorded, answered by CreateVolume, ControllerGetVolume and ListVolumes and
//     counted against Config.CapacityBytes, but nothing enforces it: there is no quota, a pod can
//     write past it, and statfs (df) in the pod and NodeGetVolumeStats report the host file
//     system's total, used and available bytes and inodes, shared with everything else on it.
//     Expanding one changes only the record (no node expansion). So a directory volume restored
//     from a snapshot or cloned at a larger size shows no larger file system: a Kubernetes e2e
//     test-driver definition declares FSResizeFromSourceNotSupported for directory volumes, and
//     tests of sizes use a StorageClass with csi.storage.k8s.io/fstype: ext4.
//
// # Volume groups
//
// Volume groups (volumegroup.Controller) are served in every mode with a controller.
// A group is a named set of this driver's volumes and takes no parameters. A volume is in one
// group at most; it joins through ModifyVolumeGroupMembership (which sets the members to exactly
// the list given) or at creation, through the CreateVolume parameter ParamVolumeGroup or its
// alias ParamVolumeGroupOperator (the group's name or ID). Config.MaxGroupMembers caps a group
// (RESOURCE_EXHAUSTED past it). A member cannot be deleted alone (FAILED_PRECONDITION naming the
// group); deleting the group deletes its members, and is refused while one is published.
//
// A group snapshot of a volume group: CreateVolumeGroupSnapshot with the parameter
// ParamVolumeGroup naming the group snapshots it as a whole. source_volume_ids must then be
// exactly its members (INVALID_ARGUMENT naming the missing and the extra volumes otherwise), and
// the membership is checked again when the snapshot commits: a change in between answers ABORTED
// and leaves nothing behind, so the CO's retry snapshots the group as it now is. Other group
// snapshot parameters are refused, except the csi.storage.k8s.io/ keys csi-snapshotter adds and
// deletionPolicy with the value Delete or Retain, which the Kubernetes storage e2e suite puts
// into every VolumeGroupSnapshotClass it creates (accepted and ignored; the reasoning is at
// checkGroupSnapshotParameters).
//
// # What the IBM volume-group operator sends and expects
//
// The only consumer of this service is the IBM volume-group operator
// (github.com/IBM/csi-volume-group-operator). Read from its source, what it does, and how this
// driver meets it:
//
//   - Calls. It dials the CSI socket (its --csi-address), waits until Probe says ready, and
//     handles the VolumeGroupClasses whose driver field equals the name from GetPluginInfo. It
//     only ever calls CreateVolumeGroup, ModifyVolumeGroupMembership and DeleteVolumeGroup; it
//     never reads a group back with ControllerGetVolumeGroup or ListVolumeGroups, so its own
//     objects are its only record of membership. Each call has a deadline (--rpc-timeout, one
//     minute by default); it exits when the connection to the driver is lost.
//   - Create. The name is "volumegroup-" followed by the VolumeGroup's UID, so a retry uses the
//     same name. The parameters are the class's, minus every key under the operator's own
//     prefix "volumegroup.storage.ibm.io/" (it rejects a class with a key there other than
//     secret-name and secret-namespace). The answer's volume_group_id becomes the handle of the
//     VolumeGroupContent and volume_group_context its attributes: both must stay valid for the
//     group's life. A statically provisioned VolumeGroupContent carries a handle the
//     administrator wrote, and no CreateVolumeGroup is sent for it. This driver refuses every
//     parameter (a group has none), so a class for it carries only the operator's keys.
//   - Secrets. When the class names a Secret (volumegroup.storage.ibm.io/secret-name and
//     secret-namespace), its data is sent as the secrets of every call of that class: create,
//     modify and delete alike. Keys are Kubernetes data keys, which the CSI key rule accepts;
//     values are the raw bytes as a string, so a value that is not valid UTF-8 cannot be sent
//     at all. csikit redacts these maps (vg_csi_secret) in every log line and error.
//   - Membership. A VolumeGroup selects PVCs by label, among the bound PVCs of the whole cluster
//     whose StorageClass names this driver as provisioner. It leaves out every PVC whose
//     StorageClass has a parameter called "volume_group": it takes those as placed in a group by
//     the driver itself. For the others it sends the CSI volume handles of their PVs as the
//     complete member list, whenever the selected set differs from the list it recorded (an empty
//     list when none is left), so exact-membership semantics are what it relies on. It puts a
//     finalizer on each member PVC, so a member is not deleted while in a group, which matches
//     this driver refusing DeleteVolume of a member. Its --multiple-vgs-to-pvc flag is true by
//     default and lets one PVC match several groups; this driver keeps a volume in one group and
//     answers INVALID_ARGUMENT to the second, so run the operator with
//     --multiple-vgs-to-pvc=false. Use ParamVolumeGroupOperator ("volume_group") rather than
//     ParamVolumeGroup in a StorageClass that places volumes in a group at creation: under that
//     key the operator keeps its hands off those PVCs instead of moving them by label, and the
//     driver treats both keys alike.
//   - Delete. When a VolumeGroupContent with the Delete policy goes, the operator first deletes
//     the member PVCs (unless --disable-delete-pvcs), then calls DeleteVolumeGroup. The
//     provisioner's DeleteVolume of each member gets FAILED_PRECONDITION until the group is
//     gone; the group delete then removes the volumes, and the provisioner's next retry finds
//     them gone (OK). While a member is still published, DeleteVolumeGroup answers
//     FAILED_PRECONDITION and the operator tries again.
//   - Errors and retries. The operator treats no gRPC code as final: every failed call fails
//     the reconcile, the message is written into the object's status and events, and
//     controller-runtime retries with exponential back-off (up to about a quarter of an hour
//     between tries). INVALID_ARGUMENT, ALREADY_EXISTS or RESOURCE_EXHAUSTED therefore repeat
//     until someone fixes the objects, which is why every message of this driver names the
//     parameter, volume or group at fault. A retry that overlaps a call still running (after
//     the deadline) is answered ABORTED by csikit's locks and retried again; creates and
//     membership changes are idempotent, so the retry that finally lands gets the same answer.
package hostpath
