#include "sw_text_slot.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

sw_text_slot *sw_text_slot_create(void) { return calloc(1, sizeof(sw_text_slot)); }

void sw_text_slot_destroy(sw_text_slot *slot) { free(slot); }

void sw_text_slot_write(sw_text_slot *slot, uint64_t tag, const char *text, size_t length) {
    if (length > SW_TEXT_SLOT_BYTES) length = SW_TEXT_SLOT_BYTES;
    uint64_t seq = atomic_load_explicit(&slot->sequence, memory_order_relaxed);
    atomic_store_explicit(&slot->sequence, seq + 1, memory_order_relaxed);
    atomic_thread_fence(memory_order_release);
    for (size_t offset = 0; offset < length; offset += 8) {
        uint64_t word = 0;
        size_t n = length - offset < 8 ? length - offset : 8;
        memcpy(&word, text + offset, n);
        atomic_store_explicit(&slot->words[offset / 8], word, memory_order_relaxed);
    }
    atomic_store_explicit(&slot->length, length, memory_order_relaxed);
    atomic_store_explicit(&slot->tag, tag, memory_order_relaxed);
    atomic_store_explicit(&slot->sequence, seq + 2, memory_order_release);
}

void sw_text_slot_clear(sw_text_slot *slot) {
    uint64_t seq = atomic_load_explicit(&slot->sequence, memory_order_relaxed);
    atomic_store_explicit(&slot->sequence, seq + 1, memory_order_relaxed);
    atomic_thread_fence(memory_order_release);
    atomic_store_explicit(&slot->tag, 0, memory_order_relaxed);
    atomic_store_explicit(&slot->length, 0, memory_order_relaxed);
    atomic_store_explicit(&slot->sequence, seq + 2, memory_order_release);
}

size_t sw_text_slot_read(sw_text_slot *slot, uint64_t *tag, char *out) {
    for (int attempt = 0; attempt < 8; attempt++) {
        uint64_t before = atomic_load_explicit(&slot->sequence, memory_order_acquire);
        if (before & 1) continue;
        uint64_t t = atomic_load_explicit(&slot->tag, memory_order_relaxed);
        size_t length = (size_t)atomic_load_explicit(&slot->length, memory_order_relaxed);
        if (length > SW_TEXT_SLOT_BYTES) length = SW_TEXT_SLOT_BYTES;
        for (size_t offset = 0; offset < length; offset += 8) {
            uint64_t word = atomic_load_explicit(&slot->words[offset / 8], memory_order_relaxed);
            size_t n = length - offset < 8 ? length - offset : 8;
            memcpy(out + offset, &word, n);
        }
        atomic_thread_fence(memory_order_acquire);
        if (atomic_load_explicit(&slot->sequence, memory_order_relaxed) == before) {
            *tag = t;
            return t == 0 ? 0 : length;
        }
    }
    *tag = 0;
    return 0;
}
