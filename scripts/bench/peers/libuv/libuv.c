/* `libuv`: the same workloads on libuv. A loop is a thread in uv_run(UV_RUN_DEFAULT) kept alive by a
 * uv_async_t; posting appends to a mutex-protected array and calls uv_async_send (libuv coalesces the
 * wake-ups), and the async callback runs everything taken from the array. A timer is a caller-owned
 * uv_timer_t (initialised in set-up): starting it is uv_timer_start, cancelling uv_timer_stop. libuv's
 * timers count whole milliseconds from the loop's cached time (uv_now), so a deadline is converted to a
 * timeout from uv_now rounded up: the timer then never fires before the deadline. */
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <uv.h>

#include "../c-common/peer.h"
#include "../c-common/task_list.h"

const char *const peer_runtime_name = "libuv";


struct peer_loop {
    uv_loop_t loop;
    uv_async_t async;
    pthread_mutex_t mutex;
    task_list posted; /* under mutex */
    task_list running;
    pthread_t thread;
};

struct peer_timer {
    uv_timer_t handle; /* first, so the handle's address is the timer's */
    peer_task_fn fn;
    void *context;
    uint64_t a;
};

void peer_post(peer_loop *loop, peer_task_fn fn, void *context, uint64_t a, uint64_t b) {
    pthread_mutex_lock(&loop->mutex);
    task_list_push(&loop->posted, (task){fn, context, a, b});
    pthread_mutex_unlock(&loop->mutex);
    if (uv_async_send(&loop->async) != 0) peer_die("uv_async_send failed");
}

static void run_posted(uv_async_t *async) {
    peer_loop *loop = async->data;
    pthread_mutex_lock(&loop->mutex);
    task_list taken = loop->posted;
    loop->posted = loop->running; /* hand the emptied array back for reuse */
    pthread_mutex_unlock(&loop->mutex);
    loop->running = taken;
    task_list_run(&loop->running);
}

static void *run_loop(void *argument) {
    peer_loop *loop = argument;
    uv_run(&loop->loop, UV_RUN_DEFAULT);
    return NULL;
}

peer_loop *peer_loop_start(void) {
    peer_loop *loop = calloc(1, sizeof *loop);
    if (!loop) peer_die("out of memory");
    if (uv_loop_init(&loop->loop) != 0) peer_die("uv_loop_init failed");
    if (uv_async_init(&loop->loop, &loop->async, run_posted) != 0) peer_die("uv_async_init failed");
    loop->async.data = loop;
    pthread_mutex_init(&loop->mutex, NULL);
    if (pthread_create(&loop->thread, NULL, run_loop, loop) != 0) peer_die("pthread_create failed");
    return loop;
}

static void timer_fired(uv_timer_t *handle) {
    peer_timer *t = (peer_timer *)handle;
    t->fn(t->context, t->a, 0);
}

void peer_timer_start(peer_loop *loop, peer_timer *t, int64_t deadline, peer_task_fn fn, void *context, uint64_t a) {
    t->fn = fn;
    t->context = context;
    t->a = a;
    uint64_t now_ms = uv_now(&loop->loop);
    uint64_t deadline_ms = (uint64_t)(deadline + 999999) / 1000000;
    uv_timer_start(&t->handle, timer_fired, deadline_ms > now_ms ? deadline_ms - now_ms : 0, 0);
}

void peer_timer_cancel(peer_loop *loop, peer_timer *t) {
    (void)loop;
    uv_timer_stop(&t->handle);
}

typedef struct {
    peer_loop *loop;
    peer_timer *timers;
    size_t count;
    pthread_mutex_t mutex;
    pthread_cond_t finished;
    bool done;
} timer_setup;

static void init_timers(void *context, uint64_t unused1, uint64_t unused2) { /* on the loop */
    (void)unused1;
    (void)unused2;
    timer_setup *setup = context;
    for (size_t i = 0; i < setup->count; i++) uv_timer_init(&setup->loop->loop, &setup->timers[i].handle);
    pthread_mutex_lock(&setup->mutex);
    setup->done = true;
    pthread_cond_signal(&setup->finished);
    pthread_mutex_unlock(&setup->mutex);
}

peer_timer *peer_timers_make(peer_loop *loop, size_t count) {
    timer_setup setup = {.loop = loop, .timers = calloc(count, sizeof(peer_timer)), .count = count};
    if (!setup.timers) peer_die("out of memory");
    pthread_mutex_init(&setup.mutex, NULL);
    pthread_cond_init(&setup.finished, NULL);
    peer_post(loop, init_timers, &setup, 0, 0); /* uv_timer_init touches the loop: do it on its thread */
    pthread_mutex_lock(&setup.mutex);
    while (!setup.done) pthread_cond_wait(&setup.finished, &setup.mutex);
    pthread_mutex_unlock(&setup.mutex);
    return setup.timers;
}

peer_timer *peer_timer_at(peer_timer *timers, size_t index) { return &timers[index]; }
