/* The attention family's CPU loops (src/ops/attention.c's bodies; kernels/attention.cl has
   the OpenCL twins): flash attention, blocked over query and key tiles of NN__ATTN_BR x
   NN__ATTN_BC and threaded over (batch, head, query block) for the forward and dQ, over
   (batch, key/value head, key block) for dK/dV. Each work unit is computed by one task in a
   fixed order whatever the thread count, so the bits do not depend on it; no [Tq, Tk]
   matrix: each task's working memory is a few tiles. */

#define NN__ATTN_BR 32 /* query rows of a tile */
#define NN__ATTN_BC 64 /* keys of a tile */

typedef struct nn__attn_job {
    nn__attn_attr a;
    int64_t qs[3], ks[3]; /* strides of q (and o, dout, dq) and of k, v over batch, head, row */
    const float *q, *k, *v, *mask, *kpm, *o, *lse, *dout, *delta;
    float *out, *out_lse, *dq, *dk, *dv;
    uint64_t seed, step;
    int64_t units, per; /* work units, and per task */
    float *ws;          /* per task: nn__attn_ws_floats(D) */
    int kind;           /* 0 forward, 1 dq, 2 dkv */
} nn__attn_job;

/* floats of one task's working memory: two transposed [D, BC] tiles, three [BR, BC] score
   tiles, an [BR, D] accumulator and row stats, [BC, D] dK and dV accumulators */
static int64_t nn__attn_ws_floats(int D) {
    return 2 * (int64_t)D * NN__ATTN_BC + 3 * NN__ATTN_BR * NN__ATTN_BC + (int64_t)NN__ATTN_BR * D + 2 * NN__ATTN_BR +
           2 * (int64_t)NN__ATTN_BC * D + 16;
}

/* 1 when (i, j) of head (b, h) is masked by causality, the window or the key padding mask;
   else 0 and *bias the mask's addend */
static int nn__attn_dead(const nn__attn_job *J, int b, int h, int i, int j, float *bias) {
    const nn__attn_attr *a = &J->a;
    *bias = 0.0f;
    if (a->causal && j > i) return 1;
    if (a->window > 0) {
        int d = i - j;
        if (d >= a->window || (!a->causal && -d >= a->window)) return 1;
    }
    if (a->kpm_mode) {
        const float *kp = J->kpm + (int64_t)b * a->Tk + j;
        if (a->kpm_mode == 1 ? *kp != 0.0f : *(const int32_t *)(const void *)kp != 0) return 1;
    }
    if (a->mask_mode) {
        const float *m = J->mask + (int64_t)b * a->ms[0] + (int64_t)h * a->ms[1] + (int64_t)i * a->ms[2] + (int64_t)j * a->ms[3];
        if (a->mask_mode == 2) return *(const int32_t *)(const void *)m == 0;
        *bias = *m;
        if (*bias == -INFINITY) return 1;
    }
    return 0;
}

/* dropout's factor for weight (b, h, i, j): 1 / (1 - p) kept, 0 dropped */
static float nn__attn_keep(const nn__attn_job *J, int b, int h, int i, int j) {
    const nn__attn_attr *a = &J->a;
    uint32_t idx = (uint32_t)((((int64_t)b * a->H + h) * a->Tq + i) * a->Tk + j);
    return nn__dropout_uniform(J->seed, a->key, J->step, idx) >= a->p ? 1.0f / (1.0f - a->p) : 0.0f;
}

/* S [nr, BC] = X_rows Y_rows^T: X rows at x + r * xs (nr of them), Y rows at y + c * ys (nc),
   D long; Yt a [D, BC] scratch for Y transposed. Each element sums over d in order. */
