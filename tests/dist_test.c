/* The data-parallel tests (make dist-test: mpirun -np 2 and -np 3 of this program, built
   with mpicc -DNN_MPI). Every rank also trains the single-process reference itself (a graph
   with data_parallel = NN_ZERO and accumulate_steps N, micro-step m on micro-batch m), so
   each rank compares its data-parallel parameters with it bit for bit; rank 0 prints the
   counts of all ranks: "N passed, N failed". The cases: SGD with momentum and Adam with
   dropout on micro-batches written per step; a nn_dataset whose epoch (7 batches) is not a
   multiple of the ranks (an uneven last round that crosses epochs); a graph that differs
   across ranks (refused at compile on every rank); a rank that stops stepping (the others
   fail within the timeout, naming it); a training state saved under N ranks (rank 0
   writes) and resumed by one process with accumulate_steps N. */
#define NN_IMPLEMENTATION
#define NN_MPI
#include "nn.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int rank_, size_, passed, failed;
static int zero_;              /* data-parallel graphs built with zero_stage 1 (ZeRO-1) */
static float clip_;            /* and this clip_norm */
static double maxdiff_;        /* differing's largest |a - b| */
static int bn_;                /* a batch norm "bn" after fc1 */
static int skip_;              /* skip_nonfinite */
static int lscale_;            /* loss_scale.enabled */
static nn_context *ctx;

#define IN 7
#define HID 16
#define OUT 3
#define B 5

static void check(int ok, const char *name, const char *detail) {
    if (ok) passed++;
    else {
        failed++;
        fprintf(stderr, "rank %d: FAIL %s: %s\n", rank_, name, detail);
    }
}

/* deterministic data: micro-batch m's inputs and labels */
static void micro_batch(int m, float *x, int32_t *y) {
    int i;
    uint32_t s = 2654435761u * (uint32_t)(m + 1);
    for (i = 0; i < B * IN; i++) {
        s = s * 1664525u + 1013904223u;
        x[i] = (float)((s >> 8) & 0xffff) / 32768.0f - 1.0f;
    }
    for (i = 0; i < B; i++) {
        s = s * 1664525u + 1013904223u;
        y[i] = (int32_t)((s >> 16) % OUT);
    }
}

typedef struct model {
    nn_graph *g;
    nn_tensor x, y;
    nn_dataset *ds;
} model;

/* x -> linear -> relu -> dropout(p) -> linear -> cross entropy; hid: the hidden width. With
   data: the samples from a nn_dataset of n_data samples instead of per-step inputs. */
static nn_result build(model *md, int dp, int accum, nn_optimizer_kind opt, float p, int hid, int64_t n_data) {
    nn_graph_desc gd;
    nn_compile_desc cd;
    nn_tensor h, loss;
    nn_result r;
    memset(md, 0, sizeof *md);
    memset(&gd, 0, sizeof gd);
    gd.seed = 7;
    r = nn_graph_create(ctx, &gd, &md->g);
    if (r != NN_OK) return r;
    if (n_data > 0) {
        nn_array xa, ya;
        nn_dataset_desc dd;
        int64_t i;
        memset(&dd, 0, sizeof dd);
        xa.dtype = NN_F32;
        xa.shape = nn_shape2(n_data, IN);
        ya.dtype = NN_I32;
        ya.shape = nn_shape1(n_data);
        xa.data = malloc((size_t)n_data * IN * sizeof(float));
        ya.data = malloc((size_t)n_data * sizeof(int32_t));
        for (i = 0; i < n_data / B; i++) micro_batch((int)i, (float *)xa.data + i * B * IN, (int32_t *)ya.data + i * B);
        dd.x = &xa;
        dd.y = &ya;
        dd.batch = B;
        dd.shuffle = 1;
        r = nn_dataset_create(md->g, &dd, &md->ds);
        free(xa.data);
        free(ya.data);
        if (r != NN_OK) return r;
        md->x = nn_dataset_x(md->ds);
        md->y = nn_dataset_y(md->ds);
    } else {
        md->x = nn_input(md->g, "x", NN_F32, nn_shape2(B, IN));
        md->y = nn_input(md->g, "y", NN_I32, nn_shape1(B));
    }
    h = nn_linear_layer(md->g, md->x, hid, NULL, "fc1");
    if (bn_) h = nn_batch_norm1d_layer(md->g, h, NULL, "bn");
    h = nn_relu(md->g, h);
    if (p > 0.0f) h = nn_dropout(md->g, h, p);
    loss = nn_softmax_cross_entropy(md->g, nn_linear_layer(md->g, h, OUT, NULL, "fc2"), md->y);
    memset(&cd, 0, sizeof cd);
    cd.loss = loss;
    cd.optimizer.kind = opt;
    cd.optimizer.lr = opt == NN_OPT_SGD ? 0.1f : 0.01f;
    cd.optimizer.momentum = opt == NN_OPT_SGD ? 0.9f : 0.0f;
    cd.optimizer.accumulate_steps = accum;
    cd.optimizer.clip_norm = clip_;
    cd.optimizer.skip_nonfinite = skip_;
    cd.loss_scale.enabled = lscale_;
    cd.data_parallel = dp ? 0 : NN_ZERO;
    cd.zero_stage = dp ? zero_ : 0;
    return nn_graph_compile(md->g, &cd);
}

