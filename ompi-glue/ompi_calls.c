/*
 * Thin wrappers over Open MPI macros and static inline functions, so that
 * Rust can call them through the flat ABI of sharm_glue.h.  One line of logic
 * each, at most: anything more belongs in Rust.
 */
#include "sharm_glue_internal.h"

#include <sys/uio.h>

#include "ompi/group/group.h"
#include "opal/datatype/opal_convertor.h"
#include "opal/runtime/opal_progress.h"
#include "opal/util/proc.h"
#include "ompi/mca/pml/pml.h"
#include "ompi/mca/coll/base/coll_tags.h"
#include "ompi/proc/proc.h"

#include <stdlib.h>
#include <string.h>

int32_t sharm_glue_comm_rank(void *comm) { return ompi_comm_rank(comm); }
int32_t sharm_glue_comm_size(void *comm) { return ompi_comm_size(comm); }
int32_t sharm_glue_comm_is_inter(void *comm) { return OMPI_COMM_IS_INTER((ompi_communicator_t *) comm) ? 1 : 0; }
const char *sharm_glue_comm_name(void *comm) { return ((ompi_communicator_t *) comm)->c_name; }

int32_t sharm_glue_comm_all_local(void *comm)
{
    return ompi_group_have_remote_peers(((ompi_communicator_t *) comm)->c_local_group) ? 0 : 1;
}

int32_t sharm_glue_peer_is_local(void *comm, int32_t rank)
{
    return OPAL_PROC_ON_LOCAL_NODE(
               ompi_group_peer_lookup(((ompi_communicator_t *) comm)->c_local_group, rank)
                   ->super.proc_flags) ? 1 : 0;
}

void sharm_glue_progress(void) { opal_progress(); }
int32_t sharm_glue_yield_when_idle(void) { return opal_progress_yield_when_idle ? 1 : 0; }
int32_t sharm_glue_local_procs(void) { return opal_process_info.num_local_peers + 1; }

void sharm_glue_dtype_info(void *dtype, struct sharm_dtype_info *out)
{
    ompi_datatype_t *dt = dtype;
    size_t size;
    ptrdiff_t lb, extent, true_lb, true_extent;

    ompi_datatype_type_size(dt, &size);
    ompi_datatype_get_extent(dt, &lb, &extent);
    ompi_datatype_get_true_extent(dt, &true_lb, &true_extent);
    out->size = size;
    out->lb = lb;
    out->extent = extent;
    out->true_lb = true_lb;
    out->true_extent = true_extent;
    out->predefined = ompi_datatype_is_predefined(dt) ? 1 : 0;
    out->contiguous1 = ompi_datatype_is_contiguous_memory_layout(dt, 1) ? 1 : 0;
    /* The answer for count 1 and for every other count: Open MPI's test
     * reads only the datatype's flags (CONTIGUOUS, and NO_GAPS unless the
     * count is 1), so two questions here spare one per buffer later. */
    out->contiguous_n = ompi_datatype_is_contiguous_memory_layout(dt, 2) ? 1 : 0;
}

int32_t sharm_glue_dtype_contiguous(void *dtype, int32_t count)
{
    return ompi_datatype_is_contiguous_memory_layout(dtype, count) ? 1 : 0;
}

const char *sharm_glue_dtype_name(void *dtype) { return ((ompi_datatype_t *) dtype)->name; }

void *sharm_glue_convertor_new(int32_t for_send, void *dtype, int32_t count, const void *buf)
{
    opal_convertor_t *conv = OBJ_NEW(opal_convertor_t);
    ompi_datatype_t *dt = dtype;

    if (NULL == conv) {
        return NULL;
    }
    if (for_send) {
        opal_convertor_copy_and_prepare_for_send(ompi_mpi_local_convertor, &dt->super, count,
                                                 buf, 0, conv);
    } else {
        opal_convertor_copy_and_prepare_for_recv(ompi_mpi_local_convertor, &dt->super, count,
                                                 buf, 0, conv);
    }
    return conv;
}

uint64_t sharm_glue_convertor_pack(void *conv, void *dst, uint64_t max)
{
    struct iovec iov = {.iov_base = dst, .iov_len = max};
    uint32_t iov_count = 1;
    size_t bytes = max;

    opal_convertor_pack(conv, &iov, &iov_count, &bytes);
    return bytes;
}

