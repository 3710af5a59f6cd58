// Workgroup-wide sums of NV values per thread (NV a #define of the includer);
// subgroup adds first, then one shared slot per subgroup.
// ZN_VK_WG_SUBGROUPS (limits.h, a define from the Makefile): the most
// subgroups a workgroup may hold (the tuning keeps workgroups within it).
#ifndef ZN_VK_WG_SUBGROUPS
#error "ZN_VK_WG_SUBGROUPS (limits.h) is passed by the Makefile: glslc -DZN_VK_WG_SUBGROUPS=..."
#endif
shared float red_sh[NV][ZN_VK_WG_SUBGROUPS];

void wg_sum(inout float v[NV]) {
    for (uint r = 0; r < NV; r++) v[r] = subgroupAdd(v[r]);
    if (gl_NumSubgroups == 1) return;
    if (gl_SubgroupInvocationID == 0)
        for (uint r = 0; r < NV; r++) red_sh[r][gl_SubgroupID] = v[r];
    barrier();
    for (uint r = 0; r < NV; r++) {
        float s = 0.0;
        for (uint i = 0; i < gl_NumSubgroups; i++) s += red_sh[r][i];
        v[r] = s;
    }
    barrier();
}
