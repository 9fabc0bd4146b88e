// The signal relay's async-signal-safe half; see include/CRunLoopKitServices.h. (_GNU_SOURCE for dladdr, which the
// Dispatch check uses outside signal context.)
#define _GNU_SOURCE
#include "CRunLoopKitServices.h"
#include "FaultCountdown.h"  // CRunLoopShims': debug builds fail wake-up writes as FaultInjection scripts them.

#include <dlfcn.h>
#include <errno.h>
#include <string.h>
#include <sched.h>
#include <stdatomic.h>
#include <unistd.h>

// Slot values are descriptor + 1, so the zero-filled table means "no watcher". All atomics are sequentially
// consistent: the quiescence argument in detach below relies on one total order of these operations.
static _Atomic int watchers[CRUNLOOP_SIGNAL_LIMIT][CRUNLOOP_SIGNAL_SLOTS];
// One past the highest slot in use per signal: the handler reads no further.
static _Atomic unsigned highWater[CRUNLOOP_SIGNAL_LIMIT];
static _Atomic uint64_t deliveries[CRUNLOOP_SIGNAL_LIMIT];
// Deliveries per watcher not yet taken by its source: the count lives here, the eventfd only wakes the loop, so a
// failed write delays a report but never loses one.
static _Atomic uint64_t pending[CRUNLOOP_SIGNAL_LIMIT][CRUNLOOP_SIGNAL_SLOTS];
// Wake-up writes that failed with something other than EINTR (on a healthy eventfd, only EAGAIN can: the counter
// is at its maximum, so the loop is being woken anyway).
static _Atomic uint64_t failedWrites;
// The process the watchers belong to; a fork child's handler must not write to its parent's eventfds.
static _Atomic pid_t relayProcess;
// Handlers running now, split by the phase they started in, so a detach waits only for handlers that started
// before it (a stream of new deliveries cannot starve it).
static _Atomic unsigned phase;
static _Atomic unsigned long activeHandlers[2];

// Adds one to the eventfd, retrying EINTR; answers whether the write succeeded.
static int wake(int descriptor) {
#ifdef RUNLOOPKIT_FAULT_INJECTION
    if (crunloop_fault_countdown_take() != 0) return 0;
#endif
    uint64_t one = 1;
    while (write(descriptor, &one, sizeof one) < 0) {
        if (errno != EINTR) return 0;
    }
    return 1;
}

void crunloop_signal_relay(int signo) {
    int savedErrno = errno;
    if (signo <= 0 || signo >= CRUNLOOP_SIGNAL_LIMIT) return;
    unsigned started = atomic_load(&phase) & 1u;
    atomic_fetch_add(&activeHandlers[started], 1);
    atomic_fetch_add(&deliveries[signo], 1);
    if (getpid() == atomic_load(&relayProcess)) {
        unsigned end = atomic_load(&highWater[signo]);
        for (unsigned slot = 0; slot < end && slot < CRUNLOOP_SIGNAL_SLOTS; slot++) {
            int value = atomic_load(&watchers[signo][slot]);
            if (value == 0) continue;
            atomic_fetch_add(&pending[signo][slot], 1);
            if (!wake(value - 1)) atomic_fetch_add(&failedWrites, 1);
        }
    }
    atomic_fetch_sub(&activeHandlers[started], 1);
    errno = savedErrno;
}

int crunloop_signal_relay_is_installed_in(const struct sigaction *action) {
    return (action->sa_flags & SA_SIGINFO) == 0 && action->sa_handler == crunloop_signal_relay;
}

int crunloop_signal_handler_is_dispatchs(const struct sigaction *action) {
    void *handler = (action->sa_flags & SA_SIGINFO) ? (void *)action->sa_sigaction : (void *)action->sa_handler;
    if (handler == (void *)SIG_DFL || handler == (void *)SIG_IGN || handler == (void *)SIG_ERR) return 0;
    Dl_info info;
    if (dladdr(handler, &info) == 0 || info.dli_fname == NULL) return 0;
    const char *name = strrchr(info.dli_fname, '/');
    name = name ? name + 1 : info.dli_fname;
    return strncmp(name, "libdispatch.so", strlen("libdispatch.so")) == 0;
}

int crunloop_signal_relay_attach(int signo, int descriptor) {
    if (signo <= 0 || signo >= CRUNLOOP_SIGNAL_LIMIT || descriptor < 0) return -1;
    for (unsigned slot = 0; slot < CRUNLOOP_SIGNAL_SLOTS; slot++) {
        if (atomic_load(&watchers[signo][slot]) != 0) continue;
        atomic_store(&pending[signo][slot], 0);  // Before the slot is published: a handler may count at once.
        // The slot first, then the bound: a handler that sees the new bound sees the slot.
        atomic_store(&watchers[signo][slot], descriptor + 1);
        if (slot >= atomic_load(&highWater[signo])) atomic_store(&highWater[signo], slot + 1);
        return (int)slot;
    }
    return -1;
}

void crunloop_signal_relay_detach(int signo, int slot) {
    if (signo <= 0 || signo >= CRUNLOOP_SIGNAL_LIMIT || slot < 0 || slot >= CRUNLOOP_SIGNAL_SLOTS) return;
    atomic_store(&watchers[signo][slot], 0);
    unsigned end = atomic_load(&highWater[signo]);
    while (end > 0 && atomic_load(&watchers[signo][end - 1]) == 0) end--;
    atomic_store(&highWater[signo], end);
    // Quiescence. A handler that could have read the old slot value counted itself in activeHandlers[p] before
    // reading, with p the phase it loaded. If p is the phase before this flip, the wait below covers it. If it
    // loaded the new phase, its load came after the flip, hence after the clearing store above, so it reads 0.
    // A handler that loaded the old phase but had not counted itself when the wait read zero reads the slot
    // after that zero, hence after the clear. New handlers count in the other half, so they cannot starve this.
    unsigned old = atomic_fetch_add(&phase, 1) & 1u;
    while (atomic_load(&activeHandlers[old]) != 0) sched_yield();
}

void crunloop_signal_relay_reset(pid_t process) {
    for (int signo = 1; signo < CRUNLOOP_SIGNAL_LIMIT; signo++) {
        unsigned end = atomic_load(&highWater[signo]);
        for (unsigned slot = 0; slot < end && slot < CRUNLOOP_SIGNAL_SLOTS; slot++) {
            atomic_store(&watchers[signo][slot], 0);
            atomic_store(&pending[signo][slot], 0);
        }
        atomic_store(&highWater[signo], 0);
    }
    atomic_store(&relayProcess, process);
}

uint64_t crunloop_signal_relay_deliveries(int signo) {
    if (signo <= 0 || signo >= CRUNLOOP_SIGNAL_LIMIT) return 0;
    return atomic_load(&deliveries[signo]);
}

uint64_t crunloop_signal_relay_take(int signo, int slot) {
    if (signo <= 0 || signo >= CRUNLOOP_SIGNAL_LIMIT || slot < 0 || slot >= CRUNLOOP_SIGNAL_SLOTS) return 0;
    return atomic_exchange(&pending[signo][slot], 0);
}

uint64_t crunloop_signal_relay_failed_writes(void) { return atomic_load(&failedWrites); }

