// The signal relay's async-signal-safe half: the process-wide table of watching eventfds per signal and the
// sigaction handler that writes to them. C on purpose: a signal handler must not reach the Swift runtime (type
// metadata instantiation, retain/release, exclusivity tracking, lazy globals may allocate or lock), and in C
// nothing here can. Everything else (validation, the lock, sigaction, restoring dispositions) is Swift, in
// RunLoopKitServices' SignalRelay. Only RunLoopKitServices uses this target.
#ifndef C_RUNLOOP_KIT_SERVICES_H
#define C_RUNLOOP_KIT_SERVICES_H

#include <signal.h>
#include <stdint.h>
#include <sys/types.h>

/// Signal numbers the table covers: 1 ..< CRUNLOOP_SIGNAL_LIMIT (Linux's NSIG is 65).
#define CRUNLOOP_SIGNAL_LIMIT 65
/// Watching eventfds one signal can have at once.
#define CRUNLOOP_SIGNAL_SLOTS 1024

/// The handler installed with sigaction for every watched signal. Async-signal-safe: it bumps the signal's
/// delivery counter, and for every watcher of the signal its pending count, then writes 1 to the watcher's eventfd
/// to wake its loop (atomics and write(2) only); it leaves errno as it found it. In a child of fork() it only
/// counts the delivery (the eventfds are the parent's).
void crunloop_signal_relay(int signo);

/// Whether `action` installs crunloop_signal_relay.
int crunloop_signal_relay_is_installed_in(const struct sigaction *action);

/// Whether the disposition in `action` is a handler that lives in libdispatch: the one
/// DispatchSource.makeSignalSource installs on Linux, where Dispatch reads the signal from a signalfd on its manager
/// thread (swift-service-lifecycle's ServiceGroup takes SIGTERM and SIGINT that way). Found with dladdr(3), by the
/// name of the shared object the handler's address belongs to.
int crunloop_signal_handler_is_dispatchs(const struct sigaction *action);

/// Publishes `descriptor` as a watcher of `signo`; answers its slot, or -1 when the signal's slots are all used.
/// Callers serialise attach, detach and reset (one lock); the handler may run concurrently.
int crunloop_signal_relay_attach(int signo, int descriptor);

/// Withdraws the watcher in `slot`, then waits until no handler that could still have read it is running, so
/// the descriptor may be closed (and its number reused) as soon as this returns. Serialised like attach.
void crunloop_signal_relay_detach(int signo, int slot);

/// Forgets every watcher (without waiting) and makes `process` the process whose watchers the handler writes
/// to. Called once by the first user, and in a child of fork() before its first use. Serialised like attach.
void crunloop_signal_relay_reset(pid_t process);

/// How many times the handler ran for `signo` in this process image (a fork child inherits the count).
uint64_t crunloop_signal_relay_deliveries(int signo);

/// Takes the deliveries counted for the watcher in `slot` of `signo` since the last take (0 when none).
uint64_t crunloop_signal_relay_take(int signo, int slot);

/// How many wake-up writes failed with something other than EINTR since the process started.
uint64_t crunloop_signal_relay_failed_writes(void);

#endif