static void nn__attn_tile_dot(float *S, const float *x, int64_t xs, int nr, const float *y, int64_t ys, int nc, int D,
                              float *Yt) {
    int r, c, d;
    for (c = 0; c < nc; c++)
        for (d = 0; d < D; d++) Yt[(int64_t)d * NN__ATTN_BC + c] = y[c * ys + d];
    for (r = 0; r < nr; r++) {
        float *s = S + r * NN__ATTN_BC;
        const float *xr = x + r * xs;
        for (c = 0; c < nc; c++) s[c] = 0.0f;
        for (d = 0; d < D; d++) {
            const float *yt = Yt + (int64_t)d * NN__ATTN_BC;
            float xv = xr[d];
            for (c = 0; c < nc; c++) s[c] += xv * yt[c];
        }
    }
}

/* The scores of tile (rows i0.., keys j0..) of head (b, h): S = q k^T scale + mask, and
   dead[] 1 where masked (S there is -inf). Returns 1 when any element is alive. */
static int nn__attn_scores(const nn__attn_job *J, int b, int h, int hk, int i0, int nr, int j0, int nc, float *S,
                           unsigned char *dead, float *Kt) {
    const nn__attn_attr *a = &J->a;
    int r, c, any = 0;
    nn__attn_tile_dot(S, J->q + b * J->qs[0] + h * J->qs[1] + i0 * J->qs[2], J->qs[2], nr,
                      J->k + b * J->ks[0] + hk * J->ks[1] + j0 * J->ks[2], J->ks[2], nc, a->D, Kt);
    for (r = 0; r < nr; r++)
        for (c = 0; c < nc; c++) {
            float bias;
            int dd = nn__attn_dead(J, b, h, i0 + r, j0 + c, &bias);
            float *s = &S[r * NN__ATTN_BC + c];
            dead[r * NN__ATTN_BC + c] = (unsigned char)dd;
            *s = dd ? -INFINITY : *s * a->scale + bias;
            any |= !dd;
        }
    return any;
}

/* Whether the key block [j0, j1) is wholly masked for rows [i0, i1) by causality or the
   window (skipped without computing its scores). */
static int nn__attn_block_dead(const nn__attn_attr *a, int i0, int i1, int j0, int j1) {
    if (a->causal && j0 > i1 - 1) return 1;
    if (a->window > 0) {
        if (i0 - (j1 - 1) >= a->window) return 1;
        if (!a->causal && j0 - (i1 - 1) >= a->window) return 1;
    }
    return 0;
}

