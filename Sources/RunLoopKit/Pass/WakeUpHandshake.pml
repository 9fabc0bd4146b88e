/*
 * The wake-up handshake between threads that hand a loop work and the loop going to sleep, as a Promela model
 * for spin (scripts/check/check-handshake.sh runs it; CI too). Change this model together with the code it mirrors:
 *
 *   posting a block       Loop.enqueue -> Inbox.post (under the mutex: append; if the inbox was empty, set
 *                         hasEntries), then Poller.wakeIfSleeping only if this post found the inbox empty
 *   signalling a source   LoopSource.signal (signalled.exchange(true)), SignalStack.push, Poller.wakeIfSleeping
 *   stopping              Loop.stop (stopRequested = true), Poller.wakeIfSleeping
 *   waking                Poller.wakeIfSleeping: isWaiting? then wakeUpPending.exchange(true)? then eventfd write
 *   the loop's pass       applyChanges / runBlocks (Inbox.takeBlocksUnlessChanged or takeAll),
 *                         performSignalledSources (SignalStack.popAll, signalled.exchange(false) then perform),
 *                         waitForEvents (isWaiting = true, re-check everything, epoll_wait), Poller.finishWaiting
 *                         (isWaiting = false, pending = false)
 *
 * The eventfd is edge-triggered and never read by the loop: each write queues one report in the epoll set, which
 * the next epoll_wait returns (blocking or not) and so consumes; the counter's value plays no part.
 *
 * Every shared variable is one of the code's sequentially consistent atomics (or mutex-protected), so Promela's
 * interleaving semantics is exact for it. Checked properties:
 *   1. No lost wake-up: when nothing else can move (spin's `timeout`), the loop is not asleep with a block, a
 *      signal or a stop waiting for it.
 *   2. Nothing runs twice: blocks run at most once each, and a source is performed at most once per signal that
 *      found it unsignalled.
 *   3. Nothing is lost: at the end every block ran or is still queued for the next run.
 *
 * Build with -DBROKEN_CHECK_BEFORE_ANNOUNCE to check the classic bug instead (the loop looks for work before it
 * announces that it sleeps), or with -DBROKEN_FLAG_CLEARED_AFTER_UNLOCK (the loop clears the inbox's flag after
 * releasing its lock, so a post in between loses its flag): spin must then report the lost wake-up.
 * scripts/check/check-handshake.sh runs all three.
 */

#define POSTERS 2
#define POSTS 2
#define SIGNALS 2
#define BLOCKS (POSTERS * POSTS)

/* The inbox: entries under its mutex, and the atomic flag, written under the mutex, that the loop reads without. */
bool inboxLocked = false;
byte entries = 0;
bool hasEntries = false;
/* The source: its signalled flag, and whether it sits on the lock-free signal stack. */
bool signalled = false;
bool stacked = false;
byte signalEdges = 0;   /* signals that found the source unsignalled (each owes one perform) */
byte performs = 0;
bool stopRequested = false;
/* The poller. */
bool isWaiting = false;
bool wakeUpPending = false;
bool eventfdReport = false;   /* a write's report, queued in the epoll set until an epoll_wait returns it */
/* Bookkeeping. */
byte ran = 0;
byte producersDone = 0;
bool loopAsleep = false;

inline wakeIfSleeping() {
    if
    :: isWaiting ->
        if
        :: atomic { !wakeUpPending -> wakeUpPending = true }; eventfdReport = true
        :: atomic { wakeUpPending -> skip }   /* another waker owns this sleep's one write */
        fi
    :: else -> skip
    fi
}

active [POSTERS] proctype Poster() {
    byte i;
    bool first;
    for (i : 1 .. POSTS) {
        atomic { !inboxLocked -> inboxLocked = true };   /* Inbox.post: lock */
        first = (entries == 0);
        entries++;
        if
        :: first -> hasEntries = true   /* sequentially consistent store, lock held */
        :: else -> skip
        fi;
        inboxLocked = false;            /* unlock */
        if
        :: first -> wakeIfSleeping()    /* a post behind others leaves the wake-up to the first one */
        :: else -> skip
        fi
    }
    producersDone++
}

active proctype Signaller() {
    byte i;
    for (i : 1 .. SIGNALS) {
        if
        :: atomic { !signalled -> signalled = true; signalEdges++ };
           stacked = true;  /* the Treiber stack's compare-exchange */
           wakeIfSleeping()
        :: atomic { signalled -> skip }   /* already signalled: coalesces, no push, no wake */
        fi
    }
    producersDone++
}

/* The stop comes only once every block ran and every signal was performed: its own wake-up must not rescue a loop
 * that missed the wake-up of a post or a signal (that loop sleeps for good, and the Watchdog sees it). */
active proctype Stopper() {
    atomic { producersDone == POSTERS + 1 && ran == BLOCKS && !stacked && !signalled };
    stopRequested = true;
    wakeIfSleeping()
}

active proctype Loop() {
    byte taken;
    bool block;
    do
    :: /* steps 0, 3, 5, 10: take the inbox's blocks and run them (Inbox.takeBlocksUnlessChanged / takeAll) */
       if
       :: hasEntries ->
           atomic { !inboxLocked -> inboxLocked = true };
           taken = entries;
           entries = 0;
#ifdef BROKEN_FLAG_CLEARED_AFTER_UNLOCK
           inboxLocked = false;
           hasEntries = false;  /* a post in between finds the inbox empty and sets the flag, which this clears */
#else
           hasEntries = false;
           inboxLocked = false;
#endif
           ran = ran + taken;
           assert(ran <= BLOCKS)
       :: else -> skip
       fi;
       /* step 4: signalled sources (SignalStack.popAll, then signalled.exchange(false) and perform) */
       if
       :: stacked ->
           stacked = false;
           if
           :: atomic { signalled -> signalled = false }; performs++; assert(performs <= signalEdges)
           :: atomic { !signalled -> skip }
           fi
       :: else -> skip
       fi;
       /* step 11: the stop ends the run (work queued meanwhile waits for the next run) */
       if
       :: stopRequested -> break
       :: else -> skip
       fi;
       /* steps 6-8: about to sleep */
#ifdef BROKEN_CHECK_BEFORE_ANNOUNCE
       block = !(hasEntries || stacked || stopRequested);
       isWaiting = true;
#else
       isWaiting = true;
       block = !(hasEntries || stacked || stopRequested);
#endif
       if
       :: block ->
           loopAsleep = true;
end_asleep:
           atomic { eventfdReport -> eventfdReport = false }  /* epoll_wait(-1) returns the queued report */
           loopAsleep = false
       :: else -> eventfdReport = false   /* epoll_wait(0) returns a report queued by then, if any */
       fi;
       /* Poller.finishWaiting */
       isWaiting = false;
       wakeUpPending = false
    od;
    /* property 3: every block ran, or waits in the inbox for the next run */
    assert(ran + entries == BLOCKS)
}

/* Property 1: when no process can move, the loop must not be asleep with work waiting for it. */
active proctype Watchdog() {
    timeout -> assert(!(loopAsleep && (entries > 0 || stacked || stopRequested)))
}
