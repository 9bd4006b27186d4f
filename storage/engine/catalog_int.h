/* catalog_int.h - internals shared by catalog.c and schema.c. */
#ifndef STRIKE_CATALOG_INT_H
#define STRIKE_CATALOG_INT_H

struct migration {
    int version;
    const char *description;
    const char *sql;
};

/* The schema, one step per version (schema.c). Never edit a released step: add one. */
extern const struct migration cat__migrations[];
extern const int cat__nmigrations;

#endif