/* ---- forward: one (b, h, query block) ---- */
static void nn__attn_fwd_unit(const nn__attn_job *J, int64_t u, float *ws) {
    const nn__attn_attr *a = &J->a;
    int D = a->D, nqb = (a->Tq + NN__ATTN_BR - 1) / NN__ATTN_BR;
    int b = (int)(u / ((int64_t)a->H * nqb)), h = (int)(u / nqb % a->H), i0 = (int)(u % nqb) * NN__ATTN_BR;
    int hk = h / (a->H / a->Hkv), nr = a->Tq - i0 < NN__ATTN_BR ? a->Tq - i0 : NN__ATTN_BR, j0, r, c, d;
    float *Kt = ws, *S = Kt + (int64_t)D * NN__ATTN_BC, *acc = S + 3 * NN__ATTN_BR * NN__ATTN_BC;
    float *m = acc + (int64_t)NN__ATTN_BR * D, *l = m + NN__ATTN_BR;
    unsigned char *dead = (unsigned char *)(void *)(S + NN__ATTN_BR * NN__ATTN_BC);
    for (r = 0; r < nr; r++) {
        m[r] = -INFINITY;
        l[r] = 0.0f;
        for (d = 0; d < D; d++) acc[(int64_t)r * D + d] = 0.0f;
    }
    for (j0 = 0; j0 < a->Tk; j0 += NN__ATTN_BC) {
        int nc = a->Tk - j0 < NN__ATTN_BC ? a->Tk - j0 : NN__ATTN_BC;
        if (nn__attn_block_dead(a, i0, i0 + nr, j0, j0 + nc)) continue;
        if (!nn__attn_scores(J, b, h, hk, i0, nr, j0, nc, S, dead, Kt)) continue;
        for (r = 0; r < nr; r++) {
            float *s = S + r * NN__ATTN_BC, *ar = acc + (int64_t)r * D, mx = m[r], alpha, sum = 0.0f;
            for (c = 0; c < nc; c++)
                if (s[c] > mx) mx = s[c];
            if (mx == -INFINITY) continue; /* nothing alive in the row yet */
            alpha = m[r] == -INFINITY ? 0.0f : expf(m[r] - mx);
            for (c = 0; c < nc; c++) {
                s[c] = dead[r * NN__ATTN_BC + c] ? 0.0f : expf(s[c] - mx);
                sum += s[c];
            }
            l[r] = l[r] * alpha + sum;
            m[r] = mx;
            for (d = 0; d < D; d++) ar[d] *= alpha;
            for (c = 0; c < nc; c++) {
                const float *vr = J->v + b * J->ks[0] + hk * J->ks[1] + (j0 + c) * J->ks[2];
                float pc = s[c];
                if (a->p > 0.0f) pc *= nn__attn_keep(J, b, h, i0 + r, j0 + c);
                if (pc == 0.0f) continue;
                for (d = 0; d < D; d++) ar[d] += pc * vr[d];
            }
        }
    }
    for (r = 0; r < nr; r++) {
        float *o = J->out + b * J->qs[0] + h * J->qs[1] + (i0 + r) * J->qs[2], inv = l[r] > 0.0f ? 1.0f / l[r] : 0.0f;
        for (d = 0; d < D; d++) o[d] = acc[(int64_t)r * D + d] * inv;
        J->out_lse[((int64_t)b * a->H + h) * a->Tq + i0 + r] = l[r] > 0.0f ? m[r] + logf(l[r]) : -INFINITY;
    }
}

/* P and dS of a tile (rows i0.., keys j0..) from the scores in S: P = exp(S - lse) into S,
   dS = P (dP z - delta) into dP, where dP = dO v^T was computed into dP; Pd (P z, the
   dropped weights) into Pd when not NULL. */
static void nn__attn_ds(const nn__attn_job *J, int b, int h, int i0, int nr, int j0, int nc, float *S, const unsigned char *dead,
                        float *dP, float *Pd) {
    const nn__attn_attr *a = &J->a;
    int r, c;
    for (r = 0; r < nr; r++) {
        int64_t row = ((int64_t)b * a->H + h) * a->Tq + i0 + r;
        float lse = J->lse[row], dl = J->delta[row];
        for (c = 0; c < nc; c++) {
            int64_t e = r * NN__ATTN_BC + c;
            float p = dead[e] ? 0.0f : expf(S[e] - lse), z = 1.0f;
            if (a->p > 0.0f && p != 0.0f) z = nn__attn_keep(J, b, h, i0 + r, j0 + c);
            S[e] = p;
            if (Pd) Pd[e] = p * z;
            dP[e] = p * (dP[e] * z - dl);
        }
    }
}