static nn_result step(model *md, int m) {
    float x[B * IN];
    int32_t y[B];
    nn_result r;
    if (md->ds) return (r = nn_dataset_next_batch(md->ds)) != NN_OK ? r : nn_graph_step(md->g);
    micro_batch(m, x, y);
    if ((r = nn_tensor_write(md->g, md->x, x, sizeof x)) != NN_OK) return r;
    if ((r = nn_tensor_write(md->g, md->y, y, sizeof y)) != NN_OK) return r;
    return nn_graph_step(md->g);
}

static const char *pnames[4] = {"fc1.weight", "fc1.bias", "fc2.weight", "fc2.bias"};

/* The number of floats of a and b's parameters that differ in their bits (-1: a read failed);
   into *n the floats compared. */
static long differing(nn_graph *a, nn_graph *b, long *n) {
    long d = 0;
    int k;
    *n = 0;
    maxdiff_ = 0.0;
    for (k = 0; k < 4; k++) {
        nn_tensor ta = nn_graph_find(a, pnames[k]), tb = nn_graph_find(b, pnames[k]);
        int64_t numel = 0, i;
        float *va, *vb;
        nn_tensor_numel(a, ta, &numel);
        va = (float *)malloc((size_t)numel * sizeof(float));
        vb = (float *)malloc((size_t)numel * sizeof(float));
        if (nn_tensor_read(a, ta, va, (size_t)numel * 4) != NN_OK || nn_tensor_read(b, tb, vb, (size_t)numel * 4) != NN_OK)
            d = -1;
        for (i = 0; i < numel && d >= 0; i++) {
            double e = va[i] > vb[i] ? (double)va[i] - vb[i] : (double)vb[i] - va[i];
            d += memcmp(&va[i], &vb[i], 4) != 0;
            if (e > maxdiff_) maxdiff_ = e;
        }
        *n += (long)numel;
        free(va);
        free(vb);
    }
    return d;
}

/* N ranks x steps against one process accumulating N x steps micro-steps. */
static void t_equal(const char *name, nn_optimizer_kind opt, float p, int64_t n_data, int steps) {
    model dp, ref;
    long n = 0, d = -2;
    int s, m;
    char msg[300];
    nn_result r;
    memset(&ref, 0, sizeof ref);
    r = build(&dp, 1, 1, opt, p, HID, n_data);
    if (r == NN_OK) r = build(&ref, 0, size_, opt, p, HID, n_data);
    for (s = 0; s < steps && r == NN_OK; s++) r = step(&dp, s * size_ + rank_);
    for (m = 0; m < steps * size_ && r == NN_OK; m++) r = step(&ref, m);
    if (r == NN_OK) d = differing(dp.g, ref.g, &n);
    if (r == NN_OK) {
        nn_dist_stats st;
        nn_graph_dist_stats(dp.g, &st);
        check(st.comm_seconds > 0.0 && st.wait_seconds >= 0.0, "dist_stats", "no reduction time counted");
    }
    snprintf(msg, sizeof msg, "%s; %ld of %ld floats differ after %d steps x %d ranks", r == NN_OK ? "ok" : nn_context_last_error(ctx),
             d, n, steps, size_);
    check(r == NN_OK && d == 0 && n > 0, name, msg);
    if (rank_ == 0) printf("%s: %d ranks x %d steps against 1 process x %d micro-steps (accumulate_steps %d): %ld of %ld floats differ (by %.3g at most)\n",
                           name, size_, steps, steps * size_, size_, d, n, maxdiff_);
    nn_graph_destroy(dp.g);
    nn_graph_destroy(ref.g);
}

