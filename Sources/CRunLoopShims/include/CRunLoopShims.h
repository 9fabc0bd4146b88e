// The Linux headers Swift's Glibc module leaves out, libdispatch's main-queue hooks (DispatchMainQueueHooks.h), and
// the signal relay's async-signal-safe C half (SignalRelay.h).
// Nothing here but includes, declarations and one function-like wrapper Swift cannot call directly (the variadic
// syscall(2)).
#ifndef C_RUNLOOP_SHIMS_H
#define C_RUNLOOP_SHIMS_H

#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/syscall.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include "DispatchMainQueueHooks.h"
#include "SignalRelay.h"

/// The calling thread's kernel thread id (gettid(2)), which Swift cannot reach through the variadic syscall(2).
static inline pid_t crunloop_gettid(void) { return (pid_t)syscall(SYS_gettid); }

#endif
