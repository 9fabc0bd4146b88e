// What RunLoopKitGLib needs from C: its own declarations of the few GLib types and function signatures the bridge
// uses. (Its epoll calls are the system layer's, RunLoopKitSystem, on CRunLoopShims.)
//
// GLib is not included here, and not linked: the bridge loads libglib-2.0.so.0 with dlopen at run time and looks its
// functions up with dlsym (see GLibFunctions.swift), so that `swift build` needs no GLib headers. The declarations below
// are written from GLib's reference documentation for its stable 2.x ABI on the LP64 platforms RunLoopKit supports
// (Linux on x86-64 and arm64); the names are ours, prefixed RLKG, so they never clash with a real <glib.h> that an
// app's own GTK bindings import.
#ifndef C_RUNLOOPKIT_GLIB_H
#define C_RUNLOOPKIT_GLIB_H

#include <stdint.h>

// MARK: Values

/// GLib's gboolean: an int, 0 for false.
typedef int RLKGBoolean;

/// GLib's GPollFD: one descriptor of a poll set, what to watch in it and what held. `events` and `revents` are
/// GIOCondition bits, which are poll(2)'s: G_IO_IN 1, G_IO_PRI 2, G_IO_OUT 4, G_IO_ERR 8, G_IO_HUP 16, G_IO_NVAL 32.
typedef struct RLKGPollFD {
    int fd;
    unsigned short events;
    unsigned short revents;
} RLKGPollFD;

/// GLib's GSourceFunc: a source's callback; answers whether the source stays (G_SOURCE_CONTINUE, 1) or goes (0).
typedef RLKGBoolean (*RLKGSourceFunc)(void *userData);
/// GLib's GDestroyNotify: releases a callback's user data.
typedef void (*RLKGDestroyNotify)(void *userData);
/// GLib's GChildWatchFunc: a child watch's callback, with the child's pid and wait status.
typedef void (*RLKGChildWatchFunc)(int pid, int waitStatus, void *userData);
/// GLib's GUnixFDSourceFunc: a g_unix_fd_source_new source's callback, with the descriptor and the conditions.
typedef RLKGBoolean (*RLKGUnixFDSourceFunc)(int fd, unsigned int condition, void *userData);

/// GLib's GSourceFuncs: the four functions of a custom source type, then two pointers GLib keeps for itself (zero).
typedef struct RLKGSourceFuncs {
    RLKGBoolean (*prepare)(void *source, int *timeout);
    RLKGBoolean (*check)(void *source);
    RLKGBoolean (*dispatch)(void *source, RLKGSourceFunc callback, void *userData);
    void (*finalize)(void *source);
    void *reservedClosureCallback;
    void *reservedClosureMarshal;
} RLKGSourceFuncs;

/// The public head of GLib's GSource struct, whose fields are GLib's own. Only its size is used: g_source_new makes a
/// source of any size at least this, and a custom source keeps its own data after the head (RLKGBridgeSource).
typedef struct RLKGSourceHead {
    void *callbackData;
    void *callbackFuncs;
    const void *sourceFuncs;
    unsigned int referenceCount;
    void *context;
    int priority;
    unsigned int flags;
    unsigned int sourceID;
    void *pollDescriptors;
    void *previous;
    void *next;
    char *name;
    void *privateData;
} RLKGSourceHead;

_Static_assert(sizeof(RLKGSourceHead) == 96, "GLib's GSource head is 96 bytes on LP64");

/// The bridge's source: GLib's head, then a retained pointer to the Swift object that runs the loop.
typedef struct RLKGBridgeSource {
    RLKGSourceHead head;
    void *bridge;
} RLKGBridgeSource;

// MARK: Functions resolved with dlsym (GLib's name in each comment)

typedef void *(*RLKGContextFunction)(void);                           // g_main_context_default, g_main_context_new
typedef void *(*RLKGContextRefFunction)(void *context);               // g_main_context_ref
typedef void (*RLKGContextVoidFunction)(void *context);               // g_main_context_unref, _release, _dispatch
typedef RLKGBoolean (*RLKGContextAcquireFunction)(void *context);     // g_main_context_acquire
typedef RLKGBoolean (*RLKGContextPrepareFunction)(void *context, int *priority);  // g_main_context_prepare
typedef int (*RLKGContextQueryFunction)(                              // g_main_context_query
    void *context, int maxPriority, int *timeout, RLKGPollFD *fds, int count);
typedef RLKGBoolean (*RLKGContextCheckFunction)(                      // g_main_context_check
    void *context, int maxPriority, RLKGPollFD *fds, int count);
typedef RLKGBoolean (*RLKGContextIterationFunction)(void *context, RLKGBoolean mayBlock);  // g_main_context_iteration
typedef int (*RLKGDepthFunction)(void);                               // g_main_depth
typedef void (*RLKGContextInvokeFunction)(                            // g_main_context_invoke_full
    void *context, int priority, RLKGSourceFunc function, void *userData, RLKGDestroyNotify notify);
/// GLib's GPollFunc: what a context calls to wait, poll(2)'s signature with GPollFD records.
typedef int (*RLKGPollFunc)(RLKGPollFD *fds, unsigned int count, int timeout);
typedef void (*RLKGContextSetPollFunction)(void *context, RLKGPollFunc function);  // g_main_context_set_poll_func

typedef void *(*RLKGSourceNewFunction)(RLKGSourceFuncs *funcs, unsigned int structSize);  // g_source_new
typedef void *(*RLKGSourceAddUnixFDFunction)(void *source, int fd, unsigned int events);  // g_source_add_unix_fd
typedef unsigned int (*RLKGSourceAttachFunction)(void *source, void *context);           // g_source_attach
typedef void (*RLKGSourceVoidFunction)(void *source);                 // g_source_destroy, g_source_unref
typedef void (*RLKGSourceSetIntFunction)(void *source, int value);    // g_source_set_priority, _set_can_recurse
typedef void (*RLKGSourceSetNameFunction)(void *source, const char *name);  // g_source_set_name
typedef void (*RLKGSourceSetCallbackFunction)(                        // g_source_set_callback
    void *source, RLKGSourceFunc function, void *userData, RLKGDestroyNotify notify);
typedef void *(*RLKGSourceNewUIntFunction)(unsigned int value);       // g_timeout_source_new
typedef void *(*RLKGSourceNewVoidFunction)(void);                     // g_idle_source_new
typedef void *(*RLKGSourceNewIntFunction)(int value);                 // g_child_watch_source_new
typedef void *(*RLKGSourceNewFDFunction)(int fd, unsigned int condition);  // g_unix_fd_source_new

typedef void *(*RLKGMainLoopNewFunction)(void *context, RLKGBoolean isRunning);  // g_main_loop_new
typedef void (*RLKGMainLoopVoidFunction)(void *mainLoop);             // g_main_loop_run, _quit, _unref
typedef int64_t (*RLKGMonotonicTimeFunction)(void);                   // g_get_monotonic_time

#endif
