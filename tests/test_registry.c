/* The registry's coverage, after every suite has run on a backend:
   - each op kind of the registry must have been compiled into at least one graph on that
     backend, so an op added without tests (or a backend that never runs one) fails here
     by name;
   - each (op kind, function) pair of the library's function tables (every unary and
     binary function, loss kind and optimizer kind: tests/coverage.c) must have been
     compared against a reference by the op checker on that backend, so a function added
     to a table without a case (an activation, a loss, an optimizer) fails here, named. */
#include "test.h"
#include <stdlib.h>
#include <string.h>

static void registry_ops(const t_env *e) {
    int op, n_ops = nn_op_count(), missing = 0;
    char list[4096];
    list[0] = 0;
    if (!t_begin(e, "registry: every op ran on this backend")) return;
    if (getenv("NN_TEST_FILTER") && getenv("NN_TEST_FILTER")[0]) {
        t_skip("NN_TEST_FILTER runs a subset");
        t_end();
        return;
    }
    T_CHECK(n_ops > 0, "the registry is empty");
    for (op = 0; op < n_ops; op++) {
        const char *name = nn_op_name(op);
        if (!name) {
            T_CHECK(0, "op %d has no name", op);
            continue;
        }
        if (strcmp(name, "input") == 0 || strcmp(name, "param") == 0) continue; /* leaves: no body */
        if (t_op_compiled(e->ctx, op) == 0) {
            missing++;
            if (strlen(list) + strlen(name) + 3 < sizeof list) {
                strcat(list, " ");
                strcat(list, name);
            }
        }
    }
    T_CHECK(missing == 0, "%d op(s) never ran on %s:%s", missing, e->backend, list);
    { /* the listing: every op kind with the number of graphs that compiled it here */
        int col = 0, shown = 0;
        for (op = 0; op < n_ops; op++) {
            char item[96];
            const char *name = nn_op_name(op);
            if (!name || strcmp(name, "input") == 0 || strcmp(name, "param") == 0) continue;
            snprintf(item, sizeof item, "%s:%lld", name, (long long)t_op_compiled(e->ctx, op));
            if (col == 0) col = printf("       ");
            col += printf(" %s", item);
            shown++;
            if (col > 90) {
                printf("\n");
                col = 0;
            }
        }
        printf("%s        %d op kinds, graphs compiled with each on this backend\n", col ? "\n" : "", shown);
    }
    T_CHECK(nn_op_name(-1) == NULL && nn_op_name(n_ops) == NULL, "nn_op_name accepts an out-of-range op");
    t_end();
}

static void registry_functions(const t_env *e) {
    int total = 0, covered, i, count, col = 0, missing = 0;
    const char *kind, *fn;
    if (!t_begin(e, "registry: every (op kind, function) pair compared on this backend")) return;
    if (getenv("NN_TEST_FILTER") && getenv("NN_TEST_FILTER")[0]) {
        t_skip("NN_TEST_FILTER runs a subset");
        t_end();
        return;
    }
    covered = t_cover_count(&total);
    T_CHECK(total > 0, "the function tables are empty");
    for (i = 0; t_cover_pair(i, &kind, &fn, &count); i++)
        if (count == 0 && missing++ < 40) /* t_fail prints five; the rest are listed below */
            T_CHECK(0, "(%s, %s) was never compared against a reference on %s", kind, fn, e->backend);
    T_CHECK(missing == 0, "%d of %d (op kind, function) pairs never compared on %s", missing, total, e->backend);
    for (i = 0; t_cover_pair(i, &kind, &fn, &count); i++) {
        char item[96];
        snprintf(item, sizeof item, "%s/%s:%d", kind, fn, count);
        if (col == 0) col = printf("       ");
        col += printf(" %s", item);
        if (col > 90) {
            printf("\n");
            col = 0;
        }
    }
    printf("%s        %d of %d (op kind, function) pairs compared on this backend (graphs each)\n", col ? "\n" : "", covered, total);
    t_end();
}

void suite_registry(const t_env *e) {
    T_RUN(e, registry_ops, registry_functions);
}