/* ZeRO-1 against plain data parallelism, both on N ranks: the same bits, and the optimizer
   state each rank holds is its share (the shards' bytes sum to the whole state's) */
static void t_zero_vs_dp(const char *name, nn_optimizer_kind opt) {
    model dp, zr;
    long n = 0, d = -2;
    int s;
    long long mine[2], sum[2] = {0, 0};
    nn_dist_stats a, b;
    char msg[300];
    nn_result r;
    memset(&zr, 0, sizeof zr);
    zero_ = 0;
    r = build(&dp, 1, 1, opt, 0.3f, HID, 0);
    zero_ = 1;
    if (r == NN_OK) r = build(&zr, 1, 1, opt, 0.3f, HID, 0);
    zero_ = 0;
    for (s = 0; s < 6 && r == NN_OK; s++) r = step(&dp, s * size_ + rank_);
    for (s = 0; s < 6 && r == NN_OK; s++) r = step(&zr, s * size_ + rank_);
    if (r == NN_OK) d = differing(dp.g, zr.g, &n);
    memset(&a, 0, sizeof a);
    memset(&b, 0, sizeof b);
    nn_graph_dist_stats(dp.g, &a);
    nn_graph_dist_stats(zr.g, &b);
    mine[0] = (long long)a.optimizer_state_bytes;
    mine[1] = (long long)b.optimizer_state_bytes;
    {
        nn_memory_report ma, mb;
        if (nn_graph_memory(dp.g, &ma) != NN_OK || nn_graph_memory(zr.g, &mb) != NN_OK) memset(&ma, 0, sizeof ma), memset(&mb, 0, sizeof mb);
        snprintf(msg, sizeof msg, "nn_graph_memory's optimizer_state %lld and %lld, nn_graph_dist_stats' %lld and %lld",
                 (long long)ma.optimizer_state, (long long)mb.optimizer_state, mine[0], mine[1]);
        check(ma.optimizer_state == mine[0] && mb.optimizer_state == mine[1] && mine[1] > 0, "zero_memory_report", msg);
    }
    MPI_Allreduce(mine, sum, 2, MPI_LONG_LONG, MPI_SUM, MPI_COMM_WORLD);
    snprintf(msg, sizeof msg, "%s; %ld of %ld floats differ; state bytes %lld (all) and %lld (this rank's shard, %lld over the ranks)",
             r == NN_OK ? "ok" : nn_context_last_error(ctx), d, n, mine[0], mine[1], sum[1]);
    check(r == NN_OK && d == 0 && n > 0, name, msg);
    check(mine[0] > 0 && sum[1] == mine[0] && mine[1] <= mine[0] / size_ + 64, "zero_state_bytes", msg);
    if (rank_ == 0) printf("%s: ZeRO-1 against plain data parallelism, %d ranks x 6 steps: %ld of %ld floats differ; optimizer "
                           "state %lld bytes per rank without it, %lld on rank 0 with it (%lld over the %d ranks)\n",
                           name, size_, d, n, mine[0], mine[1], sum[1], size_);
    nn_graph_destroy(dp.g);
    nn_graph_destroy(zr.g);
}

/* Batch norm's running statistics are each rank's own (never reduced: rank r's are the
   running averages over its own batches r, r + N, ...), and nn_graph_save_state writes
   rank 0's: what this test pins down (README, "Data-parallel training"). */
