#!/usr/bin/env bash
# Installs a built openmpi-coll-sharm .deb, shows that a plain mpirun (no
# MCA options, no component path, no OMPI_MCA_ variable) uses sharm, by
# reading sharm's MPI_T counters in ci/demo.c, then purges the package and
# checks that nothing of it is left (files, diversions, the diverted file).
#
#   ci/package-check.sh [--no-sandbox] openmpi-coll-sharm_<version>_amd64.deb
#
# The check runs in a sandbox: a private mount namespace in which /usr,
# /var/lib/dpkg and /var/log are overlays whose changes live in a tmpfs, so
# the install is real for dpkg, Open MPI and mpirun inside it, but the system
# outside never sees the package, and however the check ends (failure, kill)
# nothing of it survives the namespace.  The purge and its checks still run
# inside.  --no-sandbox installs into the system itself (then a trap purges
# the package on any exit); it refuses when the package is already installed.
set -euo pipefail
cd "$(dirname "$0")/.."
die() { echo "ci/package-check.sh: FAIL: $*" >&2; exit 1; }

sandbox=1
if [ "${1:-}" = --no-sandbox ]; then
    sandbox=0
    shift
fi
deb=$(readlink -f "${1:?usage: ci/package-check.sh [--no-sandbox] PACKAGE.deb}")
[ -f "$deb" ] || die "no such package: $1"
name=$(dpkg-deb -f "$deb" Package)
[ "$(id -u)" -eq 0 ] || die "needs root (dpkg -i)"

# ---- the sandbox ------------------------------------------------------------
if [ "$sandbox" = 1 ] && [ "${SHARM_PACKAGE_SANDBOX:-}" != inside ]; then
    command -v unshare >/dev/null || die "unshare is missing (util-linux)"
    grep -qw overlay /proc/filesystems || modprobe overlay 2>/dev/null || true
    grep -qw overlay /proc/filesystems || die "the kernel has no overlayfs (try --no-sandbox on a throwaway machine)"
    # Outside a chroot, unshare makes every mount private (nothing mounted
    # inside reaches the system).  In a chroot (ci/ompi5.sh's root), / is no
    # mount point and unshare cannot do that; there the mounts must already
    # be private (ci/ompi5.sh makes them so), which is checked inside.
    prop=()
    mountpoint -q / || prop=(--propagation unchanged)
    exec unshare --mount "${prop[@]}" env SHARM_PACKAGE_SANDBOX=inside "$0" "$deb"
fi
if [ "${SHARM_PACKAGE_SANDBOX:-}" = inside ]; then
    if mountpoint -q /; then
        for d in /usr /var/lib/dpkg /var/log; do
            p=$(findmnt -n -o PROPAGATION --target "$d" 2>/dev/null || echo unknown)
            case "$p" in
            private*) ;;
            *) die "the mount holding $d is '$p', not private: an overlay there could reach the system" ;;
            esac
        done
    elif [ "${SHARM_MOUNTS_PRIVATE:-}" != 1 ]; then
        # findmnt cannot see the mount holding a chroot; ci/ompi5.sh says so.
        die "in a chroot whose mount propagation is unknown (run it through ci/ompi5.sh)"
    fi
    layer=$(mktemp -d /tmp/sharm-pkg-sandbox.XXXXXX)
    mount -t tmpfs -o mode=0700 sharm-pkg "$layer"
    for d in /usr /var/lib/dpkg /var/log; do
        key=$(echo "$d" | tr / _)
        mkdir -p "$layer/$key/upper" "$layer/$key/work"
        mount -t overlay "sharm-pkg$key" \
            -o "lowerdir=$d,upperdir=$layer/$key/upper,workdir=$layer/$key/work" "$d"
    done
    # The overlays keep their layers alive; the mount point itself (a
    # directory of the system's /tmp) goes at once, whatever happens later.
    umount -l "$layer"
    rmdir "$layer"
    echo "== sandbox: /usr, /var/lib/dpkg, /var/log are throwaway overlays in this mount namespace"
