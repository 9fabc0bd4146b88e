// The calling thread's loop as a plain thread-local pointer, for the hottest question the loop asks ("am I on the
// loop's thread?", on every add, schedule, cancel and perform). A pthread key (LoopRegistry.key) still owns the
// loop and tears it down when the thread exits; this slot only mirrors it, unretained, and costs a load from the
// thread pointer where pthread_getspecific is a call through the PLT.
#ifndef C_RUNLOOP_SHIMS_CURRENT_LOOP_H
#define C_RUNLOOP_SHIMS_CURRENT_LOOP_H

/// The calling thread's loop (an unretained `Loop`), or NULL. Defined in shims.c.
extern __thread void *_Nullable crunloop_current_loop_slot;

/// The calling thread's loop, or NULL.
static inline void *_Nullable crunloop_current_loop(void) { return crunloop_current_loop_slot; }

/// Records the calling thread's loop (NULL to forget it).
static inline void crunloop_set_current_loop(void *_Nullable loop) { crunloop_current_loop_slot = loop; }

/// The calling thread's virtual clock (an unretained `Loop.VirtualClock`) while its current loop runs on virtual time,
/// else NULL: what `Loop.Instant.now` reads first, so a real-time thread pays one thread-local load for it.
extern __thread void *_Nullable crunloop_virtual_clock_slot;

/// The calling thread's virtual clock, or NULL.
static inline void *_Nullable crunloop_virtual_clock(void) { return crunloop_virtual_clock_slot; }

/// Records the calling thread's virtual clock (NULL: the thread's loop is on real time).
static inline void crunloop_set_virtual_clock(void *_Nullable clock) { crunloop_virtual_clock_slot = clock; }

#endif
