#!/usr/bin/env bash
# Builds the Debian package openmpi-coll-sharm_<version>_amd64.deb for the
# Open MPI this system has (Debian 12: 4.1.4, Debian 13: 5.0.7; run it
# inside the Debian 13 root with `ci/ompi5.sh ci/package.sh`), checks it with
# lintian, and with --check also installs it (in a throwaway overlay of the
# system), proves that a plain mpirun uses it and purges it again
# (ci/package-check.sh).  On Debian 13 the package also diverts PMIx's
# pmix-mca-params.conf (see below and README.md).
#
#   ci/package.sh [--check] [--out DIR]
#
# The .deb goes to DIR (default $SHARM_OUT, else <cargo target dir>/debian).
# The package depends on exactly the Open MPI library package it was built
# against: sharm's glue reads Open MPI's internal structures, which change
# between releases without a soname change.
set -euo pipefail
cd "$(dirname "$0")/.."

check=0
out=${SHARM_OUT:-${CARGO_TARGET_DIR:-target}/debian}
while [ $# -gt 0 ]; do
    case "$1" in
    --check) check=1 ;;
    --out) out=$2; shift ;;
    *) echo "usage: ci/package.sh [--check] [--out DIR]" >&2; exit 2 ;;
    esac
    shift
done
die() { echo "ci/package.sh: $*" >&2; exit 1; }

