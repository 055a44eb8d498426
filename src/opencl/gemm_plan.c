/* Launch planning for kernels/gemm.cl, for device plans (backend-neutral arithmetic).
 *
 * The build options and
 * the launch geometry are both derived from one per-device configuration
 * (nn__gemm_config), so they always agree: the kernels carry
 * reqd_work_group_size(WG_N, WG_M, 1) and must be launched with exactly that
 * local size.
 */
#include "../base/internal.h"
#include "../../kernels/attention_tile.h"

typedef struct nn__gemm_plan {
    const char *kernel;   /* kernel name in kernels/gemm.cl */
    int dims;             /* 2, or 3 for a batch (dimension 2 numbers the products) */
    size_t gws[3];        /* global size (already rounded up to a multiple of lws) */
    size_t lws[3];        /* local size; lws[0]==0 means pass NULL (let the runtime choose) */
    int vnx, vny, vnz;    /* the packed path's grid of items (x along N, y along M, z the products), taken in
                             turn by the gws[0] groups (kernels/gemm.cl's GEMM_ITEMS_BEGIN); 0 on the others */
} nn__gemm_plan;

#ifndef NN__GEMM_ONE_ITEM_FLOPS
#define NN__GEMM_ONE_ITEM_FLOPS 2e6 /* a CPU-tuned launch of products below this many flops: an item each */
#endif
#ifndef NN__GEMM_CPU_ITEMS
#define NN__GEMM_CPU_ITEMS 16   /* items a CPU-tuned product aims at where the core count is unknown */
#endif

/* Tunables of kernels/gemm.cl (see the comment at its top). */
typedef struct nn__gemm_cfg {
    int wpt_m, wpt_n, vw;      /* per-item register tile, vector width along N */
    int wg_m, wg_n;            /* work-group shape (dim 1 = M, dim 0 = N) */
    int use_local, ts_k;       /* local-memory panels and their K depth */
    int strided, pad_a, pad_b;
    int items;                 /* packed: items a product aims at (4 a core) */
    int groups;                /* packed: the groups a launch runs, which take the items in turn (a core each) */
} nn__gemm_cfg;

static void nn__gemm_cfg_set(nn__gemm_cfg *c, int wpt_m, int wpt_n, int vw,
                                int wg_m, int wg_n, int use_local, int ts_k,
                                int strided, int pad_a, int pad_b)
{
    c->wpt_m = wpt_m; c->wpt_n = wpt_n; c->vw = vw;
    c->wg_m = wg_m; c->wg_n = wg_n;
    c->use_local = use_local; c->ts_k = ts_k;
    c->strided = strided; c->pad_a = pad_a; c->pad_b = pad_b;
    c->items = NN__GEMM_CPU_ITEMS;
    c->groups = NN__GEMM_CPU_ITEMS / 4;
}

/* $NN_CL_GEMM="WPT_M,WPT_N,VW,WG_M,WG_N,TS_K": the GPU-tuned (tiled) GEMM's tile, for timing
   other tiles on a GPU without a rebuild (HACKING "Kernel development").  Read once when a
   device opens, into d->gemm_tile, and taken only where it is a tile the kernel builds and the
   device runs (VW of 1, 2, 4, 8 or 16 dividing WPT_N, the work-group within max_wg, the
   panels within local memory); otherwise the default stands and a warning (one a context)
   names the value, why, and the tile used instead.  Every tile gives the same bits: each
   element sums its K terms in order. */
/* Why d cannot take the tile env names (read into v), or NULL where it can. */
static NN__MAYBE_UNUSED const char *nn__gemm_env_why(const nn__device *d, const char *env, int v[6]) {
    int i;
    for (i = 0; i < 6; i++) {
        char *end;
        long x = strtol(env, &end, 10);
        if (end == env || x < 1 || x > 256) return "not six integers from 1 to 256";
        v[i] = (int)x;
        env = *end == ',' && i < 5 ? end + 1 : end;
    }
    if (*env) return "not six integers from 1 to 256";
    if (d->cpu_tuned) return "the device runs the CPU-tuned (packed) GEMM, which has no such tile (NN_CL_TUNING=gpu takes it)";
    if (v[2] != 1 && v[2] != 2 && v[2] != 4 && v[2] != 8 && v[2] != 16) return "VW is not 1, 2, 4, 8 or 16";
    if (v[1] % v[2] != 0) return "VW does not divide WPT_N";
    if ((size_t)v[3] * (size_t)v[4] > d->max_wg) return "WG_M x WG_N is over the device's largest work-group";
    if ((uint64_t)v[5] * (uint64_t)(v[0] * v[3] + 1 + v[1] * v[4]) * sizeof(float) > d->local_mem)
        return "TS_K x (WPT_M x WG_M + 1 + WPT_N x WG_N) floats are over the device's local memory";
    return NULL;
}

