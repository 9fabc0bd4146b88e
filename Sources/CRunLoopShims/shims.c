// The storage of CurrentLoop.h's thread-local slot; everything else in the target lives in its headers.
//
// `nodebug`: without a debug entry for it, the object has no DWARF 5 string forms, which valgrind 3.19 (Debian 12)
// cannot read; CI's allocation check runs loop-bench under it.
#include "CRunLoopShims.h"

__attribute__((nodebug)) __thread void *crunloop_current_loop_slot = 0;
