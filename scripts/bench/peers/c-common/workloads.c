/* The C peers' driver: W1-W5 of the shared benchmarks.md, exactly as loop-bench runs them, on the runtime
 * linked beside it (peer.h). One repetition per process:
 *
 *     <peer> W1|W2|W2a|W3|W4|W5 [--quick]
 *
 * W2a is W2 with a 40-byte context per item, allocated by the producer and freed by the consumer: what a closure
 * posted to another thread costs in malloc, without the closure.
 *
 * prints one `ID key value` line per metric (the keys loop-bench prints; `W1@cpu0` when the process may run
 * on one CPU only) and exits 1 when a check fails (W2 inexact count, W3 early timer, W4 a timer fired, a
 * timeout). Threads and loops are made before the clock starts; offsets come from splitmix64 seeded 0x5EED. */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "peer.h"

/* ---- clocks, random offsets, percentiles, output ---- */

int64_t peer_now(void) {
    struct timespec spec;
    clock_gettime(CLOCK_MONOTONIC, &spec);
    return (int64_t)spec.tv_sec * 1000000000 + spec.tv_nsec;
}

static int64_t process_cpu(void) {
    struct timespec spec;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &spec);
    return (int64_t)spec.tv_sec * 1000000000 + spec.tv_nsec;
}

static void sleep_until(int64_t deadline) {
    struct timespec spec = {.tv_sec = deadline / 1000000000, .tv_nsec = deadline % 1000000000};
    while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &spec, NULL) == EINTR) {
    }
}

void peer_die(const char *message) {
    fprintf(stderr, "%s: %s (errno %d: %s)\n", peer_runtime_name, message, errno, strerror(errno));
    exit(1);
}

/* `count` offsets in [low, high): splitmix64 from seed 0x5EED, low + next() % (high - low). */
static int64_t *make_offsets(size_t count, int64_t low, int64_t high) {
    int64_t *offsets = malloc(count * sizeof *offsets);
    if (!offsets) peer_die("out of memory");
    uint64_t state = 0x5EED;
    for (size_t i = 0; i < count; i++) {
        state += 0x9E3779B97F4A7C15ull;
        uint64_t z = state;
        z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
        z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
        z ^= z >> 31;
        offsets[i] = low + (int64_t)(z % (uint64_t)(high - low));
    }
    return offsets;
}

static int compare_int64(const void *x, const void *y) {
    int64_t a = *(const int64_t *)x, b = *(const int64_t *)y;
    return (a > b) - (a < b);
}

/* Nearest rank: the value at rank ceil(p/100 * n) of ascending `sorted`. */
static int64_t nearest_rank(double percent, const int64_t *sorted, size_t count) {
    if (count == 0) return 0;
    double exact = percent / 100.0 * (double)count;
    size_t rank = (size_t)exact;
    if ((double)rank < exact) rank++;
    if (rank < 1) rank = 1;
    if (rank > count) rank = count;
    return sorted[rank - 1];
}

static char label[32];

static void set_label(const char *id) {
    cpu_set_t set;
    CPU_ZERO(&set);
    long online = sysconf(_SC_NPROCESSORS_ONLN);
    if (sched_getaffinity(0, sizeof set, &set) == 0 && CPU_COUNT(&set) == 1 && online > 1) {
        for (int cpu = 0; cpu < CPU_SETSIZE; cpu++) {
            if (CPU_ISSET(cpu, &set)) {
                snprintf(label, sizeof label, "%s@cpu%d", id, cpu);
                return;
            }
        }
    }
    snprintf(label, sizeof label, "%s", id);
}

static void emit(const char *key, double value, int decimals) {
    printf("%s %s %.*f\n", label, key, decimals, value);
}

/* ---- a counter to wait on (mutex + condition variable), so a waiting thread costs no CPU ---- */

typedef struct {
    pthread_mutex_t mutex;
    pthread_cond_t changed;
    long count;
} latch;

static void latch_init(latch *l) {
    pthread_condattr_t attributes;
    pthread_condattr_init(&attributes);
    pthread_condattr_setclock(&attributes, CLOCK_MONOTONIC);
    pthread_mutex_init(&l->mutex, NULL);
    pthread_cond_init(&l->changed, &attributes);
    l->count = 0;
}

static void latch_add(latch *l) {
    pthread_mutex_lock(&l->mutex);
    l->count++;
    pthread_cond_broadcast(&l->changed);
    pthread_mutex_unlock(&l->mutex);
}

/* Waits until the count reaches `target`; false after `seconds` without. */
static bool latch_wait(latch *l, long target, int seconds) {
    struct timespec deadline;
    clock_gettime(CLOCK_MONOTONIC, &deadline);
    deadline.tv_sec += seconds;
    pthread_mutex_lock(&l->mutex);
    int status = 0;
    while (l->count < target && status != ETIMEDOUT) status = pthread_cond_timedwait(&l->changed, &l->mutex, &deadline);
    bool reached = l->count >= target;
    pthread_mutex_unlock(&l->mutex);
    return reached;
}