static void t_bn_stats(void) {
    model dp, res;
    float mine[HID], *all = (float *)malloc(sizeof(float) * HID * (size_t)size_), back[HID];
    char path[64], msg[300];
    int s, c, differ = 0, same0 = 0;
    nn_result r;
    memset(&res, 0, sizeof res);
    bn_ = 1;
    r = build(&dp, 1, 1, NN_OPT_SGD, 0.0f, HID, 0);
    for (s = 0; s < 3 && r == NN_OK; s++) r = step(&dp, s * size_ + rank_);
    if (r == NN_OK) r = nn_tensor_read(dp.g, nn_graph_find(dp.g, "bn.running_mean"), mine, sizeof mine);
    if (r != NN_OK) memset(mine, 0, sizeof mine);
    MPI_Gather(mine, HID, MPI_FLOAT, all, HID, MPI_FLOAT, 0, MPI_COMM_WORLD);
    snprintf(path, sizeof path, "dist_test_bn_%d.safetensors", size_);
    if (r == NN_OK) r = nn_graph_save_state(dp.g, path);
    if (rank_ == 0 && r == NN_OK) {
        for (c = 1; c < size_; c++) differ += memcmp(all, all + (size_t)c * HID, sizeof mine) != 0;
        r = build(&res, 0, size_, NN_OPT_SGD, 0.0f, HID, 0);
        if (r == NN_OK) r = nn_graph_load_state(res.g, path);
        if (r == NN_OK) r = nn_tensor_read(res.g, nn_graph_find(res.g, "bn.running_mean"), back, sizeof back);
        same0 = r == NN_OK && memcmp(back, mine, sizeof back) == 0;
        snprintf(msg, sizeof msg, "%s; %d of %d other ranks' running means differ from rank 0's; the saved one is rank 0's: %s",
                 r == NN_OK ? "ok" : nn_context_last_error(ctx), differ, size_ - 1, same0 ? "yes" : "no");
        check(r == NN_OK && differ == size_ - 1 && same0, "bn_running_stats_per_rank", msg);
        printf("bn_running_stats_per_rank: %s\n", msg);
        remove(path);
    }
    if (rank_ != 0) check(r == NN_OK, "bn_running_stats_per_rank", nn_context_last_error(ctx));
    MPI_Barrier(MPI_COMM_WORLD);
    bn_ = 0;
    free(all);
    nn_graph_destroy(dp.g);
    nn_graph_destroy(res.g);
}

/* ZeRO-1 refuses what needs every gradient on one rank, naming it */
static void t_zero_refusals(void) {
    model md;
    nn_result r;
    zero_ = 1;
    skip_ = 1;
    r = build(&md, 1, 1, NN_OPT_ADAM, 0.0f, HID, 0);
    check(r == NN_ERR_INVALID_ARGUMENT && strstr(nn_context_last_error(ctx), "zero_stage 1 with skip_nonfinite") != NULL,
          "zero_skip_nonfinite_refused", nn_context_last_error(ctx));
    nn_graph_destroy(md.g);
    skip_ = 0;
    r = build(&md, 1, 1, NN_OPT_LAMB, 0.0f, HID, 0);
    check(r == NN_ERR_INVALID_ARGUMENT && strstr(nn_context_last_error(ctx), "is not sharded") != NULL, "zero_lamb_refused",
          nn_context_last_error(ctx));
    nn_graph_destroy(md.g);
    lscale_ = 1; /* refused at compile: before, the check stood after the ZeRO return and never ran */
    r = build(&md, 1, 1, NN_OPT_ADAM, 0.0f, HID, 0);
    check(r == NN_ERR_INVALID_ARGUMENT && strstr(nn_context_last_error(ctx), "zero_stage 1 with loss scaling") != NULL,
          "zero_loss_scaling_refused", nn_context_last_error(ctx));
    nn_graph_destroy(md.g);
    lscale_ = 0;
    zero_ = 0;
}

