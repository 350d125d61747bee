/*
 * The per-communicator module for coll API 2.x (Open MPI 4.1: 2.0.0, 5.0:
 * 2.4.0): int counts, and the base copies the module's function pointers into
 * the communicator after coll_module_enable, so enable only saves what the
 * lower-priority components installed (the fallback path).
 *
 * Open MPI main (v6, coll API 3.0.0: size_t counts, modules install and
 * remove their own functions in enable/disable) needs its own version of
 * this file, coll_api3.c; component.c and the Rust side stay as they are.
 */
#include "sharm_glue_internal.h"

#include "opal/util/output.h"

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

/* ------------------------------------------------------------------------ */
/* The module                                                                */

static void module_construct(mca_coll_sharm_module_t *m)
{
    m->rs_state = NULL;
#define SHARM_CLEAR_PREV(name) m->prev_##name = NULL; m->prev_##name##_module = NULL;
    SHARM_FOR_EACH_COLL(SHARM_CLEAR_PREV)
}

static void release_previous(mca_coll_sharm_module_t *m)
{
#define SHARM_RELEASE_PREV(name)                                                               \
    if (NULL != m->prev_##name##_module) {                                                     \
        OBJ_RELEASE(m->prev_##name##_module);                                                  \
        m->prev_##name##_module = NULL;                                                        \
        m->prev_##name = NULL;                                                                 \
    }
    SHARM_FOR_EACH_COLL(SHARM_RELEASE_PREV)
}

static void module_destruct(mca_coll_sharm_module_t *m)
{
    if (NULL != m->rs_state) {
        sharm_rs->comm_free(m->rs_state);
        m->rs_state = NULL;
    }
    release_previous(m);
}

OBJ_CLASS_INSTANCE(mca_coll_sharm_module_t, mca_coll_base_module_t, module_construct,
                   module_destruct);

/*
 * Modules are enabled in ascending priority, so comm->c_coll holds what the
 * lower-priority components installed: keep those as the fallback path.
 */
static int module_enable(mca_coll_base_module_t *module, struct ompi_communicator_t *comm)
{
    mca_coll_sharm_module_t *m = (mca_coll_sharm_module_t *) module;
#define SHARM_SAVE_PREV(name)                                                                  \
    if (NULL == comm->c_coll->coll_##name || NULL == comm->c_coll->coll_##name##_module) {     \
        opal_output_verbose(1, sharm_output,                                                   \
                            "coll:sharm: communicator %s has no underlying " #name             \
                            "; sharm disqualifies itself",                                     \
                            comm->c_name);                                                     \
        release_previous(m);                                                                   \
        return OMPI_ERROR;                                                                     \
    }                                                                                          \
    m->prev_##name = comm->c_coll->coll_##name;                                                \
    m->prev_##name##_module = comm->c_coll->coll_##name##_module;                              \
    OBJ_RETAIN(m->prev_##name##_module);
    SHARM_FOR_EACH_COLL(SHARM_SAVE_PREV)
    return OMPI_SUCCESS;
}

/* Breaks the reference cycle between this module and the saved ones. */
static int module_disable(mca_coll_base_module_t *module, struct ompi_communicator_t *comm)
{
    (void) comm;
    release_previous((mca_coll_sharm_module_t *) module);
    return OMPI_SUCCESS;
}

/* Collective entry points: pack the arguments into a sharm_call and hand
 * over to Rust. */
#define SHARM_MODULE ((mca_coll_sharm_module_t *) module)
#define SHARM_DISPATCH(...)                                                                    \
    struct sharm_call c = {__VA_ARGS__};                                                       \
    return sharm_rs->collective(SHARM_MODULE->rs_state, module, comm, &c)

static int sharm_barrier(struct ompi_communicator_t *comm, mca_coll_base_module_t *module)
{
    SHARM_DISPATCH(.coll = SHARM_COLL_BARRIER);
}

static int sharm_bcast(void *buf, int count, struct ompi_datatype_t *dtype, int root,
                       struct ompi_communicator_t *comm, mca_coll_base_module_t *module)
{
    SHARM_DISPATCH(.coll = SHARM_COLL_BCAST, .rbuf = buf, .rcount = count, .rdtype = dtype,
                   .root = root);
}

static int sharm_reduce(const void *sbuf, void *rbuf, int count, struct ompi_datatype_t *dtype,
                        struct ompi_op_t *op, int root, struct ompi_communicator_t *comm,
                        mca_coll_base_module_t *module)
{
    SHARM_DISPATCH(.coll = SHARM_COLL_REDUCE, .sbuf = sbuf, .rbuf = rbuf, .rcount = count,
                   .rdtype = dtype, .op = op, .root = root);
}

#define SHARM_ALLREDUCE_LIKE(fn, id)                                                           \
    static int fn(const void *sbuf, void *rbuf, int count, struct ompi_datatype_t *dtype,     \
                  struct ompi_op_t *op, struct ompi_communicator_t *comm,                     \
                  mca_coll_base_module_t *module)                                              \
    {                                                                                          \
        SHARM_DISPATCH(.coll = id, .sbuf = sbuf, .rbuf = rbuf, .rcount = count,                \
                       .rdtype = dtype, .op = op);                                             \
    }
SHARM_ALLREDUCE_LIKE(sharm_allreduce, SHARM_COLL_ALLREDUCE)
SHARM_ALLREDUCE_LIKE(sharm_scan, SHARM_COLL_SCAN)
SHARM_ALLREDUCE_LIKE(sharm_exscan, SHARM_COLL_EXSCAN)
SHARM_ALLREDUCE_LIKE(sharm_reduce_scatter_block, SHARM_COLL_REDUCE_SCATTER_BLOCK)

static int sharm_reduce_scatter(const void *sbuf, void *rbuf, const int *rcounts,
                                struct ompi_datatype_t *dtype, struct ompi_op_t *op,
                                struct ompi_communicator_t *comm,
                                mca_coll_base_module_t *module)
{
    SHARM_DISPATCH(.coll = SHARM_COLL_REDUCE_SCATTER, .sbuf = sbuf, .rbuf = rbuf,
                   .rcounts = rcounts, .rdtype = dtype, .op = op);
}

#define SHARM_ROOTED(fn, id)                                                                   \
    static int fn(const void *sbuf, int scount, struct ompi_datatype_t *sdtype, void *rbuf,   \
                  int rcount, struct ompi_datatype_t *rdtype, int root,                       \
                  struct ompi_communicator_t *comm, mca_coll_base_module_t *module)           \
    {                                                                                          \
        SHARM_DISPATCH(.coll = id, .sbuf = sbuf, .scount = scount, .sdtype = sdtype,           \
                       .rbuf = rbuf, .rcount = rcount, .rdtype = rdtype, .root = root);        \
    }
SHARM_ROOTED(sharm_gather, SHARM_COLL_GATHER)
SHARM_ROOTED(sharm_scatter, SHARM_COLL_SCATTER)

#define SHARM_ALL_TO(fn, id)                                                                   \
    static int fn(const void *sbuf, int scount, struct ompi_datatype_t *sdtype, void *rbuf,   \
                  int rcount, struct ompi_datatype_t *rdtype,                                 \
                  struct ompi_communicator_t *comm, mca_coll_base_module_t *module)           \
    {                                                                                          \
        SHARM_DISPATCH(.coll = id, .sbuf = sbuf, .scount = scount, .sdtype = sdtype,           \
                       .rbuf = rbuf, .rcount = rcount, .rdtype = rdtype);                      \
    }
SHARM_ALL_TO(sharm_allgather, SHARM_COLL_ALLGATHER)
SHARM_ALL_TO(sharm_alltoall, SHARM_COLL_ALLTOALL)

static int sharm_gatherv(const void *sbuf, int scount, struct ompi_datatype_t *sdtype,
                         void *rbuf, const int *rcounts, const int *rdispls,
                         struct ompi_datatype_t *rdtype, int root,
                         struct ompi_communicator_t *comm, mca_coll_base_module_t *module)
{
    SHARM_DISPATCH(.coll = SHARM_COLL_GATHERV, .sbuf = sbuf, .scount = scount,
                   .sdtype = sdtype, .rbuf = rbuf, .rcounts = rcounts, .rdispls = rdispls,
                   .rdtype = rdtype, .root = root);
}

static int sharm_allgatherv(const void *sbuf, int scount, struct ompi_datatype_t *sdtype,
                            void *rbuf, const int *rcounts, const int *rdispls,
                            struct ompi_datatype_t *rdtype, struct ompi_communicator_t *comm,
                            mca_coll_base_module_t *module)
{
    SHARM_DISPATCH(.coll = SHARM_COLL_ALLGATHERV, .sbuf = sbuf, .scount = scount,
                   .sdtype = sdtype, .rbuf = rbuf, .rcounts = rcounts, .rdispls = rdispls,
                   .rdtype = rdtype);
}

static int sharm_scatterv(const void *sbuf, const int *scounts, const int *sdispls,
                          struct ompi_datatype_t *sdtype, void *rbuf, int rcount,
                          struct ompi_datatype_t *rdtype, int root,
                          struct ompi_communicator_t *comm, mca_coll_base_module_t *module)
{
    SHARM_DISPATCH(.coll = SHARM_COLL_SCATTERV, .sbuf = sbuf, .scounts = scounts,
                   .sdispls = sdispls, .sdtype = sdtype, .rbuf = rbuf, .rcount = rcount,
                   .rdtype = rdtype, .root = root);
}

static int sharm_alltoallv(const void *sbuf, const int *scounts, const int *sdispls,
                           struct ompi_datatype_t *sdtype, void *rbuf, const int *rcounts,
                           const int *rdispls, struct ompi_datatype_t *rdtype,
                           struct ompi_communicator_t *comm, mca_coll_base_module_t *module)
{
    SHARM_DISPATCH(.coll = SHARM_COLL_ALLTOALLV, .sbuf = sbuf, .scounts = scounts,
                   .sdispls = sdispls, .sdtype = sdtype, .rbuf = rbuf, .rcounts = rcounts,
                   .rdispls = rdispls, .rdtype = rdtype);
}

mca_coll_base_module_t *sharm_glue_module_new(void *state)
{
    mca_coll_sharm_module_t *m = OBJ_NEW(mca_coll_sharm_module_t);

    if (NULL == m) {
        return NULL;
    }
    m->rs_state = state;
    m->super.coll_module_enable = module_enable;
    m->super.coll_module_disable = module_disable;
#define SHARM_INSTALL(name) m->super.coll_##name = sharm_##name;
    SHARM_FOR_EACH_COLL(SHARM_INSTALL)
    return &m->super;
}

/* ------------------------------------------------------------------------ */
/* The previous component                                                    */

int sharm_glue_prev(void *module, void *comm, const struct sharm_call *c)
{
    mca_coll_sharm_module_t *m = module;
    const int *scounts = c->scounts, *sdispls = c->sdispls;
    const int *rcounts = c->rcounts, *rdispls = c->rdispls;

    switch (c->coll) {
    case SHARM_COLL_BARRIER:
        return m->prev_barrier(comm, m->prev_barrier_module);
    case SHARM_COLL_BCAST:
        return m->prev_bcast(c->rbuf, c->rcount, c->rdtype, c->root, comm, m->prev_bcast_module);
    case SHARM_COLL_REDUCE:
        return m->prev_reduce(c->sbuf, c->rbuf, c->rcount, c->rdtype, c->op, c->root, comm,
                              m->prev_reduce_module);
    case SHARM_COLL_ALLREDUCE:
        return m->prev_allreduce(c->sbuf, c->rbuf, c->rcount, c->rdtype, c->op, comm,
                                 m->prev_allreduce_module);
    case SHARM_COLL_SCAN:
        return m->prev_scan(c->sbuf, c->rbuf, c->rcount, c->rdtype, c->op, comm,
                            m->prev_scan_module);
    case SHARM_COLL_EXSCAN:
        return m->prev_exscan(c->sbuf, c->rbuf, c->rcount, c->rdtype, c->op, comm,
                              m->prev_exscan_module);
    case SHARM_COLL_REDUCE_SCATTER_BLOCK:
        return m->prev_reduce_scatter_block(c->sbuf, c->rbuf, c->rcount, c->rdtype, c->op, comm,
                                            m->prev_reduce_scatter_block_module);
    case SHARM_COLL_REDUCE_SCATTER:
        return m->prev_reduce_scatter(c->sbuf, c->rbuf, rcounts, c->rdtype, c->op, comm,
                                      m->prev_reduce_scatter_module);
    case SHARM_COLL_GATHER:
        return m->prev_gather(c->sbuf, c->scount, c->sdtype, c->rbuf, c->rcount, c->rdtype,
                              c->root, comm, m->prev_gather_module);
    case SHARM_COLL_SCATTER:
        return m->prev_scatter(c->sbuf, c->scount, c->sdtype, c->rbuf, c->rcount, c->rdtype,
                               c->root, comm, m->prev_scatter_module);
    case SHARM_COLL_ALLGATHER:
        return m->prev_allgather(c->sbuf, c->scount, c->sdtype, c->rbuf, c->rcount, c->rdtype,
                                 comm, m->prev_allgather_module);
    case SHARM_COLL_ALLTOALL:
        return m->prev_alltoall(c->sbuf, c->scount, c->sdtype, c->rbuf, c->rcount, c->rdtype,
                                comm, m->prev_alltoall_module);
    case SHARM_COLL_GATHERV:
        return m->prev_gatherv(c->sbuf, c->scount, c->sdtype, c->rbuf, rcounts, rdispls,
                               c->rdtype, c->root, comm, m->prev_gatherv_module);
    case SHARM_COLL_ALLGATHERV:
        return m->prev_allgatherv(c->sbuf, c->scount, c->sdtype, c->rbuf, rcounts, rdispls,
                                  c->rdtype, comm, m->prev_allgatherv_module);
    case SHARM_COLL_SCATTERV:
        return m->prev_scatterv(c->sbuf, scounts, sdispls, c->sdtype, c->rbuf, c->rcount,
                                c->rdtype, c->root, comm, m->prev_scatterv_module);
    case SHARM_COLL_ALLTOALLV:
        return m->prev_alltoallv(c->sbuf, scounts, sdispls, c->sdtype, c->rbuf, rcounts,
                                 rdispls, c->rdtype, comm, m->prev_alltoallv_module);
    default:
        return OMPI_ERR_NOT_SUPPORTED;
    }
}

int sharm_glue_prev_bcast_bytes(void *module, void *buf, int32_t len, int32_t root, void *comm)
{
    mca_coll_sharm_module_t *m = module;
    return m->prev_bcast(buf, len, &ompi_mpi_byte.dt, root, comm, m->prev_bcast_module);
}

/* Every process contributes `len` bytes; rbuf receives them in rank order
 * (comm size * len bytes).  Used where each process knows only its own part,
 * e.g. its node name and locality string at hierarchy build. */
int sharm_glue_prev_allgather_bytes(void *module, const void *sbuf, void *rbuf, int32_t len,
                                    void *comm)
{
    mca_coll_sharm_module_t *m = module;
    return m->prev_allgather(sbuf, len, &ompi_mpi_byte.dt, rbuf, len, &ompi_mpi_byte.dt, comm,
                             m->prev_allgather_module);
}

int sharm_glue_prev_allreduce_min_i32(void *module, int32_t *value, void *comm)
{
    mca_coll_sharm_module_t *m = module;
    return m->prev_allreduce(MPI_IN_PLACE, value, 1, &ompi_mpi_int.dt, &ompi_mpi_op_min.op,
                             comm, m->prev_allreduce_module);
}
