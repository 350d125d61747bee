#!/usr/bin/env bash
# Compiles sharm's reduction kernels (src/kernels, which import nothing from
# the rest of the crate) for aarch64 and checks that the element-wise loops
# come out as NEON vector code: the plugin itself needs Open MPI's headers
# and a cross C compiler, the kernels need only Rust's core and std.
#
# The host's rustup toolchain has no aarch64 standard library (and rustup
# cannot fetch one here), so the compiler is Debian 13's rustc with
# Debian's libstd-rust-dev:arm64, the aarch64 std built for that same
# rustc, in a cached minimal Debian 13 root ($SHARM_CACHE/cross-trixie/<stamp>,
# default /var/cache/sharm; made once with debootstrap, ~300 MB).  That
# rustc is 1.85, older than the host's; the kernels (not their tests,
# which use u*::is_multiple_of, Rust 1.87) compile with it.
#
# Output: target/cross-check/kernels-aarch64.s (the assembly) and a count
# of NEON vector instructions; exit status 1 on a compile error or warning,
# or when no vector instruction is found.
# Usage: ci/cross-check.sh          (as root: debootstrap, chroot, mounts)
set -euo pipefail

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
SUITE=trixie
CACHE=${SHARM_CACHE:-/var/cache/sharm}/cross-$SUITE
MIRROR=${SHARM_DEBIAN_MIRROR:-http://deb.debian.org/debian}
TARGET=aarch64-unknown-linux-gnu
PACKAGES="rustc libstd-rust-dev:arm64"
RECIPE=1 # bump when the way the root is made changes
STAMP=$(printf '%s\n' "$SUITE" "$MIRROR" "$PACKAGES" "$RECIPE" | sha256sum | cut -c1-12)
ROOT=$CACHE/$STAMP
OUT=$REPO/target/cross-check

say() { echo "ci/cross-check.sh: $*"; }
die() { echo "ci/cross-check.sh: $*" >&2; exit 1; }

# ---- inside a private mount namespace: compile in the root -----------------
if [ "${1:-}" = "--in-namespace" ]; then
    mount --make-rprivate /
    mount -t proc proc "$ROOT/proc"
    # The sources and the outputs live on a tmpfs that vanishes with the
    # namespace; the cached root is never written.
    mount -t tmpfs -o mode=1777 tmp "$ROOT/tmp"
    cp -r "$REPO/src/kernels" "$ROOT/tmp/kernels"
    mkdir "$ROOT/tmp/out"
    rc=0
    # mod.rs as the crate root: its `mod` items resolve to the files beside
    # it and `super::` to the crate, exactly as inside sharm.
    chroot "$ROOT" /usr/bin/env -i PATH=/usr/bin:/bin HOME=/root \
        rustc --version >&2
    chroot "$ROOT" /usr/bin/env -i PATH=/usr/bin:/bin HOME=/root \
        rustc --edition 2021 --crate-type rlib --crate-name sharm_kernels \
        --target "$TARGET" -C opt-level=3 -D warnings \
        --emit=metadata=/tmp/out/kernels.rmeta,asm=/tmp/out/kernels.s \
        /tmp/kernels/mod.rs || rc=$?
    [ -f "$ROOT/tmp/out/kernels.s" ] && cp "$ROOT/tmp/out/kernels.s" "$OUT/kernels-$TARGET.s"
    exit "$rc"
fi

# ---- outside: the root, then the namespace ---------------------------------
[ "$(id -u)" -eq 0 ] || die "needs root (debootstrap, chroot, mounts)"
for tool in debootstrap unshare chroot; do
    command -v "$tool" >/dev/null || die "$tool is missing (apt-get install debootstrap util-linux)"
done

make_root() {
    local tmp=$CACHE/.new-$STAMP-$$ t0=$SECONDS
    say "creating the Debian $SUITE root $ROOT (debootstrap $SUITE from $MIRROR)"
    rm -rf "$tmp"
    mkdir -p "$tmp"
    # shellcheck disable=SC2064 # $tmp is local: expand it now
    trap "rm -rf '$tmp'" EXIT
    debootstrap --variant=minbase "$SUITE" "$tmp" "$MIRROR" >"$CACHE/.debootstrap-$STAMP.log" 2>&1 ||
        die "debootstrap failed; see $CACHE/.debootstrap-$STAMP.log"
    cp /etc/resolv.conf "$tmp/etc/resolv.conf"
    # arm64 as a foreign architecture: only the aarch64 std's rlibs are
    # installed from it (Multi-Arch: same), nothing of it is executed.
    # shellcheck disable=SC2086 # PACKAGES is a word list
    unshare --mount --pid --fork sh -c '
        mount -t proc proc "$0/proc" &&
        chroot "$0" sh -c "dpkg --add-architecture arm64 && apt-get update -qq &&
            DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $* &&
            apt-get clean"' \
        "$tmp" $PACKAGES >"$CACHE/.packages-$STAMP.log" 2>&1 ||
        die "installing $PACKAGES in the root failed; see $CACHE/.packages-$STAMP.log"
    mv "$tmp" "$ROOT"
    trap - EXIT
    say "root ready in $((SECONDS - t0)) s"
}

mkdir -p "$CACHE" "$OUT"
exec 9>"$CACHE/.lock"
flock 9 # one root creation at a time; a second job waits and reuses it
if [ -d "$ROOT" ]; then
    say "reusing the root $ROOT"
else
    make_root
fi
flock -u 9

rm -f "$OUT/kernels-$TARGET.s"
ROOT=$ROOT OUT=$OUT unshare --mount --fork bash "$REPO/ci/cross-check.sh" --in-namespace ||
    die "src/kernels does not compile cleanly for $TARGET"
asm=$OUT/kernels-$TARGET.s
# NEON arithmetic on whole vectors (".4s" = 4 x 32 bits, ".2d" = 2 x 64,
# ".16b"/".8h" for 8/16-bit integers) in the element-wise loops.
vec=$(grep -cE '^\s+(add|sub|mul|fadd|fmul|smax|smin|umax|umin|fcmgt|cmgt|cmhi|bsl|bif|bit|and|orr|eor)\s+v[0-9]+\.(16b|8h|4s|2d)' "$asm" || true)
say "src/kernels compiles for $TARGET without warnings; $vec NEON vector instructions in $asm"
[ "$vec" -gt 0 ] || die "no NEON vector instruction in the kernels' code"