static void nn__gemm_config(const nn__device *d, nn__gemm_cfg *c) {
    int is_cpu_device = d->cpu_tuned;
    size_t max_wg_size = d->max_wg;
    uint64_t local_mem_bytes = d->local_mem;
    const int *t = d->gemm_tile;
    if (!is_cpu_device && t[0]) {
        nn__gemm_cfg_set(c, t[0], t[1], t[2], t[3], t[4], 1, t[5], 1, 1, 0);
        return;
    }
    if (is_cpu_device) {
        /* CPU runtimes (PoCL): the packed path, one item per group.  A 6x16
         * micro-tile is 12 accumulators of 8 floats, which with the two B
         * vectors and the A broadcast fills AVX2's 16 registers (the same
         * shape as BLIS's Haswell kernel).  Items cover up to 96 x 64 of C;
         * the B panel is TS_K x 64 floats of local memory (64 KiB at
         * TS_K=256; less where the device offers less). */
        uint64_t kmax = local_mem_bytes / (64 * sizeof(float));
        int ts_k = kmax >= 256 ? 256 : (int)(kmax / 16 * 16);
        if (ts_k >= 16)
            nn__gemm_cfg_set(c, 6, 16, 8, 16, 4, 2, ts_k, 0, 0, 0);
        else   /* no useful local memory: stream everything from global */
            nn__gemm_cfg_set(c, 6, 16, 8, 4, 4, 0, 16, 0, 0, 0);
    } else if (max_wg_size >= 256 && local_mem_bytes >= 16 * 1024) {
        /* GPUs: 16x16 items, 4x4 each (float4 along N), 64x64 tiles, K panels
         * of 16 in local memory (8.3 KiB).  Strided ownership keeps local
         * reads conflict-free and global stores coalesced; the A panel is
         * padded because its staging writes stride by the tile height. */
        nn__gemm_cfg_set(c, 4, 4, 4, 16, 16, 1, 16, 1, 1, 0);
    } else if (max_wg_size >= 64 && local_mem_bytes >= 8 * 1024) {
        /* Smaller GPUs / limited work-group size: 8x8 items, 8x8 each. */
        nn__gemm_cfg_set(c, 8, 8, 4, 8, 8, 1, 8, 1, 1, 0);
    } else {
        /* Anything else: the direct path with whatever group fits. */
        int wg = max_wg_size >= 16 ? 4 : (max_wg_size >= 4 ? 2 : 1);
        nn__gemm_cfg_set(c, 4, 4, 4, wg, wg, 0, 16, 0, 0, 0);
    }
}

/* nn__gemm_config with what else the device tells (src/base/internal.h, nn__device).  On a
   CPU device (PoCL) whose preferred float vector is 16 wide (AVX-512), the micro-tile is 6x32
   in float16s: 12 zmm accumulators, half the FMA instructions of 6x16 in float8s (13-15% less
   CPU time on PoCL's GEMMs of the MLP's shapes); items stay 64 columns wide (2 micro-tiles
   across), so the rows' split, the K blocks and so the bits are those of 6x16.  Items a
   product: 4 a compute unit, against 16 before: every item packs its own B panel, so fewer
   row bands pack it fewer times (a 128 x 256 x 784 NT product in 8 items took 24% less CPU
   time than in 16 on this 2-core PoCL), and 4 a core still balance (8 a core: 0.991 of the
   MLP's step). Groups a launch: one a compute unit, each taking items in turn. */
static void nn__gemm_config_dev(const nn__device *dev, nn__gemm_cfg *c) {
    nn__gemm_config(dev, c);
    if (!dev->cpu_tuned || c->use_local != 2) return;
    if (dev->vec_float >= 16) {
        c->wpt_n = 32;
        c->vw = 16;
        c->wg_n = 2;
    }
    if (dev->units > 0 && dev->units < NN__GEMM_CPU_ITEMS / 4) c->items = 4 * (int)dev->units;
    if (dev->units > 0) c->groups = (int)dev->units;
}

