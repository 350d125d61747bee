/*
 * sharm's Open MPI component: the struct Open MPI finds with dlsym, the MCA
 * parameters and performance variables, and comm_query.  The per-communicator
 * module, whose collective entry points forward to Rust, depends on the coll
 * API version and lives in coll_api2.c (Open MPI 4.1 and 5.0).
 *
 * Nothing algorithmic happens here.  Every decision (serve this communicator?
 * serve this call or fall back?) is taken in Rust; this file only translates
 * between Open MPI's types and the flat ABI of sharm_glue.h.
 */
#include "sharm_glue_internal.h"

#include <string.h>

#include "opal/mca/base/mca_base_var.h"
#include "opal/mca/base/mca_base_pvar.h"
#include "opal/util/output.h"

/*
 * The component struct.  Open MPI looks up the symbol
 * `mca_coll_sharm_component` in the loaded object.  A Rust cdylib exports
 * only Rust symbols, so the storage for that symbol is a Rust static
 * (src/lib.rs) and this template is copied into it when the object is loaded
 * (sharm_glue_component_init, called from Rust's load-time initialiser).
 */
static int sharm_register(void);
static int sharm_open(void);
static int sharm_close(void);
static int sharm_init_query(bool enable_progress_threads, bool enable_mpi_threads);
static mca_coll_base_module_t *sharm_comm_query(struct ompi_communicator_t *comm, int *priority);

static const sharm_coll_component_t component_template = {
    .collm_version = {
        SHARM_COLL_BASE_VERSION,
        .mca_component_name = "sharm",
        MCA_BASE_MAKE_VERSION(component, 0, 1, 0),
        .mca_open_component = sharm_open,
        .mca_close_component = sharm_close,
        .mca_register_component_params = sharm_register,
    },
    .collm_data = {MCA_BASE_METADATA_PARAM_NONE},
    .collm_init_query = sharm_init_query,
    .collm_comm_query = sharm_comm_query,
};

_Static_assert(sizeof(sharm_coll_component_t) <= SHARM_COMPONENT_STORAGE_BYTES,
               "Rust's storage for mca_coll_sharm_component is too small");

/* The live component (the Rust-owned storage) and the Rust entry table. */
static sharm_coll_component_t *sharm_component;
const struct sharm_rs_entries *sharm_rs;

void sharm_glue_component_init(void *storage, size_t storage_size,
                               const struct sharm_rs_entries *entries)
{
    if (storage_size < sizeof(component_template)) {
        return; /* leaves the symbol zeroed: Open MPI rejects the component */
    }
    memcpy(storage, &component_template, sizeof(component_template));
    sharm_component = storage;
    sharm_rs = entries;
}

/* ------------------------------------------------------------------------ */
/* MCA parameters                                                            */

static int param_priority = 60;  /* above coll/tuned (30): installing is enough */
static int param_verbose = 0;
static int param_fragment_size = 8192;
static int param_queue_slots = 0; /* auto: see layout::auto_slots */
static int param_algorithm[SHARM_COLL_COUNT]; /* all SHARM_ALG_AUTO (0) */
static int param_knomial_radix = 2;
static size_t param_max_message_size = 0;
static size_t param_shared_memory_budget = 1UL << 30;
static int param_reduction_kernels = 0;
static int param_single_copy = SHARM_SINGLE_COPY_AUTO;
static int param_calibrate = 1;
static int param_single_copy_push = 1;
static size_t param_single_copy_min_size = 256 * 1024;
static size_t param_nontemporal_min_size = 4 * 1024;
static size_t param_pair_buffer_size = 512 * 1024; /* shm::pair */
static int param_nontemporal = SHARM_NONTEMPORAL_AUTO;
static int param_nontemporal_far_latency = 0;
static int param_single_copy_trials = 4;
static int param_single_copy_retry_after = 1000;
static size_t param_nontemporal_landing_min_size = 0; /* auto: kernels::isa::CacheCounted */
static int param_nontemporal_landing_trials = 1;

static int param_hier_mode = SHARM_HIER_AUTO;
static int param_virtual_node_size = 0;
static int param_hier_bcast = SHARM_ALG_LINEAR;
static int param_hier_reduce = SHARM_ALG_LINEAR;
static int param_hier_allreduce = 0;
static char *param_hier_levels = NULL;
static char *param_topology_file = NULL;
static char *param_dot_file = NULL;
static char *param_level_algorithms = NULL;
static int param_top_allreduce = SHARM_TOP_AUTO;
static int param_hier_allgather = 0;
static int param_allgather_remap = 0;
static char *param_lattice_dims = NULL;
static char *param_torus_dims = NULL;
static size_t param_hier_piece_size = 64UL << 20;

int sharm_output = -1;

static const mca_base_var_enum_value_t algorithm_values[] = {
    {SHARM_ALG_AUTO, "auto"},
    {SHARM_ALG_LINEAR, "linear"},
    {SHARM_ALG_KNOMIAL, "knomial"},
    {0, NULL},
};

