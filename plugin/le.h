/* SPDX-License-Identifier: BSD-3-Clause */
/* Little-endian fields of on-disk records (md's superblocks), read and
 * written byte by byte: no packed structs, no host byte order.
 */

#ifndef RAID_LE_H
#define RAID_LE_H

#include <stdint.h>

static inline uint16_t get16 (const uint8_t *p) { return p[0] | p[1] << 8; }
static inline uint32_t get32 (const uint8_t *p) { return get16 (p) | (uint32_t) get16 (p + 2) << 16; }
static inline uint64_t get64 (const uint8_t *p) { return get32 (p) | (uint64_t) get32 (p + 4) << 32; }
static inline void put16 (uint8_t *p, uint16_t v) { p[0] = v; p[1] = v >> 8; }
static inline void put32 (uint8_t *p, uint32_t v) { put16 (p, v); put16 (p + 2, v >> 16); }
static inline void put64 (uint8_t *p, uint64_t v) { put32 (p, v); put32 (p + 4, v >> 32); }

#endif /* RAID_LE_H */