static pthread_t spawn(void *(*body)(void *), void *argument) {
    pthread_t thread;
    if (pthread_create(&thread, NULL, body, argument) != 0) peer_die("pthread_create failed");
    return thread;
}

static int fail(const char *message) {
    fprintf(stderr, "%s %s FAILED: %s\n", peer_runtime_name, label, message);
    return 1;
}

/* ---- W1 ping-pong ---- */

typedef struct {
    peer_loop *a, *b;
    long remaining;
    int64_t begin, end;
    latch done;
} rally;

static void w1_reply(void *context, uint64_t unused1, uint64_t unused2);

static void w1_bounce(void *context, uint64_t unused1, uint64_t unused2) { /* on B */
    rally *r = context;
    peer_post(r->a, w1_reply, r, 0, 0);
}

static void w1_serve(rally *r) { peer_post(r->b, w1_bounce, r, 0, 0); }

static void w1_reply(void *context, uint64_t unused1, uint64_t unused2) { /* on A */
    rally *r = context;
    if (--r->remaining > 0) {
        w1_serve(r);
    } else {
        r->end = peer_now();
        latch_add(&r->done);
    }
}

static void w1_start(void *context, uint64_t unused1, uint64_t unused2) { /* on A */
    rally *r = context;
    r->begin = peer_now();
    w1_serve(r);
}

static int run_w1(int scale) {
    long trips = 100000 / scale;
    rally r = {.a = peer_loop_start(), .b = peer_loop_start(), .remaining = trips};
    latch_init(&r.done);
    peer_post(r.a, w1_start, &r, 0, 0);
    if (!latch_wait(&r.done, 1, 300)) return fail("the rally did not finish within 300 s");
    double elapsed = (double)(r.end - r.begin);
    emit("throughput_rt_s", (double)trips / elapsed * 1e9, 0);
    emit("rtt_mean_us", elapsed / (double)trips / 1e3, 2);
    return 0;
}

/* ---- W2 fan-in ---- */

enum { producer_count = 2 };

typedef struct {
    peer_loop *consumer;
    long per_producer, total;
    long received, reordered, expected[producer_count]; /* consumer thread only */
    bool boxed; /* W2a: each item in a context the producer allocates and the consumer frees */
    int64_t end;
    _Atomic int64_t released; /* earliest producer release: the clock's start */
    latch ready, gate, done, drained;
} fan_in;

typedef struct {
    fan_in *f;
    uint64_t producer;
} producer_argument;

static void w2_receive(void *context, uint64_t producer, uint64_t sequence) {
    fan_in *f = context;
    if ((long)sequence != f->expected[producer]) f->reordered++;
    f->expected[producer]++;
    if (++f->received == f->total) {
        f->end = peer_now();
        latch_add(&f->done);
    }
}

/* W2a's context: what a Swift closure capturing a reference and two integers allocates (a 16-byte object header,
 * then the three captures: 40 bytes), made by the producer and freed by the consumer after the call. */
typedef struct {
    uint64_t header[2];
    fan_in *f;
    uint64_t producer, sequence;
} boxed_item;

static void w2_receive_boxed(void *context, uint64_t unused1, uint64_t unused2) {
    boxed_item *item = context;
    w2_receive(item->f, item->producer, item->sequence);
    free(item);
}

static void w2_drained(void *context, uint64_t unused1, uint64_t unused2) { latch_add(&((fan_in *)context)->drained); }

static void *w2_produce(void *argument) {
    producer_argument *p = argument;
    fan_in *f = p->f;
    latch_add(&f->ready);
    latch_wait(&f->gate, 1, 3600);
    int64_t now = peer_now();
    int64_t seen = atomic_load_explicit(&f->released, memory_order_relaxed);
    while (now < seen && !atomic_compare_exchange_weak(&f->released, &seen, now)) {
    }
    for (long sequence = 0; sequence < f->per_producer; sequence++) {
        if (f->boxed) {
            boxed_item *item = malloc(sizeof *item);
            if (!item) peer_die("malloc");
            *item = (boxed_item){.f = f, .producer = p->producer, .sequence = (uint64_t)sequence};
            peer_post(f->consumer, w2_receive_boxed, item, 0, 0);
        } else {
            peer_post(f->consumer, w2_receive, f, p->producer, (uint64_t)sequence);
        }
    }
    return NULL;
}