static const mca_base_var_enum_value_t allreduce_values[] = {
    {SHARM_ALG_AUTO, "auto"},
    {SHARM_ALG_LINEAR, "linear"},
    {SHARM_ALG_KNOMIAL, "knomial"},
    {SHARM_ALG_ALLGATHER, "allgather"},
    {SHARM_ALG_REDUCE_SCATTER_ALLGATHER, "reduce_scatter_allgather"},
    {0, NULL},
};

static void register_int(const char *name, const char *help, mca_base_var_enum_t *values,
                         mca_base_var_info_lvl_t level, int *storage)
{
    (void) mca_base_component_var_register(&sharm_component->collm_version, name, help,
                                           MCA_BASE_VAR_TYPE_INT, values, 0, 0, level,
                                           MCA_BASE_VAR_SCOPE_READONLY, storage);
}

static void register_string(const char *name, const char *help, char **storage)
{
    (void) mca_base_component_var_register(&sharm_component->collm_version, name, help,
                                           MCA_BASE_VAR_TYPE_STRING, NULL, 0, 0, OPAL_INFO_LVL_5,
                                           MCA_BASE_VAR_SCOPE_READONLY, storage);
}

static const mca_base_var_enum_value_t alltoall_values[] = {
    {SHARM_ALG_AUTO, "auto"}, {SHARM_ALG_LINEAR, "linear"}, {SHARM_ALG_PAIRWISE, "pairwise"},
    {0, NULL}};
static const mca_base_var_enum_value_t scan_values[] = {
    {SHARM_ALG_AUTO, "auto"}, {SHARM_ALG_LINEAR, "linear"}, {SHARM_ALG_CHAIN, "chain"},
    {0, NULL}};

static const mca_base_var_enum_value_t allgather_values[] = {
    {SHARM_ALG_AUTO, "auto"}, {SHARM_ALG_LINEAR, "linear"},
    {SHARM_ALG_GATHER_BCAST, "gather_bcast"}, {0, NULL}};
static const mca_base_var_enum_value_t reduce_scatter_values[] = {
    {SHARM_ALG_AUTO, "auto"}, {SHARM_ALG_LINEAR, "linear"},
    {SHARM_ALG_REDUCE_THEN_SCATTER, "reduce_then_scatter"}, {0, NULL}};

static const mca_base_var_enum_value_t reduction_kernel_values[] = {
    {0, "sharm"}, {1, "ompi"}, {0, NULL}};
static const mca_base_var_enum_value_t hier_mode_values[] = {
    {SHARM_HIER_AUTO, "auto"}, {SHARM_HIER_OFF, "off"}, {SHARM_HIER_ON, "on"}, {0, NULL}};
static const mca_base_var_enum_value_t group_alg_values[] = {
    {SHARM_ALG_LINEAR, "flat"}, {SHARM_ALG_KNOMIAL, "knomial"}, {SHARM_ALG_RING, "ring"},
    {0, NULL}};
static const mca_base_var_enum_value_t top_allreduce_values[] = {
    {SHARM_TOP_AUTO, "auto"}, {SHARM_TOP_RECURSIVE_DOUBLING, "recursive_doubling"},
    {SHARM_TOP_RING, "ring"}, {SHARM_TOP_LATTICE_RING, "lattice_ring"},
    {SHARM_TOP_TRINARYX3, "trinaryx3"}, {0, NULL}};
static const mca_base_var_enum_value_t hier_allgather_values[] = {
    {0, "auto"}, {1, "hierarchical"}, {2, "recursive_doubling"}, {3, "bruck"}, {0, NULL}};
static const mca_base_var_enum_value_t allgather_remap_values[] = {
    {0, "none"}, {1, "exch"}, {2, "reorder"}, {0, NULL}};
static const mca_base_var_enum_value_t hier_allreduce_values[] = {
    {0, "reduce_bcast"}, {1, "reduce_allreduce_bcast"}, {0, NULL}};
static const mca_base_var_enum_value_t single_copy_values[] = {
    {SHARM_SINGLE_COPY_AUTO, "auto"}, {SHARM_SINGLE_COPY_NONE, "none"},
    {SHARM_SINGLE_COPY_CMA, "cma"}, {0, NULL}};

static const mca_base_var_enum_value_t nontemporal_values[] = {
    {SHARM_NONTEMPORAL_AUTO, "auto"}, {SHARM_NONTEMPORAL_NEVER, "never"},
    {SHARM_NONTEMPORAL_ALWAYS, "always"}, {SHARM_NONTEMPORAL_FILLS, "fills"}, {0, NULL}};

/* Every named-value table the parameters use.  The Rust side decodes the
 * stored integers itself, so at load it walks these tables
 * (sharm_glue_enum_entry) and checks that each value decodes to the variant
 * of the same name; a mismatch disables sharm with a message instead of
 * silently running another algorithm than the one asked for. */
