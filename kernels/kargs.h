/* Kernel signatures, declared once. A header in the common subset of C99 and OpenCL C, as
   kernels/activation.h: kernels/FAMILY.cl includes it and its family's kernels/FAMILY_args.h;
   on the C side both are parts of nn.h (gen/parts.txt).

   A kernel's parameters are one list, NN__KARGS_<sig>(F, P): the first parameter by F, the
   others by P, each as (kind, name):

       #define NN__KARGS_cumsum(F, P) F(in, x) P(out, y) P(int, O) P(int, R) P(int, I) P(int, reverse)
       NN__KSIG(cumsum)

   In OpenCL C the kernel takes its parameter list from it,

       __kernel void cumsum(NN__KPARAMS(cumsum)) { ... }

   and in C, NN__KSIG(cumsum) makes the struct a device plan fills by field name and the
   function that records it as a launch's arguments, in the kernel's order:

       nn__k_cumsum k;
       memset(&k, 0, sizeof k);
       k.x = &g->nodes[n->in[0]].buf;  ...
       r = nn__launch_kernel(g, id, "reduce", "cumsum", work_items, &l);
       if (r == NN_OK) r = nn__kargs_cumsum(l, &k);

   so a field the kernel does not have, or a value of the wrong type, is a compile error.
   Kernels stamped from one macro (the activations' NAME_forward) share one signature.

   Kinds, with the OpenCL C type and the C field:
     in, out      __global const float * / __global float *   const nn__buf *
     iin, iout    __global const int * / __global int *       const nn__buf *
     uin, uout    __global const uint * / __global uint *     const nn__buf *
     sin, sout    __global const / __global NN__STORE_T *     const nn__buf *
                  (the program's storage type: kernels/storage.h, included before the kernel)
     hin, hout    __global const ushort * / __global ushort * const nn__buf * (16-bit words)
     int, uint    const int / const uint                      int / unsigned
     float        const float                                 float
     int8         const int8                                  const int * (eight ints)
     lfloat, lint __local float * / __local int *             size_t (bytes)
     fstep, istep, ustep: a float, int or uint that changes every run: the same in OpenCL C;
                  in C, set at compile time as the others and again before each run by the
                  launch's update function through nn__kstep_<sig>(l, &k), which writes only
                  the step fields. */
#ifndef NN__KARGS_H
#define NN__KARGS_H

#ifdef __OPENCL_VERSION__

#define NN__KCL_in __global const float *
#define NN__KCL_out __global float *
#define NN__KCL_iin __global const int *
#define NN__KCL_iout __global int *
#define NN__KCL_uin __global const uint *
#define NN__KCL_uout __global uint *
#define NN__KCL_sin __global const NN__STORE_T *
#define NN__KCL_sout __global NN__STORE_T *
#define NN__KCL_hin __global const ushort *
#define NN__KCL_hout __global ushort *
#define NN__KCL_int const int
#define NN__KCL_uint const uint
#define NN__KCL_float const float
#define NN__KCL_int8 const int8
#define NN__KCL_lfloat __local float *
#define NN__KCL_lint __local int *
#define NN__KCL_fstep const float
#define NN__KCL_istep const int
#define NN__KCL_ustep const uint
#define NN__KCL_F(kind, name) NN__KCL_##kind name
#define NN__KCL_P(kind, name) , NN__KCL_##kind name
#define NN__KPARAMS(sig) NN__KARGS_##sig(NN__KCL_F, NN__KCL_P)
#define NN__KSIG(sig)

#else /* C: the argument structs and their recorders */

#define NN__KC_in const nn__buf *
#define NN__KC_out const nn__buf *
#define NN__KC_iin const nn__buf *
#define NN__KC_iout const nn__buf *
#define NN__KC_uin const nn__buf *
#define NN__KC_uout const nn__buf *
#define NN__KC_sin const nn__buf *
#define NN__KC_sout const nn__buf *
#define NN__KC_hin const nn__buf *
#define NN__KC_hout const nn__buf *
#define NN__KC_int int
#define NN__KC_uint unsigned
#define NN__KC_float float
#define NN__KC_int8 const int *
#define NN__KC_lfloat size_t
#define NN__KC_lint size_t
#define NN__KC_fstep float
#define NN__KC_istep int
#define NN__KC_ustep unsigned