/* ---- dQ: one (b, h, query block): dq = scale sum_j dS_ij k_j ---- */
static void nn__attn_dq_unit(const nn__attn_job *J, int64_t u, float *ws) {
    const nn__attn_attr *a = &J->a;
    int D = a->D, nqb = (a->Tq + NN__ATTN_BR - 1) / NN__ATTN_BR;
    int b = (int)(u / ((int64_t)a->H * nqb)), h = (int)(u / nqb % a->H), i0 = (int)(u % nqb) * NN__ATTN_BR;
    int hk = h / (a->H / a->Hkv), nr = a->Tq - i0 < NN__ATTN_BR ? a->Tq - i0 : NN__ATTN_BR, j0, r, c, d;
    float *Kt = ws, *S = Kt + (int64_t)D * NN__ATTN_BC, *dP = S + 2 * NN__ATTN_BR * NN__ATTN_BC;
    float *acc = S + 3 * NN__ATTN_BR * NN__ATTN_BC;
    unsigned char *dead = (unsigned char *)(void *)(S + NN__ATTN_BR * NN__ATTN_BC);
    for (r = 0; r < nr * D; r++) acc[r] = 0.0f;
    for (j0 = 0; j0 < a->Tk; j0 += NN__ATTN_BC) {
        int nc = a->Tk - j0 < NN__ATTN_BC ? a->Tk - j0 : NN__ATTN_BC;
        if (nn__attn_block_dead(a, i0, i0 + nr, j0, j0 + nc)) continue;
        if (!nn__attn_scores(J, b, h, hk, i0, nr, j0, nc, S, dead, Kt)) continue;
        nn__attn_tile_dot(dP, J->dout + b * J->qs[0] + h * J->qs[1] + i0 * J->qs[2], J->qs[2], nr,
                          J->v + b * J->ks[0] + hk * J->ks[1] + j0 * J->ks[2], J->ks[2], nc, D, Kt);
        nn__attn_ds(J, b, h, i0, nr, j0, nc, S, dead, dP, NULL);
        for (r = 0; r < nr; r++) {
            float *ar = acc + (int64_t)r * D;
            for (c = 0; c < nc; c++) {
                const float *kr = J->k + b * J->ks[0] + hk * J->ks[1] + (j0 + c) * J->ks[2];
                float ds = dP[r * NN__ATTN_BC + c];
                if (ds == 0.0f) continue;
                for (d = 0; d < D; d++) ar[d] += ds * kr[d];
            }
        }
    }
    for (r = 0; r < nr; r++) {
        float *o = J->dq + b * J->qs[0] + h * J->qs[1] + (i0 + r) * J->qs[2];
        for (d = 0; d < D; d++) o[d] = acc[(int64_t)r * D + d] * a->scale;
    }
}

/* ---- dK, dV: one (b, key/value head, key block), over the group's query heads and every
   query block: dv_j = sum_i P_ij z_ij dO_i, dk_j = scale sum_i dS_ij q_i ---- */
static void nn__attn_dkv_unit(const nn__attn_job *J, int64_t u, float *ws) {
    const nn__attn_attr *a = &J->a;
    int D = a->D, nkb = (a->Tk + NN__ATTN_BC - 1) / NN__ATTN_BC, grp = a->H / a->Hkv;
    int b = (int)(u / ((int64_t)a->Hkv * nkb)), hk = (int)(u / nkb % a->Hkv), j0 = (int)(u % nkb) * NN__ATTN_BC;
    int nc = a->Tk - j0 < NN__ATTN_BC ? a->Tk - j0 : NN__ATTN_BC, h, i0, r, c, d;
    float *Kt = ws, *S = Kt + (int64_t)D * NN__ATTN_BC, *Pd = S + NN__ATTN_BR * NN__ATTN_BC, *dP = Pd + NN__ATTN_BR * NN__ATTN_BC;
    float *dk = dP + NN__ATTN_BR * NN__ATTN_BC + (int64_t)NN__ATTN_BR * D + 2 * NN__ATTN_BR, *dv = dk + (int64_t)NN__ATTN_BC * D;
    unsigned char *dead = (unsigned char *)(void *)(dv + (int64_t)NN__ATTN_BC * D);
    for (c = 0; c < nc * D; c++) dk[c] = dv[c] = 0.0f;
    for (h = hk * grp; h < (hk + 1) * grp; h++)
        for (i0 = 0; i0 < a->Tq; i0 += NN__ATTN_BR) {
            int nr = a->Tq - i0 < NN__ATTN_BR ? a->Tq - i0 : NN__ATTN_BR;
            if (nn__attn_block_dead(a, i0, i0 + nr, j0, j0 + nc)) continue;
            if (!nn__attn_scores(J, b, h, hk, i0, nr, j0, nc, S, dead, Kt)) continue;
            nn__attn_tile_dot(dP, J->dout + b * J->qs[0] + h * J->qs[1] + i0 * J->qs[2], J->qs[2], nr,
                              J->v + b * J->ks[0] + hk * J->ks[1] + j0 * J->ks[2], J->ks[2], nc, D, Kt);
            nn__attn_ds(J, b, h, i0, nr, j0, nc, S, dead, dP, Pd);
            for (r = 0; r < nr; r++) {
                const float *qr = J->q + b * J->qs[0] + h * J->qs[1] + (i0 + r) * J->qs[2];
                const float *gr = J->dout + b * J->qs[0] + h * J->qs[1] + (i0 + r) * J->qs[2];
                for (c = 0; c < nc; c++) {
                    float pd = Pd[r * NN__ATTN_BC + c], ds = dP[r * NN__ATTN_BC + c];
                    float *dkr = dk + (int64_t)c * D, *dvr = dv + (int64_t)c * D;
                    if (pd != 0.0f)
                        for (d = 0; d < D; d++) dvr[d] += pd * gr[d];
                    if (ds != 0.0f)
                        for (d = 0; d < D; d++) dkr[d] += ds * qr[d];
                }
            }
        }
    for (c = 0; c < nc; c++) {
        float *ko = J->dk + b * J->ks[0] + hk * J->ks[1] + (j0 + c) * J->ks[2];
        float *vo = J->dv + b * J->ks[0] + hk * J->ks[1] + (j0 + c) * J->ks[2];
        for (d = 0; d < D; d++) {
            ko[d] = dk[(int64_t)c * D + d] * a->scale;
            vo[d] = dv[(int64_t)c * D + d];
        }
    }
}

