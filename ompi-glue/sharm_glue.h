/*
 * The C ABI between sharm's Rust core and Open MPI.
 *
 * Everything that knows an Open MPI struct layout, macro or static inline
 * function lives on the C side of this header; Rust sees only opaque handles,
 * integers and byte sizes.  src/ffi.rs mirrors this file declaration by
 * declaration: change both together.
 *
 * Two directions:
 *  - sharm_glue_*   : implemented in C (ompi_calls.c, component.c), called by Rust.
 *  - sharm_rs_entries: a table of Rust functions, handed to C once at load
 *                      time, through which the component calls into Rust.
 *
 * Handles are `void *` on purpose: Open MPI 5.0 support must only touch this
 * directory, so no Open MPI type may leak into the Rust side.
 */
#ifndef SHARM_GLUE_H
#define SHARM_GLUE_H

#include <stddef.h>
#include <stdint.h>

/* Collective operations, in the order of sharm's statistics counters. */
enum sharm_coll {
    SHARM_COLL_BARRIER = 0,
    SHARM_COLL_BCAST,
    SHARM_COLL_REDUCE,
    SHARM_COLL_ALLREDUCE,
    SHARM_COLL_GATHER,
    SHARM_COLL_GATHERV,
    SHARM_COLL_SCATTER,
    SHARM_COLL_SCATTERV,
    SHARM_COLL_ALLGATHER,
    SHARM_COLL_ALLGATHERV,
    SHARM_COLL_ALLTOALL,
    SHARM_COLL_ALLTOALLV,
    SHARM_COLL_REDUCE_SCATTER_BLOCK,
    SHARM_COLL_REDUCE_SCATTER,
    SHARM_COLL_SCAN,
    SHARM_COLL_EXSCAN,
    SHARM_COLL_COUNT
};

/* Algorithm selectors shared by the *_algorithm MCA parameters. */
enum sharm_algorithm {
    SHARM_ALG_AUTO = 0,
    SHARM_ALG_LINEAR = 1,
    SHARM_ALG_KNOMIAL = 2,
    SHARM_ALG_ALLGATHER = 3,              /* Allreduce only */
    SHARM_ALG_REDUCE_SCATTER_ALLGATHER = 4, /* Allreduce only */
    SHARM_ALG_RING = 5, /* hierarchy groups: scatter+allgather / reduce-scatter+gather */
    SHARM_ALG_PAIRWISE = 6, /* Alltoall only */
    SHARM_ALG_CHAIN = 7,    /* Scan/Exscan only */
    SHARM_ALG_GATHER_BCAST = 8,       /* Allgather only */
    SHARM_ALG_REDUCE_THEN_SCATTER = 9 /* Reduce_scatter(_block) only */
};

/* A snapshot of the component's MCA parameters (read once per communicator). */
struct sharm_params {
    int32_t priority;
    int32_t verbose;
    int32_t fragment_size;
    int32_t queue_slots;
    int32_t knomial_radix;
    int32_t algorithm[SHARM_COLL_COUNT]; /* enum sharm_algorithm, per enum sharm_coll */
    uint64_t max_message_size;      /* 0: no limit */
    uint64_t shared_memory_budget;  /* bytes of segments one process may attach */
    int32_t reduction_kernels;      /* 0: sharm's own (src/kernels), 1: Open MPI's ompi_op_reduce */
    int32_t single_copy_push;       /* 1: large Gather(v) blocks are written by their senders */
    int32_t single_copy;            /* enum sharm_single_copy */
    int32_t calibrate;              /* 1: `auto` single copy times both paths at set-up */
    uint64_t single_copy_min_size;  /* streams below this many bytes use the queues */
    uint64_t nontemporal_min_size;  /* smaller streams enter the queues by ordinary stores */
    int32_t nontemporal;            /* enum sharm_nontemporal */
    int32_t nontemporal_far_latency; /* ns; 0: sharm's default (stores.rs) */
    int32_t single_copy_trials;     /* calls per path tried per size class; 0: none */
    uint64_t nontemporal_landing_min_size; /* copies into receive buffers stream from it; 0: auto */
    int32_t single_copy_retry_after; /* calls a decided size class makes before its next trials; 0: never */
    int32_t nontemporal_landing_trials; /* 1: size classes also try non-temporal against cached landing */
    uint64_t pair_buffer_size;      /* bytes of each half of a two-process channel's pair buffer; 0: none */
};

