/* Instantiate the templated section included next for float storage and
 * float math (see sg_base.h). */
#include "sg_type_end.h"
#define SG_S float
#define SG_M float
#define SG_SFX f32
#define SG_LIBM(fn) fn##f