static const struct {
    const char *kind;
    const mca_base_var_enum_value_t *values;
} enum_tables[] = {
    {"algorithm", algorithm_values},         {"algorithm", allreduce_values},
    {"algorithm", alltoall_values},          {"algorithm", scan_values},
    {"algorithm", allgather_values},         {"algorithm", reduce_scatter_values},
    {"hierarchy_mode", hier_mode_values},    {"group_algorithm", group_alg_values},
    {"hierarchy_allreduce", hier_allreduce_values},
    {"top_allreduce", top_allreduce_values},
    {"hier_allgather", hier_allgather_values},
    {"allgather_remap", allgather_remap_values},
    {"reduction_kernels", reduction_kernel_values},
    {"single_copy", single_copy_values},
    {"nontemporal", nontemporal_values},
};

int sharm_glue_enum_entry(int table, int index, const char **kind, int *value, const char **name)
{
    if (table < 0 || table >= (int) (sizeof(enum_tables) / sizeof(enum_tables[0]))) {
        return -1;
    }
    *kind = enum_tables[table].kind;
    for (int i = 0; enum_tables[table].values[i].string != NULL; ++i) {
        if (i == index) {
            *value = enum_tables[table].values[i].value;
            *name = enum_tables[table].values[i].string;
            return 1;
        }
    }
    return 0;
}

static void register_size(const char *name, const char *help, size_t *storage);

static void register_hierarchy(void)
{
    mca_base_var_enum_t *modes = NULL, *group_algs = NULL, *allreduce_algs = NULL;

    (void) mca_base_var_enum_create("coll_sharm_hierarchy_modes", hier_mode_values, &modes);
    (void) mca_base_var_enum_create("coll_sharm_group_algorithms", group_alg_values, &group_algs);
    (void) mca_base_var_enum_create("coll_sharm_hierarchy_allreduce_algorithms",
                                    hier_allreduce_values, &allreduce_algs);
    register_int("hierarchy",
                 "Topology-aware hierarchical Bcast/Reduce/Allreduce (the coll/tcl design): auto "
                 "(when the communicator spans several nodes), off, on (also within one node)",
                 modes, OPAL_INFO_LVL_5, &param_hier_mode);
    param_hier_levels = "l2,l3,numa,socket,node,switch"; /* copied by the variable system */
    register_string("hierarchy_levels",
                    "Hardware levels that form groups, lowest first: any of l2, l3, numa, "
                    "socket, node, switch (all switch levels) or switch1, switch2, ...",
                    &param_hier_levels);
    register_string("topology_file",
                    "Network topology for the switch levels: one line per node, "
                    "'<node-name> <switch> [<level-2 switch> ...]', '#' comments",
                    &param_topology_file);
    register_int("virtual_node_size",
                 "Testing: every k consecutive ranks of a communicator form a node (0: real "
                 "nodes)",
                 NULL, OPAL_INFO_LVL_9, &param_virtual_node_size);
    register_int("hierarchy_bcast_algorithm",
                 "Bcast inside network groups: flat, knomial (binomial), ring (scatter + ring "
                 "allgather; large messages)",
                 group_algs, OPAL_INFO_LVL_5, &param_hier_bcast);
    register_int("hierarchy_reduce_algorithm",
                 "Reduce inside network groups: flat, knomial (binomial), ring (ring "
                 "reduce-scatter + gather; large messages; also makes the top group's "
                 "Allreduce a ring instead of recursive doubling)",
                 group_algs, OPAL_INFO_LVL_5, &param_hier_reduce);
    register_int("hierarchy_allreduce_algorithm",
                 "Hierarchical Allreduce: reduce_bcast (reduce to the global leader, then "
                 "bcast), reduce_allreduce_bcast (reduce up to the top level, recursive-doubling "
                 "allreduce among its leaders, bcast down)",
                 allreduce_algs, OPAL_INFO_LVL_5, &param_hier_allreduce);
    {
        mca_base_var_enum_t *tops = NULL;
        (void) mca_base_var_enum_create("coll_sharm_top_allreduce_algorithms",
                                        top_allreduce_values, &tops);
        register_int("hierarchy_top_allreduce_algorithm",
                     "Allreduce among the top group (the node leaders; every process with "
                     "coll_sharm_virtual_node_size 1) under reduce_allreduce_bcast: auto (from "
                     "the cost models by message and group size), recursive_doubling, ring, "
                     "lattice_ring (paper 001: ring reduce-scatter per lattice dimension, "
                     "pipelined), trinaryx3 (paper 002: three edge-disjoint spanning trees of a "
                     "torus)",
                     tops, OPAL_INFO_LVL_5, &param_top_allreduce);
        OBJ_RELEASE(tops);
    }
    {
        mca_base_var_enum_t *algs = NULL, *remaps = NULL;
        (void) mca_base_var_enum_create("coll_sharm_hierarchy_allgather_algorithms",
                                        hier_allgather_values, &algs);
        (void) mca_base_var_enum_create("coll_sharm_allgather_remaps", allgather_remap_values,
                                        &remaps);
        register_int("hierarchy_allgather_algorithm",
                     "MPI_Allgather across nodes: auto (hierarchical across real nodes, the flat "
                     "shared-memory path on one node), hierarchical (gather "
                     "up the groups, broadcast down), recursive_doubling or bruck over all "
                     "processes through the PML, in the numbering coll_sharm_allgather_remap "
                     "chooses (paper 003)",
                     algs, OPAL_INFO_LVL_5, &param_hier_allgather);
        register_int("allgather_remap",
                     "Rank remapping of the recursive_doubling/bruck Allgather across nodes "
                     "(paper 003, METIS partition of the exchange graph onto the nodes): none, "
                     "exch (one extra exchange first), reorder (a local permutation at the end)",
                     remaps, OPAL_INFO_LVL_5, &param_allgather_remap);
        OBJ_RELEASE(algs);
        OBJ_RELEASE(remaps);
    }
    param_lattice_dims = "auto"; /* copied by the variable system */
    register_string("lattice_dims",
                    "Lattice of the lattice ring Allreduce over the top group: auto (from the "
                    "cost model) or r1xr2x...xrd with product = group size, e.g. 4x4x2",
                    &param_lattice_dims);
    param_torus_dims = "auto";
    register_string("torus_dims",
                    "Torus the top group's members lie on (row-major by group rank) for "
                    "Trinaryx3: auto or e.g. 4x3x2 (2-D or 3-D, product = group size)",
                    &param_torus_dims);
    register_string("hierarchy_level_algorithms",
                    "Per-level group algorithm overriding the per-operation ones, e.g. "
                    "'node:knomial,switch1:ring,top:flat' (level names as printed in the group "
                    "tree; flat, knomial or ring; inside a node ring means the default)",
                    &param_level_algorithms);
    register_size("hierarchy_piece_size",
                  "Most bytes a hierarchical call packs, stages or reduces at once: larger "
                  "Bcasts, Allgathers and (All)reduces go in pieces of this size, so a call's "
                  "own memory stays near it whatever its message (0: whole messages)",
                  &param_hier_piece_size);
    register_string("hierarchy_dot_file",
                    "Write each communicator's group tree in DOT to this file (rank 0; the "
                    "communicator id is appended)",
                    &param_dot_file);
    OBJ_RELEASE(modes);
    OBJ_RELEASE(group_algs);
    OBJ_RELEASE(allreduce_algs);
}

