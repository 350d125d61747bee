#!/usr/bin/env bash
# Compiles sharm's reduction kernels (src/kernels, which import nothing from
# the rest of the crate) for aarch64, checks that the element-wise loops
# come out as NEON vector code, and runs the kernels' unit tests
# (src/kernels/tests.rs: every operation x type against a scalar reference)
# as aarch64 code under qemu user-mode emulation: the plugin itself needs
# Open MPI's headers and a cross C compiler, the kernels need only Rust's
# core and std.
#
# The host's rustup toolchain has no aarch64 standard library (and rustup
# cannot fetch one here), so the compiler is Debian 13's rustc with
# Debian's libstd-rust-dev:arm64, the aarch64 std built for that same
# rustc, in a cached minimal Debian 13 root ($SHARM_CACHE/cross-trixie/<stamp>,
# default /var/cache/sharm; made once with debootstrap, ~1.5 GB).  That
# rustc is 1.85, older than the host's; the kernels and their tests compile
# with it (the tests avoid u*::is_multiple_of, Rust 1.87, for that reason).
#
# Running the tests: the same root holds the aarch64 cross linker
# (gcc-aarch64-linux-gnu, with libc6-dev-arm64-cross for glibc's static
# libraries and binutils-aarch64-linux-gnu for objdump) and Debian 13's
# qemu-user, whose emulators are static binaries (of them dpkg installs
# only qemu-aarch64, see make_root).  The test binary is linked by
# aarch64-linux-gnu-gcc with `-C target-feature=+crt-static`: a static
# executable needs no aarch64 dynamic loader or libraries at run time, so
# qemu-aarch64 runs it directly, without binfmt_misc: nothing is
# registered in, or installed on, the host.  qemu's default CPU model
# emulates Advanced SIMD (NEON).  On aarch64 the kernels have one level,
# the baseline loop, which the compiler vectorises with NEON (src/kernels/
# isa.rs); so the script checks that the test binary's own `run_base`
# kernels contain NEON vector instructions, and the test
# `aarch64_kernels_are_neon` asserts that the build has NEON, that the
# (emulated) CPU reports it, and that the baseline is the level selected.
#
# Output in target/cross-check/: kernels-aarch64-unknown-linux-gnu.s (the
# library's assembly), kernels-tests-….run_base.s (the test binary's
# kernels, disassembled), kernels-tests-….log (the test run); a count of
# NEON vector instructions and of the tests passed under qemu.  Exit
# status 1 on a compile error or warning (library or tests), when no
# vector instruction is found, or when a test fails, hangs (timeout
# SHARM_CROSS_TEST_TIMEOUT seconds, default 1200) or does not run.
# Usage: ci/cross-check.sh          (as root: debootstrap, chroot, mounts)
set -euo pipefail

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
SUITE=trixie
CACHE=${SHARM_CACHE:-/var/cache/sharm}/cross-$SUITE
MIRROR=${SHARM_DEBIAN_MIRROR:-http://deb.debian.org/debian}
TARGET=aarch64-unknown-linux-gnu
PACKAGES="rustc libstd-rust-dev:arm64 gcc-aarch64-linux-gnu libc6-dev-arm64-cross qemu-user"
RECIPE=2 # bump when the way the root is made changes
TEST_TIMEOUT=${SHARM_CROSS_TEST_TIMEOUT:-1200}
STAMP=$(printf '%s\n' "$SUITE" "$MIRROR" "$PACKAGES" "$RECIPE" | sha256sum | cut -c1-12)
ROOT=$CACHE/$STAMP
OUT=$REPO/target/cross-check

say() { echo "ci/cross-check.sh: $*"; }
die() { echo "ci/cross-check.sh: $*" >&2; exit 1; }

# ---- inside a private mount namespace: compile and run in the root --------
# Exit status: 2 the library does not compile cleanly, 3 the tests do not,
# 4 the tests fail (or time out) under qemu.
if [ "${1:-}" = "--in-namespace" ]; then
    mount --make-rprivate /
    mount -t proc proc "$ROOT/proc"
    # The sources and the outputs live on a tmpfs that vanishes with the
    # namespace; the cached root is never written.
    mount -t tmpfs -o mode=1777 tmp "$ROOT/tmp"
    cp -r "$REPO/src/kernels" "$ROOT/tmp/kernels"
    mkdir "$ROOT/tmp/out"
    in_root() { chroot "$ROOT" /usr/bin/env -i PATH=/usr/bin:/bin HOME=/root "$@"; }
    in_root rustc --version >&2
    # mod.rs as the crate root: its `mod` items resolve to the files beside
    # it and `super::` to the crate, exactly as inside sharm.
    rc=0
    in_root rustc --edition 2021 --crate-type rlib --crate-name sharm_kernels \
        --target "$TARGET" -C opt-level=3 -D warnings \
        --emit=metadata=/tmp/out/kernels.rmeta,asm=/tmp/out/kernels.s \
        /tmp/kernels/mod.rs || rc=$?
    [ -f "$ROOT/tmp/out/kernels.s" ] && cp "$ROOT/tmp/out/kernels.s" "$OUT/kernels-$TARGET.s"
    [ "$rc" -eq 0 ] || exit 2
    # The same crate with its tests, optimised like the library (the
    # vectorised loops are what is tested), linked statically.
    in_root rustc --edition 2021 --test --crate-name sharm_kernels \
        --target "$TARGET" -C opt-level=3 -D warnings \
        -C linker=aarch64-linux-gnu-gcc -C target-feature=+crt-static \
        -C symbol-mangling-version=v0 -o /tmp/out/kernels-tests /tmp/kernels/mod.rs || exit 3
    # The element-wise kernels the tests call, disassembled: every
    # instantiation of elementwise::run_base (named with its type
    # parameters: the v0 symbol mangling above).
    in_root aarch64-linux-gnu-objdump -d -C --no-show-raw-insn /tmp/out/kernels-tests |
        awk '/^[0-9a-f]+ <.*>:$/ { keep = index($0, "elementwise::run_base") > 0 }
             keep' >"$OUT/kernels-tests-$TARGET.run_base.s" || exit 3
    in_root timeout "$TEST_TIMEOUT" qemu-aarch64 /tmp/out/kernels-tests --show-output 2>&1 |
        tee "$OUT/kernels-tests-$TARGET.log" || exit 4
    exit 0
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
    # qemu-user holds the emulators of every architecture (~450 MB); only
    # qemu-aarch64 is used, so dpkg leaves the others out.
    printf '%s\n' 'path-exclude=/usr/bin/qemu-*' 'path-include=/usr/bin/qemu-aarch64' \
        >"$tmp/etc/dpkg/dpkg.cfg.d/sharm-qemu-aarch64-only"
    # arm64 as a foreign architecture: only the aarch64 std's rlibs are
    # installed from it (Multi-Arch: same), nothing of it is executed (the
    # test binary is static: std's rlibs and the cross glibc's libc.a).
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

log=$OUT/kernels-tests-$TARGET.log
rm -f "$OUT/kernels-$TARGET.s" "$OUT/kernels-tests-$TARGET.run_base.s" "$log"
rc=0
ROOT=$ROOT OUT=$OUT unshare --mount --fork bash "$REPO/ci/cross-check.sh" --in-namespace || rc=$?
case $rc in
    0) ;;
    2) die "src/kernels does not compile cleanly for $TARGET" ;;
    3) die "src/kernels' tests do not compile (or link) cleanly for $TARGET" ;;
    4) die "FAILED: src/kernels' tests fail (or time out after $TEST_TIMEOUT s) as $TARGET code under qemu-aarch64; see $log" ;;
    *) die "the run in the root failed (exit status $rc)" ;;