/* coll_sharm_nontemporal: how large streams are written into the queues. */
enum sharm_nontemporal {
    SHARM_NONTEMPORAL_AUTO = 0,  /* non-temporal while ordinary copies measure slow */
    SHARM_NONTEMPORAL_NEVER = 1, /* ordinary stores */
    SHARM_NONTEMPORAL_ALWAYS = 2, /* non-temporal stores */
    SHARM_NONTEMPORAL_FILLS = 3   /* as auto, from the writer's own fills alone */
};

/* coll_sharm_single_copy: how large streams move between processes. */
enum sharm_single_copy {
    SHARM_SINGLE_COPY_AUTO = 0, /* CMA when permitted and faster (calibrated at set-up) */
    SHARM_SINGLE_COPY_NONE = 1, /* always through the queues (two copies) */
    SHARM_SINGLE_COPY_CMA = 2   /* process_vm_readv whenever permitted */
};

/*
 * One collective call, exactly as the application made it.  Which fields are
 * meaningful depends on `coll` (unused ones are zero / NULL):
 *   bcast                      rbuf (the buffer), rcount, rdtype, root
 *   reduce, allreduce,
 *   scan, exscan               sbuf, rbuf, rcount (count), rdtype (datatype), op, root
 *   reduce_scatter_block       sbuf, rbuf, rcount, rdtype, op
 *   reduce_scatter             sbuf, rbuf, rcounts, rdtype, op
 *   gather, scatter,
 *   allgather, alltoall        sbuf, scount, sdtype, rbuf, rcount, rdtype, root
 *   gatherv, allgatherv        sbuf, scount, sdtype, rbuf, rcounts, rdispls, rdtype, root
 *   scatterv                   sbuf, scounts, sdispls, sdtype, rbuf, rcount, rdtype, root
 *   alltoallv                  sbuf, scounts, sdispls, sdtype, rbuf, rcounts, rdispls, rdtype
 *   barrier                    (nothing)
 */
struct sharm_call {
    int32_t coll; /* enum sharm_coll */
    int32_t root;
    const void *sbuf;
    void *rbuf;
    int32_t scount;
    int32_t rcount;
    void *sdtype;
    void *rdtype;
    const int32_t *scounts;
    const int32_t *sdispls;
    const int32_t *rcounts;
    const int32_t *rdispls;
    void *op;
};

/* Parameters of the hierarchical (topology-aware) collectives.  Strings are
 * owned by Open MPI's variable system and stay valid while the component is
 * open; "" when unset. */
enum sharm_hierarchy_mode {
    SHARM_HIER_AUTO = 0, /* hierarchical when the communicator spans several nodes */
    SHARM_HIER_OFF = 1,
    SHARM_HIER_ON = 2 /* also on one node, over its intra-node levels */
};
struct sharm_hier_params {
    int32_t mode;              /* enum sharm_hierarchy_mode */
    int32_t virtual_node_size; /* >0: every k consecutive ranks form a node (testing) */
    int32_t bcast_algorithm;   /* per group: SHARM_ALG_LINEAR (flat) or SHARM_ALG_KNOMIAL */
    int32_t reduce_algorithm;  /* per group: SHARM_ALG_LINEAR (flat) or SHARM_ALG_KNOMIAL */
    int32_t allreduce_algorithm; /* 0 reduce_bcast, 1 reduce_allreduce_bcast */
    const char *levels;        /* e.g. "l2,l3,numa,socket,node,switch" */
    const char *topology_file; /* network levels: "<node> <switch> [<switch2> ...]" */
    const char *dot_file;      /* where to write the group tree as DOT ("" none) */
    const char *level_algorithms; /* per-level overrides, "<level>:<flat|knomial|ring>,..." */
    int32_t top_allreduce_algorithm; /* enum sharm_top_allreduce */
    int32_t reserved;
    const char *lattice_dims; /* "auto" or e.g. "4x4x2" (lattice ring, paper 001) */
    const char *torus_dims;   /* "auto" or e.g. "4x3x2" (Trinaryx3, paper 002) */
    int32_t allgather_algorithm; /* 0 auto, 1 hierarchical, 2 recursive_doubling, 3 bruck */
    int32_t allgather_remap;     /* 0 none, 1 exch, 2 reorder (paper 003) */
    uint64_t piece_size;         /* most bytes a call stages at once (0: no limit) */
};

