/* tinygrad/codegen/late/devectorizer.py: the rule functions other files' rule sets use. */
#ifndef TINYC_DEVECTORIZER_H
#define TINYC_DEVECTORIZER_H
#include "../../uop/native.h"

/* no_vectorized_alu(alu): a vector ALU/CAST/BITCAST becomes a VECTORIZE of the op on each lane (capture `alu`) */
RULE_DECLARE(no_vectorized_alu);

#endif
