/* Instantiate the templated section included next for float16 storage and
 * float16 math, every operation rounded (C++ only; see sg_half.h). */
#include "sg_type_end.h"
#define SG_S sg_sf16
#define SG_M sg_mf16
#define SG_SFX f16
#define SG_LIBM(fn) fn##f