fi

# ---- install, prove, purge --------------------------------------------------
if dpkg-query -W -f '${Status}' "$name" 2>/dev/null | grep -q installed; then
    die "$name is already installed here; not touching it"
fi
work=$(mktemp -d)
installed=0
cleanup() {
    if [ "$installed" = 1 ]; then
        dpkg --purge "$name" >/dev/null 2>&1 || echo "ci/package-check.sh: could not purge $name" >&2
    fi
    rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM HUP
# A plain mpirun also searches ~/.openmpi/components (where ci/main.sh
# installs a development copy): an empty HOME makes sure the packaged copy
# is the one that serves.  No OMPI_MCA_/PMIX_MCA_/PRTE_MCA_ variable either.
export HOME=$work/home OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
mkdir -p "$HOME"
for v in $(env | sed -n 's/^\(\(OMPI\|PMIX\|PRTE\)_MCA_[^=]*\)=.*/\1/p'); do unset "$v"; done

files=$(dpkg-deb --fsys-tarfile "$deb" | tar -t | sed 's|^\./|/|; s|/$||' | grep -v '^/\?$')
so=$(echo "$files" | grep '/mca_coll_sharm\.so$')
# The state the purge must restore: which of the package's paths exist (with
# a checksum for files: the package may divert one), and the diversions.
snapshot() {
    local f
    for f in $files; do
        if [ -f "$f" ]; then
            echo "$f $(md5sum <"$f" | cut -c1-32)"
        elif [ -e "$f" ]; then
            echo "$f"
        fi
    done
    dpkg-divert --list | sort
}
before=$(snapshot)

echo "== install"
installed=1 # from here on a failure purges (dpkg may stop half way)
dpkg -i "$deb"
dpkg-query -W -f '${Package} ${Version} ${Status}\n' "$name"
[ -f "$so" ] || die "$so not installed"
dpkg-divert --list | grep -F "$name" || true
ompi_info | grep "MCA coll: sharm" || die "ompi_info does not list sharm"

echo "== a plain mpirun serves collectives with sharm"
mpicc.openmpi -O2 -o "$work/demo" ci/demo.c
echo "mpirun -np 2 $work/demo   (no MCA options; environment: $(env | grep -c '_MCA_' || true) *_MCA_ variables)"
out=$(timeout -s KILL 120 mpirun.openmpi -np 2 "$work/demo" 2>&1) || {
    echo "$out"
    die "mpirun failed"
}
echo "$out"
echo "$out" | grep -q "results correct" || die "wrong results"
for op in allreduce bcast barrier; do
    served=$(echo "$out" | sed -n "s/.*MPI_$op *served by sharm: \([0-9]*\).*/\1/p")
    [ "${served:-0}" -gt 0 ] || die "a plain mpirun: sharm served no MPI_$op (counter: ${served:-absent})"
done
# Symptoms of the workarounds this package must not need.
if echo "$out" | grep -E "bad prefix|override variable file"; then
    die "warnings about the component path under a plain mpirun"
fi
echo "plain mpirun: sharm served MPI_Allreduce, MPI_Bcast and MPI_Barrier"

echo "== purge"
dpkg --purge "$name"
installed=0
if dpkg-query -W -f '${Status}' "$name" 2>/dev/null | grep -q installed; then
    die "$name still installed"
fi
after=$(snapshot)
left=$(diff <(echo "$before") <(echo "$after") || true)
[ -z "$left" ] || die "the purge did not restore the system (< before, > after): $left"
[ ! -e "$so" ] || die "$so left behind"
if ompi_info | grep -q "MCA coll: sharm"; then die "ompi_info still lists sharm"; fi
echo "ci/package-check.sh: $name installed, served MPI_Allreduce/Bcast/Barrier under a plain mpirun, purged without leftovers"