/* One argument appended to l, by kind. A buffer left NULL or one argument too many is
   NN_ERR_STATE, with the field's name in l->bad_arg for the compile error's message. */
static NN__MAYBE_UNUSED nn_result nn__karg_bad(nn__launch *l, const char *name) {
    l->bad_arg = name;
    return NN_ERR_STATE;
}
static NN__MAYBE_UNUSED nn__karg *nn__karg_next(nn__launch *l) {
    nn__karg *a;
    if (l->n_args == NN__MAX_KARGS) return NULL;
    a = &l->args[l->n_args++];
    memset(a, 0, sizeof *a);
    return a;
}
static NN__MAYBE_UNUSED nn_result nn__karg_buf(nn__launch *l, const char *name, const nn__buf *b) {
    nn__karg *a = nn__karg_next(l);
    if (!a || !b) return nn__karg_bad(l, name);
    a->kind = 'm';
    a->v.buf = *b;
    return NN_OK;
}
static NN__MAYBE_UNUSED nn_result nn__karg_int(nn__launch *l, const char *name, int v) {
    nn__karg *a = nn__karg_next(l);
    if (!a) return nn__karg_bad(l, name);
    a->kind = 'i';
    a->v.i = (int32_t)v;
    return NN_OK;
}
static NN__MAYBE_UNUSED nn_result nn__karg_uint(nn__launch *l, const char *name, unsigned v) {
    nn__karg *a = nn__karg_next(l);
    if (!a) return nn__karg_bad(l, name);
    a->kind = 'u';
    a->v.u = (uint32_t)v;
    return NN_OK;
}
static NN__MAYBE_UNUSED nn_result nn__karg_float(nn__launch *l, const char *name, float v) {
    nn__karg *a = nn__karg_next(l);
    if (!a) return nn__karg_bad(l, name);
    a->kind = 'f';
    a->v.f = v;
    return NN_OK;
}
static NN__MAYBE_UNUSED nn_result nn__karg_int8(nn__launch *l, const char *name, const int *v) {
    nn__karg *a = nn__karg_next(l);
    int k;
    if (!a || !v) return nn__karg_bad(l, name);
    a->kind = '8';
    for (k = 0; k < 8; k++) a->v.v8[k] = (int32_t)v[k];
    return NN_OK;
}
static NN__MAYBE_UNUSED nn_result nn__karg_local(nn__launch *l, const char *name, size_t bytes) {
    nn__karg *a = nn__karg_next(l);
    if (!a) return nn__karg_bad(l, name);
    a->kind = 'L';
    a->v.local = bytes;
    return NN_OK;
}
/* A step argument: recorded as the others, its position kept in l->upd[] (in order). */
static NN__MAYBE_UNUSED nn_result nn__karg_mark(nn__launch *l, nn_result r) {
    if (r != NN_OK) return r;
    if (l->n_upd == NN__MAX_KUPD) return nn__karg_bad(l, "(a step argument too many)");
    l->upd[l->n_upd++] = l->n_args - 1;
    return NN_OK;
}