void sharm_glue_hier_params(struct sharm_hier_params *out)
{
    out->mode = param_hier_mode;
    out->virtual_node_size = param_virtual_node_size;
    out->bcast_algorithm = param_hier_bcast;
    out->reduce_algorithm = param_hier_reduce;
    out->allreduce_algorithm = param_hier_allreduce;
    out->levels = NULL == param_hier_levels ? "" : param_hier_levels;
    out->topology_file = NULL == param_topology_file ? "" : param_topology_file;
    out->dot_file = NULL == param_dot_file ? "" : param_dot_file;
    out->level_algorithms = NULL == param_level_algorithms ? "" : param_level_algorithms;
    out->top_allreduce_algorithm = param_top_allreduce;
    out->reserved = 0;
    out->lattice_dims = NULL == param_lattice_dims ? "auto" : param_lattice_dims;
    out->torus_dims = NULL == param_torus_dims ? "auto" : param_torus_dims;
    out->allgather_algorithm = param_hier_allgather;
    out->allgather_remap = param_allgather_remap;
    out->piece_size = param_hier_piece_size;
}

static void register_size(const char *name, const char *help, size_t *storage)
{
    (void) mca_base_component_var_register(&sharm_component->collm_version, name, help,
                                           MCA_BASE_VAR_TYPE_SIZE_T, NULL, 0, 0, OPAL_INFO_LVL_5,
                                           MCA_BASE_VAR_SCOPE_READONLY, storage);
}

/* Names of the statistics counters: counter index = 3 * enum sharm_coll + kind,
 * kind 0 = calls served by sharm, kind 1 = calls handed to the next component,
 * kind 2 = served calls that went through the hierarchy (a subset of kind 0). */
static const char *const coll_names[SHARM_COLL_COUNT] = {
    "barrier", "bcast", "reduce", "allreduce", "gather", "gatherv", "scatter", "scatterv",
    "allgather", "allgatherv", "alltoall", "alltoallv", "reduce_scatter_block",
    "reduce_scatter", "scan", "exscan",
};

static int read_counter(const struct mca_base_pvar_t *pvar, void *value, void *obj)
{
    (void) obj;
    *(unsigned long long *) value = sharm_rs->counter((int32_t)(intptr_t) pvar->ctx);
    return OMPI_SUCCESS;
}

/* Registers read-only counter `name` (prefixed coll_sharm_ by Open MPI) with
 * index `index` of stats.rs. */
