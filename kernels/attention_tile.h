/* The tiled attention kernels' tile (kernels/attention.cl: attn_tiled_*), written once for
   the launches (src/ops/attention.c), the build options (src/opencl/gemm_plan.c) and the
   kernels: C99 and OpenCL C.

   A work-group of WG items takes B query rows (forward, dQ) or B key rows (dK/dV) of one
   head and walks the keys (queries) B at a time; WG / B items share a row. Its local
   memory, in floats, at head dim D (rows padded to D + 1 and B + 1, so the items of a row
   read different banks): the forward Q, K (then V) [B, D] and the scores and weights
   [B, B]; the backward Q, dO, K, V [B, D] and two [B, B] tiles. The tile is the largest of
   64, 32, 16, 8 that fits L floats and divides WG; 0 where none fits (D = 256 in 32 KiB):
   the row kernels (attn_fwd, attn_dq, attn_dkv) run instead. */
#ifndef NN__ATTENTION_TILE_H
#define NN__ATTENTION_TILE_H

#define NN__ATTN_LF_FWD(B, D) (2 * (B) * ((D) + 1) + 2 * (B) * ((B) + 1))
#define NN__ATTN_LF_BWD(B, D) (4 * (B) * ((D) + 1) + 2 * (B) * ((B) + 1))
#define NN__ATTN_FITS(LF, B, D, L, WG) ((WG) >= (B) && (WG) % (B) == 0 && LF(B, D) <= (L))
#define NN__ATTN_TILE(LF, D, L, WG)                                                                \
    (NN__ATTN_FITS(LF, 64, D, L, WG)   ? 64                                                        \
     : NN__ATTN_FITS(LF, 32, D, L, WG) ? 32                                                        \
     : NN__ATTN_FITS(LF, 16, D, L, WG) ? 16                                                        \
     : NN__ATTN_FITS(LF, 8, D, L, WG)  ? 8                                                         \
                                       : 0)

/* The flash kernels (attn_flash_*, GPUs; NN_CL_ATTN): a work-group of NN__ATTN_FBR items, one
   query row (forward, dQ) or key row (dK/dV) each, held in registers with its accumulators
   at head dims up to FD (a build option, 64 or 32: NN_ATTN_FD), the other side's rows
   NN__ATTN_FBC at a time in local memory, [FBC, FD] floats each of K and V (forward, with
   the scores [FBC, FBR]; dQ) or Q and dO (dK/dV, with v's rows of the group [FD, FBR] and
   FBC log-sum-exps and deltas: the most of the three).
   FD is the largest of 64, 32 whose dK/dV tiles fit L floats; 0: no flash kernels. */
#define NN__ATTN_FLASH_DEFAULT 0 /* without $NN_CL_ATTN: 1 flash, 0 tiled */
#define NN__ATTN_FBR 64
#define NN__ATTN_FBC 32
#define NN__ATTN_LF_FLASH(FD) (2 * NN__ATTN_FBC * (FD) + (FD)*NN__ATTN_FBR + 2 * NN__ATTN_FBC)
#define NN__ATTN_FLASH_D(L, WG)                                                                    \
    ((WG) < NN__ATTN_FBR ? 0 : NN__ATTN_LF_FLASH(64) <= (L) ? 64 : NN__ATTN_LF_FLASH(32) <= (L) ? 32 : 0)

/* CPU drivers' block kernels (attn_block_*): one work-item a group, NN__ATTN_RB query
   (dQ: query, dK/dV: key) rows of a head each */
#define NN__ATTN_RB 16

#endif
