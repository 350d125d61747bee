/*
 * Open MPI 4.1 (Debian 12: 4.1.4): coll framework API 2.0.0, ORTE runtime,
 * opal/mca/pmix/pmix.h wrapper with OPAL_PMIX_* keys.
 */
#ifndef SHARM_FLAVOUR_V41_H
#define SHARM_FLAVOUR_V41_H

#define SHARM_FLAVOUR_OMPI_MAJOR 4
#define SHARM_FLAVOUR_NAME "Open MPI 4.1 (coll API 2.0.0)"

/* The component structure and the MCA version triple it announces. */
typedef mca_coll_base_component_2_0_0_t sharm_coll_component_t;
#define SHARM_COLL_BASE_VERSION MCA_COLL_BASE_VERSION_2_0_0

#endif