static void register_counter(const char *name, const char *help, int index)
{
    (void) mca_base_component_pvar_register(
        &sharm_component->collm_version, name, help, OPAL_INFO_LVL_4, MCA_BASE_PVAR_CLASS_COUNTER,
        MCA_BASE_VAR_TYPE_UNSIGNED_LONG_LONG, NULL, MCA_BASE_VAR_BIND_NO_OBJECT,
        MCA_BASE_PVAR_FLAG_READONLY | MCA_BASE_PVAR_FLAG_CONTINUOUS, read_counter, NULL, NULL,
        (void *)(intptr_t) index);
}

/* Registers a counter per collective: `suffix` names it after the
 * collective, `help` holds one %s for the MPI name, `first` is the index of
 * the first collective's. */
static void register_per_collective(const char *suffix, const char *help, int first, int stride)
{
    for (int coll = 0; coll < SHARM_COLL_COUNT; ++coll) {
        char name[64], text[200];
        snprintf(name, sizeof(name), "%s_%s", coll_names[coll], suffix);
        snprintf(text, sizeof(text), help, coll_names[coll]);
        register_counter(name, text, first + stride * coll);
    }
}

static void register_counters(void)
{
    /* Index 3 * coll + kind. */
    register_per_collective("served", "Number of MPI_%s calls served by sharm in this process", 0,
                            3);
    register_per_collective("fallbacks", "Number of MPI_%s calls sharm handed to the next component",
                            1, 3);
    register_per_collective("hierarchical",
                            "Number of MPI_%s calls sharm served through its hierarchy of groups",
                            2, 3);
    /* After all the others (their indices stay as they were). */
    register_per_collective(
        "single_copy", "Number of MPI_%s calls in which this process moved data by single copy (CMA)",
        3 * SHARM_COLL_COUNT, 1);
    /* Traffic of this process over all collectives, after the per-collective
     * counters (index 4 * SHARM_COLL_COUNT + k, the order of stats.rs's
     * Traffic): what the network levels sent through the PML, the part of it
     * addressed to other nodes, what went through shared-memory queues, and
     * what landed in receive buffers with non-temporal stores. */
    static const char *const traffic_names[7] = {
        "pml_messages", "pml_bytes", "internode_messages",
        "internode_bytes", "shm_messages", "shm_bytes", "nontemporal_bytes"};
    static const char *const traffic_helps[7] = {
        "Messages this process sent through the PML for sharm (network groups, paper 003's "
        "Allgather, group set-up)",
        "Bytes this process sent through the PML for sharm",
        "Of coll_sharm_pml_messages: those sent to a process on another node",
        "Of coll_sharm_pml_bytes: those sent to a process on another node",
        "Fragments this process published into shared-memory queues (single-copy offers "
        "included)",
        "Bytes this process published into shared-memory queues (an offer counts the bytes its "
        "readers pull)",
        "Bytes this process copied into receive buffers with non-temporal stores (streams' "
        "fragments and its own blocks; coll_sharm_nontemporal_landing_min_size)"};
    for (int k = 0; k < 7; ++k)
        register_counter(traffic_names[k], traffic_helps[k], 4 * SHARM_COLL_COUNT + k);
    /* Last (the indices before stay as they were): per collective, the calls
     * that went through a two-process communicator's pair buffer. */
    register_per_collective("pair_buffer",
                            "Number of MPI_%s calls in which this process moved data through the "
                            "pair buffer of a two-process communicator or hierarchy group "
                            "(coll_sharm_pair_buffer_size)",
                            4 * SHARM_COLL_COUNT + 7, 1);
}

/* Single copy (CMA): mode, threshold, calibration. */
static void register_single_copy(void)
{
    mca_base_var_enum_t *modes = NULL;

    (void) mca_base_var_enum_create("coll_sharm_single_copy_modes", single_copy_values, &modes);
    register_int("single_copy",
                 "How streams of at least coll_sharm_single_copy_min_size bytes move: auto "
                 "(CMA when permitted and, with coll_sharm_calibrate, when a short timing at "
                 "the first segment set-up finds it faster), none (the queues: two copies), "
                 "cma (process_vm_readv: readers pull from the writer's buffer, one copy)",
                 modes, OPAL_INFO_LVL_5, &param_single_copy);
    register_size("single_copy_min_size",
                  "Streams below this many bytes always use the queues (with "
                  "coll_sharm_single_copy auto, the calibrated threshold if larger)",
                  &param_single_copy_min_size);
    register_int("calibrate",
                 "1: with coll_sharm_single_copy auto, time both paths (a few ms, two processes, "
                 "once per process) at the first segment set-up and adopt rank 0's result; 0: "
                 "auto means CMA from coll_sharm_single_copy_min_size when permitted",
                 NULL, OPAL_INFO_LVL_5, &param_calibrate);
    register_int("single_copy_push",
                 "1: a Gather(v) block that goes by single copy is written by its sender into "
                 "the root's buffer (process_vm_writev), all senders at once and beside the "
                 "root's copy of its own block; 0: the root reads the blocks one after the other "
                 "(process_vm_readv). Without permission to write, the root reads",
                 NULL, OPAL_INFO_LVL_5, &param_single_copy_push);
    register_int("single_copy_trials",
                 "With coll_sharm_single_copy auto and a core per process: the first calls of "
                 "each Bcast, Reduce, Allreduce, Gather, Scatter, Allgather(v) and Alltoall "
                 "(per power-of-two size class of bytes in all whose every call has at least "
                 "coll_sharm_single_copy_min_size) alternate between the queues and single copy, "
                 "this many calls each; then the processes compare the slowest one's lower median "
                 "times and all take the faster path for that size class, and check that verdict "
                 "on as many calls after it. 0: the set-up calibration's thresholds alone",
                 NULL, OPAL_INFO_LVL_5, &param_single_copy_trials);
    register_int("single_copy_retry_after",
                 "A size class that has decided its path (coll_sharm_single_copy_trials) keeps it "
                 "for this many calls, then tries both paths again and decides again: the state "
                 "of the machine moves within a run. 0: decide once, for good",
                 NULL, OPAL_INFO_LVL_5, &param_single_copy_retry_after);
    OBJ_RELEASE(modes);
}