static void nn__attn_task(void *arg, int t, int n_tasks) {
    const nn__attn_job *J = (const nn__attn_job *)arg;
    int64_t u, u0 = J->per * t, u1 = u0 + J->per < J->units ? u0 + J->per : J->units;
    float *ws = J->ws + (int64_t)t * (nn__attn_ws_floats(J->a.D) + NN__ATTN_BR * NN__ATTN_BC);
    (void)n_tasks;
    for (u = u0; u < u1; u++) {
        if (J->kind == 0) nn__attn_fwd_unit(J, u, ws);
        else if (J->kind == 1) nn__attn_dq_unit(J, u, ws);
        else nn__attn_dkv_unit(J, u, ws);
    }
}

/* Runs job J (its kind, pointers and attributes set) over the pool: J->units work units
   in contiguous runs, one per task, each task its own working memory. */
static nn_result nn__attn_run(nn__threadpool *pool, nn__attn_job *J) {
    const nn__attn_attr *a = &J->a;
    int tasks = nn__threadpool_size(pool), nqb = (a->Tq + NN__ATTN_BR - 1) / NN__ATTN_BR;
    int nkb = (a->Tk + NN__ATTN_BC - 1) / NN__ATTN_BC;
    size_t bytes;
    void *own = NULL;
    J->units = J->kind == 2 ? (int64_t)a->B * a->Hkv * nkb : (int64_t)a->B * a->H * nqb;
    if (J->units < tasks) tasks = (int)J->units;
    if (tasks < 1) tasks = 1;
    J->per = (J->units + tasks - 1) / tasks;
    tasks = (int)((J->units + J->per - 1) / J->per);
    bytes = (size_t)tasks * (size_t)(nn__attn_ws_floats(a->D) + NN__ATTN_BR * NN__ATTN_BC) * sizeof(float);
    J->ws = (float *)nn__threadpool_workspace(pool, bytes);
    if (!J->ws) {
        own = NN_MALLOC(bytes);
        if (!own) return NN_ERR_OUT_OF_MEMORY;
        J->ws = (float *)own;
    }
    if (tasks <= 1) nn__attn_task(J, 0, 1);
    else nn__threadpool_run(pool, nn__attn_task, J, tasks);
    NN_FREE(own);
    return NN_OK;
}
