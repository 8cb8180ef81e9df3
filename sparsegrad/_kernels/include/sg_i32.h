/* Instantiate the templated section included next for 32-bit integers
 * (see sg_base.h). */
#include "sg_type_end.h"
#define SG_S int
#define SG_M int
#define SG_SFX i32
