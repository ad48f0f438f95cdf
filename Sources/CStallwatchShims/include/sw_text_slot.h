// A one-writer, one-reader text slot: the loop thread publishes a short text (the SQL statement
// a registered SQLite connection runs) without a lock, a syscall or an allocation, and the
// watchdog copies it out consistently. A sequence lock over atomic words (so ThreadSanitizer
// sees every access as atomic); texts longer than SW_TEXT_SLOT_BYTES are cut.
#pragma once

#include <stddef.h>
#include <stdint.h>

#define SW_TEXT_SLOT_BYTES 1024

typedef struct sw_text_slot {
    _Atomic uint64_t sequence;  ///< odd while the writer is inside
    _Atomic uint64_t tag;       ///< the writer's tag for the text (0: empty slot)
    _Atomic uint64_t length;
    _Atomic uint64_t words[SW_TEXT_SLOT_BYTES / 8];
} sw_text_slot;

/// Allocates an empty slot (calloc); NULL if memory is short. Any thread.
sw_text_slot *sw_text_slot_create(void);

/// Frees a slot nobody uses any more.
void sw_text_slot_destroy(sw_text_slot *slot);

/// Writer thread only: publishes `length` bytes of `text` (cut to the capacity) under `tag`.
void sw_text_slot_write(sw_text_slot *slot, uint64_t tag, const char *text, size_t length);

/// Writer thread only: empties the slot (tag 0).
void sw_text_slot_clear(sw_text_slot *slot);

/// Reader: copies the text into `out` (capacity SW_TEXT_SLOT_BYTES) and returns its length, with
/// its tag in *tag; returns 0 with *tag 0 when empty or when the writer kept changing it.
size_t sw_text_slot_read(sw_text_slot *slot, uint64_t *tag, char *out);