/* An `<op>_algorithm` parameter with named values, stored per collective. */
static void register_algorithm(const char *name, const char *help,
                               const mca_base_var_enum_value_t *values, int coll)
{
    char enum_name[96];
    mca_base_var_enum_t *named = NULL;

    snprintf(enum_name, sizeof(enum_name), "coll_sharm_%ss", name);
    (void) mca_base_var_enum_create(enum_name, values, &named);
    register_int(name, help, named, OPAL_INFO_LVL_5, &param_algorithm[coll]);
    OBJ_RELEASE(named);
}

static void register_rules(void);

static int sharm_register(void)
{

    register_int("priority",
                 "Priority of the sharm coll component (above coll/tuned's 30 by default; "
                 "a negative value disables sharm)",
                 NULL, OPAL_INFO_LVL_6, &param_priority);
    register_int("verbose",
                 "Verbosity of sharm's output: 1 = why a call was handed to the next component, "
                 "10 = per-communicator setup, 100 = every call",
                 NULL, OPAL_INFO_LVL_9, &param_verbose);
    register_int("fragment_size",
                 "Bytes in one queue slot (f); rounded up to a multiple of 64",
                 NULL, OPAL_INFO_LVL_5, &param_fragment_size);
    register_int("queue_slots",
                 "Slots in each process's cyclic queue (s), at least 2; 0 = auto: the smallest "
                 "power of two from 32 whose ring (s times coll_sharm_fragment_size) holds one "
                 "core's L2 cache, while the segment stays within 1/32 of "
                 "coll_sharm_shared_memory_budget",
                 NULL, OPAL_INFO_LVL_5, &param_queue_slots);

    register_algorithm("barrier_algorithm",
                       "MPI_Barrier algorithm (flags in the sync area, never the data queues): "
                       "auto, linear (everyone polls every arrival flag: one hop), knomial "
                       "(arrivals gathered up a k-nomial tree, then one release flag)",
                       algorithm_values, SHARM_COLL_BARRIER);
    register_algorithm("bcast_algorithm",
                       "MPI_Bcast algorithm: auto (chosen by process count), linear (all "
                       "readers copy from the root's queue), knomial (pipelined k-nomial tree)",
                       algorithm_values, SHARM_COLL_BCAST);
    register_algorithm("reduce_algorithm",
                       "MPI_Reduce algorithm: auto, linear (the root reduces every queue in "
                       "rank order), knomial (k-nomial tree, canonical order kept)",
                       algorithm_values, SHARM_COLL_REDUCE);
    register_algorithm("allreduce_algorithm",
                       "MPI_Allreduce algorithm: auto, linear or knomial (reduction to rank 0 "
                       "fused with the broadcast of the result), allgather (every process "
                       "reduces all contributions itself; small messages), "
                       "reduce_scatter_allgather (each process reduces 1/p of the elements, "
                       "then all exchange the slices; large messages)",
                       allreduce_values, SHARM_COLL_ALLREDUCE);
    register_algorithm("alltoall_algorithm",
                       "MPI_Alltoall algorithm: auto (linear up to one fragment per block), "
                       "linear (all blocks published at once, one phase), pairwise (p-1 "
                       "exchange rounds; MPI_Alltoallv always uses it)",
                       alltoall_values, SHARM_COLL_ALLTOALL);
    register_algorithm("scan_algorithm",
                       "MPI_Scan and MPI_Exscan algorithm: auto, linear (every process folds "
                       "all lower ranks' parts itself), chain (the prefix passes from rank to "
                       "rank; large messages, many processes)",
                       scan_values, SHARM_COLL_SCAN);
    register_algorithm("allgather_algorithm",
                       "MPI_Allgather algorithm: auto (= linear), linear (every process "
                       "publishes its block once and reads all others), gather_bcast (gather to "
                       "rank 0, then broadcast the whole buffer; MPI_Allgatherv always linear)",
                       allgather_values, SHARM_COLL_ALLGATHER);
    register_algorithm("reduce_scatter_algorithm",
                       "MPI_Reduce_scatter and MPI_Reduce_scatter_block algorithm: auto (= "
                       "linear), linear (every process reduces its own slice from all queues), "
                       "reduce_then_scatter (reduce to rank 0, then scatter the slices)",
                       reduce_scatter_values, SHARM_COLL_REDUCE_SCATTER);

    register_int("knomial_radix", "Radix k of the k-nomial trees (2 = binomial)", NULL,
                 OPAL_INFO_LVL_5, &param_knomial_radix);
    register_size("max_message_size",
                  "Messages larger than this many bytes are handed to the next component "
                  "(0 = no limit)",
                  &param_max_message_size);
    register_size("shared_memory_budget",
                  "Bytes of sharm shared-memory segments one process may be attached to; a "
                  "communicator whose segment would exceed it is served by the next component",
                  &param_shared_memory_budget);
    {
        mca_base_var_enum_t *stores = NULL;
        (void) mca_base_var_enum_create("coll_sharm_nontemporal_modes", nontemporal_values,
                                        &stores);
        register_int("nontemporal",
                     "How a stream of at least coll_sharm_nontemporal_min_size bytes is written "
                     "into the shared-memory queues: auto (non-temporal stores while its "
                     "readers see its fragments' headers arrive late "
                     "(coll_sharm_nontemporal_far_latency), for streams up to 256 KiB, or "
                     "while this process's ordinary copies into its queue run slowly, for "
                     "longer streams and on a crowded node: both signs that the readers' "
                     "cores are far from its own; rechecked as it goes), never "
                     "(ordinary stores), always (non-temporal stores: readers fetch from memory, "
                     "not from the writer's cache), fills (as auto, but from the writer's own "
                     "fills alone: its readers are not asked)",
                     stores, OPAL_INFO_LVL_5, &param_nontemporal);
    }
    register_int("nontemporal_far_latency",
                 "Under coll_sharm_nontemporal auto, a header of a queue fragment that "
                 "reaches a reader already waiting for it this many ns or more after its "
                 "writer stamped it counts as a sign that the two cores are far apart "
                 "(four in a row: the reader asks the writer for non-temporal stores), and "
                 "one in less than two thirds of it as a sign that they are near. "
                 "0: sharm's default, 300 ns, set on the development VM where near cores "
                 "pass a line in tens of ns and far ones in hundreds",
                 NULL, OPAL_INFO_LVL_5, &param_nontemporal_far_latency);
    register_size("pair_buffer_size",
                  "On a communicator of two processes, Allgather(v) blocks of 33 bytes up to this "
                  "size, Alltoall blocks up to 256 KiB within it, and under auto the Allreduce "
                  "vectors of 33 bytes that take the allgather Allreduce (to 12 KiB) go through "
                  "a buffer of two halves that the two take in turns: each writes its block into "
                  "the half it read the last time, lines already in its own cache, and reads the "
                  "other's. Larger "
                  "blocks, and blocks that go by single copy (coll_sharm_single_copy, or what its "
                  "trials chose), take the queues or single copy. Each of the halves has this size "
                  "(rounded up to pages); 0: no pair buffer",
                  &param_pair_buffer_size);
    register_size("nontemporal_min_size",
                  "Streams below this many bytes are written into the queues with ordinary "
                  "stores whatever coll_sharm_nontemporal says",
                  &param_nontemporal_min_size);
    register_size("nontemporal_landing_min_size",
                  "A copy into a receive buffer (the last copy of a stream, a process's own "
                  "block, a reduction's result) of at least this many bytes uses non-temporal "
                  "stores, and so does every copy of an Allgather, Alltoall or Gather root that "
                  "lands three quarters of it in all: the data no longer fits the cache with its "
                  "source, and the stores then skip the read of each destination line. "
                  "0: auto, a third of the last-level cache CPUID reports, counted as at most "
                  "40 MiB under a hypervisor (a guest sees the host's whole cache)",
                  &param_nontemporal_landing_min_size);
    register_int("nontemporal_landing_trials",
                 "1: with a core per process and coll_sharm_nontemporal_landing_min_size auto, a "
                 "Bcast, Gather, Scatter, Allgather(v) or Alltoall size class of at least 2 MiB in "
                 "all times its copies into receive buffers with ordinary and with non-temporal "
                 "stores, on each path it tries (coll_sharm_single_copy_trials calls each), and "
                 "keeps the fastest (non-temporal only when more than 1/16 faster than a cached "
                 "route); 0: the size rule alone",
                 NULL, OPAL_INFO_LVL_5, &param_nontemporal_landing_trials);

    {
        mca_base_var_enum_t *kernels = NULL;
        (void) mca_base_var_enum_create("coll_sharm_reduction_kernel_sources",
                                        reduction_kernel_values, &kernels);
        register_int("reduction_kernels",
                     "Who combines reduction operands: sharm (its own vectorised kernels for "
                     "every predefined operation on predefined datatypes; integers wrap), or "
                     "ompi (Open MPI's ompi_op_reduce, i.e. op/avx where loaded). User "
                     "operations and derived datatypes always use Open MPI's",
                     kernels, OPAL_INFO_LVL_5, &param_reduction_kernels);
        OBJ_RELEASE(kernels);
    }

    register_single_copy();
    register_hierarchy();
    register_counters();
    register_rules();
    return OMPI_SUCCESS;
}