static int run_w2_items(int scale, bool boxed) {
    static fan_in f;
    f.boxed = boxed;
    f.consumer = peer_loop_start();
    f.per_producer = 500000 / scale;
    f.total = f.per_producer * producer_count;
    atomic_init(&f.released, INT64_MAX);
    latch_init(&f.ready);
    latch_init(&f.gate);
    latch_init(&f.done);
    latch_init(&f.drained);
    producer_argument arguments[producer_count];
    pthread_t producers[producer_count];
    for (int i = 0; i < producer_count; i++) {
        arguments[i] = (producer_argument){.f = &f, .producer = (uint64_t)i};
        producers[i] = spawn(w2_produce, &arguments[i]);
    }
    latch_wait(&f.ready, producer_count, 60);
    latch_add(&f.gate);
    if (!latch_wait(&f.done, 1, 300)) return fail("the consumer did not run every closure within 300 s");
    for (int i = 0; i < producer_count; i++) pthread_join(producers[i], NULL);
    /* Everything is posted: a closure posted now runs after all of it, so extra runs would show. */
    peer_post(f.consumer, w2_drained, &f, 0, 0);
    latch_wait(&f.drained, 1, 60);
    if (f.received != f.total) return fail("the consumer ran a different number of closures than were posted");
    double elapsed = (double)(f.end - atomic_load(&f.released));
    emit("throughput_ops_s", (double)f.total / elapsed * 1e9, 0);
    emit("reordered", (double)f.reordered, 0);
    return 0;
}

static int run_w2(int scale) { return run_w2_items(scale, false); }

/* W2a: W2 with a context allocated per item on the producer and freed on the consumer, as a closure's is. */
static int run_w2_allocating(int scale) { return run_w2_items(scale, true); }

/* ---- W3 timers ---- */

typedef struct {
    peer_loop *loop;
    peer_timer *timers;
    size_t count;
    int64_t *offsets, *deadlines, *lateness;
    int64_t start, scheduled;
    size_t fired;
    latch done;
} timer_run;

static void w3_fire(void *context, uint64_t index, uint64_t unused) {
    timer_run *t = context;
    t->lateness[index] = peer_now() - t->deadlines[index];
    if (++t->fired == t->count) latch_add(&t->done);
}

static void w3_schedule(void *context, uint64_t unused1, uint64_t unused2) { /* on the loop: timed */
    timer_run *t = context;
    t->start = peer_now();
    for (size_t i = 0; i < t->count; i++) {
        int64_t deadline = t->start + t->offsets[i];
        t->deadlines[i] = deadline;
        peer_timer_start(t->loop, peer_timer_at(t->timers, i), deadline, w3_fire, t, i);
    }
    t->scheduled = peer_now();
}

static int run_w3(int scale) {
    static timer_run t;
    t.count = 100000 / scale;
    t.loop = peer_loop_start();
    t.timers = peer_timers_make(t.loop, t.count);
    t.offsets = make_offsets(t.count, 0, 500000000);
    t.deadlines = calloc(t.count, sizeof(int64_t));
    t.lateness = calloc(t.count, sizeof(int64_t));
    int64_t *all = calloc(t.count, sizeof(int64_t)), *steady = calloc(t.count, sizeof(int64_t));
    if (!t.deadlines || !t.lateness || !all || !steady) peer_die("out of memory");
    latch_init(&t.done);
    peer_post(t.loop, w3_schedule, &t, 0, 0);
    if (!latch_wait(&t.done, 1, 120)) return fail("not every timer fired within 120 s");
    size_t steady_count = 0, early = 0;
    for (size_t i = 0; i < t.count; i++) {
        all[i] = t.lateness[i];
        if (t.lateness[i] < 0) early++;
        if (t.deadlines[i] >= t.scheduled) steady[steady_count++] = t.lateness[i];
    }
    qsort(all, t.count, sizeof(int64_t), compare_int64);
    qsort(steady, steady_count, sizeof(int64_t), compare_int64);
    emit("schedule_ns", (double)(t.scheduled - t.start) / (double)t.count, 1);
    emit("late_p50_us", (double)nearest_rank(50, all, t.count) / 1e3, 1);
    emit("late_p99_us", (double)nearest_rank(99, all, t.count) / 1e3, 1);
    emit("late_p99_steady_us", (double)nearest_rank(99, steady, steady_count) / 1e3, 1);
    emit("early", (double)early, 0);
    return early == 0 ? 0 : fail("timers fired before their deadline");
}

/* ---- W4 churn ---- */

enum { churn_window = 10000 };

typedef struct {
    peer_loop *loop;
    peer_timer *timers; /* churn_window slots: timer i lives in slot i % churn_window */
    size_t iterations;
    int64_t *offsets;
    int64_t start, end;
    size_t fired;
    latch done;
} churn_run;

static void w4_fire(void *context, uint64_t unused1, uint64_t unused2) { ((churn_run *)context)->fired++; }

