/* The fit's parallel regions, timed task by task: an opt-in build only.
 *
 * Every macro below expands to nothing unless the build defines GBC_CORE_TRACE
 * (setup.py adds -DGBC_CORE_TRACE when the environment has GBC_CORE_TRACE=1), so a
 * normal build compiles the same code as without them. In a traced build:
 *
 *   GBC_TRACE_REGION_BEGIN(region, items) / GBC_TRACE_REGION_END(region, items)
 *       around a parallel region (or a `with parallel()` block of several loops), in
 *       the serial code of the thread that starts it; `items` is what the region
 *       works through (rows, or rows x features), for the memory-bandwidth bound.
 *   GBC_TRACE_TASK_BEGIN(phase, task) / GBC_TRACE_TASK_END(phase, task)
 *       the first and last statement of a `prange` body whose iterations are fixed
 *       tasks (blocks, features, nodes, chunks); `phase` names the loop.
 *
 * Each OS thread records into a buffer of its own (allocated when the thread
 * first records), with CLOCK_MONOTONIC times and the thread's CPU times in
 * nanoseconds: no lock and no shared write in the hot path. The buffers live in
 * gbc_core._openmp, which hands them to the other modules as a capsule and reads them out
 * (gbc_core._openmp.trace_start / trace_stop). A full buffer drops further events
 * and counts them. Region and phase numbers: the table REGIONS / PHASES of
 * benchmarks/scaling_model.py (and the names below). The traced build is a Linux
 * measuring build (gettid, CLOCK_THREAD_CPUTIME_ID, __thread); a normal build on
 * any platform includes none of it.
 */
#ifndef GBC_CORE_TRACE_H
#define GBC_CORE_TRACE_H

/* Regions (serial markers around a parallel region). */
#define GBC_TR_TREE 1            /* TreeGrower.grow: one tree */
#define GBC_TR_GRID_MAX 2        /* grid pass: block maxima */
#define GBC_TR_GRID_ROWS 3       /* grid pass: rows onto the grid */
#define GBC_TR_LEFT_WR2 4        /* grower: left w r^2 per node */
#define GBC_TR_HIST_BUILD 5      /* histogram finder: node x feature-group tasks */
#define GBC_TR_HIST_SCAN 6       /* histogram finder: (node, feature) tasks, each
                                    deriving its histogram (parent - sibling) where
                                    the node is derived, then scanning it */
#define GBC_TR_HIST_OTHER 7      /* histogram finder: weight scan */
#define GBC_TR_EXACT_SCAN 8      /* exact finder: feature, block or pair tasks */
#define GBC_TR_EXACT_ROWS 9      /* exact finder: per-row buffers, words */
#define GBC_TR_PARTITION 10      /* partition of a level */
#define GBC_TR_LEAVES 11         /* leaf sums and updates */
#define GBC_TR_OUT_OF_BAG 12     /* out-of-bag rows */
#define GBC_TR_BINNING 13        /* binning of the features */
#define GBC_TR_SORTING 14        /* exact: sorting of the features */
/* Phases (loops) of a region that has several, or whose loop is not the region's. */
#define GBC_TR_HIST_GATHER 15     /* histogram finder: row statistics gathered */
#define GBC_TR_PART_LABEL 17      /* partition: leaves' rows labelled */
#define GBC_TR_PART_BLOCK 18      /* partition: blocks split */
#define GBC_TR_PART_CHILD 19      /* partition: one split's children's rows and sums */
#define GBC_TR_PART_TELL 20       /* partition: the finder told */
#define GBC_TR_PART_PLACE 21      /* partition: a block's left or right rows placed */
#define GBC_TR_PART_SUMS 22       /* partition: children's chunk sums */
#define GBC_TR_LEAF_SUMS 23       /* leaves: one leaf's Newton sums */
#define GBC_TR_LEAF_UPDATE 24     /* leaves: binomial update, chunk of rows */
#define GBC_TR_LEAF_SOFTMAX 25    /* leaves: multinomial residuals, chunk of rows */
#define GBC_TR_BIN_DISTINCT 26    /* binning: one feature's distinct values */
#define GBC_TR_BIN_MAP 27         /* binning: a block of rows onto the bins */
#define GBC_TR_EXACT_BLOCK_SUMS 28 /* exact finder: block sums of a root's features */
#define GBC_TR_HIST_BLOCK 29      /* histogram finder: a level's build tasks where it
                                     takes row blocks: (node, row block, group of
                                     four features), and (node, feature group) of
                                     its nodes without blocks */
#define GBC_TR_HIST_MERGE 30      /* histogram finder: (node, feature) blocks added */
#define GBC_TR_EXACT_CHILD_COUNTS 31 /* exact finder: the root's children's rows and
                                        sums per block of a blocked feature */
#define GBC_TR_ROOT_WR2 32        /* grower: the root's sum of w r^2 in row order, one
                                     task in the first histogram build's loop or in
                                     the exact root's scan loop */
