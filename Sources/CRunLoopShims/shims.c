// The storage of CurrentLoop.h's thread-local slots, FaultCountdown.h's countdown, and the calls glibc declares only
// under _GNU_SOURCE (dup3(2), the thread affinity and stack calls); everything else in the target lives in its
// headers.
//
// `nodebug`: without a debug entry for it, the object has no DWARF 5 string forms, which valgrind 3.19 (Debian 12)
// cannot read; CI's allocation check runs loop-bench under it.
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <unistd.h>

#include "CRunLoopShims.h"

__attribute__((nodebug)) __thread void *crunloop_current_loop_slot = 0;
__attribute__((nodebug)) __thread void *crunloop_virtual_clock_slot = 0;

__attribute__((nodebug)) int crunloop_dup3_cloexec(int descriptor, int target) {
    return dup3(descriptor, target, O_CLOEXEC);
}

__attribute__((nodebug)) int crunloop_attr_set_affinity(pthread_attr_t *attributes, size_t size, const void *mask) {
    return pthread_attr_setaffinity_np(attributes, size, (const cpu_set_t *)mask);
}

__attribute__((nodebug)) int crunloop_current_stack_size(size_t *size) {
    pthread_attr_t attributes;
    int status = pthread_getattr_np(pthread_self(), &attributes);
    if (status != 0) return status;
    status = pthread_attr_getstacksize(&attributes, size);
    pthread_attr_destroy(&attributes);
    return status;
}

__attribute__((nodebug)) int crunloop_current_cpu(void) { return sched_getcpu(); }

__attribute__((nodebug)) int crunloop_current_affinity(size_t size, void *mask) {
    return sched_getaffinity(0, size, (cpu_set_t *)mask);
}

// The countdown of FaultCountdown.h: the next `countdownFailures` takes answer `countdownErrno`.
static _Atomic int countdownErrno;
static _Atomic int countdownFailures;
static _Atomic int countdownFailed;

__attribute__((nodebug)) int crunloop_fault_countdown_set(int code, int times) {
    int failed = atomic_exchange(&countdownFailed, 0);
    atomic_store(&countdownFailures, 0);
    atomic_store(&countdownErrno, code);
    atomic_store(&countdownFailures, times);
    return failed;
}

__attribute__((nodebug)) int crunloop_fault_countdown_take(void) {
    if (atomic_load(&countdownFailures) > 0 && atomic_fetch_sub(&countdownFailures, 1) > 0) {
        atomic_fetch_add(&countdownFailed, 1);
        int code = atomic_load(&countdownErrno);
        return code != 0 ? code : EIO;
    }
    return 0;
}
