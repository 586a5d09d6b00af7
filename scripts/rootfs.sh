#!/bin/sh
# The root filesystem of the local target's second runtime (RMQ_RUNTIME=chroot, RabbitMQ 4.0): rootfs.sh [path|build]
#   path   prints the root's directory if it is built (exit 1 if not), builds nothing;
#   build  prints it, building it first if missing (the default).
# Debian 13 (trixie) from Debian's own archive, minbase plus rabbitmq-server, so the broker and its Erlang are
# Debian's packages, as on the host runtime. Cached outside the checkout under ROOTFS_CACHE, one directory per
# suite and package list (its hash in the name): changing PACKAGES builds a new root, the old one stays until
# removed. Concurrent builds of one root wait on its lock; the root appears by a rename, whole or not at all.
set -eu
action=${1:-build}
SUITE=trixie
PACKAGES=rabbitmq-server
MIRROR=${DEBIAN_MIRROR:-http://deb.debian.org/debian}
CACHE=${ROOTFS_CACHE:-/var/cache/rabbit-sizing}
# Relative, the root would be built in whatever directory the caller runs from (a checkout) and found by no other.
case $CACHE in /*) ;; *) echo "error: ROOTFS_CACHE must be an absolute path, got $CACHE" >&2; exit 2 ;; esac
FORMAT=2 # what a build leaves besides the packages (the files below); a change builds a new root
key=$(printf '%s\n' "$SUITE" "$PACKAGES" "$FORMAT" | sha256sum | cut -c1-12)
root=$CACHE/rootfs-$key
log() { echo "[rootfs.sh] $*" >&2; }

# Built = the stamp written as the last step before the rename.
built() { [ -f "$root/.rabbit-sizing-rootfs" ]; }

# Mounts left below DIR (debootstrap mounts proc and sys in its target and may leave them on failure), deepest first.
unmount_below() {
  awk -v dir="$1" '$2 == dir || index($2, dir "/") == 1 { print $2 }' /proc/mounts | sort -r |
    while read -r mnt; do umount -l "$mnt" 2>/dev/null || true; done
}

case $action in
path)
  built || exit 1
  echo "$root"
  exit 0
  ;;
build) ;;
*)
  echo "usage: rootfs.sh [path|build]" >&2
  exit 64
  ;;
esac

if built; then echo "$root"; exit 0; fi
# What a machine needs to build and run the root, each missing piece in one line.
[ "$(id -u)" -eq 0 ] || { echo "error: the RabbitMQ 4.0 runtime needs root (debootstrap, chroot and mounts); this is uid $(id -u)" >&2; exit 2; }
command -v debootstrap >/dev/null || { echo "error: the RabbitMQ 4.0 runtime needs debootstrap (apt-get install debootstrap)" >&2; exit 2; }

mkdir -p "$CACHE"
exec 9>"$root.lock"
flock 9
if built; then echo "$root"; exit 0; fi # another build finished while this one waited
tmp=$root.build.$$
trap 'unmount_below "$tmp"; rm -rf --one-file-system "$tmp"' EXIT
log "building $root: debootstrap --variant=minbase --include=$PACKAGES $SUITE from $MIRROR (about a minute)"
started=$(date +%s)
if ! debootstrap --variant=minbase --include="$PACKAGES" "$SUITE" "$tmp" "$MIRROR" >"$CACHE/rootfs-$key.log" 2>&1; then
  tail -n 15 "$CACHE/rootfs-$key.log" >&2
  echo "error: debootstrap of $SUITE failed (log: $CACHE/rootfs-$key.log); is $MIRROR reachable?" >&2
  exit 1
fi
unmount_below "$tmp"
# Nothing the packages' scripts started may outlive the build (no init runs in a chroot, but check).
for link in /proc/[0-9]*/root; do
  if [ "$(readlink "$link" 2>/dev/null)" = "$tmp" ]; then
    pid=${link#/proc/}
    log "killing pid ${pid%/root} left running in the new root"
    kill -9 "${pid%/root}" 2>/dev/null || true
  fi
done
# The downloaded .debs are installed: ~100 MB nobody reads again.
rm -f "$tmp"/var/cache/apt/archives/*.deb
# The root's own directories: cluster.sh destroy removes the mount points runtime.sh made for a cluster, up to
# (never including) one of these.
(cd "$tmp" && find . -xdev -type d | sed 's|^\.||; s|^$|/|') >"$tmp/.rabbit-sizing-dirs"
rel=$(ls "$tmp/usr/lib/rabbitmq/lib" | sed -n 's/^rabbitmq_server-//p' | sort | tail -n 1)
printf 'suite=%s\npackages=%s\nrabbitmq=%s\nbuilt_s=%s\n' "$SUITE" "$PACKAGES" "$rel" "$(($(date +%s) - started))" \
  >"$tmp/.rabbit-sizing-rootfs"
mv "$tmp" "$root"
trap - EXIT
log "built $root in $(($(date +%s) - started)) s: RabbitMQ $rel, $(du -sh --one-file-system "$root" | cut -f1)"
echo "$root"