static int sharm_open(void)
{
    sharm_output = opal_output_open(NULL);
    opal_output_set_verbosity(sharm_output, param_verbose);
    return OMPI_SUCCESS;
}

static int sharm_close(void)
{
    if (sharm_output >= 0) {
        opal_output_close(sharm_output);
        sharm_output = -1;
    }
    return OMPI_SUCCESS;
}

static int sharm_init_query(bool enable_progress_threads, bool enable_mpi_threads)
{
    (void) enable_progress_threads;
    (void) enable_mpi_threads;
    return OMPI_SUCCESS;
}

void sharm_glue_params(struct sharm_params *out)
{
    out->priority = param_priority;
    out->verbose = param_verbose;
    out->fragment_size = param_fragment_size;
    out->queue_slots = param_queue_slots;
    memcpy(out->algorithm, param_algorithm, sizeof(out->algorithm));
    out->knomial_radix = param_knomial_radix;
    out->max_message_size = param_max_message_size;
    out->shared_memory_budget = param_shared_memory_budget;
    out->reduction_kernels = param_reduction_kernels;
    out->single_copy_push = param_single_copy_push;
    out->single_copy = param_single_copy;
    out->calibrate = param_calibrate;
    out->single_copy_min_size = param_single_copy_min_size;
    out->nontemporal_min_size = param_nontemporal_min_size;
    out->nontemporal = param_nontemporal;
    out->nontemporal_far_latency = param_nontemporal_far_latency;
    out->single_copy_trials = param_single_copy_trials;
    out->nontemporal_landing_min_size = param_nontemporal_landing_min_size;
    out->single_copy_retry_after = param_single_copy_retry_after;
    out->nontemporal_landing_trials = param_nontemporal_landing_trials;
    out->pair_buffer_size = param_pair_buffer_size;
}