/* a state saved by one process after 2 cycles of N accumulated steps, resumed on N ranks */
static void t_resume_on_ranks(const char *name) {
    model dp, ref;
    long n = 0, d = -2;
    int s, m;
    char path[80], msg[300];
    nn_result r;
    memset(&ref, 0, sizeof ref);
    r = build(&dp, 1, 1, NN_OPT_ADAM, 0.25f, HID, 0);
    snprintf(path, sizeof path, "dist_test_state_%d_rank%d.safetensors", size_, rank_);
    if (r == NN_OK) r = build(&ref, 0, size_, NN_OPT_ADAM, 0.25f, HID, 0);
    for (m = 0; m < 2 * size_ && r == NN_OK; m++) r = step(&ref, m);
    if (r == NN_OK) r = nn_graph_save_state(ref.g, path); /* not data-parallel: every rank writes its own */
    if (r == NN_OK) r = nn_graph_load_state(dp.g, path);
    for (s = 2; s < 4 && r == NN_OK; s++) r = step(&dp, s * size_ + rank_);
    for (m = 2 * size_; m < 4 * size_ && r == NN_OK; m++) r = step(&ref, m);
    if (r == NN_OK) d = differing(dp.g, ref.g, &n);
    snprintf(msg, sizeof msg, "%s; %ld of %ld floats differ", r == NN_OK ? "ok" : nn_context_last_error(ctx), d, n);
    check(r == NN_OK && d == 0 && n > 0, name, msg);
    if (rank_ == 0) printf("%s: saved by 1 process after %d micro-steps, resumed on %d ranks for 2 steps: %ld of %ld floats differ\n",
                           name, 2 * size_, size_, d, n);
    remove(path);
    nn_graph_destroy(dp.g);
    nn_graph_destroy(ref.g);
}

/* rank 1 builds a wider hidden layer: every rank's compile fails naming the mismatch */
static void t_mismatch(void) {
    model md;
    nn_result r = build(&md, 1, 1, NN_OPT_SGD, 0.0f, rank_ == 1 ? HID + 1 : HID, 0);
    check(r == NN_ERR_SHAPE && strstr(nn_context_last_error(ctx), "differs from rank 0's") != NULL, "mismatch_refused",
          nn_context_last_error(ctx));
    nn_graph_destroy(md.g);
}

/* rank 1 stops stepping: the others' step fails within the timeout, naming rank 1 */
static void t_silent_rank(void) {
    model md;
    nn_result r = build(&md, 1, 1, NN_OPT_SGD, 0.0f, HID, 0);
    double t0 = MPI_Wtime(), secs;
    check(r == NN_OK, "silent_compile", nn_context_last_error(ctx));
    nn_dist_set_timeout(2.0);
    if (rank_ != 1 && r == NN_OK) {
        r = step(&md, rank_);
        secs = MPI_Wtime() - t0;
        check(r == NN_ERR_STATE && strstr(nn_context_last_error(ctx), "rank 1 did not answer") != NULL && secs < 30.0,
              "silent_rank_times_out", nn_context_last_error(ctx));
        if (rank_ == 0) printf("silent rank: rank 0's step failed after %.1f s: %s\n", secs, nn_context_last_error(ctx));
        r = step(&md, rank_);
        check(r == NN_ERR_STATE, "silent_rank_later_step_refused", nn_context_last_error(ctx));
    }
    nn_dist_set_timeout(300.0);
    MPI_Barrier(MPI_COMM_WORLD);
    nn_graph_destroy(md.g);
}

/* a state saved after 3 data-parallel steps, resumed by one process: the same bits as the
   reference run throughout */