/* Whether the device's single products read rows by index (kernels/gemm_args.h's ra and rb,
   the packed path's alone): where src/ops/fuse.c folds a gather of rows into its readers */
static NN__MAYBE_UNUSED int nn__gemm_rows_by_index(const nn__device *dev) {
    nn__gemm_cfg c;
    nn__gemm_config_dev(dev, &c);
    return c.use_local == 2;
}

/* $NN_CL_GEMM into d->gemm_tile where d takes it, else one warning (above nn__gemm_config). */
static NN__MAYBE_UNUSED void nn__gemm_env_read(nn_context *ctx, nn__device *d) {
    const char *env = getenv("NN_CL_GEMM"), *why;
    int v[6];
    nn__gemm_cfg dflt;
    memset(d->gemm_tile, 0, sizeof d->gemm_tile);
    if (!env || !env[0]) return;
    why = nn__gemm_env_why(d, env, v);
    if (!why) {
        memcpy(d->gemm_tile, v, sizeof v);
        return;
    }
    nn__gemm_config_dev(d, &dflt);
    nn__log(ctx, NN_LOG_WARN,
            "NN_CL_GEMM=%s ignored: %s (largest work-group %lu, local memory %lu bytes); the GEMM keeps "
            "its own tile %d,%d,%d,%d,%d,%d", env, why, (unsigned long)d->max_wg, (unsigned long)d->local_mem,
            dflt.wpt_m, dflt.wpt_n, dflt.vw, dflt.wg_m, dflt.wg_n, dflt.ts_k);
}


/* Geometry of `batch` products of M x N (x K) each with the batched kernels (grid dimension 2
   numbers them); batch 0 means one product with the plain 2-D kernels. */
static void nn__gemm_cfg_plan_batched(const nn__gemm_cfg *c, int transA, int transB,
                                         int M, int N, int K, int batch, nn__gemm_plan *p)
{
    static const char *const names[8] = { "gemm_nn_single", "gemm_nt_single", "gemm_tn_single", "gemm_tt_single",
                                          "gemm_nn_batched", "gemm_nt_batched", "gemm_tn_batched",
                                          "gemm_tt_batched" };
    int packed = c->use_local == 2;
    size_t tile_n = (size_t)c->wpt_n * (size_t)(packed ? c->wg_n : 1);
    size_t tile_m = (size_t)c->wpt_m * (size_t)(packed ? c->wg_m : 1);
    size_t items_n = ((size_t)N + tile_n - 1) / tile_n;
    size_t items_m = ((size_t)M + tile_m - 1) / tile_m;
    size_t nb = batch > 0 ? (size_t)batch : 1;
    if (packed) {
        /* An item covers wg_n*wpt_n columns and an equal share of the rows (the
         * kernel derives it from the grid's height, vny).  The launch runs
         * c->groups groups of one item, which take the vnx x vny (x vnz) items
         * in turn (kernels/gemm.cl's GEMM_ITEMS_BEGIN).  Tiles of
         * up to wg_m*wpt_m rows amortise the B packing best, but small
         * problems are split further (down to 4 micro-tiles of rows) so that
         * there are about c->items items to spread over the cores (4 a
         * core): the runtime schedules groups dynamically, so a few items
         * per core balance well. */
        size_t min_rows = (size_t)c->wpt_m * 4;
        size_t most = ((size_t)M + min_rows - 1) / min_rows;
        size_t want = ((size_t)c->items + items_n * nb - 1) / (items_n * nb);
        if (want > most) want = most;
        if (want > items_m) items_m = want;
        /* A launch of tiny products: one item a product, which runs its columns' panels in
           turn (gemm.cl's gemm_packed, the same bits). A CPU driver's second thread woke ~8 us
           into a launch on the 2-core machine, so a few microseconds' work split in items
           waited for it or ran its items one after another anyway. */
        if (2.0 * M * N * K * (double)nb < NN__GEMM_ONE_ITEM_FLOPS) items_n = items_m = 1;
    }
    p->kernel = names[(transA ? 2 : 0) + (transB ? 1 : 0) + (batch > 0 ? 4 : 0)];
    p->dims = batch > 0 ? 3 : 2;
    p->lws[0] = packed ? 1 : (size_t)c->wg_n;
    p->lws[1] = packed ? 1 : (size_t)c->wg_m;
    p->lws[2] = 1;
    p->gws[0] = (items_n + p->lws[0] - 1) / p->lws[0] * p->lws[0];
    p->gws[1] = (items_m + p->lws[1] - 1) / p->lws[1] * p->lws[1];
    p->gws[2] = nb;
    p->vnx = p->vny = p->vnz = 0;
    if (packed) {
        size_t all = items_n * items_m * nb;
        p->vnx = (int)items_n;
        p->vny = (int)items_m;
        p->vnz = (int)nb;
        p->gws[0] = all < (size_t)c->groups ? all : (size_t)c->groups;
        p->gws[1] = p->gws[2] = 1;
    }
}

