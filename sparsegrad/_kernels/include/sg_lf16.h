/* Instantiate the templated section included next for eight float16 lanes
 * at once (C++ on the host only; see sg_half.h): SG_LANE marks the
 * instantiation, whose functions branch on no element. */
#include "sg_type_end.h"
#define SG_S sg_lsf16
#define SG_M sg_lmf16
#define SG_SFX lf16
#define SG_LIBM(fn) fn##f
#define SG_LANE 1