ci/deps.sh
missing=()
command -v dpkg-shlibdeps >/dev/null || missing+=(dpkg-dev)
command -v lintian >/dev/null || missing+=(lintian)
command -v strip >/dev/null || missing+=(binutils)
if [ ${#missing[@]} -gt 0 ]; then
    echo "ci/package.sh: installing ${missing[*]}"
    sudo_cmd=""
    [ "$(id -u)" -eq 0 ] || sudo_cmd="sudo"
    export DEBIAN_FRONTEND=noninteractive
    $sudo_cmd apt-get update -qq
    $sudo_cmd apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
for tool in dpkg-deb dpkg-shlibdeps lintian strip; do
    command -v "$tool" >/dev/null || die "$tool is missing (apt-get install dpkg-dev lintian binutils)"
done

echo "== build"
cargo build --release
target=${CARGO_TARGET_DIR:-target}
plugin=$target/release/libmca_coll_sharm.so

# ---- what this Open MPI is ------------------------------------------------
# The package that ships libmpi (libopenmpi3 on Debian 12, libopenmpi40 on 13).
libmpi=$(readlink -f /usr/lib/x86_64-linux-gnu/libmpi.so.40) || die "no libmpi.so.40"
abi_pkg=$(dpkg-query -S "$libmpi" | cut -d: -f1)
abi_ver=$(dpkg-query -W -f '${Version}' "$abi_pkg")
ompi_ver=$(dpkg-query -W -f '${source:Upstream-Version}' "$abi_pkg")
# Where this Open MPI looks for components (the package installs there).
compdir=$(ci/ompi-component-dir) || die "cannot find Open MPI's component directory"

# Debian 13 (Open MPI 5.0 under PRRTE/PMIx): libpmix2t64's own parameter
# file sets PMIx's mca_base_component_path.  PMIx's "ompi" programming-model
# plugin (pmdl/ompi, parse_file_envars) takes every value of that file whose
# name starts like an Open MPI parameter ("mca_") away from PMIx and hands it
# to the MPI processes as OMPI_MCA_mca_base_component_path, so every process
# a plain mpirun starts searches only PMIx's plugin directory and never Open
# MPI's own: no third-party component can load.  PMIx does not need the line
# (its compiled-in path is the same directory), so the package diverts the
# file and installs a copy with that line commented out; removing the package
# restores the original.
pmixconf=/usr/lib/x86_64-linux-gnu/pmix2/share/pmix-mca-params.conf
pmix_fix=0
if [ "${ompi_ver%%.*}" -ge 5 ] && [ -f "$pmixconf" ] &&
    grep -Eq '^[[:space:]]*mca_base_component_path[[:space:]]*=' "$pmixconf"; then
    pmix_fix=1
    pmix_pkg=$(dpkg-query -S "$pmixconf" | cut -d: -f1)
    pmix_ver=$(dpkg-query -W -f '${Version}' "$pmix_pkg")
fi

crate_ver=$(sed -n 's/^version = "\(.*\)"/\1/p' Cargo.toml | head -1)
# One upstream version, built per Open MPI release: the Debian revision says
# which (…-1+ompi4.1.4 on Debian 12, …-1+ompi5.0.7 on Debian 13).
version="$crate_ver-1+ompi$ompi_ver"
name=openmpi-coll-sharm
# Commit, its date and author: from git, or from .sharm-commit in the
# snapshot ci/ompi5.sh copies into its root (which has no .git).
if meta=$(git log -1 --format='%h%n%cD%n%an <%ae>' 2>/dev/null); then :; else
    meta=$(cat .sharm-commit 2>/dev/null || printf 'unknown\n%s\nsharm maintainers <root@localhost>' "$(date -R)")
fi
commit=$(echo "$meta" | sed -n 1p)
date=$(echo "$meta" | sed -n 2p)
maintainer=${SHARM_MAINTAINER:-$(echo "$meta" | sed -n 3p)}
echo "== package $name $version for Open MPI $ompi_ver ($abi_pkg $abi_ver), components in $compdir"

stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
pkg=$stage/$name
doc=$pkg/usr/share/doc/$name
install -d "$pkg/DEBIAN" "$pkg$compdir" "$doc/mca-params"
# Open MPI loads only files named mca_<framework>_<component>.so.  0644: a
# plugin, not a program; stripped (Debian policy; the debug info stays in the
# build tree).
install -m 0644 "$plugin" "$pkg$compdir/mca_coll_sharm.so"
strip --strip-unneeded --remove-section=.comment --remove-section=.note "$pkg$compdir/mca_coll_sharm.so"
install -m 0644 mca-params/*.conf "$doc/mca-params/"

if [ "$pmix_fix" = 1 ]; then
    install -d "$pkg$(dirname "$pmixconf")"
    sed -E 's/^([[:space:]]*mca_base_component_path[[:space:]]*=.*)$/# Commented out by openmpi-coll-sharm (see its README.Debian): PMIx\
# forwards this value to Open MPI processes as their component path.\
# \1/' "$pmixconf" >"$pkg$pmixconf"
    chmod 0644 "$pkg$pmixconf"
    for script in preinst postrm; do
        {
            echo '#!/bin/sh'
            echo 'set -e'
            if [ "$script" = preinst ]; then
                echo 'if [ "$1" = install ] || [ "$1" = upgrade ]; then'
                echo "    dpkg-divert --package $name --add --rename --divert $pmixconf.distrib $pmixconf"
            else
                echo 'if [ "$1" = remove ] || [ "$1" = abort-install ] || [ "$1" = disappear ]; then'
                echo "    dpkg-divert --package $name --remove --rename --divert $pmixconf.distrib $pmixconf"
            fi
            echo 'fi'
        } >"$pkg/DEBIAN/$script"
        chmod 0755 "$pkg/DEBIAN/$script"
    done
fi

cat >"$doc/README.Debian" <<EOF
openmpi-coll-sharm for Debian
=============================

sharm is an Open MPI "coll" component: MPI collectives (Barrier, Bcast,
Reduce, Allreduce, Gather(v), Scatter(v), Allgather(v), Alltoall(v),
Reduce_scatter(_block), Scan, Exscan) over shared memory, written in Rust.

This package was built for Open MPI $ompi_ver ($abi_pkg $abi_ver) and
installs

  $compdir/mca_coll_sharm.so

where that Open MPI finds it by itself: every MPI job started with mpirun
uses sharm on communicators whose processes share a node (priority 60,
above coll/tuned).  Check that Open MPI sees it:

  ompi_info | grep "MCA coll: sharm"
  ompi_info --param coll sharm --level 9     (all parameters)

MCA parameter files (use with "mpirun --tune FILE"):

  mca-params/sharm-defaults.conf        every parameter at its default
  mca-params/sharm-large-messages.conf  larger queue slots
  mca-params/sharm-hierarchy-test.conf  hierarchical collectives on one node
  mca-params/sharm-off.conf             installed but unused

Without the files: "mpirun --mca coll ^sharm ..." (or
--mca coll_sharm_priority -1) turns sharm off for one job.

MPI_T performance variables coll_sharm_<op>_served / _fallbacks count the
calls sharm served and handed to the next component.
EOF
if [ "$pmix_fix" = 1 ]; then
    cat >>"$doc/README.Debian" <<EOF

PMIx's parameter file
---------------------

$pmix_pkg's $pmixconf
sets mca_base_component_path, and PMIx's "ompi" plugin passes every value of
that file whose name looks like an Open MPI parameter to the MPI processes
(here as OMPI_MCA_mca_base_component_path): processes started by mpirun
then search only PMIx's plugin directory, never Open MPI's own, and no
separately installed component (this one included) is loaded.  PMIx finds
its plugins without that line, so this package diverts the file
(dpkg-divert; the original is kept as pmix-mca-params.conf.distrib) and
installs a copy with the line commented out.  Removing the package restores
the original file.
EOF
fi

# Debian's machine-readable copyright format.  The shared object links in
# Rust's standard library and the crates listed below (MIT or Apache-2.0).
{
    cat <<'EOF'
Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/
Upstream-Name: sharm
Comment: Built from the sharm source tree with cargo. The shared object also
 contains Rust's standard library (MIT or Apache-2.0, The Rust Project
 Developers) and these crates from crates.io:
EOF
    cargo tree -e normal --prefix none --format ' {p} ({l})' 2>/dev/null |
        grep -v '^ sharm ' | sort -u | sed 's/ (\/.*)//'
    cat <<'EOF'

Files: *
Copyright: 2026 The sharm authors
License: BSD-3-Clause

License: BSD-3-Clause
 Redistribution and use in source and binary forms, with or without
 modification, are permitted provided that the following conditions are met:
 .
 1. Redistributions of source code must retain the above copyright notice,
    this list of conditions and the following disclaimer.
 .
 2. Redistributions in binary form must reproduce the above copyright notice,
    this list of conditions and the following disclaimer in the documentation
    and/or other materials provided with the distribution.
 .
 3. Neither the name of the copyright holder nor the names of its
    contributors may be used to endorse or promote products derived from this
    software without specific prior written permission.
 .
 THIS SOFTWARE IS PROVIDED BY THE COPYRIGHT HOLDERS AND CONTRIBUTORS "AS IS"
 AND ANY EXPRESS OR IMPLIED WARRANTIES, INCLUDING, BUT NOT LIMITED TO, THE
 IMPLIED WARRANTIES OF MERCHANTABILITY AND FITNESS FOR A PARTICULAR PURPOSE
 ARE DISCLAIMED. IN NO EVENT SHALL THE COPYRIGHT HOLDER OR CONTRIBUTORS BE
 LIABLE FOR ANY DIRECT, INDIRECT, INCIDENTAL, SPECIAL, EXEMPLARY, OR
 CONSEQUENTIAL DAMAGES (INCLUDING, BUT NOT LIMITED TO, PROCUREMENT OF
 SUBSTITUTE GOODS OR SERVICES; LOSS OF USE, DATA, OR PROFITS; OR BUSINESS
 INTERRUPTION) HOWEVER CAUSED AND ON ANY THEORY OF LIABILITY, WHETHER IN
 CONTRACT, STRICT LIABILITY, OR TORT (INCLUDING NEGLIGENCE OR OTHERWISE)
 ARISING IN ANY WAY OUT OF THE USE OF THIS SOFTWARE, EVEN IF ADVISED OF THE
 POSSIBILITY OF SUCH DAMAGE.
EOF
} >"$doc/copyright"

# changelog.Debian: one entry for this build, dated by the last commit (the
# same tree gives the same package).
suite=$(. /etc/os-release && echo "${VERSION_CODENAME:-unstable}")
cat >"$stage/changelog" <<EOF
$name ($version) $suite; urgency=medium

  * Built from sharm commit $commit for Open MPI $ompi_ver
    ($abi_pkg $abi_ver), installed in Open MPI's component
    directory $compdir.

 -- $maintainer  $date
EOF
gzip -9n <"$stage/changelog" >"$doc/changelog.Debian.gz"
find "$doc" -type f -exec chmod 0644 {} +

# Dependencies from the shared object's NEEDED entries (dpkg-shlibdeps reads
# the installed packages' shlibs/symbols files), then the Open MPI library
# pinned to the exact version: Open MPI's internal structures are no ABI.
mkdir -p "$stage/debian"
printf 'Source: %s\n\nPackage: %s\nArchitecture: amd64\n' "$name" "$name" >"$stage/debian/control"
shlibs=$(cd "$stage" && dpkg-shlibdeps -O "${pkg#"$stage"/}$compdir/mca_coll_sharm.so" 2>/dev/null |
    sed -n 's/^shlibs:Depends=//p')
depends=$(echo "$shlibs" | tr ',' '\n' | sed 's/^ *//' | grep -v "^$abi_pkg\b" |
    { if [ "$pmix_fix" = 1 ]; then grep -v "^$pmix_pkg\b"; else cat; fi; } | paste -sd, - | sed 's/,/, /g')
depends="${depends:+$depends, }$abi_pkg (= $abi_ver)"
# The diverted PMIx file is a copy of that exact PMIx release's file.
[ "$pmix_fix" = 0 ] || depends="$depends, $pmix_pkg (= $pmix_ver)"
( cd "$pkg" && find usr -type f -print0 | sort -z | xargs -0 md5sum ) >"$pkg/DEBIAN/md5sums"
chmod 0644 "$pkg/DEBIAN/md5sums"
cat >"$pkg/DEBIAN/control" <<EOF
Package: $name
Version: $version
Architecture: amd64
Maintainer: $maintainer
Installed-Size: $(du -sk --exclude=DEBIAN "$pkg" | cut -f1)
Depends: $depends
Enhances: $abi_pkg
Section: libs
Priority: optional
Description: shared-memory collectives for Open MPI (coll component "sharm")
 sharm is an Open MPI coll component that runs MPI collectives (Barrier,
 Bcast, Reduce, Allreduce, Gather, Scatter, Allgather, Alltoall,
 Reduce_scatter, Scan and their v-variants) through per-communicator shared
 memory queues on one node, written in Rust.
 .
 This build is for Open MPI $ompi_ver: it installs mca_coll_sharm.so in that
 Open MPI's component directory, where every mpirun picks it up.
EOF
if [ "$pmix_fix" = 1 ]; then
    cat >>"$pkg/DEBIAN/control" <<EOF
 .
 It diverts PMIx's pmix-mca-params.conf, whose component path PMIx would
 otherwise impose on Open MPI's processes (see README.Debian).
EOF
fi

mkdir -p "$out"
deb=$out/${name}_${version}_amd64.deb
dpkg-deb --root-owner-group -Zxz --build "$pkg" "$deb" >/dev/null
echo "built $deb"
dpkg-deb --info "$deb" | sed -n '/Package:/,/Description:/p'
dpkg-deb --contents "$deb"

echo "== lintian"
# Errors and warnings fail the build.  Left at info level (not fixable here):
#   spelling-error-in-binary ment meant: "ment" is a fragment of a string
#   literal in Rust's standard library, not a word of ours.
lintian --fail-on error,warning --display-info "$deb"
echo "lintian: clean"

if [ "$check" = 1 ]; then
    # Not exec: the EXIT trap removes the staging directory.
    ci/package-check.sh "$deb"
fi
