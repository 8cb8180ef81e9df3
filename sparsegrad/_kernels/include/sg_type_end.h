/* End an instantiation of a templated section (see sg_base.h). */
#undef SG_S
#undef SG_M
#undef SG_SFX
#undef SG_LIBM
#undef SG_LANE
