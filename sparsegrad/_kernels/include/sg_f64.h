/* Instantiate the templated section included next for double storage and
 * double math (see sg_base.h). */
#include "sg_type_end.h"
#define SG_S double
#define SG_M double
#define SG_SFX f64
#define SG_LIBM(fn) fn
