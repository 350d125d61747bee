/*
 * Declarations shared by the C files of the glue (never seen by Rust).
 */
#ifndef SHARM_GLUE_INTERNAL_H
#define SHARM_GLUE_INTERNAL_H

#include "ompi_config.h"
#include "mpi.h"
#include "ompi/communicator/communicator.h"
#include "ompi/datatype/ompi_datatype.h"
#include "ompi/mca/coll/coll.h"
#include "ompi/mca/coll/base/base.h"
#include "ompi/op/op.h"

#include "sharm_glue.h"

/* Version-specific types and macros (sharm_coll_component_t, ...). */
#include "flavour.h"

/* Bytes Rust reserves for the component struct (see src/lib.rs). */
#define SHARM_COMPONENT_STORAGE_BYTES 4096

/* The collectives sharm installs; for each, the module keeps the function and
 * module of the component below it, used for fallback and bootstrap. */
#define SHARM_FOR_EACH_COLL(X)                                                                 \
    X(barrier) X(bcast) X(reduce) X(allreduce) X(gather) X(gatherv) X(scatter) X(scatterv)      \
    X(allgather) X(allgatherv) X(alltoall) X(alltoallv) X(reduce_scatter_block)                \
    X(reduce_scatter) X(scan) X(exscan)

typedef struct mca_coll_sharm_module_t {
    mca_coll_base_module_t super;
    void *rs_state; /* Rust's per-communicator state, owned by Rust */
#define SHARM_DECLARE_PREV(name)                                                               \
    mca_coll_base_module_##name##_fn_t prev_##name;                                            \
    mca_coll_base_module_t *prev_##name##_module;
    SHARM_FOR_EACH_COLL(SHARM_DECLARE_PREV)
} mca_coll_sharm_module_t;

OBJ_CLASS_DECLARATION(mca_coll_sharm_module_t);

extern const struct sharm_rs_entries *sharm_rs;

/* Copies the malloc'd string `str` (may be NULL) into buf[cap] and frees it;
 * returns its length, or 0 when absent or too long. */
int32_t sharm_glue_copy_out(char *str, char *buf, int32_t cap);

#endif
