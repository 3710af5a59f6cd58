#version 450
// mmf.glsl with the 16x16 tile products in scalar code (no cooperative
// matrices): devices without them, and the tests of its tiling on lavapipe.
#include "mmf.glsl"
