/* Instantiate the templated section included next for bfloat16 storage and
 * bfloat16 math, every operation rounded (C++ only; see sg_half.h). */
#include "sg_type_end.h"
#define SG_S sg_sbf16
#define SG_M sg_mbf16
#define SG_SFX bf16
#define SG_LIBM(fn) fn##f
