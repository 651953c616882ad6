/* Parameter layout of the batched copy kernel (src/cuda/kernels/copy_batch.cu),
 * shared by the kernel, its launcher (src/cuda/copy_kernel.cc) and the
 * simulator, which runs the same batch on the host. Passed by value: the whole
 * struct is the kernel's one parameter (below CUDA's 4 KiB parameter limit). */
#ifndef GDRPIPE_CUDA_COPY_KERNEL_ABI_H
#define GDRPIPE_CUDA_COPY_KERNEL_ABI_H

#define GP_COPY_BATCH_MAX 128
#define GP_COPY_KERNEL_NAME "gp_copy_batch"

typedef struct gp_copy_desc {
    unsigned long long dst;
    unsigned long long src;
    unsigned long long len;
} gp_copy_desc_t;

typedef struct gp_copy_batch {
    unsigned int count;
    unsigned int reserved;
    gp_copy_desc_t desc[GP_COPY_BATCH_MAX];
} gp_copy_batch_t;

#endif
