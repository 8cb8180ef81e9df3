/* Instantiate the templated section included next for 64-bit integers
 * (see sg_base.h). */
#include "sg_type_end.h"
#define SG_S sg_i64
#define SG_M sg_i64
#define SG_SFX i64