#define NN__KREC_in(l, name, v) nn__karg_buf(l, name, v)
#define NN__KREC_out(l, name, v) nn__karg_buf(l, name, v)
#define NN__KREC_iin(l, name, v) nn__karg_buf(l, name, v)
#define NN__KREC_iout(l, name, v) nn__karg_buf(l, name, v)
#define NN__KREC_uin(l, name, v) nn__karg_buf(l, name, v)
#define NN__KREC_uout(l, name, v) nn__karg_buf(l, name, v)
#define NN__KREC_sin(l, name, v) nn__karg_buf(l, name, v)
#define NN__KREC_sout(l, name, v) nn__karg_buf(l, name, v)
#define NN__KREC_hin(l, name, v) nn__karg_buf(l, name, v)
#define NN__KREC_hout(l, name, v) nn__karg_buf(l, name, v)
#define NN__KREC_int(l, name, v) nn__karg_int(l, name, v)
#define NN__KREC_uint(l, name, v) nn__karg_uint(l, name, v)
#define NN__KREC_float(l, name, v) nn__karg_float(l, name, v)
#define NN__KREC_int8(l, name, v) nn__karg_int8(l, name, v)
#define NN__KREC_lfloat(l, name, v) nn__karg_local(l, name, v)
#define NN__KREC_lint(l, name, v) nn__karg_local(l, name, v)
#define NN__KREC_fstep(l, name, v) nn__karg_mark(l, nn__karg_float(l, name, v))
#define NN__KREC_istep(l, name, v) nn__karg_mark(l, nn__karg_int(l, name, v))
#define NN__KREC_ustep(l, name, v) nn__karg_mark(l, nn__karg_uint(l, name, v))

/* Before a run: a step field's new value into its recorded argument, the k-th step field. */
#define NN__KSTEP_in(l_, k_, v_)
#define NN__KSTEP_out(l_, k_, v_)
#define NN__KSTEP_iin(l_, k_, v_)
#define NN__KSTEP_iout(l_, k_, v_)
#define NN__KSTEP_uin(l_, k_, v_)
#define NN__KSTEP_uout(l_, k_, v_)
#define NN__KSTEP_sin(l_, k_, v_)
#define NN__KSTEP_sout(l_, k_, v_)
#define NN__KSTEP_hin(l_, k_, v_)
#define NN__KSTEP_hout(l_, k_, v_)
#define NN__KSTEP_int(l_, k_, v_)
#define NN__KSTEP_uint(l_, k_, v_)
#define NN__KSTEP_float(l_, k_, v_)
#define NN__KSTEP_int8(l_, k_, v_)
#define NN__KSTEP_lfloat(l_, k_, v_)
#define NN__KSTEP_lint(l_, k_, v_)
#define NN__KSTEP_fstep(l_, k_, v_) (l_)->args[(l_)->upd[(k_)++]].v.f = (v_);
#define NN__KSTEP_istep(l_, k_, v_) (l_)->args[(l_)->upd[(k_)++]].v.i = (int32_t)(v_);
#define NN__KSTEP_ustep(l_, k_, v_) (l_)->args[(l_)->upd[(k_)++]].v.u = (uint32_t)(v_);

#define NN__KC_FIELD(kind, name) NN__KC_##kind name;
#define NN__KC_REC(kind, name) \
    if (r == NN_OK) r = NN__KREC_##kind(l, #name, k->name);
#define NN__KC_STEP(kind, name) NN__KSTEP_##kind(l, s, k->name)

/* The struct nn__k_<sig>, nn__kargs_<sig>(l, &k) that records its fields as l's arguments
   (NN_ERR_STATE for a buffer left NULL or too many arguments), and nn__kstep_<sig>(l, &k)
   that rewrites the step fields of a recorded launch. */
#define NN__KSIG(sig)                                                                             \
    typedef struct nn__k_##sig { NN__KARGS_##sig(NN__KC_FIELD, NN__KC_FIELD) } nn__k_##sig;        \
    static NN__MAYBE_UNUSED nn_result nn__kargs_##sig(nn__launch *l, const nn__k_##sig *k) {       \
        nn_result r = NN_OK;                                                                      \
        NN__KARGS_##sig(NN__KC_REC, NN__KC_REC) return r;                                         \
    }                                                                                             \
    static NN__MAYBE_UNUSED void nn__kstep_##sig(nn__launch *l, const nn__k_##sig *k) {            \
        int s = 0;                                                                                \
        NN__KARGS_##sig(NN__KC_STEP, NN__KC_STEP)(void) s;                                        \
        (void)l;                                                                                  \
        (void)k;                                                                                  \
    }

#endif
#endif