esac
asm=$OUT/kernels-$TARGET.s
# NEON arithmetic on whole vectors (".4s" = 4 x 32 bits, ".2d" = 2 x 64,
# ".16b"/".8h" for 8/16-bit integers) in the element-wise loops.
neon='^[[:space:]]+(add|sub|mul|fadd|fmul|smax|smin|umax|umin|fcmgt|cmgt|cmhi|bsl|bif|bit|and|orr|eor)[[:space:]]+v[0-9]+[.](16b|8h|4s|2d)'
vec=$(grep -cE "$neon" "$asm" || true)
say "src/kernels compiles for $TARGET without warnings; $vec NEON vector instructions in $asm"
[ "$vec" -gt 0 ] || die "no NEON vector instruction in the kernels' code"

# The test binary's own kernels: how many run_base functions hold NEON
# vector arithmetic.  Fewer functions than kernels: LLVM merges identical
# instantiations (i32 and u32 SUM, say) into one.  Only PROD on 64-bit
# integers (NEON has no 64-bit integer multiply) and on complex numbers
# may stay scalar; any other scalar kernel fails the check.
dis=$OUT/kernels-tests-$TARGET.run_base.s
stats=$(NEON=$neon awk '
    /^[0-9a-f]+ <.*>:$/ {
        n++; name[n] = $0
        sub(/^[0-9a-f]+ <(sharm_kernels::elementwise::)?/, "", name[n]); sub(/>:$/, "", name[n])
        gsub(/sharm_kernels::(elementwise|complex)::/, "", name[n])
        next
    }
    { sub(/^[[:space:]]*[0-9a-f]+:/, "") } # the address: then as in the .s
    n && $0 ~ ENVIRON["NEON"] { vec[n] = 1 }
    END {
        for (i = 1; i <= n; i++) v += vec[i] ? 1 : 0
        print n + 0, v + 0
        for (i = 1; i <= n; i++) if (!vec[i]) print name[i]
    }' "$dis")
read -r kernels vector_kernels <<<"${stats%%$'\n'*}"
scalar=$(tail -n +2 <<<"$stats" | paste -sd ';' | sed 's/;/; /g')
say "test binary: $vector_kernels of its $kernels elementwise::run_base functions contain NEON vector instructions${scalar:+; without: $scalar} ($dis)"
[ "$vector_kernels" -gt 0 ] || die "the tested kernels contain no NEON vector instruction: only scalar code would have run"
unexpected=$(tail -n +2 <<<"$stats" | grep -vE '^run_base::<(i64|u64|C32|C64), Prod, [0-9]+>$' || true)
[ -z "$unexpected" ] || die "kernels without NEON vector instructions: $(paste -sd ' ' <<<"$unexpected")"

# The run: libtest's summary, and the test that the level run was NEON.
summary=$(grep -E "^test result: " "$log" | tail -n 1 || true)
passed=$(sed -nE 's/^test result: ok\. ([0-9]+) passed; 0 failed.*/\1/p' <<<"$summary")
[ -n "$passed" ] && [ "$passed" -gt 0 ] || die "FAILED: no passing test run under qemu-aarch64 ($summary); see $log"
grep -qE '^test tests::aarch64_kernels_are_neon \.\.\. ok$' "$log" ||
    die "FAILED: the test aarch64_kernels_are_neon did not run and pass; see $log"
say "$passed tests passed as $TARGET code under qemu-aarch64, aarch64_kernels_are_neon among them ($summary)"
say "done in $SECONDS s"
