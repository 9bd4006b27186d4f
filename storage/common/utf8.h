/*
 * utf8.h - UTF-8 well-formedness (RFC 3629: no overlong forms, no
 * surrogates, nothing past U+10FFFF), shared by every decoder that takes
 * text from outside: JSON (jdoc), Parquet strings, Avro strings.
 */
#ifndef STRIKE_UTF8_H
#define STRIKE_UTF8_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The length (2 to 4) of the well-formed sequence at s[0..n) whose first byte is >= 0x80, or 0
   when it is not one. */
size_t st_utf8_seq_len(const uint8_t *s, size_t n);

/* True when p[0..n) is well-formed UTF-8 (NUL bytes included: they are characters). */
bool st_utf8_valid(const uint8_t *p, size_t n);

#endif
