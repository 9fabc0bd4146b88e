/* The interface between the C peers' shared workload driver (workloads.c) and one event-loop runtime
 * (limit/limit.c on raw epoll, libuv/libuv.c on libuv). The driver implements W1-W5 of the shared
 * benchmarks.md once; each runtime supplies loops, cross-thread posting and one-shot timers. */
#ifndef PEER_H
#define PEER_H

#include <stddef.h>
#include <stdint.h>

/* A unit of work: a function and three words of argument, run on a loop's thread. */
typedef void (*peer_task_fn)(void *context, uint64_t a, uint64_t b);

/* A running loop on its own thread. */
typedef struct peer_loop peer_loop;

/* One timer's storage, owned by the caller (the C way: no allocation per schedule). */
typedef struct peer_timer peer_timer;

/* The runtime's name, e.g. "limit". */
extern const char *const peer_runtime_name;

/* Creates a loop and starts the thread that runs it. Any thread; set-up only, never timed. */
peer_loop *peer_loop_start(void);

/* Queues fn(context, a, b) to run on `loop`'s thread and wakes it if it sleeps. Any thread. */
void peer_post(peer_loop *loop, peer_task_fn fn, void *context, uint64_t a, uint64_t b);

/* Storage for `count` timers of `loop`, ready to start. Any thread other than the loop's; set-up only. */
peer_timer *peer_timers_make(peer_loop *loop, size_t count);

/* The timer at `index` of storage made by peer_timers_make. */
peer_timer *peer_timer_at(peer_timer *timers, size_t index);

/* Starts a stopped one-shot timer: fn(context, a, 0) runs on the loop's thread at or after
 * `deadline` (CLOCK_MONOTONIC nanoseconds), never before. On the loop's thread. */
void peer_timer_start(peer_loop *loop, peer_timer *timer, int64_t deadline, peer_task_fn fn, void *context,
                      uint64_t a);

/* Cancels a started timer that has not fired. On the loop's thread. */
void peer_timer_cancel(peer_loop *loop, peer_timer *timer);

/* CLOCK_MONOTONIC in nanoseconds. */
int64_t peer_now(void);

/* Exits with status 1 after printing `message` on stderr (a runtime call failed). */
void peer_die(const char *message);

#endif