/* coll_sharm_hierarchy_top_allreduce_algorithm: the top group's Allreduce
 * (with coll_sharm_hierarchy_allreduce_algorithm reduce_allreduce_bcast). */
enum sharm_top_allreduce {
    SHARM_TOP_AUTO = 0,
    SHARM_TOP_RECURSIVE_DOUBLING = 1,
    SHARM_TOP_RING = 2,
    SHARM_TOP_LATTICE_RING = 3,
    SHARM_TOP_TRINARYX3 = 4
};

/* Rust entry points, registered once when the shared object is loaded. */
struct sharm_rs_entries {
    /* Decide whether sharm serves `comm`; returns per-communicator state or NULL. */
    void *(*comm_query)(void *comm, int32_t *priority);
    /* Release per-communicator state (segment, buffers). */
    void (*comm_free)(void *state);
    /* Serve one collective call (or hand it over with sharm_glue_prev). */
    int (*collective)(void *state, void *module, void *comm, const struct sharm_call *call);
    /* Value of statistics counter `index` (3 * enum sharm_coll + 0 served / 1 fallbacks /
     * 2 hierarchical; 3 * SHARM_COLL_COUNT + enum sharm_coll: single copy; 4 * SHARM_COLL_COUNT
     * + 0..6: traffic; 4 * SHARM_COLL_COUNT + 7 + enum sharm_coll: pair buffer; see stats.rs). */
    uint64_t (*counter)(int32_t index);
};

/* ---- component and logging (component.c) ---- */
void sharm_glue_component_init(void *storage, size_t storage_size,
                               const struct sharm_rs_entries *entries);
void sharm_glue_params(struct sharm_params *out);
void sharm_glue_hier_params(struct sharm_hier_params *out);
/* Text of the `coll_sharm_<name>_rules` parameter ("" when unset or unknown). */
const char *sharm_glue_rules(const char *name);
/* Print `msg` through the component's opal_output stream at `level`
 * (0: always, like opal_output; >0: only when coll_sharm_verbose >= level). */
void sharm_glue_output(int32_t level, const char *msg);

/* ---- communicator ---- */
int32_t sharm_glue_comm_rank(void *comm);
int32_t sharm_glue_comm_size(void *comm);
int32_t sharm_glue_comm_is_inter(void *comm);
/* 1 when every process of the communicator runs on this node. */
int32_t sharm_glue_comm_all_local(void *comm);
/* 1 when process `rank` of `comm` runs on this node (Open MPI's view: real
 * nodes, not virtual ones); for the traffic counters. */
int32_t sharm_glue_peer_is_local(void *comm, int32_t rank);
uint32_t sharm_glue_comm_cid(void *comm);
const char *sharm_glue_comm_name(void *comm);
/* Job id and rank of this process in MPI_COMM_WORLD (unique segment names). */
uint32_t sharm_glue_jobid(void);
uint32_t sharm_glue_world_rank(void);

/* Node name of process `rank` of `comm` (NULL when Open MPI does not know it);
 * valid while the communicator lives. */
const char *sharm_glue_peer_hostname(void *comm, int32_t rank);
/* The PMIx locality string (pmix.locstr, e.g. "SK0:L30:L20:L10:CR0:HT0:NM0") of
 * process `rank`, copied NUL-terminated into `buf`; returns its length, 0 when
 * absent (processes not bound) or when it does not fit. */
int32_t sharm_glue_peer_locality(void *comm, int32_t rank, char *buf, int32_t cap);

/* ---- point-to-point (the hierarchical collectives' network levels) ---- */
/* Blocking send / receive of `bytes` (< 2^31) bytes with a collective tag. */
int sharm_glue_send(void *comm, const void *buf, int32_t bytes, int32_t dst, int32_t tag);
int sharm_glue_recv(void *comm, void *buf, int32_t bytes, int32_t src, int32_t tag);
/* Sends to `dst` and receives from `src` at the same time (no cycle of
 * blocking sends in a ring). */
/* Tags reserved for collectives (MCA_COLL_BASE_TAG_*). */
int32_t sharm_glue_tag_bcast(void);
int32_t sharm_glue_tag_reduce(void);

