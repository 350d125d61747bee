/*
 * Open MPI 5.0 (Debian 13: 5.0.7): coll framework API 2.4.0, PRRTE runtime.
 *
 * What changed for the glue, compared with 4.1 (checked against the 5.0.7
 * sources): the component type and version macro (2_0_0 -> 2_4_0); the
 * communicator's c_contextid became a 128-bit extended id (the local index is
 * ompi_comm_get_local_cid); opal_proc_t lost proc_hostname (looked up through
 * PMIx by opal_get_proc_hostname); the PMIx wrapper header is
 * opal/mca/pmix/pmix-internal.h and uses PMIx's own keys and types.
 * Unchanged: module enable/disable (the base still copies the module's
 * function pointers after coll_module_enable, as in 4.1, so saving the
 * previous component's functions there keeps working), the collective
 * function signatures (int counts), MCA variable, enum and pvar registration,
 * convertor, op and datatype calls, ompi_group_have_remote_peers,
 * opal_process_info.num_local_peers.
 */
#ifndef SHARM_FLAVOUR_V50_H
#define SHARM_FLAVOUR_V50_H

#define SHARM_FLAVOUR_OMPI_MAJOR 5
#define SHARM_FLAVOUR_NAME "Open MPI 5.0 (coll API 2.4.0)"

typedef mca_coll_base_component_2_4_0_t sharm_coll_component_t;
#define SHARM_COLL_BASE_VERSION MCA_COLL_BASE_VERSION_2_4_0

#endif