static void nn__gemm_cfg_plan(const nn__gemm_cfg *c, int transA, int transB,
                                 int M, int N, int K, nn__gemm_plan *p)
{
    nn__gemm_cfg_plan_batched(c, transA, transB, M, N, K, 0, p);
}


/* Launch geometry for one GEMM with the options above. */
static void nn__gemm_plan_make(const nn__device *dev, int transA, int transB, int M, int N, int K,
                                  nn__gemm_plan *p)
{
    nn__gemm_cfg c;
    nn__gemm_config_dev(dev, &c);
    nn__gemm_cfg_plan(&c, transA, transB, M, N, K, p);
}

/* Launch geometry for `batch` products of the batched kernels (see kernels/gemm.cl). */
static void nn__gemm_plan_batched(const nn__device *dev, int transA, int transB, int M, int N, int K, int batch,
                                     nn__gemm_plan *p)
{
    nn__gemm_cfg c;
    nn__gemm_config_dev(dev, &c);
    nn__gemm_cfg_plan_batched(&c, transA, transB, M, N, K, batch, p);
}

static void nn__gemm_cfg_options(const nn__gemm_cfg *c, char *buf, size_t bufsize)
{
    char tmp[256];
    size_t n;
    sprintf(tmp, "-DWPT_M=%d -DWPT_N=%d -DVW=%d -DWG_M=%d -DWG_N=%d "
            "-DUSE_LOCAL=%d -DTS_K=%d -DSTRIDED=%d -DPAD_A=%d -DPAD_B=%d",
            c->wpt_m, c->wpt_n, c->vw, c->wg_m, c->wg_n,
            c->use_local, c->ts_k, c->strided, c->pad_a, c->pad_b);
    if (bufsize == 0)
        return;
    n = strlen(tmp);
    if (n >= bufsize)
        n = bufsize - 1;
    memcpy(buf, tmp, n);
    buf[n] = '\0';
}

/* Build options (-D ...) for kernels/gemm.cl on a device; written into buf (NUL-terminated). */
static void nn__gemm_options(const nn__device *dev, char *buf, size_t bufsize)
{
    nn__gemm_cfg c;
    nn__gemm_config_dev(dev, &c);
    nn__gemm_cfg_options(&c, buf, bufsize);
}

/* ---- kernels/attention.cl's tiled kernels (attn_tiled_*; kernels/attention_tile.h) ---- */

typedef struct nn__attn_cl_cfg {
    int wg;   /* items a work-group (0: no tiled kernels on this device) */
    int lmem; /* floats of local memory a group's tiles may take */
    int own;  /* the most output columns an item accumulates (over every head dim that fits) */
    int fd;   /* the flash kernels' largest head dim (kernels/attention_tile.h); 0: none, or not chosen */
} nn__attn_cl_cfg;

/* GPUs: groups of up to 256 items, the device's local memory less 1 KiB for the driver
   (48 KiB on NVIDIA: tiles of 32 at D = 64, 16 at D = 128, 8 at D = 256 in the backward).
   CPU drivers run the block kernels instead (src/ops/attention.c, nn__attn_block). */