/* ---- progress and waiting ---- */
void sharm_glue_progress(void);
/* 1 when Open MPI asked idle processes to yield (mpi_yield_when_idle, set
 * automatically when processes outnumber cores). */
int32_t sharm_glue_yield_when_idle(void);
/* Processes of this job on this node, this one included. */
int32_t sharm_glue_local_procs(void);

/* ---- datatypes ---- */
struct sharm_dtype_info {
    uint64_t size;        /* bytes of data in one element */
    int64_t lb;           /* lower bound */
    int64_t extent;       /* stride between consecutive elements */
    int64_t true_lb;      /* first byte actually touched */
    int64_t true_extent;  /* bytes actually touched by one element */
    /* The flags are whole 64-bit words, like the fields above: the caller
     * copies the struct word by word, and a word assembled from two 32-bit
     * stores cannot be forwarded from the store buffer (the load waits for
     * both stores to reach the cache, about 20 cycles on every call). */
    int64_t predefined;   /* 1 for MPI's predefined types */
    int64_t contiguous1;  /* 1 when one element is a gap-free byte range */
    int64_t contiguous_n; /* 1 when any other count of elements is one (Open MPI
                           * decides both from the datatype's flags alone) */
};
void sharm_glue_dtype_info(void *dtype, struct sharm_dtype_info *out);
/* 1 when `count` elements form one gap-free byte range starting at buf+true_lb. */
int32_t sharm_glue_dtype_contiguous(void *dtype, int32_t count);

/* Pack/unpack a (possibly non-contiguous) buffer as a byte stream. */
void *sharm_glue_convertor_new(int32_t for_send, void *dtype, int32_t count, const void *buf);
/* Pack up to `max` bytes into `dst`; returns the number of bytes packed. */
uint64_t sharm_glue_convertor_pack(void *conv, void *dst, uint64_t max);
/* Unpack `len` bytes from `src` (the next piece of the stream). */
void sharm_glue_convertor_unpack(void *conv, const void *src, uint64_t len);
void sharm_glue_convertor_free(void *conv);

/* ---- reduction operations ---- */
int32_t sharm_glue_op_is_commutative(void *op);
int32_t sharm_glue_op_is_intrinsic(void *op);
/* target[i] = source[i] op target[i] for `count` elements of `dtype`. */
void sharm_glue_op_reduce(void *op, const void *source, void *target, uint64_t count,
                          void *dtype);
const char *sharm_glue_op_name(void *op);
const char *sharm_glue_dtype_name(void *dtype);

/* ---- MPI constants ---- */
const void *sharm_glue_in_place(void);
int32_t sharm_glue_success(void);
int32_t sharm_glue_error(void);

/* ---- local data movement ---- */
/* Copies typed data within this process (MPI's send-to-self semantics). */
int sharm_glue_copy_typed(const void *sbuf, int32_t scount, void *sdtype, void *rbuf,
                          int32_t rcount, void *rdtype);

/* ---- the previous (lower-priority) component, for fallback and bootstrap ---- */
/* Runs `call` with the component installed below sharm. */
int sharm_glue_prev(void *module, void *comm, const struct sharm_call *call);
/* Bootstrap helpers over the previous component (byte broadcast, integer MIN). */
int sharm_glue_prev_bcast_bytes(void *module, void *buf, int32_t len, int32_t root,
                                void *comm);
int sharm_glue_prev_allreduce_min_i32(void *module, int32_t *value, void *comm);
/* Allgather of `len` bytes per process (rbuf: comm size * len bytes). */
int sharm_glue_prev_allgather_bytes(void *module, const void *sbuf, void *rbuf, int32_t len,
                                    void *comm);

/* ---- nonblocking point-to-point (schedule executor) ---- */
/* Post a byte transfer; NULL on failure.  Requests are completed and freed by
 * sharm_glue_wait_all. */
void *sharm_glue_isend(void *comm, const void *buf, int32_t bytes, int32_t dst, int32_t tag);
void *sharm_glue_irecv(void *comm, void *buf, int32_t bytes, int32_t src, int32_t tag);
int sharm_glue_wait_all(int32_t count, void **requests);

/* ---- parameter tables ---- */
/* Entry `index` of named-value table `table` (kind: which Rust enum decodes
 * it): 1 and the entry, 0 past the table's end, -1 past the last table. */