static void t_resume(nn_optimizer_kind opt, const char *name) {
    model dp, ref, res;
    long n = 0, d = -2;
    int s, m;
    char path[64], msg[300];
    nn_result r;
    memset(&ref, 0, sizeof ref);
    memset(&res, 0, sizeof res);
    r = build(&dp, 1, 1, opt, 0.25f, HID, 0);
    snprintf(path, sizeof path, "dist_test_state_%d.safetensors", size_);
    if (r == NN_OK) r = build(&ref, 0, size_, opt, 0.25f, HID, 0);
    if (r == NN_OK) r = build(&res, 0, size_, opt, 0.25f, HID, 0);
    for (s = 0; s < 3 && r == NN_OK; s++) r = step(&dp, s * size_ + rank_);
    if (r == NN_OK) r = nn_graph_save_state(dp.g, path);
    if (r == NN_OK) r = nn_graph_load_state(res.g, path);
    for (m = 3 * size_; m < 5 * size_ && r == NN_OK; m++) r = step(&res, m);
    for (m = 0; m < 5 * size_ && r == NN_OK; m++) r = step(&ref, m);
    if (r == NN_OK) d = differing(res.g, ref.g, &n);
    snprintf(msg, sizeof msg, "%s; %ld of %ld floats differ", r == NN_OK ? "ok" : nn_context_last_error(ctx), d, n);
    check(r == NN_OK && d == 0 && n > 0, name, msg);
    if (rank_ == 0) printf("%s: saved after 3 steps x %d ranks, resumed by 1 process for %d micro-steps: %ld of %ld floats differ\n",
                           name, size_, 2 * size_, d, n);
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank_ == 0) remove(path);
    nn_graph_destroy(dp.g);
    nn_graph_destroy(ref.g);
    nn_graph_destroy(res.g);
}

/* `dist_test exit` (make dist-test runs it under mpirun --enable-recovery, which lets the
   others live on when a rank dies): after one step together, rank 1 exits without
   MPI_Finalize, as a crash would; every other rank's next step fails within the 2 s
   timeout with an error naming rank 1 (no hang), and its later steps are refused. Each
   survivor prints its own line (no collective: rank 1 is gone) and exits 1 on a failure. */
static int t_rank_exits(void) {
    model md;
    double t0, secs = -1.0;
    nn_result r;
    zero_ = 1; /* the sharded step: its parameters' all-gather waits on rank 1 too */
    r = build(&md, 1, 1, NN_OPT_ADAM, 0.0f, HID, 0);
    zero_ = 0;
    check(r == NN_OK, "exit_compile", nn_context_last_error(ctx));
    if (r == NN_OK) r = step(&md, rank_);
    check(r == NN_OK, "exit_first_step", nn_context_last_error(ctx));
    nn_dist_set_timeout(2.0);
    if (rank_ == 1) _Exit(0); /* gone: no MPI_Finalize, no reply */
    t0 = MPI_Wtime();
    if (r == NN_OK) {
        r = step(&md, size_ + rank_);
        secs = MPI_Wtime() - t0;
        check(r == NN_ERR_STATE && strstr(nn_context_last_error(ctx), "rank 1 did not answer") != NULL && secs < 30.0,
              "exited_rank_named", nn_context_last_error(ctx));
        printf("rank exits: rank %d's step failed after %.1f s: %s\n", rank_, secs, nn_context_last_error(ctx));
        r = step(&md, 2 * size_ + rank_);
        check(r == NN_ERR_STATE, "exited_rank_later_step_refused", nn_context_last_error(ctx));
        r = nn_graph_save_state(md.g, "dist_test_exit.safetensors");
        check(r == NN_ERR_STATE, "exited_rank_save_refused", nn_context_last_error(ctx));
    }
    nn_graph_destroy(md.g);
    printf("dist_test exit (rank %d of %d): %d passed, %d failed\n", rank_, size_, passed, failed);
    return failed ? 1 : 0;
}

