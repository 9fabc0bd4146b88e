// Fault injection for C code that cannot reach Swift, where RunLoopKitSystem's FaultInjection cannot ask its script:
// a signal handler (the services' signal relay writes its eventfds from one, in CRunLoopKitServices). FaultInjection
// sets the countdown when a script names such a call; the C code asks it before the call, in debug builds only
// (RUNLOOPKIT_FAULT_INJECTION). One countdown for the process: one scripted C-side call at a time.
#ifndef C_RUNLOOP_FAULT_COUNTDOWN_H
#define C_RUNLOOP_FAULT_COUNTDOWN_H

/// Makes the next `times` calls of crunloop_fault_countdown_take() answer `code` (0 and 0 to stop). Answers how many
/// calls the previous setting failed. Any thread.
int crunloop_fault_countdown_set(int code, int times);

/// The `errno` the scripted call must fail with now (counted as one failure), or 0 to make the real call.
/// Async-signal-safe: atomics only.
int crunloop_fault_countdown_take(void);

#endif
