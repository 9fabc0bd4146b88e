/* `limit`: the floor the kernel allows, with no abstraction. One loop = one thread blocked in epoll_wait on
 * an eventfd (cross-thread wake-ups) and a timerfd (the earliest timer). Posting appends to a
 * mutex-protected array and writes the eventfd only when the loop said it is going to sleep. Timers sit in
 * a binary min-heap keyed by deadline, each remembering its heap slot so cancelling is O(log n); the timerfd
 * is re-armed only when the earliest deadline moves earlier than the armed one, and a stale (too early)
 * expiry re-arms lazily when the loop next goes to sleep. */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include "../c-common/peer.h"
#include "../c-common/task_list.h"

const char *const peer_runtime_name = "limit";


struct peer_timer {
    int64_t deadline;
    size_t slot; /* index in the heap, or not_in_heap */
    peer_task_fn fn;
    void *context;
    uint64_t a;
};

enum { not_in_heap = (size_t)-1, wake_tag = 1, timer_tag = 2 };

struct peer_loop {
    int epoll, wake, timer;
    pthread_mutex_t mutex;
    task_list posted; /* under mutex */
    bool sleeping;    /* under mutex: the loop will block (or is blocked) in epoll_wait */
    task_list running;
    peer_timer **heap;
    size_t heap_count, heap_capacity;
    int64_t armed; /* the deadline the timerfd is armed for; INT64_MAX when disarmed */
    pthread_t thread;
};

/* ---- the heap ---- */

static void heap_place(peer_loop *loop, peer_timer *t, size_t slot) {
    loop->heap[slot] = t;
    t->slot = slot;
}

static void sift_up(peer_loop *loop, size_t slot) {
    peer_timer *t = loop->heap[slot];
    while (slot > 0) {
        size_t parent = (slot - 1) / 2;
        if (loop->heap[parent]->deadline <= t->deadline) break;
        heap_place(loop, loop->heap[parent], slot);
        slot = parent;
    }
    heap_place(loop, t, slot);
}

static void sift_down(peer_loop *loop, size_t slot) {
    peer_timer *t = loop->heap[slot];
    size_t count = loop->heap_count;
    for (;;) {
        size_t child = 2 * slot + 1;
        if (child >= count) break;
        if (child + 1 < count && loop->heap[child + 1]->deadline < loop->heap[child]->deadline) child++;
        if (t->deadline <= loop->heap[child]->deadline) break;
        heap_place(loop, loop->heap[child], slot);
        slot = child;
    }
    heap_place(loop, t, slot);
}

static void heap_remove(peer_loop *loop, peer_timer *t) {
    size_t slot = t->slot;
    peer_timer *last = loop->heap[--loop->heap_count];
    t->slot = not_in_heap;
    if (last == t) return;
    heap_place(loop, last, slot);
    if (slot > 0 && loop->heap[(slot - 1) / 2]->deadline > last->deadline)
        sift_up(loop, slot);
    else
        sift_down(loop, slot);
}

static void arm(peer_loop *loop, int64_t deadline) {
    struct itimerspec spec = {.it_value = {.tv_sec = deadline / 1000000000, .tv_nsec = deadline % 1000000000}};
    if (spec.it_value.tv_sec == 0 && spec.it_value.tv_nsec == 0) spec.it_value.tv_nsec = 1; /* 0 would disarm */
    if (timerfd_settime(loop->timer, TFD_TIMER_ABSTIME, &spec, NULL) != 0) peer_die("timerfd_settime failed");
    loop->armed = deadline;
}

void peer_timer_start(peer_loop *loop, peer_timer *t, int64_t deadline, peer_task_fn fn, void *context, uint64_t a) {
    t->deadline = deadline;
    t->fn = fn;
    t->context = context;
    t->a = a;
    if (loop->heap_count == loop->heap_capacity) {
        loop->heap_capacity = loop->heap_capacity ? loop->heap_capacity * 2 : 64;
        loop->heap = realloc(loop->heap, loop->heap_capacity * sizeof *loop->heap);
        if (!loop->heap) peer_die("out of memory");
    }
    loop->heap_count++;
    heap_place(loop, t, loop->heap_count - 1);
    sift_up(loop, loop->heap_count - 1);
    if (deadline < loop->armed) arm(loop, deadline);
}