static void w4_churn(void *context, uint64_t unused1, uint64_t unused2) { /* on the loop: timed */
    churn_run *c = context;
    c->start = peer_now();
    for (size_t i = 0; i < c->iterations; i++) {
        peer_timer *slot = peer_timer_at(c->timers, i % churn_window);
        if (i >= churn_window) peer_timer_cancel(c->loop, slot);
        peer_timer_start(c->loop, slot, c->start + c->offsets[i], w4_fire, c, i);
    }
    for (size_t i = 0; i < churn_window && i < c->iterations; i++)
        peer_timer_cancel(c->loop, peer_timer_at(c->timers, i));
    c->end = peer_now();
    latch_add(&c->done);
}

static int run_w4(int scale) {
    static churn_run c;
    c.iterations = 1000000 / scale;
    c.loop = peer_loop_start();
    c.timers = peer_timers_make(c.loop, churn_window);
    c.offsets = make_offsets(c.iterations, 10000000000ll, 20000000000ll);
    latch_init(&c.done);
    peer_post(c.loop, w4_churn, &c, 0, 0);
    if (!latch_wait(&c.done, 1, 300)) return fail("the churn did not finish within 300 s");
    emit("pair_ns", (double)(c.end - c.start) / (double)c.iterations, 1);
    return c.fired == 0 ? 0 : fail("a timer fired");
}

/* ---- W5 wake latency ---- */

enum { wake_period = 200000 };

typedef struct {
    peer_loop *target;
    long count;
    int64_t *latency;
    long received, same_cpu; /* target thread only */
    int64_t wall_start, cpu_start;
    latch gate, done;
} wake_run;

static void w5_record(void *context, uint64_t index_and_cpu, uint64_t stamp) {
    int64_t now = peer_now();
    wake_run *w = context;
    w->latency[index_and_cpu >> 16] = now - (int64_t)stamp;
    if ((uint64_t)sched_getcpu() == (index_and_cpu & 0xFFFF)) w->same_cpu++;
    if (++w->received == w->count) latch_add(&w->done);
}

static void *w5_send(void *argument) {
    wake_run *w = argument;
    latch_wait(&w->gate, 1, 3600);
    w->wall_start = peer_now();
    w->cpu_start = process_cpu();
    int64_t next = w->wall_start;
    for (long i = 0; i < w->count; i++) {
        next += wake_period;
        sleep_until(next);
        uint64_t cpu = (uint64_t)sched_getcpu() & 0xFFFF; /* read before the stamp: nothing between stamp and post */
        int64_t stamp = peer_now();
        peer_post(w->target, w5_record, w, ((uint64_t)i << 16) | cpu, (uint64_t)stamp);
    }
    return NULL;
}

static int run_w5(int scale) {
    static wake_run w;
    w.count = 20000 / scale;
    w.target = peer_loop_start();
    w.latency = calloc((size_t)w.count, sizeof(int64_t));
    if (!w.latency) peer_die("out of memory");
    latch_init(&w.gate);
    latch_init(&w.done);
    pthread_t sender = spawn(w5_send, &w);
    latch_add(&w.gate);
    if (!latch_wait(&w.done, 1, 300)) return fail("not every sample arrived within 300 s");
    int64_t wall = peer_now() - w.wall_start;
    int64_t cpu = process_cpu() - w.cpu_start;
    pthread_join(sender, NULL);
    qsort(w.latency, (size_t)w.count, sizeof(int64_t), compare_int64);
    emit("p50_us", (double)nearest_rank(50, w.latency, (size_t)w.count) / 1e3, 1);
    emit("p99_us", (double)nearest_rank(99, w.latency, (size_t)w.count) / 1e3, 1);
    emit("cpu_pct", (double)cpu / (double)wall * 100, 1);
    emit("samecpu_pct", (double)w.same_cpu / (double)w.count * 100, 1);
    return 0;
}

int main(int argc, char **argv) {
    const char *id = NULL;
    int scale = 1;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--quick") == 0) {
            scale = 10;
        } else if (!id) {
            id = argv[i];
        } else {
            id = NULL;
            break;
        }
    }
    int (*workloads[])(int) = {run_w1, run_w2, run_w3, run_w4, run_w5};
    bool allocating = id && strcmp(id, "W2a") == 0;
    if (!id || (!allocating && (strlen(id) != 2 || id[0] != 'W' || id[1] < '1' || id[1] > '5'))) {
        fprintf(stderr, "usage: %s W1|W2|W2a|W3|W4|W5 [--quick]\n", argv[0]);
        return 2;
    }
    set_label(id);
    int status = allocating ? run_w2_allocating(scale) : workloads[id[1] - '1'](scale);
    fflush(stdout);
    _exit(status); /* the loop threads are still running: leave without tearing them down */
}
