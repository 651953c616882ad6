/* Packed remote key of a gdrpipe memory registration (the core's format,
 * src/wire/remote_key.cc): what a peer needs to
 * reach the memory. Plain C layout, shared by the UCX glue (pack/unpack) and
 * the core (import). Validated field by field plus a checksum on unpack: an
 * rkey is network input. */
#ifndef GDRPIPE_RKEY_H
#define GDRPIPE_RKEY_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define GP_RKEY_MAGIC   0x6b727067u /* "gprk" */
#define GP_RKEY_VERSION 3

enum gp_rkey_kind {
    GP_RKEY_HOST      = 1, /* host memory: reached with CMA by pid */
    GP_RKEY_CUDA_IPC  = 2, /* cuMemAlloc memory: legacy IPC handle */
    GP_RKEY_CUDA_VMM  = 3, /* VMM allocation: POSIX fd handle (pid + fd) */
    GP_RKEY_CUDA_POOL = 4, /* stream-ordered pool: pool fd + export data */
    GP_RKEY_CUDA_NONE = 5  /* device memory that cannot be shared: staged only */
};

typedef struct gp_rkey {
    uint32_t magic;
    uint16_t version;
    uint16_t kind;
    int32_t pid;          /* owner process */
    int32_t device;       /* owner's device ordinal, -1 for host */
    uint64_t base;        /* allocation (or registered range) start in the owner */
    uint64_t length;
    uint64_t buffer_id;   /* CU_POINTER_ATTRIBUTE_BUFFER_ID at pack time */
    uint64_t host_id;     /* boot-id hash of the owner's host */
    uint64_t token;       /* the registration's secret token: the owner serves
                           * staged requests only for the range of a live
                           * registration with this token (secret_token.hpp) */
    uint8_t dev_uuid[16];
    uint8_t handle[64];   /* IPC handle / pool export data */
    int32_t handle_fd;    /* VMM/pool: fd number in the owner process */
    uint32_t checksum;    /* over every byte before this field */
} gp_rkey_t;

uint32_t gp_rkey_checksum(const gp_rkey_t *rkey);
void gp_rkey_seal(gp_rkey_t *rkey);
/* NULL when valid, else the reason */
const char *gp_rkey_check(const gp_rkey_t *rkey);

#ifdef __cplusplus
}
#endif
#endif