void peer_timer_cancel(peer_loop *loop, peer_timer *t) {
    if (t->slot != not_in_heap) heap_remove(loop, t); /* never re-arms: an early expiry re-arms lazily */
}

peer_timer *peer_timers_make(peer_loop *loop, size_t count) {
    (void)loop;
    peer_timer *timers = calloc(count, sizeof *timers);
    if (!timers) peer_die("out of memory");
    for (size_t i = 0; i < count; i++) timers[i].slot = not_in_heap;
    return timers;
}

peer_timer *peer_timer_at(peer_timer *timers, size_t index) { return &timers[index]; }

/* Runs every timer due by now; reads the clock again once the due ones are done. */
static void fire_due(peer_loop *loop) {
    if (loop->heap_count == 0) return;
    int64_t now = peer_now();
    while (loop->heap_count > 0) {
        peer_timer *first = loop->heap[0];
        if (first->deadline > now) {
            now = peer_now();
            if (first->deadline > now) break;
        }
        heap_remove(loop, first);
        first->fn(first->context, first->a, 0);
    }
}

/* ---- posting and the loop ---- */

void peer_post(peer_loop *loop, peer_task_fn fn, void *context, uint64_t a, uint64_t b) {
    pthread_mutex_lock(&loop->mutex);
    task_list_push(&loop->posted, (task){fn, context, a, b});
    bool wake = loop->sleeping;
    loop->sleeping = false;
    pthread_mutex_unlock(&loop->mutex);
    if (wake) {
        uint64_t one = 1;
        if (write(loop->wake, &one, sizeof one) != sizeof one) peer_die("eventfd write failed");
    }
}

static void *run_loop(void *argument) {
    peer_loop *loop = argument;
    struct epoll_event events[2];
    for (;;) {
        fire_due(loop);
        pthread_mutex_lock(&loop->mutex);
        task_list taken = loop->posted;
        loop->posted = loop->running; /* hand the emptied array back for reuse */
        loop->sleeping = taken.count == 0;
        pthread_mutex_unlock(&loop->mutex);
        loop->running = taken;
        if (taken.count > 0) {
            task_list_run(&loop->running);
            continue;
        }
        if (loop->heap_count > 0 && loop->heap[0]->deadline < loop->armed) arm(loop, loop->heap[0]->deadline);
        int ready = epoll_wait(loop->epoll, events, 2, -1);
        for (int i = 0; i < ready; i++) {
            uint64_t value;
            if (events[i].data.u32 == wake_tag) {
                if (read(loop->wake, &value, sizeof value) < 0 && errno != EAGAIN) peer_die("eventfd read failed");
            } else {
                if (read(loop->timer, &value, sizeof value) < 0 && errno != EAGAIN) peer_die("timerfd read failed");
                loop->armed = INT64_MAX;
            }
        }
    }
    return NULL;
}

peer_loop *peer_loop_start(void) {
    peer_loop *loop = calloc(1, sizeof *loop);
    if (!loop) peer_die("out of memory");
    loop->epoll = epoll_create1(EPOLL_CLOEXEC);
    loop->wake = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    loop->timer = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
    if (loop->epoll < 0 || loop->wake < 0 || loop->timer < 0) peer_die("creating the loop's descriptors failed");
    struct epoll_event wake = {.events = EPOLLIN, .data.u32 = wake_tag};
    struct epoll_event timer = {.events = EPOLLIN, .data.u32 = timer_tag};
    if (epoll_ctl(loop->epoll, EPOLL_CTL_ADD, loop->wake, &wake) != 0 ||
        epoll_ctl(loop->epoll, EPOLL_CTL_ADD, loop->timer, &timer) != 0)
        peer_die("epoll_ctl failed");
    pthread_mutex_init(&loop->mutex, NULL);
    loop->armed = INT64_MAX;
    if (pthread_create(&loop->thread, NULL, run_loop, loop) != 0) peer_die("pthread_create failed");
    return loop;
}