int main(int argc, char **argv) {
    nn_context_desc cd;
    int counts[2], total[2];
    int provided = 0;
    /* `device`: the data-parallel cases alone on an OpenCL device ($NN_DEVICE, default the
       first): a device's schedule (fused kernels that complete a gradient later than its
       node) cut into buckets; skipped without a device */
    int device = argc > 1 && strcmp(argv[1], "device") == 0;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_SERIALIZED, &provided);
    if (nn_dist_init(NULL) != NN_OK || nn_dist_rank(&rank_) != NN_OK || nn_dist_size(&size_) != NN_OK) {
        fprintf(stderr, "nn_dist_init failed\n");
        return 1;
    }
    memset(&cd, 0, sizeof cd);
    cd.device = getenv("NN_DEVICE") ? getenv("NN_DEVICE") : device ? "opencl" : "cpu"; /* make dist-test: the CPU backend */
    cd.threads = 1;
    cd.log_level = NN_LOG_WARN;
    if (nn_context_create(&cd, &ctx) != NN_OK) {
        if (!device) return 1;
        if (rank_ == 0) printf("dist_test (%d ranks) device: skipped, no OpenCL device (%s)\n", size_, cd.device);
        MPI_Finalize();
        return 0;
    }
    if (size_ < 2) {
        fprintf(stderr, "dist_test: run it with mpirun -np 2 or more\n");
        return 1;
    }
    if (argc > 1 && strcmp(argv[1], "exit") == 0) {
        int rc = t_rank_exits();
        nn_context_destroy(ctx);
        MPI_Finalize();
        return rc;
    }
    t_equal("sgd_momentum_one_bucket", NN_OPT_SGD, 0.0f, 0, 6); /* 25 MB: one bucket, no thread */
    nn_dist_set_bucket_bytes(64); /* from here on: buckets of 16 floats or more, the thread */
    t_equal("sgd_momentum", NN_OPT_SGD, 0.0f, 0, 6);
    t_equal("sgd_dropout", NN_OPT_SGD, 0.3f, 0, 6);
    t_equal("adam_dropout", NN_OPT_ADAM, 0.3f, 0, 6);
    t_equal("adam_dataset_uneven", NN_OPT_ADAM, 0.2f, 7 * B, 9);
    t_resume(NN_OPT_ADAM, "resume_adam_on_1");
    t_resume_on_ranks("resume_1_on_ranks");
    if (device) /* ZeRO updates on the host: a device's kernels differ in last bits (README) */
        goto report;
    zero_ = 1; /* ZeRO-1: the same cases, against the same single-process reference */
    t_equal("zero_sgd_momentum", NN_OPT_SGD, 0.0f, 0, 6);
    t_equal("zero_adam_dropout", NN_OPT_ADAM, 0.3f, 0, 6);
    t_equal("zero_adamw_dropout", NN_OPT_ADAMW, 0.3f, 0, 6);
    t_equal("zero_adam_dataset_uneven", NN_OPT_ADAM, 0.2f, 7 * B, 9);
    clip_ = 0.05f; /* clip_norm: the global norm's sum passed between the ranks in the chain's order */
    t_equal("zero_adam_clip_norm", NN_OPT_ADAM, 0.3f, 0, 6);
    t_equal("zero_sgd_clip_norm", NN_OPT_SGD, 0.0f, 0, 6);
    clip_ = 0.0f;
    t_resume(NN_OPT_ADAM, "zero_resume_adam_on_1");
    t_resume(NN_OPT_SGD, "zero_resume_sgd_on_1");
    t_resume_on_ranks("zero_resume_1_on_ranks");
    nn_dist_set_bucket_bytes(25 << 20); /* one bucket: the slices cut the parameters elsewhere */
    t_equal("zero_adam_one_bucket", NN_OPT_ADAM, 0.3f, 0, 6);
    nn_dist_set_bucket_bytes(64);
    zero_ = 0;
    t_zero_vs_dp("zero_vs_dp_adamw", NN_OPT_ADAMW);
    t_zero_vs_dp("zero_vs_dp_sgd", NN_OPT_SGD);
    t_zero_refusals();
    t_bn_stats();
    t_mismatch();
    t_silent_rank();
report:
    counts[0] = passed;
    counts[1] = failed;
    MPI_Reduce(counts, total, 2, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD);
    if (rank_ == 0) printf("dist_test (%d ranks)%s: %d passed, %d failed\n", size_, device ? " device" : "", total[0], total[1]);
    MPI_Bcast(total, 2, MPI_INT, 0, MPI_COMM_WORLD);
    nn_context_destroy(ctx);
    MPI_Finalize();
    return total[1] ? 1 : 0;
}
