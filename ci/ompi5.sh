#!/usr/bin/env bash
# The test suite on Open MPI 5.0: runs ci/test.sh (or another command) from
# this source tree inside a Debian 13 (trixie, Open MPI 5.0.7) root.
#
#   ci/ompi5.sh                  ci/test.sh inside the root
#   ci/ompi5.sh CMD [ARG...]     CMD inside the root, e.g. ci/package.sh
#   ci/ompi5.sh --shell          an interactive shell inside the root
#   SHARM_DEBIAN_SUITE=bookworm ci/ompi5.sh ...   the same in Debian 12
#   SHARM_OMPI5_SOURCES=DIR ci/ompi5.sh ...        DIR (e.g. external test
#                                suites' sources) read-only at /sources inside
#
# The root is made once with debootstrap and cached under
# $SHARM_CACHE/trixie/<stamp> (default /var/cache/sharm), where <stamp> is a
# hash of everything that goes into it (suite, mirror, package list, the
# recipe's version): change any of them and a fresh root is built beside the
# old one.  Making it needs root privileges and the Debian mirror.
#
# A snapshot of the source tree is copied to /src/sharm (a tmpfs).  cargo's
# target directory (/src/sharm/target, kept in the root's /var/tmp/sharm-target)
# and registry cache live inside the root; files a command writes to
# $SHARM_OUT (/var/tmp/sharm-out) land in target/ompi5/ of the tree.  Rust
# comes from the host's toolchain, bind-mounted read-only at /opt/rust:
# trixie's rustc is 1.85, and the crate uses u*::is_multiple_of (Rust 1.87).
#
# Everything runs in its own mount and PID namespaces (unshare): /proc and
# /dev/shm inside are private (the leftover checks of ci/test.sh see only
# this job's processes and segments), and every mount disappears with the
# namespace when the job ends, however it ends.
set -euo pipefail

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# Debian 13 by default; SHARM_DEBIAN_SUITE=bookworm gives a Debian 12 /
# Open MPI 4.1 root the same way (a clean system for ci/package.sh --check).
SUITE=${SHARM_DEBIAN_SUITE:-trixie}
CACHE=${SHARM_CACHE:-/var/cache/sharm}/$SUITE
MIRROR=${SHARM_DEBIAN_MIRROR:-http://deb.debian.org/debian}
RECIPE=1 # bump when the way the root is made changes
# openmpi-bin/libopenmpi-dev: what is tested; gcc, pkgconf: the glue and the
# C checkers; dpkg-dev, xz-utils: ci/ompi-headers.sh (apt-get source);
# procps: pgrep in ci/test.sh; python3, gnuplot-nox: ci/bench-selftest.sh;
# lintian, file: ci/package.sh; ca-certificates: cargo reaching crates.io.
PACKAGES="openmpi-bin libopenmpi-dev gcc libc6-dev pkgconf dpkg-dev xz-utils procps python3
gnuplot-nox lintian file ca-certificates"
STAMP=$(printf '%s\n' "$SUITE" "$MIRROR" "$PACKAGES" "$RECIPE" | sha256sum | cut -c1-12)
ROOT=$CACHE/$STAMP

say() { echo "ci/ompi5.sh: $*"; }
die() { echo "ci/ompi5.sh: $*" >&2; exit 1; }

# ---- inside the namespaces: mount, chroot, run ----------------------------
if [ "${1:-}" = "--in-namespace" ]; then
    shift
    rust=$1
    shift
    mounts=()
    cleanup() {
        # The namespace drops these anyway; unmounting explicitly keeps a
        # run without unshare (or a debugging session) tidy too.
        local i
        for ((i = ${#mounts[@]} - 1; i >= 0; i--)); do
            umount -l "${mounts[$i]}" 2>/dev/null || true
        done
    }
    trap cleanup EXIT
    mnt() { # mnt TARGET MOUNT-ARGS...
        local target=$1
        shift
        mkdir -p "$target"
        mount "$@" "$target"
        mounts+=("$target")
    }
    # Private: nothing mounted in here (ci/package-check.sh's overlays
    # included, which rely on SHARM_MOUNTS_PRIVATE=1 below) reaches the host.
    mount --make-rprivate /
    mnt "$ROOT/proc" -t proc proc
    # hwloc reads the CPU topology (and PMIx the locality strings) from sysfs.
    mnt "$ROOT/sys" --bind /sys
    mount -o remount,bind,ro "$ROOT/sys"
    mnt "$ROOT/dev/shm" -t tmpfs -o mode=1777,size=8g shm
    # Nothing a job leaves in /tmp survives into the cached root.
    mnt "$ROOT/tmp" -t tmpfs -o mode=1777 tmp
    mnt "$ROOT/dev/pts" -t devpts -o newinstance,ptmxmode=0666 devpts
    # A snapshot of the tree (tracked and untracked, not ignored files, as
    # they are now, mtimes kept) on a tmpfs: editing the tree while a job
    # runs does not change what that job builds and tests.
    mnt "$ROOT/src/sharm" -t tmpfs -o mode=0755 src
    if git -C "$REPO" rev-parse --git-dir >/dev/null 2>&1; then
        (cd "$REPO" && git ls-files -z -co --exclude-standard |
            while IFS= read -r -d '' f; do [ -e "$f" ] && printf '%s\0' "$f"; done |
            tar --null -T - -cf -) | tar -C "$ROOT/src/sharm" -xf -
        # ci/package.sh names the commit; the repository itself stays outside.
        git -C "$REPO" log -1 --format='%h%n%cD%n%an <%ae>' >"$ROOT/src/sharm/.sharm-commit"
    else
        tar -C "$REPO" --exclude=./target -cf - . | tar -C "$ROOT/src/sharm" -xf -
    fi
    # cargo's target directory persists in the root (incremental builds)
    # and sits where ci/bench*.sh expect it, in the tree's target/.
    mkdir -p "$ROOT/var/tmp/sharm-target"
    mnt "$ROOT/src/sharm/target" --bind "$ROOT/var/tmp/sharm-target"
    # Results (packages) come back through target/ompi5 of the tree.
    mkdir -p "$REPO/target/ompi5"
    mnt "$ROOT/var/tmp/sharm-out" --bind "$REPO/target/ompi5"
    mnt "$ROOT/opt/rust" --bind "$rust"
    mount -o remount,bind,ro "$ROOT/opt/rust"
    if [ -n "${SHARM_OMPI5_SOURCES:-}" ]; then
        mnt "$ROOT/sources" --bind "$SHARM_OMPI5_SOURCES"
        mount -o remount,bind,ro "$ROOT/sources"
    fi
    cp /etc/resolv.conf "$ROOT/etc/resolv.conf" 2>/dev/null || true
    [ $# -gt 0 ] || set -- bash ci/test.sh
    rc=0
    chroot "$ROOT" /usr/bin/env -i \
        HOME=/root TERM="${TERM:-dumb}" LANG=C.UTF-8 \
        PATH=/opt/rust/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
        CARGO_HOME=/root/.cargo \
        CARGO_TERM_COLOR=never SHARM_OUT=/var/tmp/sharm-out SHARM_MOUNTS_PRIVATE=1 \
        bash -c 'cd /src/sharm && exec "$@"' ci "$@" || rc=$?
    exit "$rc"
fi

# ---- outside: the root, then the namespaces -------------------------------
[ "$(id -u)" -eq 0 ] || die "needs root (debootstrap, chroot, mounts)"
for tool in debootstrap unshare chroot; do
    command -v "$tool" >/dev/null || die "$tool is missing (apt-get install debootstrap util-linux)"
done
rust=$(rustc --print sysroot 2>/dev/null) || die "no Rust toolchain on the host (rustc)"
"$rust/bin/rustc" --version | awk '{split($2, v, "."); exit !(v[1] > 1 || v[2] >= 87)}' ||
    die "the host's rustc ($("$rust/bin/rustc" --version)) is older than 1.87"

make_root() {
    local tmp=$CACHE/.new-$STAMP-$$ t0=$SECONDS
    say "creating the Debian $SUITE root $ROOT (debootstrap $SUITE from $MIRROR)"
    rm -rf "$tmp"
    mkdir -p "$tmp"
    # shellcheck disable=SC2064 # $tmp is local: expand it now
    trap "rm -rf '$tmp'" EXIT
    debootstrap --variant=minbase "$SUITE" "$tmp" "$MIRROR" >"$CACHE/.debootstrap-$STAMP.log" 2>&1 ||
        die "debootstrap failed; see $CACHE/.debootstrap-$STAMP.log"
    say "debootstrap: $((SECONDS - t0)) s"
    # The packages go in separately: debootstrap's --include cannot resolve
    # the virtual dependency (automake-1.17) that libopenmpi-dev pulls in.
    echo "deb-src $MIRROR $SUITE main" >>"$tmp/etc/apt/sources.list"
    cp /etc/resolv.conf "$tmp/etc/resolv.conf"
    # ci/ompi-headers.sh runs once here, so that every build finds the
    # headers Debian's libopenmpi-dev leaves out (see that script).
    mkdir -p "$tmp/src"
    cp "$REPO/ci/ompi-headers.sh" "$tmp/src/ompi-headers.sh"
    # shellcheck disable=SC2086 # PACKAGES is a word list
    unshare --mount --pid --fork sh -c '
        mount -t proc proc "$0/proc" &&
        chroot "$0" sh -c "apt-get update -qq && DEBIAN_FRONTEND=noninteractive \
            apt-get install -y -qq --no-install-recommends $*" &&
        chroot "$0" bash /src/ompi-headers.sh' \
        "$tmp" $PACKAGES >"$CACHE/.packages-$STAMP.log" 2>&1 ||
        die "installing packages in the root failed; see $CACHE/.packages-$STAMP.log"
    rm -f "$tmp/src/ompi-headers.sh"
    # cargo in the root trusts the same CAs as the host (after the
    # ca-certificates package, which would regenerate the file).
    cp "${SSL_CERT_FILE:-/etc/ssl/certs/ca-certificates.crt}" "$tmp/etc/ssl/certs/ca-certificates.crt"
    say "packages and headers: $((SECONDS - t0)) s"
    chroot "$tmp" apt-get clean
    chroot "$tmp" dpkg-query -W openmpi-bin libopenmpi-dev >"$tmp/etc/sharm-root-versions"
    mv "$tmp" "$ROOT"
    trap - EXIT
    say "root ready in $((SECONDS - t0)) s: $(tr '\t\n' '= ' <"$ROOT/etc/sharm-root-versions")"
}

mkdir -p "$CACHE"
t0=$SECONDS
exec 9>"$CACHE/.lock"
flock 9 # one root creation at a time; a second job waits and reuses it
if [ -d "$ROOT" ]; then
    say "reusing the $SUITE root $ROOT ($(tr '\t\n' '= ' <"$ROOT/etc/sharm-root-versions"))"
else
    make_root
fi
flock -u 9
root_s=$((SECONDS - t0))

shell=()
if [ "${1:-}" = "--shell" ]; then
    shift
    shell=(bash -i)
fi
t1=$SECONDS
rc=0
if [ -n "${SHARM_OMPI5_SOURCES:-}" ]; then
    SHARM_OMPI5_SOURCES=$(cd "$SHARM_OMPI5_SOURCES" 2>/dev/null && pwd) ||
        die "SHARM_OMPI5_SOURCES is not a directory"
    export SHARM_OMPI5_SOURCES
fi
ROOT=$ROOT REPO=$REPO unshare --mount --pid --fork --kill-child \
    bash "$REPO/ci/ompi5.sh" --in-namespace "$rust" "${shell[@]}" "$@" || rc=$?
say "root: ${root_s} s, job: $((SECONDS - t1)) s, exit status $rc"
exit "$rc"