/* Outside the trees' growth (numbers apart from the growth's). */
#define GBC_TR_PREDICT 40         /* rows scored through trees (a fit's validation rows) */
#define GBC_TR_BIN_SAMPLE 41      /* binning: one feature's sorted sample */
#define GBC_TR_CAST 42            /* the training X cast to float32 in the fit's layout:
                                     a block of rows */
#define GBC_TR_BIN_RANGES 43      /* binning: the value ranges of every bin, one
                                     feature (Fortran X) or block of rows (C order) */
#define GBC_TR_BIN_COUNTS 44      /* histogram finder: one feature's counts of every
                                     row's bins, once per fit (in its first tree of
                                     unit weights without a subsample) */

#ifndef GBC_CORE_TRACE

#define GBC_TRACE_COMPILED 0
#define GBC_TRACE_REGION_BEGIN(region, items) ((void)0)
#define GBC_TRACE_REGION_END(region, items) ((void)0)
#define GBC_TRACE_TASK_BEGIN(phase, task) ((void)0)
#define GBC_TRACE_TASK_END(phase, task) ((void)0)

#else /* GBC_CORE_TRACE */

#include <Python.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/syscall.h>

#define GBC_TRACE_COMPILED 1
#define GBC_TRACE_MAX_SLOTS 512
#define GBC_TRACE_STACK 8
#define GBC_TRACE_CAPSULE "gbc_core._openmp._trace_capsule"

typedef struct {
    int64_t t0, t1;      /* ns, CLOCK_MONOTONIC */
    int64_t c0, c1;      /* ns, CLOCK_THREAD_CPUTIME_ID (the thread's CPU time) */
    int64_t index;       /* task index (tasks) or items (regions) */
    int32_t kind;        /* 0 task, 1 region */
    int32_t id;          /* phase (tasks) or region */
    int32_t slot;        /* the recording buffer */
    int32_t tid;         /* OS thread id */
} gbc_trace_event;

typedef struct {
    gbc_trace_event *events;
    int64_t n, dropped;
    int32_t tid;
    char pad[64];
} gbc_trace_slot;

typedef struct {
    volatile int enabled;
    volatile int64_t generation;
    int64_t capacity;                  /* events per slot */
    volatile int32_t n_slots;          /* taken (atomic increment) */
    gbc_trace_slot slots[GBC_TRACE_MAX_SLOTS];
} gbc_trace_state;

