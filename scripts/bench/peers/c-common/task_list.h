/* The posted-task queue both C peers use: a growable array of (function, context, two words), appended under the
 * loop's mutex by posters and swapped out whole by the loop, which runs it outside the lock and hands the emptied
 * array back for reuse. */
#ifndef PEER_TASK_LIST_H
#define PEER_TASK_LIST_H

#include <stdlib.h>

#include "peer.h"

typedef struct {
    peer_task_fn fn;
    void *context;
    uint64_t a, b;
} task;

typedef struct {
    task *items;
    size_t count, capacity;
} task_list;

/* Appends a task (caller holds the loop's mutex). */
static inline void task_list_push(task_list *list, task item) {
    if (list->count == list->capacity) {
        list->capacity = list->capacity ? list->capacity * 2 : 256;
        list->items = realloc(list->items, list->capacity * sizeof *list->items);
        if (!list->items) peer_die("out of memory");
    }
    list->items[list->count++] = item;
}

/* Runs every task of `list` in order and empties it (keeping its storage). */
static inline void task_list_run(task_list *list) {
    for (size_t i = 0; i < list->count; i++) list->items[i].fn(list->items[i].context, list->items[i].a, list->items[i].b);
    list->count = 0;
}

#endif
