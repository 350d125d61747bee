/*
 * Open MPI 4.1 bodies of the glue functions whose implementation differs
 * between Open MPI series (see flavour.h).
 */
#include "sharm_glue_internal.h"

#include <stdlib.h>
#include <string.h>

#include "ompi/group/group.h"
#include "ompi/proc/proc.h"
#include "opal/mca/pmix/pmix.h"

uint32_t sharm_glue_comm_cid(void *comm) { return ((ompi_communicator_t *) comm)->c_contextid; }

const char *sharm_glue_peer_hostname(void *comm, int32_t rank)
{
    ompi_proc_t *proc = ompi_group_peer_lookup(((ompi_communicator_t *) comm)->c_local_group, rank);
    return NULL == proc ? NULL : proc->super.proc_hostname;
}

int32_t sharm_glue_peer_locality(void *comm, int32_t rank, char *buf, int32_t cap)
{
    ompi_proc_t *proc = ompi_group_peer_lookup(((ompi_communicator_t *) comm)->c_local_group, rank);
    char *locality = NULL;
    int rc;

    if (NULL == proc || cap <= 0) {
        return 0;
    }
    OPAL_MODEX_RECV_VALUE_OPTIONAL(rc, OPAL_PMIX_LOCALITY_STRING, &proc->super.proc_name,
                                   &locality, OPAL_STRING);
    if (OPAL_SUCCESS != rc) {
        locality = NULL;
    }
    return sharm_glue_copy_out(locality, buf, cap);
}
