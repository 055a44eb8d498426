/* The optimizer kinds, listed once: a part of nn.h (C99 and C++) and included by
   kernels/optim.cl (OpenCL C 1.2).

   NN__OPTIMIZERS(X): one X(ENUM, name) per nn_optimizer_kind, in its order:
     ENUM  NN_OPT_ENUM, the public value (src/api/api.h; kernels/optim.cl gets the same
           names from this list, for opt_step's switch on `kind`)
     name  the optimizer's name in checkpoint files ("nn.optimizer" in the metadata of
           nn_graph_save_state, checked by nn_graph_load_state) and in messages
   NN__OPT_COUNT is the range checks' bound. The public enum stays written out in api.h (its
   values are the API); in C a compile-time check holds each of it equal to its line here,
   so the list and the enum cannot drift apart. */
#ifndef NN__OPTIM_H
#define NN__OPTIM_H

#define NN__OPTIMIZERS(X)   \
    X(NONE, "none")         \
    X(SGD, "sgd")           \
    X(ADAM, "adam")         \
    X(ADAMW, "adamw")       \
    X(ADAMAX, "adamax")     \
    X(NADAM, "nadam")       \
    X(RADAM, "radam")       \
    X(RMSPROP, "rmsprop")   \
    X(ADAGRAD, "adagrad")   \
    X(ADADELTA, "adadelta") \
    X(LION, "lion")         \
    X(LAMB, "lamb")         \
    X(LARS, "lars")         \
    X(FTRL, "ftrl")

#ifdef __OPENCL_VERSION__
#define NN__OPT_ENUM(E, name) NN_OPT_##E,
enum nn_optimizer_kind { NN__OPTIMIZERS(NN__OPT_ENUM) NN__OPT_COUNT };
#else
#define NN__OPT_INDEX(E, name) NN__OPTI_##E,
enum nn__optimizer_index { NN__OPTIMIZERS(NN__OPT_INDEX) NN__OPT_COUNT };
/* a negative array size, a compile error, where nn_optimizer_kind and the list differ */
#define NN__OPT_SAME(E, name) typedef char nn__opt_same_##E[(int)NN_OPT_##E == (int)NN__OPTI_##E ? 1 : -1];
NN__OPTIMIZERS(NN__OPT_SAME)
#endif

#endif /* NN__OPTIM_H */
