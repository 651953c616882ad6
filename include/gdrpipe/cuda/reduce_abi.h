/* Parameter layout of the reduction kernel (src/cuda/kernels/reduce.cu),
 * shared by the kernel, its launcher (src/cuda/reduce.cc), the Open MPI
 * component that asks for it (plugin/openmpi/gpo_devreduce.c) and the
 * simulator, which runs the same reduction on the host. Passed by value: the
 * whole struct is the kernel's one parameter.
 *
 * Elements [begin, end) of every source are combined in source order with
 * `op` and the result is written to every destination: the same bytes for
 * all of them. A destination may be one of the sources (MPI_IN_PLACE); each
 * element is read from every source before it is written anywhere. */
#ifndef GDRPIPE_CUDA_REDUCE_ABI_H
#define GDRPIPE_CUDA_REDUCE_ABI_H

#define GP_REDUCE_KERNEL_NAME "gp_reduce"
#define GP_REDUCE_MAX_BUFS 16

/* element types (MPI's predefined integer, floating point and C bool types
 * map onto these by size and kind) */
enum gp_red_type {
    GP_RED_I8 = 0,
    GP_RED_U8,
    GP_RED_I16,
    GP_RED_U16,
    GP_RED_I32,
    GP_RED_U32,
    GP_RED_I64,
    GP_RED_U64,
    GP_RED_F32,
    GP_RED_F64,
    GP_RED_NTYPES
};

/* MPI's predefined operations except MINLOC/MAXLOC (pair types) */
enum gp_red_op {
    GP_RED_SUM = 0,
    GP_RED_PROD,
    GP_RED_MIN,
    GP_RED_MAX,
    GP_RED_LAND,
    GP_RED_LOR,
    GP_RED_LXOR,
    GP_RED_BAND,
    GP_RED_BOR,
    GP_RED_BXOR,
    GP_RED_NOPS
};

typedef struct gp_reduce_args {
    unsigned long long src[GP_REDUCE_MAX_BUFS];
    unsigned long long dst[GP_REDUCE_MAX_BUFS];
    unsigned long long begin; /* first element (index into every buffer) */
    unsigned long long end;   /* one past the last */
    unsigned int nsrc;        /* 1..GP_REDUCE_MAX_BUFS */
    unsigned int ndst;        /* 0..GP_REDUCE_MAX_BUFS */
    unsigned int type;        /* enum gp_red_type */
    unsigned int op;          /* enum gp_red_op */
} gp_reduce_args_t;

/* bytes of one element of `type`, 0 for an unknown type */
static inline unsigned gp_red_type_size(unsigned type)
{
    static const unsigned char size[GP_RED_NTYPES] = {1, 1, 2, 2, 4, 4, 8, 8, 4, 8};
    return type < GP_RED_NTYPES ? size[type] : 0;
}

/* whether `op` is defined on `type` (bitwise and logical ones on integers) */
static inline int gp_red_valid(unsigned type, unsigned op)
{
    if (type >= GP_RED_NTYPES || op >= GP_RED_NOPS) {
        return 0;
    }
    return op <= GP_RED_MAX || (type != GP_RED_F32 && type != GP_RED_F64);
}

#endif