void sharm_glue_output(int32_t level, const char *msg)
{
    if (level <= 0) {
        opal_output(sharm_output < 0 ? 0 : sharm_output, "coll:sharm: %s", msg);
    } else if (sharm_output >= 0) {
        opal_output_verbose(level, sharm_output, "coll:sharm: %s", msg);
    }
}

/* ------------------------------------------------------------------------ */
/* Selection: the module itself (its entry points, enable/disable, the saved
 * functions of the component below) follows the coll API: coll_api2.c.     */

static mca_coll_base_module_t *sharm_comm_query(struct ompi_communicator_t *comm, int *priority)
{
    void *state;
    mca_coll_base_module_t *module;

    if (NULL == sharm_rs) {
        return NULL;
    }
    state = sharm_rs->comm_query(comm, priority);
    if (NULL == state) {
        return NULL;
    }
    module = sharm_glue_module_new(state);
    if (NULL == module) {
        sharm_rs->comm_free(state);
    }
    return module;
}

/* ------------------------------------------------------------------------ */
/* Decision rules for `auto` (parsed in Rust: src/ompi/rules.rs)             */

static const char *const rule_names[] = {"barrier",   "bcast",     "reduce",
                                         "allreduce", "alltoall",  "allgather",
                                         "reduce_scatter", "scan"};
#define SHARM_RULED (sizeof(rule_names) / sizeof(rule_names[0]))
static char *param_rules[SHARM_RULED];

static void register_rules(void)
{
    for (size_t i = 0; i < SHARM_RULED; ++i) {
        char name[64], help[400];
        snprintf(name, sizeof(name), "%s_rules", rule_names[i]);
        snprintf(help, sizeof(help),
                 "Rules for %s's auto algorithm by process count and message size, e.g. "
                 "'np>=2: 0-2047 linear, 2K- knomial radix=4; np>=9: 0- knomial' (README: "
                 "decision rules; written by ci/tune.sh); a forced %s_algorithm wins",
                 rule_names[i], rule_names[i]);
        (void) mca_base_component_var_register(&sharm_component->collm_version, name, help,
                                               MCA_BASE_VAR_TYPE_STRING, NULL, 0, 0,
                                               OPAL_INFO_LVL_5, MCA_BASE_VAR_SCOPE_READONLY,
                                               &param_rules[i]);
    }
}

const char *sharm_glue_rules(const char *name)
{
    for (size_t i = 0; i < SHARM_RULED; ++i) {
        if (0 == strcmp(name, rule_names[i])) {
            return NULL == param_rules[i] ? "" : param_rules[i];
        }
    }
    return "";
}
