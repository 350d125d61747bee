/*
 * Open MPI 5.0 bodies of the glue functions whose implementation differs
 * between Open MPI series (see flavour.h and flavour_v50.h).
 */
#include "sharm_glue_internal.h"

#include <stdlib.h>
#include <string.h>

#include "ompi/group/group.h"
#include "ompi/proc/proc.h"
#include "opal/mca/pmix/pmix-internal.h"
#include "opal/util/proc.h"

/* The per-process local index: c_contextid is a 128-bit extended id in 5.0.
 * Only used in messages, so it need not agree across processes. */
uint32_t sharm_glue_comm_cid(void *comm) { return ompi_comm_get_local_cid(comm); }

/*
 * 5.0 keeps no host name in opal_proc_t: opal_get_proc_hostname asks PMIx
 * (PMIX_HOSTNAME) and returns a fresh copy each time, or "unknown".  The
 * glue's contract is a borrowed string, so distinct names are interned here:
 * one copy per node name for the life of the process, however often asked.
 */
struct interned {
    struct interned *next;
    char name[];
};
static struct interned *hostnames;

static const char *intern(const char *name)
{
    struct interned *i;
    size_t len = strlen(name);

    for (i = hostnames; NULL != i; i = i->next) {
        if (0 == strcmp(i->name, name)) {
            return i->name;
        }
    }
    i = malloc(sizeof(*i) + len + 1);
    if (NULL == i) {
        return NULL;
    }
    memcpy(i->name, name, len + 1);
    i->next = hostnames;
    hostnames = i;
    return i->name;
}

const char *sharm_glue_peer_hostname(void *comm, int32_t rank)
{
    ompi_proc_t *proc = ompi_group_peer_lookup(((ompi_communicator_t *) comm)->c_local_group, rank);
    const char *result = NULL;
    char *name;

    if (NULL == proc) {
        return NULL;
    }
    name = opal_get_proc_hostname(&proc->super);
    if (NULL != name && 0 != strcmp(name, "unknown")) {
        result = intern(name);
    }
    free(name);
    return result;
}

int32_t sharm_glue_peer_locality(void *comm, int32_t rank, char *buf, int32_t cap)
{
    ompi_proc_t *proc = ompi_group_peer_lookup(((ompi_communicator_t *) comm)->c_local_group, rank);
    char *locality = NULL;
    int rc;

    if (NULL == proc || cap <= 0) {
        return 0;
    }
    OPAL_MODEX_RECV_VALUE_OPTIONAL(rc, PMIX_LOCALITY_STRING, &proc->super.proc_name, &locality,
                                   PMIX_STRING);
    if (PMIX_SUCCESS != rc) {
        locality = NULL;
    }
    return sharm_glue_copy_out(locality, buf, cap);
}