static void nn__attn_cl_config(const nn__device *dev, nn__attn_cl_cfg *c) {
    uint64_t lm = dev->local_mem > 1024 ? (dev->local_mem - 1024) / sizeof(float) : 0;
    int wg = 1, D;
    memset(c, 0, sizeof *c);
    if (dev->cpu_tuned) return;
    while (wg * 2 <= 256 && (size_t)wg * 2 <= dev->max_wg) wg *= 2;
    if (wg < 8 || lm < 64) return;
    c->wg = wg;
    c->lmem = lm > 16384 ? 16384 : (int)lm;
    for (D = 1; D <= 256; D++) {
        int bf = NN__ATTN_TILE(NN__ATTN_LF_FWD, D, c->lmem, wg), bb = NN__ATTN_TILE(NN__ATTN_LF_BWD, D, c->lmem, wg);
        int of = bf ? (D + wg / bf - 1) / (wg / bf) : 0, ob = bb ? (D + wg / bb - 1) / (wg / bb) : 0;
        if (of > c->own) c->own = of;
        if (ob > c->own) c->own = ob;
    }
    if (c->own == 0) c->wg = 0;
    /* the flash kernels are built only where they run (NN_CL_ATTN flash): their unrolled
       loops take PoCL a while to compile */
    if (dev->attn_flash) c->fd = NN__ATTN_FLASH_D(c->lmem, (int)(dev->max_wg < 1024 ? dev->max_wg : 1024));
}

/* the tile of the tiled forward (bwd 0) or backward kernels at head dim D; 0: the row kernels */
static NN__MAYBE_UNUSED int nn__attn_cl_tile(const nn__device *dev, int bwd, int D) {
    nn__attn_cl_cfg c;
    nn__attn_cl_config(dev, &c);
    if (!c.wg) return 0;
    return bwd ? NN__ATTN_TILE(NN__ATTN_LF_BWD, D, c.lmem, c.wg) : NN__ATTN_TILE(NN__ATTN_LF_FWD, D, c.lmem, c.wg);
}

/* kernels/conv.cl's implicit GEMM (conv2d_implicit, CPU devices only): floats of an item's
   input planes in local memory (IC_L: up to 128 KiB, less where the device has less) and the
   most rows of col(x) (IC_R, ints of local memory too); 0 and 0 where the kernel is not built.
   The plan (nn__conv2d_dev_implicit, src/ops/conv/conv2d.c) takes a shape only where it fits. */
static void nn__ic_config(const nn__device *dev, int *lf, int *rows) {
    uint64_t lm = dev->local_mem;
    *lf = *rows = 0;
    if (!dev->cpu_tuned || lm < 4 * 2048 + 1024 + 4 * 4096) return;
    *rows = 2048;
    lm = (lm - 4 * 2048 - 1024) / 4;
    *lf = lm > 32768 ? 32768 : (int)lm;
}

/* The build options (-D ...) of kernels/NAME.cl on a device, from the facts device plans
   read too (so the kernels' tiles and the plans' launch geometry agree); "" for a file
   that takes none. The backend asks for every program it builds, and keys its cache on
   them. */
static NN__MAYBE_UNUSED void nn__program_options(const char *name, const nn__device *dev, char *buf, size_t n) {
    if (n) buf[0] = 0;
    if (strcmp(name, "gemm") == 0) nn__gemm_options(dev, buf, n);
    if (strcmp(name, "conv") == 0 && n) {
        int lf, rows;
        nn__ic_config(dev, &lf, &rows);
        /* the register tiles by the vector width, as the GEMM's: 6 x 2 float16 accumulators
           (forward) and 4 x 6 (weight gradient) are zmm registers on AVX-512; on narrower
           devices a float16 takes two or four registers, so 3 x 2 and 2 x 3 */
        if (lf) snprintf(buf, n, "-DIC_L=%d -DIC_R=%d -DIC_MR=%d -DID_R=%d -DID_C=%d", lf, rows, dev->vec_float >= 16 ? 6 : 3,
                         dev->vec_float >= 16 ? 4 : 2, dev->vec_float >= 16 ? 6 : 3);
    }
    if (strcmp(name, "attention") == 0 && n) {
        nn__attn_cl_cfg c;
        nn__attn_cl_config(dev, &c);
        snprintf(buf, n, "-DNN_ATTN_WG=%d -DNN_ATTN_LMEM=%d -DNN_ATTN_OWN=%d -DNN_ATTN_FD=%d", c.wg ? c.wg : 1,
                 c.lmem ? c.lmem : 1, c.own ? c.own : 1, c.fd);
    }
}