static inline int64_t gbc_trace_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* The thread's CPU time: a task's own work on a machine shared with others. */
static inline int64_t gbc_trace_cpu(void) {
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

#ifdef GBC_TRACE_OWNER
static gbc_trace_state gbc_trace_the_state;
static gbc_trace_state *gbc_trace_state_get(void) { return &gbc_trace_the_state; }
#else
static gbc_trace_state *gbc_trace_ptr = NULL;
static gbc_trace_state *gbc_trace_state_get(void) {
    if (gbc_trace_ptr == NULL) {
        /* Once per module: the owner's buffers, through its capsule. */
        PyGILState_STATE g = PyGILState_Ensure();
        gbc_trace_ptr = (gbc_trace_state *)PyCapsule_Import(GBC_TRACE_CAPSULE, 0);
        if (gbc_trace_ptr == NULL) PyErr_Clear();
        PyGILState_Release(g);
    }
    return gbc_trace_ptr;
}
#endif

/* This thread's buffer in this module, taken again after each trace_start. */
typedef struct {
    gbc_trace_slot *slot;
    int64_t generation;
    int32_t index;
    int depth;
    int64_t stack[GBC_TRACE_STACK], cstack[GBC_TRACE_STACK];
    int64_t task_t0, task_c0;
} gbc_trace_tls_t;
static __thread gbc_trace_tls_t gbc_trace_tls = {NULL, -1, 0, 0, {0}, {0}, 0, 0};

static inline gbc_trace_tls_t *gbc_trace_mine(void) {
    gbc_trace_state *st = gbc_trace_state_get();
    gbc_trace_tls_t *me = &gbc_trace_tls;
    if (st == NULL || !st->enabled) return NULL;
    if (me->generation != st->generation) {
        /* Once per thread and module: this thread's buffer if another module took
           one for it, else a new one (only this thread writes either). */
        int32_t tid = (int32_t)syscall(SYS_gettid), i, n = st->n_slots;
        me->generation = st->generation;
        me->depth = 0;
        me->slot = NULL;
        for (i = 0; i < n && i < GBC_TRACE_MAX_SLOTS; i++)
            if (st->slots[i].tid == tid && st->slots[i].events != NULL) break;
        if (i >= n || i >= GBC_TRACE_MAX_SLOTS) {
            i = __atomic_fetch_add(&st->n_slots, 1, __ATOMIC_SEQ_CST);
            if (i >= GBC_TRACE_MAX_SLOTS) return NULL;
            st->slots[i].events = (gbc_trace_event *)malloc(
                (size_t)st->capacity * sizeof(gbc_trace_event));
            if (st->slots[i].events == NULL) return NULL;
            st->slots[i].n = 0;
            st->slots[i].dropped = 0;
            __atomic_store_n(&st->slots[i].tid, tid, __ATOMIC_SEQ_CST);
        }
        me->slot = &st->slots[i];
        me->index = i;
    }
    return me->slot == NULL ? NULL : me;
}

static inline void gbc_trace_put(gbc_trace_tls_t *me, int32_t kind, int32_t id,
                                 int64_t index, int64_t t0, int64_t t1,
                                 int64_t c0, int64_t c1) {
    gbc_trace_slot *s = me->slot;
    gbc_trace_state *st = gbc_trace_state_get();
    if (s->n >= st->capacity) { s->dropped++; return; }
    gbc_trace_event *e = &s->events[s->n++];
    e->t0 = t0; e->t1 = t1; e->c0 = c0; e->c1 = c1; e->index = index; e->kind = kind; e->id = id;
    e->slot = me->index; e->tid = s->tid;
}

static inline void gbc_trace_task_begin(void) {
    gbc_trace_tls_t *me = gbc_trace_mine();
    if (me != NULL) { me->task_c0 = gbc_trace_cpu(); me->task_t0 = gbc_trace_now(); }
}

static inline void gbc_trace_task_end(int32_t phase, int64_t task) {
    gbc_trace_tls_t *me = gbc_trace_mine();
    if (me != NULL) {
        int64_t t1 = gbc_trace_now();
        gbc_trace_put(me, 0, phase, task, me->task_t0, t1, me->task_c0, gbc_trace_cpu());
    }
}

static inline void gbc_trace_region_begin(void) {
    gbc_trace_tls_t *me = gbc_trace_mine();
    if (me != NULL && me->depth < GBC_TRACE_STACK) {
        me->cstack[me->depth] = gbc_trace_cpu();
        me->stack[me->depth] = gbc_trace_now();
    }
    if (me != NULL) me->depth++;
}

static inline void gbc_trace_region_end(int32_t region, int64_t items) {
    gbc_trace_tls_t *me = gbc_trace_mine();
    if (me == NULL || me->depth == 0) return;
    me->depth--;
    if (me->depth < GBC_TRACE_STACK) {
        int64_t t1 = gbc_trace_now();
        gbc_trace_put(me, 1, region, items, me->stack[me->depth], t1,
                      me->cstack[me->depth], gbc_trace_cpu());
    }
}

#define GBC_TRACE_REGION_BEGIN(region, items) gbc_trace_region_begin()
#define GBC_TRACE_REGION_END(region, items) gbc_trace_region_end((region), (int64_t)(items))
#define GBC_TRACE_TASK_BEGIN(phase, task) gbc_trace_task_begin()
#define GBC_TRACE_TASK_END(phase, task) gbc_trace_task_end((phase), (int64_t)(task))

#endif /* GBC_CORE_TRACE */

/* The owner's accessors (gbc_core._openmp), stubs in a normal build. */
#ifdef GBC_TRACE_OWNER
#ifdef GBC_CORE_TRACE
static PyObject *gbc_trace_capsule(void) {
    return PyCapsule_New(&gbc_trace_the_state, GBC_TRACE_CAPSULE, NULL);
}
static int gbc_trace_start(int64_t capacity) {
    gbc_trace_state *st = &gbc_trace_the_state;
    int i;
    st->enabled = 0;
    for (i = 0; i < GBC_TRACE_MAX_SLOTS; i++) {
        free(st->slots[i].events);
        st->slots[i].events = NULL;
        st->slots[i].n = 0; st->slots[i].dropped = 0; st->slots[i].tid = 0;
    }
    st->capacity = capacity;
    st->n_slots = 0;
    st->generation++;
    st->enabled = 1;
    return 0;
}
static void gbc_trace_stop(void) { gbc_trace_the_state.enabled = 0; }
static int32_t gbc_trace_n_slots(void) {
    int32_t n = gbc_trace_the_state.n_slots;
    return n < GBC_TRACE_MAX_SLOTS ? n : GBC_TRACE_MAX_SLOTS;
}
static int64_t gbc_trace_slot_n(int32_t i) { return gbc_trace_the_state.slots[i].n; }
static int64_t gbc_trace_slot_dropped(int32_t i) {
    return gbc_trace_the_state.slots[i].dropped;
}
static void gbc_trace_slot_copy(int32_t i, char *out) {
    memcpy(out, gbc_trace_the_state.slots[i].events,
           (size_t)gbc_trace_the_state.slots[i].n * sizeof(gbc_trace_event));
}
#else
static PyObject *gbc_trace_capsule(void) { Py_RETURN_NONE; }
static int gbc_trace_start(int64_t capacity) { (void)capacity; return -1; }
static void gbc_trace_stop(void) {}
static int32_t gbc_trace_n_slots(void) { return 0; }
static int64_t gbc_trace_slot_n(int32_t i) { (void)i; return 0; }
static int64_t gbc_trace_slot_dropped(int32_t i) { (void)i; return 0; }
static void gbc_trace_slot_copy(int32_t i, char *out) { (void)i; (void)out; }
#endif
#endif /* GBC_TRACE_OWNER */

#endif /* GBC_CORE_TRACE_H */