int sharm_glue_enum_entry(int table, int index, const char **kind, int *value,
                          const char **name);

/* ---- reduction kernel kinds (src/kernels/kinds.rs mirrors these codes) ---- */
/* Predefined operations sharm's kernels know; -1 means "not one of these". */
enum sharm_kernel_op {
    SHARM_KERNEL_OP_SUM = 0,
    SHARM_KERNEL_OP_PROD,
    SHARM_KERNEL_OP_MIN,
    SHARM_KERNEL_OP_MAX,
    SHARM_KERNEL_OP_LAND,
    SHARM_KERNEL_OP_LOR,
    SHARM_KERNEL_OP_LXOR,
    SHARM_KERNEL_OP_BAND,
    SHARM_KERNEL_OP_BOR,
    SHARM_KERNEL_OP_BXOR,
    SHARM_KERNEL_OP_MINLOC,
    SHARM_KERNEL_OP_MAXLOC,
    SHARM_KERNEL_OP_COUNT
};

/* Element kinds: storage plus the MPI type class that decides the allowed
 * operations (Fortran INTEGER is its own class: no logical operations). */
enum sharm_kernel_elem {
    SHARM_KERNEL_ELEM_I8 = 0,
    SHARM_KERNEL_ELEM_U8,
    SHARM_KERNEL_ELEM_I16,
    SHARM_KERNEL_ELEM_U16,
    SHARM_KERNEL_ELEM_I32,
    SHARM_KERNEL_ELEM_U32,
    SHARM_KERNEL_ELEM_I64,
    SHARM_KERNEL_ELEM_U64,
    SHARM_KERNEL_ELEM_FORTRAN_INT1,
    SHARM_KERNEL_ELEM_FORTRAN_INT2,
    SHARM_KERNEL_ELEM_FORTRAN_INT4,
    SHARM_KERNEL_ELEM_FORTRAN_INT8,
    SHARM_KERNEL_ELEM_F32,
    SHARM_KERNEL_ELEM_F64,
    SHARM_KERNEL_ELEM_LONG_DOUBLE,
    SHARM_KERNEL_ELEM_COMPLEX_F32,
    SHARM_KERNEL_ELEM_COMPLEX_F64,
    SHARM_KERNEL_ELEM_COMPLEX_LONG_DOUBLE,
    SHARM_KERNEL_ELEM_BOOL,            /* C _Bool / C++ bool, 1 byte */
    SHARM_KERNEL_ELEM_FORTRAN_LOGICAL, /* ompi_fortran_logical_t (int), 4 bytes */
    SHARM_KERNEL_ELEM_BYTE,
    SHARM_KERNEL_ELEM_FLOAT_INT,
    SHARM_KERNEL_ELEM_DOUBLE_INT,
    SHARM_KERNEL_ELEM_LONG_INT,
    SHARM_KERNEL_ELEM_2INT,
    SHARM_KERNEL_ELEM_SHORT_INT,
    SHARM_KERNEL_ELEM_LONG_DOUBLE_INT,
    SHARM_KERNEL_ELEM_2REAL,
    SHARM_KERNEL_ELEM_2DOUBLE_PRECISION,
    SHARM_KERNEL_ELEM_2INTEGER,
    SHARM_KERNEL_ELEM_COUNT
};

/* enum sharm_kernel_op code of a predefined operation handle, or -1. */
int sharm_glue_op_kind(void *op);
/* enum sharm_kernel_elem code of a predefined datatype handle, or -1 (also
 * when the datatype's extent is not the kind's C sizeof, e.g. a Fortran
 * INTEGER of another size than expected). */
int sharm_glue_dtype_kind(void *dtype);
/* The table's size and layouts as this C compiler sees them, checked by Rust
 * at load (kernels::check_c_table). */
int sharm_glue_kernel_op_count(void);
int sharm_glue_kernel_elem_count(void);
int64_t sharm_glue_kernel_elem_extent(int kind); /* C sizeof, or -1 */
/* ompi_3buff_op_reduce: target = source1 op source2 (benchmark only). */
void sharm_glue_3buff_reduce(void *op, const void *source1, const void *source2,
                             void *target, int count, void *dtype);

#endif /* SHARM_GLUE_H */