void sharm_glue_convertor_unpack(void *conv, const void *src, uint64_t len)
{
    struct iovec iov = {.iov_base = (void *) src, .iov_len = len};
    uint32_t iov_count = 1;
    size_t bytes = len;

    opal_convertor_unpack(conv, &iov, &iov_count, &bytes);
}

void sharm_glue_convertor_free(void *conv)
{
    opal_convertor_t *c = conv;
    OBJ_RELEASE(c);
}

int32_t sharm_glue_op_is_commutative(void *op) { return ompi_op_is_commute(op) ? 1 : 0; }
int32_t sharm_glue_op_is_intrinsic(void *op) { return ompi_op_is_intrinsic(op) ? 1 : 0; }
const char *sharm_glue_op_name(void *op) { return ((ompi_op_t *) op)->o_name; }

void sharm_glue_op_reduce(void *op, const void *source, void *target, uint64_t count,
                          void *dtype)
{
    ompi_op_reduce(op, (void *) source, target, count, dtype);
}

const void *sharm_glue_in_place(void) { return MPI_IN_PLACE; }
int32_t sharm_glue_success(void) { return OMPI_SUCCESS; }
int32_t sharm_glue_error(void) { return OMPI_ERROR; }

int sharm_glue_copy_typed(const void *sbuf, int32_t scount, void *sdtype, void *rbuf,
                          int32_t rcount, void *rdtype)
{
    return ompi_datatype_sndrcv(sbuf, scount, sdtype, rbuf, rcount, rdtype);
}

/* sharm_glue_comm_cid, sharm_glue_peer_hostname and sharm_glue_peer_locality
 * differ between Open MPI series: flavour_v*.c. */

int32_t sharm_glue_copy_out(char *str, char *buf, int32_t cap)
{
    size_t len;

    if (NULL == str) {
        return 0;
    }
    len = strlen(str);
    if (cap <= 0 || len + 1 > (size_t) cap) {
        free(str);
        return 0;
    }
    memcpy(buf, str, len + 1);
    free(str);
    return (int32_t) len;
}

int sharm_glue_send(void *comm, const void *buf, int32_t bytes, int32_t dst, int32_t tag)
{
    return MCA_PML_CALL(send(buf, bytes, &ompi_mpi_byte.dt, dst, tag,
                             MCA_PML_BASE_SEND_STANDARD, comm));
}

int sharm_glue_recv(void *comm, void *buf, int32_t bytes, int32_t src, int32_t tag)
{
    return MCA_PML_CALL(recv(buf, bytes, &ompi_mpi_byte.dt, src, tag, comm, MPI_STATUS_IGNORE));
}

/* Nonblocking point-to-point for the schedule executor (hier/schedule):
 * the request handles stay opaque to Rust and are completed (and freed) by
 * sharm_glue_wait_all. */
void *sharm_glue_isend(void *comm, const void *buf, int32_t bytes, int32_t dst, int32_t tag)
{
    ompi_request_t *req = NULL;
    int rc = MCA_PML_CALL(isend(buf, bytes, &ompi_mpi_byte.dt, dst, tag,
                                MCA_PML_BASE_SEND_STANDARD, comm, &req));
    return OMPI_SUCCESS == rc ? req : NULL;
}

void *sharm_glue_irecv(void *comm, void *buf, int32_t bytes, int32_t src, int32_t tag)
{
    ompi_request_t *req = NULL;
    int rc = MCA_PML_CALL(irecv(buf, bytes, &ompi_mpi_byte.dt, src, tag, comm, &req));
    return OMPI_SUCCESS == rc ? req : NULL;
}

int sharm_glue_wait_all(int32_t count, void **requests)
{
    return ompi_request_wait_all((size_t) count, (ompi_request_t **) requests,
                                 MPI_STATUSES_IGNORE);
}

int32_t sharm_glue_tag_bcast(void) { return MCA_COLL_BASE_TAG_BCAST; }
int32_t sharm_glue_tag_reduce(void) { return MCA_COLL_BASE_TAG_REDUCE; }
