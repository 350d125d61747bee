#!/usr/bin/env bash
# Installs a built openmpi-coll-sharm .deb, shows that a plain mpirun (no
# MCA options, no component path) uses sharm, by reading sharm's MPI_T
# counters in ci/demo.c, then purges the package and checks that nothing of
# it is left.
#
#   ci/package-check.sh openmpi-coll-sharm_<version>_amd64.deb
#
# It changes the system's Open MPI for a few seconds: run it in a throwaway
# root (ci/ompi5.sh ci/package.sh --check) or, on a shared machine, under the
# lock every mpirun takes (flock /tmp/sharm-cpu.lock ...).
set -euo pipefail
cd "$(dirname "$0")/.."
deb=$(readlink -f "${1:?usage: ci/package-check.sh PACKAGE.deb}")
name=$(dpkg-deb -f "$deb" Package)
die() { echo "ci/package-check.sh: FAIL: $*" >&2; exit 1; }

if dpkg-query -W -f '${Status}' "$name" 2>/dev/null | grep -q installed; then
    die "$name is already installed here; not touching it"
fi
work=$(mktemp -d)
installed=0
cleanup() {
    [ "$installed" = 1 ] && dpkg --purge "$name" >/dev/null 2>&1 || true
    rm -rf "$work"
}
trap cleanup EXIT
# A plain mpirun also searches ~/.openmpi/components (where ci/main.sh
# installs a development copy): an empty HOME makes sure the packaged copy
# is the one that serves.
export HOME=$work/home OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
mkdir -p "$HOME"
for v in $(env | sed -n 's/^\(OMPI_MCA_[^=]*\)=.*/\1/p'); do unset "$v"; done

files=$(dpkg-deb --fsys-tarfile "$deb" | tar -t | sed 's|^\./|/|; s|/$||' | grep -v '^/\?$')
snapshot() { # the package's files and directories that exist, with owners
    local f
    for f in $files; do [ -e "$f" ] && echo "$f"; done
    return 0
}
before=$(snapshot)

echo "== install"
dpkg -i "$deb"
installed=1
dpkg-query -W -f '${Package} ${Version} ${Status}\n' "$name"
so=$(echo "$files" | grep '/mca_coll_sharm\.so$')
[ -f "$so" ] || die "$so not installed"
ompi_info | grep "MCA coll: sharm" || die "ompi_info does not list sharm"

echo "== a plain mpirun serves collectives with sharm"
mpicc.openmpi -O2 -o "$work/demo" ci/demo.c
# demo LABEL MPIRUN-ARGS...: runs ci/demo.c at np=2; 0 when sharm served
# MPI_Allreduce, MPI_Bcast and MPI_Barrier (its MPI_T counters) correctly.
demo() {
    local label=$1 out op served
    shift
    out=$(timeout -s KILL 120 mpirun.openmpi --allow-run-as-root -np 2 "$@" "$work/demo" 2>&1) || {
        echo "$out"
        echo "$label: mpirun failed"
        return 1
    }
    echo "$out"
    echo "$out" | grep -q "results correct" || { echo "$label: wrong results"; return 1; }
    for op in allreduce bcast barrier; do
        served=$(echo "$out" | sed -n "s/.*MPI_$op *served by sharm: \([0-9]*\).*/\1/p")
        if [ "${served:-0}" -le 0 ]; then
            echo "$label: sharm served no MPI_$op (counter: ${served:-absent})"
            return 1
        fi
    done
    echo "$label: sharm served"
}
plain_failed=0
if ! demo "plain mpirun"; then
    plain_failed=1
    # Debian 13: libpmix2t64's /usr/lib/x86_64-linux-gnu/pmix2/share/pmix-mca-params.conf
    # sets PMIx's mca_base_component_path, and PRRTE's mpirun passes it to the
    # MPI processes as OMPI_MCA_mca_base_component_path too (the parameter has
    # the same name in both projects), so Open MPI searches only PMIx's
    # plugin directory and never its own.
    forced=$(timeout -s KILL 60 mpirun.openmpi --allow-run-as-root -np 1 env 2>/dev/null |
        sed -n 's/^OMPI_MCA_mca_base_component_path=//p')
    compdir=$(dirname "$so")
    echo "FAIL: a plain mpirun does not load the installed sharm."
    if [ -n "$forced" ] && [ "$forced" != "$compdir" ]; then
        echo "  cause: mpirun sets OMPI_MCA_mca_base_component_path=$forced for the MPI"
        echo "  processes (PMIx's own setting, forwarded by PRRTE), which replaces Open MPI's"
        echo "  default path ($compdir:~/.openmpi/components)."
        echo "== the installed file, with Open MPI's path exported to mpirun"
        # `mpirun -x OMPI_MCA_...=` loses against mpirun's own value; an
        # exported variable wins (PMIx then also scans the directory and warns
        # "bad prefix" about files that are not PMIx plugins: noise only).
        OMPI_MCA_mca_base_component_path=$compdir demo \
            "OMPI_MCA_mca_base_component_path=$compdir mpirun" || echo "FAIL: not even then"
    fi
fi
echo "== purge"
dpkg --purge "$name"
installed=0
dpkg-query -W -f '${Status}\n' "$name" 2>/dev/null | grep -q installed && die "$name still installed"
after=$(snapshot)
# Directories that existed before (Open MPI's component directory, /usr, …)
# stay; everything the package added must be gone.
left=$(comm -13 <(echo "$before" | sort) <(echo "$after" | sort))
[ -z "$left" ] || die "left behind after purge: $left"
[ ! -e "$so" ] || die "$so left behind"
if ompi_info | grep -q "MCA coll: sharm"; then die "ompi_info still lists sharm"; fi
if [ "$plain_failed" = 1 ]; then
    echo "ci/package-check.sh: FAIL: $name installed and purged cleanly, but a plain mpirun does not use it (see above)"
    exit 1
fi
echo "ci/package-check.sh: $name installed, served MPI_Allreduce/Bcast/Barrier under a plain mpirun, purged without leftovers"
