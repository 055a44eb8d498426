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

/* CPU drivers' block kernels (attn_block_*): one work-item a group, NN__ATTN_RB query
   (dQ: query, dK/dV: key) rows of a head each */
#define NN__ATTN_RB 16

#endif
