#!/usr/bin/env bash
# Puts the Open MPI headers that Debian's libopenmpi-dev leaves out into a
# cache directory, where build.rs looks for them:
#   /var/cache/sharm/openmpi-headers/<version>/include/
# (or $SHARM_OMPI_SOURCE_HEADERS, which build.rs reads too).
#
# Debian 13's libopenmpi-dev (5.0.7) ships opal_config.h, which includes
# opal/mca/threads/pthreads/threads_pthreads_*.h, but not those headers.  They
# are taken from Debian's own source package of the installed version
# (apt-get source, checked against the signed Sources index), at build time:
# nothing of Open MPI's is committed to this repository.
#
# No-op when the headers are installed or already cached; Open MPI 4.1 needs
# nothing.  Needs a deb-src line for the release (ci/ompi5.sh's root has one),
# dpkg-dev (apt-get source) and xz-utils.
set -euo pipefail

inc=/usr/lib/x86_64-linux-gnu/openmpi/include
want=opal/mca/threads/pthreads/threads_pthreads_mutex.h
[ -e "$inc/openmpi/$want" ] && exit 0
version=$(awk '$2 == "OMPI_MAJOR_VERSION" {a=$3} $2 == "OMPI_MINOR_VERSION" {b=$3}
               $2 == "OMPI_RELEASE_VERSION" {c=$3} END {print a "." b "." c}' "$inc/mpi.h")
case "$version" in 4.*) exit 0 ;; esac
dest=${SHARM_OMPI_SOURCE_HEADERS:-/var/cache/sharm/openmpi-headers/$version/include}
[ -e "$dest/$want" ] && exit 0

debver=$(dpkg-query -W -f '${Version}' libopenmpi-dev)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
echo "ci/ompi-headers.sh: fetching Debian's source of openmpi $debver for $want"
(cd "$work" && apt-get source --download-only -qq "openmpi=$debver" >/dev/null 2>&1) || {
    echo "ci/ompi-headers.sh: apt-get source openmpi=$debver failed (is there a deb-src line?)" >&2
    exit 1
}
orig=$(ls "$work"/openmpi_*.orig.tar.*)
mkdir -p "$dest.tmp.$$"
tar -xf "$orig" -C "$dest.tmp.$$" --strip-components=1 --wildcards \
    "openmpi-$version/opal/mca/threads/pthreads/*.h"
mkdir -p "$(dirname "$dest")"
rm -rf "$dest"
mv "$dest.tmp.$$" "$dest"
echo "ci/ompi-headers.sh: $(find "$dest" -name '*.h' | wc -l) headers in $dest"
