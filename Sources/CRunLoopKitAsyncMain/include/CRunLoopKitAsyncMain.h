// The C half of RunLoopKitAsyncMain: installs the Swift runtime's async-main drain hook (see AsyncMainDrainHook.c).
#ifndef C_RUNLOOPKIT_ASYNC_MAIN_H
#define C_RUNLOOPKIT_ASYNC_MAIN_H

/// Points the runtime's async-main drain hook at ours, unless another one is installed. Answers 1 when ours is
/// installed, 0 when a foreign hook was left in place. Called by a constructor before main().
int runloopkit_async_main_install(void);

/// 1 while our hook is the installed one.
int runloopkit_async_main_is_installed(void);

/// 1 once the runtime called our hook, that is, once an async main handed the main thread to Loop.main.
int runloopkit_async_main_took_main_thread(void);

#endif
